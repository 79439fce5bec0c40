package dev.forkpoint.backend.cpu;

import dev.forkpoint.kvcache.KvElementType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The native attention kernel ({@code forkpoint_attention.c}), for every instruction-set variant this machine runs
 * (the others skipped with a line), against the Java {@link CpuAttention} and a float64 softmax written from the
 * definition, over pages laid out as the KV pool lays them out: F32, F16, Q8_0 and Q4_0 pages (quantised ones against
 * float64 over the values they read back as), head sizes 16 … 256 (64, 128 and
 * the ragged 72 and 40), GQA groups 1 … 8, lengths 1 … 2,100 crossing page (16 and 96 positions) and block (128)
 * boundaries, decode rows and prefill tiles. Bound: |native − float64| ≤ 2·10⁻⁵ and |native − Java| ≤ 3·10⁻⁵ for
 * outputs of size ≤ 1 (float32 sums of up to 2,100 terms). Invariance, bit for bit in native: a row alone (its blocks
 * split across threads and folded afterwards) = the row in a batch on one thread (tiles folding in the call) = on
 * eight threads (split, or re-tiled prefill rows); decode rows of sequences sharing a prefix's pages = each alone.
 */
class NativeAttentionTest {
    static final WorkerPool ONE = new WorkerPool(1), TWO = new WorkerPool(2), MANY = new WorkerPool(8);

    @AfterAll
    static void close() {
        ONE.close();
        TWO.close();
        MANY.close();
    }

    private static NativeKernels kernels(NativeKernels.Variant v) {
        return NativeVariants.kernels(v, NativeAttentionTest.class);
    }

    /** (heads, kvHeads, headDim, length, page size, type) for every variant. */
    static Stream<Arguments> cases() {
        Object[][] shapes = {
                {4, 4, 16, 1, 16, KvElementType.F32},
                {4, 4, 16, 1, 16, KvElementType.F16},
                {8, 2, 64, 127, 16, KvElementType.F32},
                {8, 2, 64, 128, 16, KvElementType.F16},
                {8, 2, 64, 129, 96, KvElementType.F32},
                {8, 1, 64, 300, 16, KvElementType.F16},      // group 8
                {32, 8, 64, 1000, 16, KvElementType.F32},
                {32, 8, 64, 1000, 16, KvElementType.F16},
                {12, 4, 72, 2050, 96, KvElementType.F32},    // a head size that is no multiple of the vector width
                {6, 6, 40, 257, 16, KvElementType.F16},      // ragged, group 1
                {16, 2, 128, 700, 16, KvElementType.F16},
                {16, 2, 128, 2100, 16, KvElementType.F32},
                {4, 2, 256, 513, 96, KvElementType.F32},
                {4, 1, 256, 384, 16, KvElementType.F16},
                {1, 1, 64, 2100, 16, KvElementType.F32},     // the long-context shape
                {8, 2, 64, 129, 96, KvElementType.Q8_0},     // quantised: converted in the kernel, then read as F32
                {32, 8, 64, 1000, 16, KvElementType.Q4_0},
                {16, 2, 128, 2100, 16, KvElementType.Q8_0},
                {4, 1, 256, 384, 16, KvElementType.Q4_0},
                {6, 6, 32, 257, 16, KvElementType.Q8_0},     // one block per head
        };
        List<Arguments> out = new ArrayList<>();
        for (NativeKernels.Variant v : NativeKernels.Variant.values()) {
            for (Object[] s : shapes) out.add(Arguments.of(v, s[0], s[1], s[2], s[3], s[4], s[5]));
        }
        return out.stream();
    }

    @ParameterizedTest
    @MethodSource("cases")
    void matchesJavaAndFloat64AndIsTheSameAloneBatchedTiledAndSplit(NativeKernels.Variant variant, int heads, int kvHeads, int headDim,
                                                                     int len, int pageTokens, KvElementType type) {
        NativeKernels k = kernels(variant);
        SplittableRandom r = new SplittableRandom(heads * 131L + len * 7L + headDim);
        int kvDim = kvHeads * headDim;
        CpuAttentionTest.Pages kv = pages(r, len, kvDim, pageTokens, type);
        // three decode rows, then a prefill chunk's 11 rows at consecutive positions ending at len
        int[] length = IntStream.concat(IntStream.of(len, Math.max(1, len - 1), Math.max(1, len / 2)),
                IntStream.rangeClosed(len - 10, len).map(x -> Math.max(1, x))).toArray();
        int tokens = length.length, width = heads * headDim;
        float[] q = new float[tokens * width];
        for (int i = 0; i < q.length; i++) q[i] = (float) (r.nextDouble() * 2 - 1);
        CpuAttention.Keys[] rows = new CpuAttention.Keys[tokens];
        Arrays.fill(rows, kv.keys());
        CpuAttention nat = new CpuAttention(heads, kvHeads, headDim, k), java = new CpuAttention(heads, kvHeads, headDim);
        float[] one = new float[q.length], two = new float[q.length], many = new float[q.length], reference = new float[q.length];
        nat.attend(q, rows, length, one, ONE);
        nat.attend(q, rows, length, two, TWO);
        nat.attend(q, rows, length, many, MANY);
        java.attend(q, rows, length, reference, MANY);
        assertArrayEquals(one, two, variant + ": one thread and two agree bit for bit");
        assertArrayEquals(one, many, variant + ": one thread and eight (blocks split across threads) agree bit for bit");
        int group = heads / kvHeads;
        double worst = 0;
        for (int t = 0; t < tokens; t++) {
            float[] alone = new float[width];
            nat.attend(Arrays.copyOfRange(q, t * width, (t + 1) * width), new CpuAttention.Keys[] {kv.keys()}, new int[] {length[t]}, alone, TWO);
            assertArrayEquals(alone, Arrays.copyOfRange(one, t * width, (t + 1) * width), variant + ": row " + t + " alone");
            for (int h = 0; h < heads; h++) {
                double[] want = float64(q, (t * heads + h) * headDim, kv, h / group, headDim, kvDim, length[t]);
                for (int i = 0; i < headDim; i++) {
                    int at = (t * heads + h) * headDim + i;
                    worst = Math.max(worst, Math.abs(want[i] - one[at]));
                    assertEquals(want[i], one[at], 2e-5, variant + " " + type + " row " + t + " head " + h + " dim " + i + " of " + length[t]);
                    assertEquals(reference[at], one[at], 3e-5, variant + " vs Java, row " + t + " head " + h + " dim " + i);
                }
            }
        }
        assertTrue(worst > 0 || len == 1, "a float32 result equal to the float64 one everywhere is suspicious");
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aLongPrefillChunkIsTheSameOnOneThreadAndReTiledOnEight(NativeKernels.Variant variant) {
        NativeKernels k = kernels(variant);
        SplittableRandom r = new SplittableRandom(5);
        int heads = 8, kvHeads = 4, headDim = 64, len = 600, kvDim = kvHeads * headDim;
        for (KvElementType type : KvElementType.values()) {
            CpuAttentionTest.Pages kv = pages(r, len, kvDim, 16, type);
            int[] length = IntStream.rangeClosed(len - 69, len).toArray();   // 70 rows: tiles of 32 on one thread, re-tiled on eight
            float[] q = new float[length.length * heads * headDim];
            for (int i = 0; i < q.length; i++) q[i] = (float) (r.nextDouble() * 2 - 1);
            CpuAttention.Keys[] rows = new CpuAttention.Keys[length.length];
            Arrays.fill(rows, kv.keys());
            CpuAttention nat = new CpuAttention(heads, kvHeads, headDim, k);
            float[] one = new float[q.length], many = new float[q.length], java = new float[q.length];
            nat.attend(q, rows, length, one, ONE);
            nat.attend(q, rows, length, many, MANY);
            new CpuAttention(heads, kvHeads, headDim).attend(q, rows, length, java, MANY);
            assertArrayEquals(one, many, variant + " " + type);
            for (int i = 0; i < q.length; i++) assertEquals(java[i], one[i], 3e-5, variant + " " + type + " vs Java at " + i);
        }
    }

    static Stream<NativeKernels.Variant> variants() {
        return Stream.of(NativeKernels.Variant.values());
    }

    @ParameterizedTest
    @MethodSource("variants")
    void decodeRowsOfSequencesThatShareAPrefixsPagesEqualEachRowAlone(NativeKernels.Variant variant) {
        NativeKernels k = kernels(variant);
        SplittableRandom r = new SplittableRandom(77);
        int heads = 8, kvHeads = 2, headDim = 64, kvDim = kvHeads * headDim, pageTokens = 16;
        for (KvElementType type : KvElementType.values()) {
            // a holds 1,000 positions; b shares a's pages up to 400 (inside block 3), c up to 992 and goes on to 1,100
            CpuAttentionTest.Pages a = pages(r, 1000, kvDim, pageTokens, type);
            CpuAttentionTest.Pages bTail = pages(r, 1100, kvDim, pageTokens, type);
            CpuAttentionTest.Pages cTail = pages(r, 1100, kvDim, pageTokens, type);
            CpuAttentionTest.Pages b = CpuAttentionTest.spliced(a, bTail, 400, 700, kvDim, pageTokens, type);
            CpuAttentionTest.Pages c = CpuAttentionTest.spliced(a, cTail, 992, 1100, kvDim, pageTokens, type);
            CpuAttentionTest.Pages[] seqs = {a, b, c, a};
            int[] length = {1000, 700, 1100, 600};
            float[] q = new float[seqs.length * heads * headDim];
            for (int i = 0; i < q.length; i++) q[i] = (float) (r.nextDouble() * 2 - 1);
            CpuAttention.Keys[] rows = new CpuAttention.Keys[seqs.length];
            for (int i = 0; i < seqs.length; i++) rows[i] = seqs[i].keys();
            CpuAttention nat = new CpuAttention(heads, kvHeads, headDim, k);
            float[] batched = new float[q.length];
            nat.attend(q, rows, length, batched, MANY);
            int width = heads * headDim;
            for (int t = 0; t < seqs.length; t++) {
                float[] alone = new float[width];
                nat.attend(Arrays.copyOfRange(q, t * width, (t + 1) * width), new CpuAttention.Keys[] {rows[t]}, new int[] {length[t]}, alone, ONE);
                assertArrayEquals(alone, Arrays.copyOfRange(batched, t * width, (t + 1) * width), variant + " " + type + " row " + t);
                for (int h = 0; h < heads; h++) {
                    double[] want = float64(q, (t * heads + h) * headDim, seqs[t], h / (heads / kvHeads), headDim, kvDim, length[t]);
                    for (int i = 0; i < headDim; i++) assertEquals(want[i], batched[(t * heads + h) * headDim + i], 2e-5, variant + " " + type + " row " + t);
                }
            }
        }
    }

    /**
     * Decode rows of sequences that share none, part or all of a prefix's pages, at different lengths, beside a
     * prefill chunk, on one, two and eight threads (the shared blocks read once for all their rows, the blocks split
     * across the threads by key block): every row equals the row alone bit for bit, and float64 within the bound.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void decodeRowsSharingNoneSomeOrAllPagesEqualEachRowAloneOnAnyThreadCount(NativeKernels.Variant variant) {
        NativeKernels k = kernels(variant);
        SplittableRandom r = new SplittableRandom(91);
        int heads = 8, kvHeads = 2, headDim = 64, kvDim = kvHeads * headDim, pageTokens = 16;
        for (KvElementType type : KvElementType.values()) {
            CpuAttentionTest.Pages a = pages(r, 1000, kvDim, pageTokens, type);
            CpuAttentionTest.Pages none = pages(r, 900, kvDim, pageTokens, type);                 // shares nothing
            CpuAttentionTest.Pages part = CpuAttentionTest.spliced(a, pages(r, 900, kvDim, pageTokens, type), 528, 900, kvDim, pageTokens, type);
            // a's pages under another sequence (a fork that has not written yet): shares them all
            CpuAttentionTest.Pages all = new CpuAttentionTest.Pages(new CpuAttention.Keys(a.keys().keys().clone(), a.keys().values().clone(), pageTokens,
                    type), a.k(), a.v());
            CpuAttentionTest.Pages[] seqs = {a, none, part, all, all, part, part, part, part};
            int[] length = {1000, 900, 900, 777, 1000, 896, 897, 898, 899};   // the last four: a prefill chunk of `part`
            float[] q = new float[seqs.length * heads * headDim];
            for (int i = 0; i < q.length; i++) q[i] = (float) (r.nextDouble() * 2 - 1);
            CpuAttention.Keys[] rows = new CpuAttention.Keys[seqs.length];
            for (int i = 0; i < seqs.length; i++) rows[i] = seqs[i].keys();
            CpuAttention nat = new CpuAttention(heads, kvHeads, headDim, k);
            int width = heads * headDim;
            float[][] alone = new float[seqs.length][width];
            for (int t = 0; t < seqs.length; t++) {
                nat.attend(Arrays.copyOfRange(q, t * width, (t + 1) * width), new CpuAttention.Keys[] {rows[t]}, new int[] {length[t]}, alone[t], ONE);
                for (int h = 0; h < heads; h++) {
                    double[] want = float64(q, (t * heads + h) * headDim, seqs[t], h / (heads / kvHeads), headDim, kvDim, length[t]);
                    for (int i = 0; i < headDim; i++) assertEquals(want[i], alone[t][h * headDim + i], 2e-5, variant + " " + type + " row " + t);
                }
            }
            for (WorkerPool pool : new WorkerPool[] {ONE, TWO, MANY}) {
                for (int decodeRows : new int[] {2, 4, 5, seqs.length}) {   // a, none; + part, all; + all again; + the chunk
                    float[] batched = new float[decodeRows * width];
                    nat.attend(Arrays.copyOf(q, decodeRows * width), Arrays.copyOf(rows, decodeRows), Arrays.copyOf(length, decodeRows), batched, pool);
                    for (int t = 0; t < decodeRows; t++) {
                        assertArrayEquals(alone[t], Arrays.copyOfRange(batched, t * width, (t + 1) * width),
                                variant + " " + type + " " + pool.threads() + " threads, " + decodeRows + " rows: row " + t);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aRowThatReadsPastItsPagesIsRefusedBeforeTheKernelRuns(NativeKernels.Variant variant) {
        NativeKernels k = kernels(variant);
        CpuAttentionTest.Pages kv = pages(new SplittableRandom(1), 40, 64, 16, KvElementType.F32);   // 3 pages: 48 positions
        CpuAttention nat = new CpuAttention(1, 1, 64, k);
        float[] q = new float[64], out = new float[64];
        assertThrows(IllegalArgumentException.class, () -> nat.attend(q, new CpuAttention.Keys[] {kv.keys()}, new int[] {49}, out, ONE));
        assertThrows(IllegalArgumentException.class, () -> nat.attend(q, new CpuAttention.Keys[] {kv.keys()}, new int[] {0}, out, ONE));
        nat.attend(q, new CpuAttention.Keys[] {kv.keys()}, new int[] {48}, out, ONE);   // the last position of the last page
        // quantised rows whose heads (of 16) are not whole blocks of 32: refused, though the row (2 × 16) is one block
        CpuAttentionTest.Pages q8 = pages(new SplittableRandom(2), 16, 32, 16, KvElementType.Q8_0);
        CpuAttention split = new CpuAttention(2, 2, 16, k);
        var e = assertThrows(IllegalArgumentException.class, () -> split.attend(new float[32], new CpuAttention.Keys[] {q8.keys()}, new int[] {16},
                new float[32], ONE));
        assertTrue(e.getMessage().contains("q8_0") && e.getMessage().contains("head dim 16"), e.getMessage());
    }

    /** K/V pages as CpuAttentionTest lays them out, in memory of this class's own (that test closes its arena). */
    static CpuAttentionTest.Pages pages(SplittableRandom r, int len, int kvDim, int pageTokens, KvElementType type) {
        if (type.quantised()) return CpuAttentionTest.quantisedPages(r, len, kvDim, pageTokens, type, java.lang.foreign.Arena.ofAuto(), null, null);
        int pages = (len + pageTokens - 1) / pageTokens;
        int bytes = type == KvElementType.F16 ? 2 : 4;
        java.lang.foreign.MemorySegment[] ks = new java.lang.foreign.MemorySegment[pages], vs = new java.lang.foreign.MemorySegment[pages];
        float[] k = new float[len * kvDim], v = new float[len * kvDim];
        var arena = java.lang.foreign.Arena.ofAuto();
        for (int p = 0; p < pages; p++) {
            ks[p] = arena.allocate((long) pageTokens * kvDim * bytes, 64);
            vs[p] = arena.allocate((long) pageTokens * kvDim * bytes, 64);
        }
        var f32 = java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.nativeOrder());
        var f16 = java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.nativeOrder());
        for (int p = 0; p < len; p++) {
            for (int i = 0; i < kvDim; i++) {
                long at = ((long) (p % pageTokens) * kvDim + i) * bytes;
                float kf = (float) (r.nextDouble() * 4 - 2), vf = (float) (r.nextDouble() * 2 - 1);
                if (type == KvElementType.F16) {
                    short kh = Float.floatToFloat16(kf), vh = Float.floatToFloat16(vf);
                    ks[p / pageTokens].set(f16, at, kh);
                    vs[p / pageTokens].set(f16, at, vh);
                    kf = Float.float16ToFloat(kh);
                    vf = Float.float16ToFloat(vh);
                } else {
                    ks[p / pageTokens].set(f32, at, kf);
                    vs[p / pageTokens].set(f32, at, vf);
                }
                k[p * kvDim + i] = kf;
                v[p * kvDim + i] = vf;
            }
        }
        return new CpuAttentionTest.Pages(new CpuAttention.Keys(ks, vs, pageTokens, type), k, v);
    }

    /** softmax(q·Kᵀ/√d)·V in float64 for one query head (KV head g) over positions [0, visible). */
    static double[] float64(float[] q, int qOff, CpuAttentionTest.Pages kv, int g, int headDim, int kvDim, int visible) {
        double[] s = new double[visible];
        double max = Double.NEGATIVE_INFINITY, sum = 0;
        for (int p = 0; p < visible; p++) {
            for (int i = 0; i < headDim; i++) s[p] += (double) q[qOff + i] * kv.k()[p * kvDim + g * headDim + i];
            s[p] /= Math.sqrt(headDim);
            max = Math.max(max, s[p]);
        }
        for (int p = 0; p < visible; p++) sum += s[p] = Math.exp(s[p] - max);
        double[] o = new double[headDim];
        for (int p = 0; p < visible; p++) {
            double w = s[p] / sum;
            for (int i = 0; i < headDim; i++) o[i] += w * kv.v()[p * kvDim + g * headDim + i];
        }
        return o;
    }
}
