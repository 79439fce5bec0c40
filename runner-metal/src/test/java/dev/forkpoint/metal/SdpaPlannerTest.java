package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class SdpaPlannerTest {

    /** FACTS §1 A: Qwen3.6 35B-A3B (gqa 8) verifying 4 rows at head dim 256, bf16, on a pipeline that allows 896. */
    @Test
    void theOllamaCrashShapeIsSplitIntoTwoDispatchesOf512() {
        SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(896), new SdpaShape(8, 4, 256, 8192, 2));
        PlanInvariants.check(plan);
        assertEquals(List.of(new PairTile(0, 8, 0, 2), new PairTile(0, 8, 2, 2)),
                plan.pass1().stream().map(Pass1Dispatch::tile).toList());
        assertEquals(List.of(512, 512), plan.pass1().stream().map(Pass1Dispatch::threads).toList());
        assertEquals(2, plan.maxRowsPerDispatch());
        assertEquals(64, plan.blocks());
        assertEquals(128, plan.keysPerBlock());
        // K and V tiles of 32 keys × 256 bf16 fill the 32 KiB exactly
        assertEquals(32, plan.pass1().getFirst().keyTile());
        assertEquals(32 * 1024, plan.pass1().getFirst().threadgroupMemoryBytes());
        // pass 2: 28 SIMD groups fit 896 threads, 32 fit the memory; 16 is the largest that divides 64 blocks
        assertEquals(16, plan.pass2().simdGroups());
        assertEquals(512, plan.pass2().threads());
    }

    @Test
    void theSameShapeOnA1024PipelineIsOneDispatch() {
        SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(1024), new SdpaShape(8, 4, 256, 8192, 2));
        PlanInvariants.check(plan);
        assertEquals(1, plan.pass1().size());
        assertEquals(1024, plan.maxThreadsPerThreadgroup());
    }

    /** The 27B (gqa 6) at 5 rows wants 960 threads: rows 3 + 2 on an 896 pipeline. */
    @Test
    void unevenRowSplitsDifferByAtMostOne() {
        SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(896), new SdpaShape(6, 5, 256, 40000, 2));
        PlanInvariants.check(plan);
        assertEquals(List.of(new PairTile(0, 6, 0, 2), new PairTile(0, 6, 2, 3)),
                plan.pass1().stream().map(Pass1Dispatch::tile).toList());
        assertEquals(List.of(384, 576), plan.pass1().stream().map(Pass1Dispatch::threads).toList());
        // pass 2: 320 blocks; 28 SIMD groups fit 896 threads, 20 is the largest that divides 320
        assertEquals(640, plan.pass2().threads());
    }

    @Test
    void aGqaGroupLargerThanOneThreadgroupSplitsTheHeads() {
        SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(96), new SdpaShape(8, 2, 128, 1000, 2));
        PlanInvariants.check(plan);
        assertEquals(6, plan.pass1().size());   // 8 heads in 3 tiles of at most 3 SIMD groups, per row
        assertTrue(plan.pass1().stream().allMatch(d -> d.tile().rows() == 1 && d.threads() <= 96));
    }

    @Test
    void blockCountsFollowTheKeyLength() {
        assertEquals(32, SdpaPlanner.blocks(1, 32));
        assertEquals(32, SdpaPlanner.blocks(4096, 32));
        assertEquals(64, SdpaPlanner.blocks(4097, 32));
        assertEquals(1024, SdpaPlanner.blocks(131072, 32));
        assertEquals(1024, SdpaPlanner.blocks(Integer.MAX_VALUE, 32));
        SdpaPlan oneKey = SdpaPlanner.plan(GpuLimits.apple(1024), new SdpaShape(1, 1, 64, 1, 2));
        assertEquals(1, oneKey.nonEmptyBlocks());
        assertEquals(1, oneKey.keysPerBlock());
        assertEquals(1, oneKey.pass1().getFirst().keyTile());
    }

    @Test
    void aLimitBelowTheSimdWidthHasNoPlanAndSaysWhy() {
        SdpaShape shape = new SdpaShape(8, 4, 256, 8192, 2);
        GpuLimits limits = GpuLimits.apple(16);
        SdpaPlanException e = assertThrows(SdpaPlanException.class, () -> SdpaPlanner.plan(limits, shape));
        assertEquals(SdpaPlanException.Reason.LIMIT_BELOW_SIMD_WIDTH, e.reason());
        assertEquals(limits, e.limits());
        assertEquals(shape, e.shape());
        assertEquals("no SDPA decode plan: the pipeline allows 16 threads per threadgroup, fewer than one SIMD group"
                + " of 32 (limits: max 16 threads per threadgroup, SIMD width 32, 32768 bytes of threadgroup memory;"
                + " shape: gqa 8, query rows 4, head dim 256, key length 8192, 2-byte elements)", e.getMessage());
    }

    @Test
    void tooLittleThreadgroupMemoryHasNoPlan() {
        SdpaShape shape = new SdpaShape(2, 1, 256, 100, 4);
        SdpaPlanException e = assertThrows(SdpaPlanException.class,
                () -> SdpaPlanner.plan(new GpuLimits(1024, 32, 2047), shape));
        assertEquals(SdpaPlanException.Reason.THREADGROUP_MEMORY_TOO_SMALL, e.reason());
        assertTrue(e.getMessage().contains("pass 1 needs 2048 bytes"), e.getMessage());
    }

    @Test
    void badInputsAreRefusedByTheRecords() {
        assertThrows(IllegalArgumentException.class, () -> new SdpaShape(0, 1, 64, 1, 2));
        assertThrows(IllegalArgumentException.class, () -> new SdpaShape(1, 1, 64, 0, 2));
        assertThrows(IllegalArgumentException.class, () -> new SdpaShape(1, 1, 64, 1, 3));
        assertThrows(IllegalArgumentException.class, () -> new GpuLimits(0, 32, 32768));
    }

    @Test
    void anMlxLimitErrorReplansAndIsRemembered() {
        RememberedLimits remembered = new RememberedLimits();
        String pipeline = "forkpoint_sdpa_decode_bf16_256";
        SdpaShape shape = new SdpaShape(8, 4, 256, 8192, 2);
        SdpaPlan first = SdpaPlanner.plan(GpuLimits.apple(1024), shape, pipeline, remembered);
        assertEquals(1024, first.maxThreadsPerThreadgroup());

        Replan replan = SdpaPlanner.replan(first,
                "mlx: Maximum threads per threadgroup is 896 but requested 1024 for kernel " + pipeline + ".",
                pipeline, remembered);
        SdpaPlan second = assertInstanceOf(Replan.Replanned.class, replan).plan();
        PlanInvariants.check(second);
        assertEquals(896, second.limits().maxThreadsPerThreadgroup());
        assertEquals(512, second.maxThreadsPerThreadgroup());

        // the next plan for this pipeline keeps to 896 although the pipeline still reports 1024
        SdpaPlan next = SdpaPlanner.plan(GpuLimits.apple(1024), shape, pipeline, remembered);
        assertEquals(896, next.limits().maxThreadsPerThreadgroup());
        // another pipeline is not affected
        assertEquals(1024, SdpaPlanner.plan(GpuLimits.apple(1024), shape, "other", remembered)
                .limits().maxThreadsPerThreadgroup());

        // the same error again for a plan that already keeps to it: planning again would change nothing
        Replan again = SdpaPlanner.replan(second, "Maximum threads per threadgroup is 896 but requested 1024",
                pipeline, remembered);
        assertEquals(512, assertInstanceOf(Replan.NoProgress.class, again).planned());

        Replan other = SdpaPlanner.replan(second, "[metal::Device] Unable to load kernel", pipeline, remembered);
        assertEquals("[metal::Device] Unable to load kernel",
                assertInstanceOf(Replan.NotALimitError.class, other).mlxError());
    }

    @Test
    void aReportedLimitBelowTheSimdWidthIsTheTypedException() {
        SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(1024), new SdpaShape(4, 1, 128, 10, 2));
        RememberedLimits remembered = new RememberedLimits();
        SdpaPlanException e = assertThrows(SdpaPlanException.class, () -> SdpaPlanner.replan(plan,
                "Maximum threads per threadgroup is 16 but requested 128 for kernel k.", "k", remembered));
        assertEquals(SdpaPlanException.Reason.LIMIT_BELOW_SIMD_WIDTH, e.reason());
        assertEquals(16, remembered.remembered("k").orElseThrow());
    }
}
