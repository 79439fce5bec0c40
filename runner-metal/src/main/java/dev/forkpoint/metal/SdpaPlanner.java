package dev.forkpoint.metal;

import java.util.ArrayList;
import java.util.List;

/**
 * Plans the two-pass split-K SDPA decode kernel so that no threadgroup asks for more threads than the compiled
 * pipeline allows (MLX launched 32·gqa·rows threads in one threadgroup, 1024 on a pipeline that allows 896: FACTS
 * §1 A). Pure arithmetic over the inputs; the kernels that follow a plan live in {@code native/}.
 *
 * <p>Pass 1 runs one SIMD group per (head, row) pair. When all {@code gqa × rows} SIMD groups do not fit in one
 * threadgroup, the query rows are split into as few dispatches as fit, of sizes that differ by at most one; when
 * even one row of the GQA group does not fit, the heads are split too, one row per dispatch. Blocks are a multiple of
 * the SIMD width (pass 2 gives each lane the same number of blocks), about {@value #TARGET_KEYS_PER_BLOCK} keys each,
 * at most {@value #MAX_BLOCKS}; pass 2 uses as many SIMD groups as divide the block count and fit both the thread
 * limit and threadgroup memory.
 */
public final class SdpaPlanner {

    /** Keys one pass-1 block aims at (fewer blocks than this many keys each make long contexts serial). */
    static final int TARGET_KEYS_PER_BLOCK = 128;
    /** The most blocks a plan uses (rounded down to a multiple of the SIMD width). */
    static final int MAX_BLOCKS = 1024;
    /** The most keys pass 1 stages through threadgroup memory at a time. */
    static final int MAX_KEY_TILE = 32;

    private SdpaPlanner() {}

    /**
     * Plans {@code shape} within {@code limits}.
     *
     * @throws SdpaPlanException when no plan fits (the thread limit is below the SIMD width, or threadgroup memory
     *                           holds less than one key and value)
     */
    public static SdpaPlan plan(GpuLimits limits, SdpaShape shape) {
        int simd = limits.simdWidth();
        int simdGroupsPerThreadgroup = limits.maxThreadsPerThreadgroup() / simd;
        if (simdGroupsPerThreadgroup == 0) {
            throw new SdpaPlanException(SdpaPlanException.Reason.LIMIT_BELOW_SIMD_WIDTH, limits, shape,
                    "the pipeline allows " + limits.maxThreadsPerThreadgroup()
                            + " threads per threadgroup, fewer than one SIMD group of " + simd);
        }

        int blocks = blocks(shape.keyLength(), simd);
        int keysPerBlock = ceilDiv(shape.keyLength(), blocks);
        int nonEmptyBlocks = ceilDiv(shape.keyLength(), keysPerBlock);

        int keyTile = keyTile(limits, shape, keysPerBlock);
        int pass1Memory = pass1Memory(keyTile, shape);
        int elementsPerLane = ceilDiv(shape.headDim(), simd);
        List<Pass1Dispatch> pass1 = new ArrayList<>();
        for (PairTile tile : tiles(shape.gqa(), shape.queryRows(), simdGroupsPerThreadgroup)) {
            pass1.add(new Pass1Dispatch(tile, new ThreadgroupSize(simd, tile.heads(), tile.rows()), blocks,
                    keysPerBlock, keyTile, elementsPerLane, pass1Memory));
        }

        int rowBytes = Math.multiplyExact(shape.headDim(), Float.BYTES);
        int bySimdGroups = Math.min(simdGroupsPerThreadgroup, blocks);
        int byMemory = limits.threadgroupMemoryBytes() / rowBytes;
        int simdGroups = largestDivisorAtMost(blocks, Math.min(bySimdGroups, byMemory));
        if (simdGroups == 0) {
            throw new SdpaPlanException(SdpaPlanException.Reason.THREADGROUP_MEMORY_TOO_SMALL, limits, shape,
                    "pass 2 needs " + rowBytes + " bytes of threadgroup memory for one output row");
        }
        Pass2Dispatch pass2 = new Pass2Dispatch(new ThreadgroupSize(simd, simdGroups, 1), simdGroups, blocks / simd,
                blocks / simdGroups, simdGroups * rowBytes);
        return new SdpaPlan(limits, shape, blocks, keysPerBlock, nonEmptyBlocks, pass1, pass2);
    }

    /**
     * Plans with the smaller of the pipeline's reported limit and the one remembered for it (an earlier MLX error
     * said "Maximum threads per threadgroup is N").
     */
    public static SdpaPlan plan(GpuLimits limits, SdpaShape shape, String pipeline, RememberedLimits remembered) {
        return plan(limits.withMaxThreadsPerThreadgroup(
                remembered.effectiveLimit(pipeline, limits.maxThreadsPerThreadgroup())), shape);
    }

    /**
     * After a failed dispatch of {@code plan} on {@code pipeline}: when MLX's error says "Maximum threads per
     * threadgroup is N", remembers N for the pipeline and plans again with it.
     *
     * @throws SdpaPlanException when N admits no plan
     */
    public static Replan replan(SdpaPlan plan, String mlxError, String pipeline, RememberedLimits remembered) {
        var parsed = ThreadgroupLimitError.parse(mlxError);
        if (parsed.isEmpty()) {
            return new Replan.NotALimitError(mlxError);
        }
        ThreadgroupLimitError error = parsed.get();
        remembered.remember(pipeline, error.limit());
        if (error.limit() >= plan.maxThreadsPerThreadgroup()) {
            return new Replan.NoProgress(error, plan.maxThreadsPerThreadgroup());
        }
        return new Replan.Replanned(error, plan.replan(Math.min(error.limit(), plan.limits().maxThreadsPerThreadgroup())));
    }

    /** A multiple of the SIMD width near keyLength / TARGET_KEYS_PER_BLOCK, at least one SIMD width, at most MAX_BLOCKS. */
    static int blocks(int keyLength, int simd) {
        int maxBlocks = Math.max(simd, MAX_BLOCKS / simd * simd);
        long wanted = roundUp(ceilDiv(keyLength, TARGET_KEYS_PER_BLOCK), simd);
        return (int) Math.min(maxBlocks, Math.max(simd, wanted));
    }

    /** The largest power of two ≤ MAX_KEY_TILE (and not above the block's keys, rounded up) whose K and V fit. */
    private static int keyTile(GpuLimits limits, SdpaShape shape, int keysPerBlock) {
        int blockPowerOfTwo = keysPerBlock <= 1 ? 1 : Integer.highestOneBit(keysPerBlock - 1) << 1;
        for (int tile = Math.min(MAX_KEY_TILE, blockPowerOfTwo); tile >= 1; tile >>= 1) {
            if (pass1Memory(tile, shape) <= limits.threadgroupMemoryBytes()) {
                return tile;
            }
        }
        throw new SdpaPlanException(SdpaPlanException.Reason.THREADGROUP_MEMORY_TOO_SMALL, limits, shape,
                "pass 1 needs " + pass1Memory(1, shape) + " bytes of threadgroup memory for one key and value");
    }

    private static int pass1Memory(int keyTile, SdpaShape shape) {
        return Math.multiplyExact(Math.multiplyExact(2 * keyTile, shape.headDim()), shape.dtypeBytes());
    }

    /** (head, row) tiles of at most {@code maxPairs} pairs each that cover the group exactly once. */
    static List<PairTile> tiles(int gqa, int rows, int maxPairs) {
        List<PairTile> tiles = new ArrayList<>();
        if (gqa <= maxPairs) {
            int rowsPerTile = Math.min(rows, maxPairs / gqa);
            int count = ceilDiv(rows, rowsPerTile);
            for (int i = 0; i < count; i++) {
                int first = (int) ((long) i * rows / count);
                int end = (int) ((long) (i + 1) * rows / count);
                tiles.add(new PairTile(0, gqa, first, end - first));
            }
        } else {
            int count = ceilDiv(gqa, maxPairs);
            for (int row = 0; row < rows; row++) {
                for (int i = 0; i < count; i++) {
                    int first = (int) ((long) i * gqa / count);
                    int end = (int) ((long) (i + 1) * gqa / count);
                    tiles.add(new PairTile(first, end - first, row, 1));
                }
            }
        }
        return tiles;
    }

    private static int largestDivisorAtMost(int n, int max) {
        for (int d = Math.min(n, max); d >= 1; d--) {
            if (n % d == 0) {
                return d;
            }
        }
        return 0;
    }

    private static int ceilDiv(int a, int b) {
        return Math.ceilDiv(a, b);
    }

    private static long roundUp(long n, int multiple) {
        return Math.ceilDiv(n, multiple) * multiple;
    }
}
