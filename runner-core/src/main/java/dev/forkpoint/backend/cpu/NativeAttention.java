package dev.forkpoint.backend.cpu;

import dev.forkpoint.kvcache.KvElementType;

import java.lang.foreign.MemorySegment;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * {@link CpuAttention}'s work on the native attention kernel ({@code native/cpu/forkpoint_attention.c}): the same
 * blocks of {@link CpuAttention#KEY_BLOCK} positions fixed by position, the same fold in block order, the same tasks —
 * tiles of consecutive rows of one sequence across the pool's threads, or, when there are too few rows to keep the
 * threads busy (decode) or when decode rows of two sequences or more read a prefix's pages that the cache shares,
 * the decode rows' blocks across the threads ({@link AttentionPlan}) and each row's fold afterwards, with the decode
 * rows whose block lies on the same pages computed together: the shared prefix's K and V are read once per pass, not
 * once per stream. Each native call computes one tile or one block range; the Java worker pool keeps the threading. A row's result depends only on its query, its K/V and its
 * length (the kernel's invariant), so the tile size is free: {@link #tileRows} rows, as many as keep a tile's scores
 * (rows × heads × 128 floats) within 128 KiB.
 *
 * <p>The K/V pages are off-heap {@code PagePool} slabs of F32, F16, Q8_0 or Q4_0 rows (the kernel converts quantised
 * codes to floats in its vector loads): the kernel gets their addresses (one array per sequence for K,
 * one for V), after this class has checked that every position a row reads lies in a slab of the right size. Queries,
 * outputs, partials and scratch are heap arrays passed in place (critical downcalls).
 */
final class NativeAttention {
    /** Rows per call at most (the C side's FA_MAX_ROWS). */
    static final int MAX_ROWS = 64;
    private static final int KC = 16;
    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[0]);
    private static final ThreadLocal<float[]> PARTIALS = ThreadLocal.withInitial(() -> new float[0]);

    private final NativeKernels kernels;
    private final int heads, kvHeads, headDim, kvDim, rowFloats;
    private final float scale;

    NativeAttention(NativeKernels kernels, int heads, int kvHeads, int headDim, float scale) {
        this.kernels = kernels;
        this.heads = heads;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.kvDim = kvHeads * headDim;
        this.rowFloats = 1 + heads * (2 + ((headDim + 15) & ~15));
        this.scale = scale;
    }

    /** Rows per prefill tile: the scores of a tile's rows and heads (rows × heads × 128 floats) within 128 KiB. */
    int tileRows() {
        return Math.max(1, Math.min(32, 256 / heads));
    }

    /** A sequence's page addresses, K and V. */
    private record Pages(MemorySegment k, MemorySegment v) {}

    /** Scratch floats of one call of {@code count} rows (fp_attn's: two partials, the scores, one chunk of converted rows). */
    private long scratchFloats(int count) {
        return 2L * count * rowFloats + (long) count * heads * CpuAttention.KEY_BLOCK + (long) KC * kvDim + 64;
    }

    private static float[] grown(ThreadLocal<float[]> local, long floats) {
        if (floats > Integer.MAX_VALUE - 16) throw new IllegalArgumentException("attention needs " + floats + " floats of scratch");
        float[] a = local.get();
        if (a.length < floats) {
            a = new float[(int) Math.max(floats, Math.min(Integer.MAX_VALUE - 16, a.length * 3L / 2))];
            local.set(a);
        }
        return a;
    }

    void attend(float[] q, CpuAttention.Keys[] rows, int[] length, float[] out, WorkerPool pool) {
        int tokens = rows.length;
        int rowWidth = heads * headDim;
        if (length.length != tokens || (long) tokens * rowWidth > q.length || (long) tokens * rowWidth > out.length) {
            throw new IllegalArgumentException("attention: " + tokens + " rows, " + length.length + " lengths, q " + q.length + ", out " + out.length);
        }
        Map<CpuAttention.Keys, Pages> pages = new IdentityHashMap<>();
        int maxBlocks = 0;
        for (int t = 0; t < tokens; t++) {
            CpuAttention.Keys kv = rows[t];
            Pages p = pages.get(kv);
            if (p == null) pages.put(kv, p = addresses(kv));
            if (length[t] < 1 || (long) length[t] > (long) kv.keys().length * kv.pageTokens() || length[t] > kv.values().length * (long) kv.pageTokens()) {
                throw new IllegalArgumentException("attention row " + t + " reads " + length[t] + " positions of " + kv.keys().length + " pages of "
                        + kv.pageTokens());
            }
            maxBlocks = Math.max(maxBlocks, blocks(length[t]));
        }
        int threads = pool.threads();
        int[] tileStart = tiles(rows, length, tileRows());
        int tileCount = tileStart.length - 1;
        MemorySegment qs = MemorySegment.ofArray(q), os = MemorySegment.ofArray(out);
        boolean share = AttentionPlan.sharesPages(rows, length, tileStart);
        if (!share) {
            if (tileCount < 2 * threads && maxBlocks > 1 && tokens >= 2 * threads) {
                tileStart = tiles(rows, length, Math.max(1, tokens / (2 * threads)));
                tileCount = tileStart.length - 1;
            }
            if (tileCount >= 2 * threads || maxBlocks <= 1) {
                tilesAcrossThreads(qs, os, rows, length, pages, tileStart, pool);
                return;
            }
        }
        blocksAcrossThreads(qs, os, rows, length, pages, share ? tileStart : null, pool);
    }

    /** Each tile one task, its blocks folded in the call. */
    private void tilesAcrossThreads(MemorySegment qs, MemorySegment os, CpuAttention.Keys[] rows, int[] length, Map<CpuAttention.Keys, Pages> pages,
                                    int[] starts, WorkerPool pool) {
        int threads = pool.threads();
        pool.runRanges(starts.length - 1, threads * 4, 1, (from, to) -> {
            int most = 1;
            for (int tile = from; tile < to; tile++) most = Math.max(most, starts[tile + 1] - starts[tile]);
            float[] scratch = grown(SCRATCH, scratchFloats(most));
            MemorySegment ss = MemorySegment.ofArray(scratch);
            for (int tile = from; tile < to; tile++) {
                int t0 = starts[tile], t1 = starts[tile + 1], count = t1 - t0;
                int[] list = new int[count], lens = new int[count];
                for (int r = 0; r < count; r++) {
                    list[r] = t0 + r;
                    lens[r] = length[t0 + r];
                }
                CpuAttention.Keys kv = rows[t0];
                Pages p = pages.get(kv);
                kernels.attention(qs, MemorySegment.ofArray(list), MemorySegment.ofArray(lens), count, p.k(), p.v(), kv.pageTokens(),
                        kind(kv.type()), heads, kvHeads, headDim, scale, 0, blocks(length[t1 - 1]),
                        MemorySegment.NULL, MemorySegment.NULL, 0, os, ss);
            }
        });
    }

    /**
     * Few rows, long contexts (decode), or decode rows of sequences that share a prefix's pages: {@link AttentionPlan}'s
     * tasks, each claimed on its own, costliest first; a split row is folded in block order by the thread that computes
     * its last outstanding block (no second dispatch).
     */
    private void blocksAcrossThreads(MemorySegment qs, MemorySegment os, CpuAttention.Keys[] rows, int[] length,
                                     Map<CpuAttention.Keys, Pages> pages, int[] tileStart, WorkerPool pool) {
        AttentionPlan plan = AttentionPlan.of(rows, length, tileStart, pool.threads());
        List<AttentionPlan.Task> tasks = plan.tasks();
        int[] firstBlock = plan.firstBlock();
        MemorySegment ps = MemorySegment.ofArray(grown(PARTIALS, (long) plan.records() * rowFloats));
        AtomicIntegerArray outstanding = new AtomicIntegerArray(rows.length);
        for (int t = 0; t < rows.length; t++) if (plan.split()[t]) outstanding.set(t, blocks(length[t]));
        int most = 1;
        for (AttentionPlan.Task w : tasks) most = Math.max(most, w.rows().length);
        long scratchFloats = Math.max(scratchFloats(most), rowFloats);
        pool.run(tasks.size(), i -> {
            AttentionPlan.Task w = tasks.get(i);
            MemorySegment ss = MemorySegment.ofArray(grown(SCRATCH, scratchFloats));
            CpuAttention.Keys kv = rows[w.rows()[0]];
            Pages p = pages.get(kv);
            MemorySegment offsets = MemorySegment.NULL;
            if (!w.whole()) {
                int[] at = new int[w.rows().length];
                for (int m = 0; m < at.length; m++) at[m] = w.records()[m] * rowFloats;
                offsets = MemorySegment.ofArray(at);
            }
            kernels.attention(qs, MemorySegment.ofArray(w.rows()), MemorySegment.ofArray(w.lengths()), w.rows().length, p.k(), p.v(), kv.pageTokens(),
                    kind(kv.type()), heads, kvHeads, headDim, scale, w.b0(), w.b1(), w.whole() ? MemorySegment.NULL : ps, offsets,
                    w.whole() ? 0 : rowFloats, w.whole() ? os : MemorySegment.NULL, ss);
            if (w.whole()) return;
            for (int t : w.rows()) {
                // the decrement publishes this task's partials; the thread that takes a row's count to zero folds it
                if (outstanding.addAndGet(t, -(w.b1() - w.b0())) == 0) {
                    kernels.attentionFold(ps.asSlice(4L * firstBlock[t] * rowFloats), blocks(length[t]), rowFloats, heads, headDim,
                            os.asSlice(4L * t * heads * headDim), ss);
                }
            }
        });
    }

    /** Tiles: runs of consecutive rows of one sequence at consecutive positions, at most {@code most} rows. */
    private static int[] tiles(CpuAttention.Keys[] rows, int[] length, int most) {
        int tokens = rows.length;
        int[] tileStart = new int[tokens + 1];
        int tiles = 0;
        for (int t = 0; t < tokens; t++) {
            if (t == 0 || rows[t] != rows[t - 1] || length[t] != length[t - 1] + 1 || t - tileStart[tiles - 1] == most) tileStart[tiles++] = t;
        }
        tileStart[tiles] = tokens;
        return java.util.Arrays.copyOf(tileStart, tiles + 1);
    }

    /**
     * The page addresses of a sequence's K and V slabs, each checked to hold pageTokens rows of kvDim elements; quantised
     * rows are read a head at a time in whole blocks, so their head size must be a multiple of the block.
     */
    private Pages addresses(CpuAttention.Keys kv) {
        if (headDim % kv.type().blockElements() != 0) {
            throw new IllegalArgumentException("attention: kv type " + kv.type().lowerName() + " stores blocks of " + kv.type().blockElements()
                    + " elements; head dim " + headDim + " is not a multiple of it");
        }
        long slabBytes = kv.pageTokens() * kv.type().rowBytes(kvDim);
        if (kv.pageTokens() < 1) throw new IllegalArgumentException("attention: pages of " + kv.pageTokens() + " positions");
        long[] k = new long[kv.keys().length], v = new long[kv.values().length];
        for (int i = 0; i < k.length; i++) k[i] = checked(kv.keys()[i], slabBytes);
        for (int i = 0; i < v.length; i++) v[i] = checked(kv.values()[i], slabBytes);
        return new Pages(MemorySegment.ofArray(k), MemorySegment.ofArray(v));
    }

    /** The C kernel's number for an element kind (FA_F32, FA_F16, FA_Q8_0, FA_Q4_0 in forkpoint_attention.c). */
    static int kind(KvElementType type) {
        return switch (type) {
            case F32 -> 0;
            case F16 -> 1;
            case Q8_0 -> 2;
            case Q4_0 -> 3;
        };
    }

    private static long checked(MemorySegment slab, long bytes) {
        if (!slab.isNative() || slab.byteSize() < bytes) {
            throw new IllegalArgumentException("attention: a KV slab of " + slab.byteSize() + " bytes" + (slab.isNative() ? "" : " on the heap")
                    + ", the kernel reads " + bytes);
        }
        return slab.address();
    }

    private static int blocks(int length) {
        return (length + CpuAttention.KEY_BLOCK - 1) / CpuAttention.KEY_BLOCK;
    }
}
