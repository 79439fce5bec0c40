package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What every plan must satisfy, whatever the limits and shape: the kernels' contract. */
final class PlanInvariants {

    private PlanInvariants() {}

    static void check(SdpaPlan plan) {
        GpuLimits limits = plan.limits();
        SdpaShape shape = plan.shape();
        int simd = limits.simdWidth();
        String where = " (" + limits + "; " + shape + ")";

        int[][] covered = new int[shape.gqa()][shape.queryRows()];
        for (Pass1Dispatch d : plan.pass1()) {
            assertTrue(d.threads() <= limits.maxThreadsPerThreadgroup(), "pass-1 threads " + d.threads() + where);
            assertEquals(simd, d.threadgroup().x(), "one SIMD group per pair" + where);
            assertEquals(d.tile().heads(), d.threadgroup().y(), where);
            assertEquals(d.tile().rows(), d.threadgroup().z(), where);
            assertTrue(d.threadgroupMemoryBytes() <= limits.threadgroupMemoryBytes(), "pass-1 memory" + where);
            assertEquals(2L * d.keyTile() * shape.headDim() * shape.dtypeBytes(), d.threadgroupMemoryBytes(), where);
            assertTrue(d.keyTile() >= 1 && Integer.bitCount(d.keyTile()) == 1, where);
            assertEquals(plan.blocks(), d.blocks(), where);
            assertEquals(plan.keysPerBlock(), d.keysPerBlock(), where);
            assertTrue((long) d.elementsPerLane() * simd >= shape.headDim()
                    && (long) (d.elementsPerLane() - 1) * simd < shape.headDim(), "elements per lane" + where);
            PairTile t = d.tile();
            assertTrue(t.firstHead() + t.heads() <= shape.gqa() && t.firstRow() + t.rows() <= shape.queryRows(), where);
            for (int h = t.firstHead(); h < t.firstHead() + t.heads(); h++) {
                for (int r = t.firstRow(); r < t.firstRow() + t.rows(); r++) {
                    covered[h][r]++;
                }
            }
        }
        for (int h = 0; h < shape.gqa(); h++) {
            for (int r = 0; r < shape.queryRows(); r++) {
                assertEquals(1, covered[h][r], "pair (head " + h + ", row " + r + ") covered" + where);
            }
        }

        int blocks = plan.blocks();
        assertTrue(blocks >= simd && blocks % simd == 0, "blocks " + blocks + " a multiple of the SIMD width" + where);
        assertTrue((long) plan.keysPerBlock() * blocks >= shape.keyLength(), "blocks cover the keys" + where);
        assertTrue((long) plan.keysPerBlock() * (plan.nonEmptyBlocks() - 1) < shape.keyLength()
                && (long) plan.keysPerBlock() * plan.nonEmptyBlocks() >= shape.keyLength(), "non-empty blocks" + where);
        assertTrue(plan.nonEmptyBlocks() <= blocks, where);
        assertTrue(plan.keysPerBlock() == 1 || (long) (plan.keysPerBlock() - 1) * blocks < shape.keyLength(),
                "no block is longer than needed" + where);

        Pass2Dispatch p2 = plan.pass2();
        assertTrue(p2.threads() <= limits.maxThreadsPerThreadgroup(), "pass-2 threads " + p2.threads() + where);
        assertEquals(new ThreadgroupSize(simd, p2.simdGroups(), 1), p2.threadgroup(), where);
        assertEquals(0, blocks % p2.simdGroups(), "blocks a multiple of pass 2's SIMD groups" + where);
        assertEquals(blocks / simd, p2.blocksPerLane(), where);
        assertEquals(blocks / p2.simdGroups(), p2.blocksPerSimdGroup(), where);
        assertEquals(p2.simdGroups() * shape.headDim() * Float.BYTES, p2.threadgroupMemoryBytes(), where);
        assertTrue(p2.threadgroupMemoryBytes() <= limits.threadgroupMemoryBytes(), "pass-2 memory" + where);

        assertTrue(plan.maxThreadsPerThreadgroup() <= limits.maxThreadsPerThreadgroup(), where);
    }
}
