package dev.forkpoint.backend.cpu;

import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvRowCodec;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Causal grouped-query attention of query rows over paged K/V, the CPU backend's kernel. A query row at position p
 * attends to positions [0, p] of its own sequence, stored in pages of {@code pageTokens} positions (position p is row
 * {@code p % pageTokens} of slab {@code p / pageTokens}, each row kvDim elements, F32, F16, or Q8_0 / Q4_0 blocks
 * dequantised as they are read).
 *
 * <p>Flash-attention style: the positions are cut into blocks of {@link #KEY_BLOCK}, and each block gives, per query
 * row and head, a softmax partial (its maximum score, the sum of exp(score − max) and the exp-weighted sum of V rows);
 * the partials are folded in block order (the online-softmax merge), so the memory is O(block), never O(context).
 * One task is a tile of up to {@link #TILE} consecutive rows of one sequence (a prefill chunk's rows; a decode row is
 * a tile of one): each K and V row of a block is read whole, once, for the whole tile and every query head (the
 * heads that share a KV head read the same part of it), so the pages are read in order, as one stream. When there are fewer tiles than the
 * pool can keep busy (a decode step over a long context), the blocks of a tile run in parallel and are folded
 * afterwards.
 *
 * <p>Invariant: a row's result depends only on its query, its sequence's K/V and its position — not on the other rows
 * of the pass or its tile, on whether its blocks ran in parallel, or on the thread count: the blocks are fixed by the
 * position, every score, exponential and sum is formed by the same operations in the same order, and the partials
 * are always folded in block order. A decode row batched with others (or with a prefill chunk) equals the row run
 * alone, bit for bit.
 */
final class CpuAttention {
    /** Positions per softmax block: a tile's scores for 32 heads (128 KiB) stay in L2. */
    static final int KEY_BLOCK = 128;
    /** Query rows per task at most: what one read of a block's K and V serves. */
    static final int TILE = 8;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = F.length();
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.nativeOrder());
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.nativeOrder());

    /** One query row's view of its sequence: its pages and their element type. */
    record Keys(MemorySegment[] keys, MemorySegment[] values, int pageTokens, KvElementType type) {}

    private final int heads, kvHeads, headDim, group, kvDim;
    private final float scale;
    private final NativeAttention nativeAttention;   // null: the Java kernel

    CpuAttention(int heads, int kvHeads, int headDim) {
        this(heads, kvHeads, headDim, null);
    }

    /** On the native attention kernel when {@code kernels} is not null (the same blocks, folds and invariant), else in Java. */
    CpuAttention(int heads, int kvHeads, int headDim, NativeKernels kernels) {
        this.heads = heads;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.group = heads / kvHeads;
        this.kvDim = kvHeads * headDim;
        this.scale = (float) (1.0 / Math.sqrt(headDim));
        this.nativeAttention = kernels == null ? null : new NativeAttention(kernels, heads, kvHeads, headDim, scale);
    }

    /**
     * out[(t·heads + h)·headDim …] for every row t: softmax(q_t,h · Kᵀ · scale) · V over positions [0, length[t]) of
     * rows[t]'s pages, for each query head h (KV head h / group).
     */
    void attend(float[] q, Keys[] rows, int[] length, float[] out, WorkerPool pool) {
        if (nativeAttention != null) {
            nativeAttention.attend(q, rows, length, out, pool);
            return;
        }
        int tokens = rows.length;
        // tiles: runs of consecutive rows of one sequence at consecutive positions, at most TILE rows
        int[] tileStart = new int[tokens + 1];
        int tiles = 0;
        for (int t = 0; t < tokens; t++) {
            if (t == 0 || rows[t] != rows[t - 1] || length[t] != length[t - 1] + 1 || t - tileStart[tiles - 1] == TILE) tileStart[tiles++] = t;
        }
        tileStart[tiles] = tokens;
        int maxBlocks = 0;
        for (int len : length) maxBlocks = Math.max(maxBlocks, blocks(len));
        int tileCount = tiles;
        // decode rows of sequences that share a prefix's pages take the split path at any row count: it reads each
        // shared block once for all of them
        boolean share = AttentionPlan.sharesPages(rows, length, java.util.Arrays.copyOf(tileStart, tiles + 1));
        if ((tiles >= 2 * pool.threads() && !share) || maxBlocks <= 1) {
            pool.runRanges(tiles, pool.threads() * 4, 1, (from, to) -> {
                Work w = work();
                for (int tile = from; tile < to; tile++) {
                    int t0 = tileStart[tile], t1 = tileStart[tile + 1];
                    int[] list = rowsOf(t0, t1);
                    w.run.reset(t1 - t0, heads, headDim);
                    for (int b = 0, n = blocks(length[t1 - 1]); b < n; b++) {
                        block(q, rows, length, list, b, w, w.block);
                        w.run.fold(w.block);
                    }
                    w.run.finish(out, t0 * heads * headDim);
                }
            });
            return;
        }
        // few tiles, long rows (decode): every (tile, block) on its own, then the same folds in block order. Decode rows
        // whose block lies on the same pages (a prefix the cache shares between sequences) are computed together:
        // the block's K and V rows are read once for all of them.
        int[] firstBlock = new int[tileCount + 1];
        for (int tile = 0; tile < tileCount; tile++) firstBlock[tile + 1] = firstBlock[tile] + blocks(length[tileStart[tile + 1] - 1]);
        int units = firstBlock[tileCount];
        // pages can be shared only between the decode rows (one-row tiles) of two sequences or more
        java.util.Set<Keys> sequences = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (int tile = 0; tile < tileCount; tile++) if (tileStart[tile + 1] - tileStart[tile] == 1) sequences.add(rows[tileStart[tile]]);
        boolean mayShare = sequences.size() > 1;
        List<int[]> groups = new ArrayList<>();
        Map<List<Long>, List<Integer>> shared = new LinkedHashMap<>();
        for (int i = 0; i < units; i++) {
            int tile = tileOf(firstBlock, i), t0 = tileStart[tile], b = i - firstBlock[tile];
            if (mayShare && tileStart[tile + 1] - t0 == 1 && (b + 1) * KEY_BLOCK <= length[t0]) {
                shared.computeIfAbsent(pages(rows[t0], b), k -> new ArrayList<>()).add(i);
            } else {
                groups.add(new int[] {i});
            }
        }
        for (List<Integer> same : shared.values()) {
            for (int from = 0; from < same.size(); from += TILE) {
                groups.add(same.subList(from, Math.min(same.size(), from + TILE)).stream().mapToInt(Integer::intValue).toArray());
            }
        }
        Partial[] partials = new Partial[units];
        pool.runRanges(groups.size(), pool.threads() * 4, 1, (from, to) -> {
            Work w = work();
            for (int g = from; g < to; g++) {
                int[] members = groups.get(g);
                int first = tileOf(firstBlock, members[0]), b = members[0] - firstBlock[first];
                int[] list;
                if (members.length == 1) {
                    list = rowsOf(tileStart[first], tileStart[first + 1]);
                } else {
                    list = new int[members.length];
                    for (int m = 0; m < members.length; m++) list[m] = tileStart[tileOf(firstBlock, members[m])];
                }
                Partial p = new Partial();
                block(q, rows, length, list, b, w, p);
                if (members.length == 1) {
                    partials[members[0]] = p;
                } else {
                    for (int m = 0; m < members.length; m++) partials[members[m]] = p.row(m);
                }
            }
        });
        pool.runRanges(tileCount, pool.threads(), 1, (from, to) -> {
            Partial run = new Partial();
            for (int tile = from; tile < to; tile++) {
                int t0 = tileStart[tile], t1 = tileStart[tile + 1];
                run.reset(t1 - t0, heads, headDim);
                for (int i = firstBlock[tile]; i < firstBlock[tile + 1]; i++) run.fold(partials[i]);
                run.finish(out, t0 * heads * headDim);
            }
        });
    }

    /** The addresses of the K slabs that block b of a row reads: rows with equal lists read the same stored keys and values. */
    static List<Long> pages(Keys kv, int b) {
        List<Long> out = new ArrayList<>(KEY_BLOCK / kv.pageTokens() + 1);
        for (int page = b * KEY_BLOCK / kv.pageTokens(), last = ((b + 1) * KEY_BLOCK - 1) / kv.pageTokens(); page <= last; page++) {
            out.add(kv.keys()[page].address());
        }
        return out;
    }

    private static int blocks(int length) {
        return (length + KEY_BLOCK - 1) / KEY_BLOCK;
    }

    private static int tileOf(int[] firstBlock, int i) {
        int lo = 0, hi = firstBlock.length - 2;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (firstBlock[mid] <= i) lo = mid; else hi = mid - 1;
        }
        return lo;
    }

    /**
     * A task's scratch: the running state, one block's partial, the scores and one K or V row as floats. Kept per
     * thread and reused while the shape stays (a decode loop's attention allocates none): a thread runs one task at a
     * time, and every use resets what it reads.
     */
    private static final class Work {
        final int heads, kvDim;
        final Partial run = new Partial(), block = new Partial();
        final float[] scores;
        final float[] row;

        Work(int heads, int kvDim) {
            this.heads = heads;
            this.kvDim = kvDim;
            this.scores = new float[TILE * heads * KEY_BLOCK];
            this.row = new float[kvDim];
        }
    }

    private static final ThreadLocal<Work> WORK = new ThreadLocal<>();

    /** This thread's scratch for this shape. */
    private Work work() {
        Work w = WORK.get();
        if (w == null || w.heads != heads || w.kvDim != kvDim) {
            w = new Work(heads, kvDim);
            WORK.set(w);
        }
        return w;
    }

    /** The rows t0 … t1 − 1 as a list. */
    private static int[] rowsOf(int t0, int t1) {
        int[] list = new int[t1 - t0];
        for (int t = t0; t < t1; t++) list[t - t0] = t;
        return list;
    }

    /**
     * The softmax partial of block b for the rows {@code list} (row r of the partial is list[r]: a tile's consecutive
     * rows, or decode rows whose block lies on the same pages): for each row that sees part of the block, and each
     * head, the block's maximum score, the sum of exp(score − max) and Σ exp(score − max)·V. Each K and V row is read
     * once for all of them.
     */
    private void block(float[] q, Keys[] rows, int[] length, int[] list, int b, Work w, Partial into) {
        int count = list.length;
        into.reset(count, heads, headDim);
        Keys kv = rows[list[0]];
        int p0 = b * KEY_BLOCK, last = 0;
        for (int t : list) last = Math.max(last, Math.min(length[t], p0 + KEY_BLOCK) - p0);
        KvElementType type = kv.type();
        long rowBytes = type.rowBytes(kvDim);
        float[] scores = w.scores, row = w.row;
        // scores[((r·heads + h)·KEY_BLOCK + i] = q_r,h · K[p0 + i] · scale: each K row read whole, once, for the tile's
        // rows and every head (a sequential read of the block's pages)
        for (int i = 0; i < last; i++) {
            int p = p0 + i;
            load(kv.keys()[p / kv.pageTokens()], (p % kv.pageTokens()) * rowBytes, type, row, kvDim);
            for (int r = 0; r < count; r++) {
                int t = list[r];
                if (p >= length[t]) continue;
                int qBase = t * heads * headDim, sBase = r * heads * KEY_BLOCK + i;
                for (int h = 0; h < heads; h++) {
                    scores[sBase + h * KEY_BLOCK] = dot(q, qBase + h * headDim, row, (h / group) * headDim, headDim) * scale;
                }
            }
        }
        for (int r = 0; r < count; r++) {
            int n = Math.min(length[list[r]], p0 + KEY_BLOCK) - p0;
            if (n <= 0) continue;
            for (int h = 0; h < heads; h++) {
                int at = (r * heads + h) * KEY_BLOCK;
                float max = Float.NEGATIVE_INFINITY;
                for (int i = 0; i < n; i++) max = Math.max(max, scores[at + i]);
                int slot = r * heads + h;
                into.max[slot] = max;
                into.sum[slot] = expMinus(scores, at, n, max);
            }
            into.seen[r] = true;
        }
        // acc_r,h += e_r,h,i · V[p0 + i]: each V row read whole, once, for the tile's rows and every head
        for (int i = 0; i < last; i++) {
            int p = p0 + i;
            load(kv.values()[p / kv.pageTokens()], (p % kv.pageTokens()) * rowBytes, type, row, kvDim);
            for (int r = 0; r < count; r++) {
                if (p >= length[list[r]]) continue;
                int sBase = r * heads * KEY_BLOCK + i, aBase = r * heads * headDim;
                for (int h = 0; h < heads; h++) {
                    axpy(scores[sBase + h * KEY_BLOCK], row, (h / group) * headDim, into.acc, aBase + h * headDim, headDim);
                }
            }
        }
    }

    /**
     * The softmax state of a tile's rows (a running fold, or one block's partial): per row and head (slot
     * r·heads + h) the maximum, the sum of exponentials and the V sum; {@code seen[r]}: the row has any position yet.
     */
    private static final class Partial {
        float[] max = new float[0], sum = new float[0], acc = new float[0];
        boolean[] seen = new boolean[0];
        int rows, heads, headDim;

        void reset(int rows, int heads, int headDim) {
            this.rows = rows;
            this.heads = heads;
            this.headDim = headDim;
            if (seen.length < rows || max.length < rows * heads) {
                max = new float[rows * heads];
                sum = new float[rows * heads];
                acc = new float[rows * heads * headDim];
                seen = new boolean[rows];
            }
            clear();
        }

        void clear() {
            java.util.Arrays.fill(acc, 0, rows * heads * headDim, 0f);
            java.util.Arrays.fill(seen, 0, rows, false);
        }

        /** Row r of this as a partial of its own (one row). */
        Partial row(int r) {
            Partial p = new Partial();
            p.reset(1, heads, headDim);
            System.arraycopy(max, r * heads, p.max, 0, heads);
            System.arraycopy(sum, r * heads, p.sum, 0, heads);
            System.arraycopy(acc, r * heads * headDim, p.acc, 0, heads * headDim);
            p.seen[0] = seen[r];
            return p;
        }

        /** This ← this ⊕ b per row that b saw (the online-softmax merge); a row's first block is copied. */
        void fold(Partial b) {
            for (int r = 0; r < rows; r++) {
                if (!b.seen[r]) continue;
                int s0 = r * heads, a0 = s0 * headDim;
                if (!seen[r]) {
                    System.arraycopy(b.max, s0, max, s0, heads);
                    System.arraycopy(b.sum, s0, sum, s0, heads);
                    System.arraycopy(b.acc, a0, acc, a0, heads * headDim);
                    seen[r] = true;
                    continue;
                }
                for (int s = s0; s < s0 + heads; s++) {
                    float m = Math.max(max[s], b.max[s]);
                    float alpha = expOf(max[s] - m), beta = expOf(b.max[s] - m);
                    max[s] = m;
                    sum[s] = sum[s] * alpha + b.sum[s] * beta;
                    for (int i = s * headDim; i < (s + 1) * headDim; i++) acc[i] = acc[i] * alpha + b.acc[i] * beta;
                }
            }
        }

        /** out[outOff + (r·heads + h)·headDim + i] = acc / sum for every row and head. */
        void finish(float[] out, int outOff) {
            for (int s = 0; s < rows * heads; s++) {
                float inv = 1 / sum[s];
                for (int i = s * headDim; i < (s + 1) * headDim; i++) out[outOff + i] = acc[i] * inv;
            }
        }
    }

    /*
     * exp(x) for x ≤ 0 in float arithmetic of our own: x = k·ln 2 + r with |r| ≤ ln 2 / 2, e^r by its Taylor polynomial
     * to degree 6 (relative error under 2e-7), times 2^k built in the exponent bits; below −87 (under the smallest
     * normal float) it is 0. Only IEEE operations that are exactly rounded (multiply, add, fused multiply-add), so the
     * vector lanes, the scalar tail, the interpreter and the JIT-compiled code give the same bits.
     */
    private static final float LOG2E = 1.44269504f, LN2_HI = 0.693145752f, LN2_LO = 1.42860677e-6f, ROUNDER = 12582912f;   // 1.5 · 2^23
    private static final float C2 = 1 / 2f, C3 = 1 / 6f, C4 = 1 / 24f, C5 = 1 / 120f, C6 = 1 / 720f, FLOOR_X = -87f;

    /** scores[at + i] ← exp(scores[at + i] − max) for i &lt; n; returns their sum (added in index order). */
    static float expMinus(float[] scores, int at, int n, float max) {
        int i = 0;
        FloatVector vmax = FloatVector.broadcast(F, max);
        for (int bound = F.loopBound(n); i < bound; i += L) {
            FloatVector x = FloatVector.fromArray(F, scores, at + i).sub(vmax);
            FloatVector k = x.fma(FloatVector.broadcast(F, LOG2E), FloatVector.broadcast(F, ROUNDER)).sub(ROUNDER);
            FloatVector r = k.fma(FloatVector.broadcast(F, -LN2_HI), x);
            r = k.fma(FloatVector.broadcast(F, -LN2_LO), r);
            FloatVector p = r.fma(FloatVector.broadcast(F, C6), FloatVector.broadcast(F, C5));
            p = p.fma(r, FloatVector.broadcast(F, C4));
            p = p.fma(r, FloatVector.broadcast(F, C3));
            p = p.fma(r, FloatVector.broadcast(F, C2));
            p = p.fma(r, FloatVector.broadcast(F, 1f));
            p = p.fma(r, FloatVector.broadcast(F, 1f));
            jdk.incubator.vector.IntVector bits = ((jdk.incubator.vector.IntVector) k.convert(jdk.incubator.vector.VectorOperators.F2I, 0))
                    .add(127).lanewise(jdk.incubator.vector.VectorOperators.LSHL, 23);
            FloatVector e = p.mul(bits.reinterpretAsFloats());
            e = e.blend(0f, x.compare(jdk.incubator.vector.VectorOperators.LT, FLOOR_X));
            e.intoArray(scores, at + i);
        }
        for (; i < n; i++) scores[at + i] = expOf(scores[at + i] - max);
        float sum = 0;
        for (int j = 0; j < n; j++) sum += scores[at + j];
        return sum;
    }

    /** The scalar twin of {@link #expMinus}'s lanes, operation for operation. */
    static float expOf(float x) {
        if (x < FLOOR_X) return 0f;
        float k = Math.fma(x, LOG2E, ROUNDER) - ROUNDER;
        float r = Math.fma(k, -LN2_HI, x);
        r = Math.fma(k, -LN2_LO, r);
        float p = Math.fma(r, C6, C5);
        p = Math.fma(p, r, C4);
        p = Math.fma(p, r, C3);
        p = Math.fma(p, r, C2);
        p = Math.fma(p, r, 1f);
        p = Math.fma(p, r, 1f);
        return p * Float.intBitsToFloat(((int) k + 127) << 23);
    }

    /**
     * The n elements of a stored row at byte {@code off} of {@code slab} as floats in row[0 … n): F32 copied, F16
     * converted, Q8_0 / Q4_0 dequantised ({@link KvRowCodec}: each value a binary16 scale times a small integer, exact
     * in float, so the native kernel reads the same floats).
     */
    private static void load(MemorySegment slab, long off, KvElementType type, float[] row, int n) {
        switch (type) {
            case F32 -> {   // vector loads: a MemorySegment.copy of a few hundred bytes costs more in its checks than in its copy
                int i = 0;
                for (int bound = F.loopBound(n); i < bound; i += L) FloatVector.fromMemorySegment(F, slab, off + 4L * i, ByteOrder.nativeOrder()).intoArray(row, i);
                for (; i < n; i++) row[i] = slab.get(FLOAT, off + 4L * i);
            }
            case F16 -> {
                for (int i = 0; i < n; i++) row[i] = Float.float16ToFloat(slab.get(SHORT, off + 2L * i));
            }
            case Q8_0, Q4_0 -> KvRowCodec.load(type, slab, off, row, 0, n);
        }
    }

    /** Rotations by L/2, L/4, …, 1 lanes: adding each to the vector leaves the sum of all lanes in lane 0. */
    private static final jdk.incubator.vector.VectorShuffle<Float>[] ROTATIONS = rotations();

    @SuppressWarnings("unchecked")
    private static jdk.incubator.vector.VectorShuffle<Float>[] rotations() {
        int steps = Integer.numberOfTrailingZeros(L);
        jdk.incubator.vector.VectorShuffle<Float>[] r = new jdk.incubator.vector.VectorShuffle[steps];
        for (int i = 0, shift = L / 2; i < steps; i++, shift /= 2) r[i] = jdk.incubator.vector.VectorShuffle.iota(F, shift, 1, true);
        return r;
    }

    /**
     * The sum of v's lanes by a fixed tree (lane i plus lane i + L/2, then + L/4, …): log2 L vector adds instead of L − 1
     * lane extractions, and the same order of additions however the code runs (unlike reduceLanes, whose order is
     * the implementation's).
     */
    static float treeSum(FloatVector v) {
        for (jdk.incubator.vector.VectorShuffle<Float> r : ROTATIONS) v = v.add(v.rearrange(r));
        return v.lane(0);
    }

    private static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        int i = 0;
        FloatVector acc = FloatVector.zero(F);
        for (int bound = F.loopBound(n); i < bound; i += L) {
            acc = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc);
        }
        float s = treeSum(acc);
        for (; i < n; i++) s += a[aOff + i] * b[bOff + i];
        return s;
    }

    private static void axpy(float alpha, float[] x, int xOff, float[] y, int yOff, int n) {
        int i = 0;
        FloatVector a = FloatVector.broadcast(F, alpha);
        for (int bound = F.loopBound(n); i < bound; i += L) {
            FloatVector.fromArray(F, x, xOff + i).fma(a, FloatVector.fromArray(F, y, yOff + i)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) y[yOff + i] += alpha * x[xOff + i];
    }
}
