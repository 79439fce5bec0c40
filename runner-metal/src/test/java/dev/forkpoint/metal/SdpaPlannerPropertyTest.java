package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/** Planner properties over the limits real pipelines report and the shapes real models have (issue 14's acceptance). */
class SdpaPlannerPropertyTest {

    @Property(tries = 3000)
    void realLimitsAndShapes(@ForAll("limits") int limit, @ForAll @IntRange(min = 1, max = 16) int gqa,
                             @ForAll @IntRange(min = 1, max = 8) int rows, @ForAll("headDims") int headDim,
                             @ForAll("keyLengths") int keys, @ForAll("dtypeBytes") int dtypeBytes) {
        SdpaShape shape = new SdpaShape(gqa, rows, headDim, keys, dtypeBytes);
        SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(limit), shape);
        PlanInvariants.check(plan);

        // as few pass-1 dispatches as the limit allows: with a GQA group that fits, only the rows are split
        int pairsPerThreadgroup = limit / 32;
        assertTrue(gqa <= pairsPerThreadgroup);
        assertEquals(Math.ceilDiv(rows, Math.min(rows, pairsPerThreadgroup / gqa)), plan.pass1().size());
        for (Pass1Dispatch d : plan.pass1()) {
            assertEquals(gqa, d.tile().heads());
        }
    }

    /** Any limit from one SIMD group up (what a re-plan can be asked for), other SIMD widths and memory sizes. */
    @Property(tries = 3000)
    void anyLimit(@ForAll @IntRange(min = 1, max = 1024) int limit, @ForAll("simdWidths") int simd,
                  @ForAll @IntRange(min = 1, max = 32) int gqa, @ForAll @IntRange(min = 1, max = 16) int rows,
                  @ForAll @IntRange(min = 1, max = 512) int headDim, @ForAll("keyLengths") int keys,
                  @ForAll("dtypeBytes") int dtypeBytes, @ForAll("memories") int memory) {
        GpuLimits limits = new GpuLimits(Math.max(limit, simd), simd, memory);
        SdpaShape shape = new SdpaShape(gqa, rows, headDim, keys, dtypeBytes);
        SdpaPlan plan;
        try {
            plan = SdpaPlanner.plan(limits, shape);
        } catch (SdpaPlanException e) {
            assertEquals(SdpaPlanException.Reason.THREADGROUP_MEMORY_TOO_SMALL, e.reason());
            assertTrue(2 * headDim * dtypeBytes > memory || headDim * Float.BYTES > memory, e.getMessage());
            return;
        }
        PlanInvariants.check(plan);
    }

    @Property(tries = 500)
    void replanningWithALowerLimitKeepsToIt(@ForAll @IntRange(min = 1, max = 16) int gqa,
                                            @ForAll @IntRange(min = 1, max = 8) int rows,
                                            @ForAll("headDims") int headDim, @ForAll("keyLengths") int keys,
                                            @ForAll @IntRange(min = 32, max = 1023) int reported) {
        SdpaPlan first = SdpaPlanner.plan(GpuLimits.apple(1024), new SdpaShape(gqa, rows, headDim, keys, 2));
        RememberedLimits remembered = new RememberedLimits();
        String message = "Maximum threads per threadgroup is " + reported + " but requested "
                + first.maxThreadsPerThreadgroup() + " for kernel k.";
        Replan replan = SdpaPlanner.replan(first, message, "k", remembered);
        assertEquals(reported, remembered.remembered("k").orElseThrow());
        switch (replan) {
            case Replan.Replanned r -> {
                assertTrue(reported < first.maxThreadsPerThreadgroup());
                assertEquals(reported, r.plan().limits().maxThreadsPerThreadgroup());
                PlanInvariants.check(r.plan());
            }
            case Replan.NoProgress n -> assertTrue(reported >= first.maxThreadsPerThreadgroup());
            case Replan.NotALimitError e -> throw new AssertionError(e);
        }
    }

    @Provide
    Arbitrary<Integer> limits() {
        return Arbitraries.of(1024, 896, 832, 640, 512);
    }

    @Provide
    Arbitrary<Integer> headDims() {
        return Arbitraries.oneOf(Arbitraries.of(64, 80, 96, 128, 192, 256),
                Arbitraries.integers().between(2, 8).map(n -> 32 * n));
    }

    @Provide
    Arbitrary<Integer> keyLengths() {
        return Arbitraries.oneOf(Arbitraries.integers().between(1, 131072),
                Arbitraries.integers().between(1, 4096),
                Arbitraries.of(1, 2, 31, 32, 33, 127, 128, 129, 4095, 4096, 4097, 65536, 131071, 131072));
    }

    @Provide
    Arbitrary<Integer> dtypeBytes() {
        return Arbitraries.of(2, 4);
    }

    @Provide
    Arbitrary<Integer> simdWidths() {
        return Arbitraries.of(8, 16, 32, 64);
    }

    @Provide
    Arbitrary<Integer> memories() {
        return Arbitraries.oneOf(Arbitraries.of(32 * 1024, 16 * 1024, 64 * 1024), Arbitraries.integers().between(1, 70000));
    }
}
