package dev.forkpoint.backend.cpu;

import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvRowCodec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The blocked grouped-query attention against a float64 softmax written from the definition, over pages laid out as
 * the KV pool lays them out; and its invariants: a row's result is the same bit for bit alone or batched, on one
 * thread or many (the parallel-blocks path), F32, F16, Q8_0 and Q4_0 pages alike (quantised pages against float64 over
 * the values they read back as, the same bound).
 */
class CpuAttentionTest {
    static final WorkerPool ONE = new WorkerPool(1), MANY = new WorkerPool(8);
    static final Arena ARENA = Arena.ofShared();

    @AfterAll
    static void close() {
        ONE.close();
        MANY.close();
        ARENA.close();
    }

    static Stream<Arguments> shapes() {
        return Stream.of(
                Arguments.of(4, 4, 16, 1, KvElementType.F32),
                Arguments.of(8, 2, 64, 255, KvElementType.F32),
                Arguments.of(8, 2, 64, 256, KvElementType.F16),
                Arguments.of(8, 2, 64, 257, KvElementType.F32),
                Arguments.of(32, 8, 64, 1000, KvElementType.F32),
                Arguments.of(32, 8, 64, 1000, KvElementType.F16),
                Arguments.of(12, 4, 72, 2050, KvElementType.F32),   // a head size that is no multiple of the vector width
                Arguments.of(16, 2, 128, 700, KvElementType.F16),
                Arguments.of(8, 2, 64, 257, KvElementType.Q8_0),     // quantised: against float64 over the values read back
                Arguments.of(32, 8, 64, 1000, KvElementType.Q4_0),
                Arguments.of(16, 2, 128, 700, KvElementType.Q8_0),
                Arguments.of(4, 4, 32, 1, KvElementType.Q4_0));
    }

    /** K/V of {@code len} positions in pages of pageTokens rows of kvDim elements, and the floats they hold. */
    record Pages(CpuAttention.Keys keys, float[] k, float[] v) {}

    static Pages pages(SplittableRandom r, int len, int kvDim, int pageTokens, KvElementType type) {
        if (type.quantised()) return quantisedPages(r, len, kvDim, pageTokens, type, ARENA, null, null);
        int pages = (len + pageTokens - 1) / pageTokens;
        int bytes = type == KvElementType.F16 ? 2 : 4;
        MemorySegment[] ks = new MemorySegment[pages], vs = new MemorySegment[pages];
        float[] k = new float[len * kvDim], v = new float[len * kvDim];
        for (int p = 0; p < pages; p++) {
            ks[p] = ARENA.allocate((long) pageTokens * kvDim * bytes);
            vs[p] = ARENA.allocate((long) pageTokens * kvDim * bytes);
        }
        for (int p = 0; p < len; p++) {
            for (int i = 0; i < kvDim; i++) {
                long at = ((long) (p % pageTokens) * kvDim + i) * bytes;
                float kf = (float) (r.nextDouble() * 4 - 2), vf = (float) (r.nextDouble() * 2 - 1);
                if (type == KvElementType.F16) {
                    short kh = Float.floatToFloat16(kf), vh = Float.floatToFloat16(vf);
                    ks[p / pageTokens].set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.nativeOrder()), at, kh);
                    vs[p / pageTokens].set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.nativeOrder()), at, vh);
                    kf = Float.float16ToFloat(kh);
                    vf = Float.float16ToFloat(vh);
                } else {
                    ks[p / pageTokens].set(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.nativeOrder()), at, kf);
                    vs[p / pageTokens].set(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.nativeOrder()), at, vf);
                }
                k[p * kvDim + i] = kf;
                v[p * kvDim + i] = vf;
            }
        }
        return new Pages(new CpuAttention.Keys(ks, vs, pageTokens, type), k, v);
    }

    @org.junit.jupiter.api.Test
    void theSoftmaxExponentialIsWithinTwoTenMillionthsOfMathExpAndTheSameInVectorLanesAndAlone() {
        SplittableRandom r = new SplittableRandom(9);
        int n = 4099;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = i < 8 ? new float[] {0f, -1e-30f, -0.3465f, -0.3466f, -86.9f, -87.1f, -200f, -1f}[i] : (float) (-r.nextDouble() * 90);
        float[] lanes = x.clone();
        float sum = CpuAttention.expMinus(lanes, 0, n, 0f);
        double total = 0;
        for (int i = 0; i < n; i++) {
            assertEquals(Float.floatToIntBits(CpuAttention.expOf(x[i])), Float.floatToIntBits(lanes[i]), "x = " + x[i]);
            double want = x[i] < -87f ? 0 : Math.exp(x[i]);
            assertEquals(want, lanes[i], 2e-7 * want + Float.MIN_NORMAL, "x = " + x[i]);
            total += lanes[i];
        }
        assertEquals(total, sum, 1e-5 * total);   // a float sum of 4,099 terms
        assertEquals(1f, CpuAttention.expOf(0f));
    }

    @org.junit.jupiter.api.Test
    void theTreeSumAddsEveryLane() {
        float[] v = new float[KernelSupport.L];
        double want = 0;
        for (int i = 0; i < v.length; i++) want += v[i] = 1 << i;
        assertEquals(want, CpuAttention.treeSum(jdk.incubator.vector.FloatVector.fromArray(KernelSupport.F, v, 0)));
    }

    @ParameterizedTest
    @MethodSource("shapes")
    void equalsFloat64SoftmaxAndIsTheSameAloneBatchedAndOnAnyThreadCount(int heads, int kvHeads, int headDim, int len, KvElementType type) {
        SplittableRandom r = new SplittableRandom(heads * 31L + len);
        int kvDim = kvHeads * headDim;
        Pages kv = pages(r, len, kvDim, 96, type);
        // three rows on their own (decode rows), then a prefill chunk's 11 rows at consecutive positions ending at len
        // (tiles of 8 and 3)
        int[] length = java.util.stream.IntStream.concat(java.util.stream.IntStream.of(len, Math.max(1, len - 1), Math.max(1, len / 2)),
                java.util.stream.IntStream.rangeClosed(len - 10, len).map(x -> Math.max(1, x))).toArray();
        int tokens = length.length;
        float[] q = new float[tokens * heads * headDim];
        for (int i = 0; i < q.length; i++) q[i] = (float) (r.nextDouble() * 2 - 1);
        CpuAttention.Keys[] rows = new CpuAttention.Keys[tokens];
        Arrays.fill(rows, kv.keys());
        CpuAttention attention = new CpuAttention(heads, kvHeads, headDim);
        float[] batched = new float[q.length], many = new float[q.length];
        attention.attend(q, rows, length, batched, ONE);
        attention.attend(q, rows, length, many, MANY);
        assertArrayEquals(batched, many, "one thread and eight (blocks in parallel) agree bit for bit");
        int group = heads / kvHeads;
        for (int t = 0; t < tokens; t++) {
            float[] alone = new float[heads * headDim];
            attention.attend(Arrays.copyOfRange(q, t * heads * headDim, (t + 1) * heads * headDim), new CpuAttention.Keys[] {kv.keys()},
                    new int[] {length[t]}, alone, MANY);
            assertArrayEquals(alone, Arrays.copyOfRange(batched, t * heads * headDim, (t + 1) * heads * headDim), "row " + t + " alone");
            for (int h = 0; h < heads; h++) {
                int g = h / group, visible = length[t];
                double[] s = new double[visible];
                double max = Double.NEGATIVE_INFINITY, sum = 0;
                for (int p = 0; p < visible; p++) {
                    for (int i = 0; i < headDim; i++) s[p] += (double) q[(t * heads + h) * headDim + i] * kv.k()[p * kvDim + g * headDim + i];
                    s[p] /= Math.sqrt(headDim);
                    max = Math.max(max, s[p]);
                }
                for (int p = 0; p < visible; p++) sum += s[p] = Math.exp(s[p] - max);
                for (int i = 0; i < headDim; i++) {
                    double o = 0;
                    for (int p = 0; p < visible; p++) o += s[p] / sum * kv.v()[p * kvDim + g * headDim + i];
                    // float32 sums of up to 2,050 terms: a few units in the 6th digit of values of size ≤ 1
                    assertEquals(o, batched[(t * heads + h) * headDim + i], 2e-5, type + " row " + t + " head " + h + " dim " + i + " of " + visible);
                }
            }
        }
    }

    @org.junit.jupiter.api.Test
    void decodeRowsOfSequencesThatShareAPrefixsPagesEqualEachRowAlone() {
        SplittableRandom r = new SplittableRandom(77);
        int heads = 8, kvHeads = 2, headDim = 64, kvDim = kvHeads * headDim, pageTokens = 16;
        for (KvElementType type : KvElementType.values()) {
            // sequence a holds 1,000 positions; b shares a's pages up to position 400 (inside block 3), c up to 992
            // and goes on to 1,100: blocks 0-2 lie on the same pages for all three, block 3 for a and c only
            Pages a = pages(r, 1000, kvDim, pageTokens, type);
            Pages bTail = pages(r, 1100, kvDim, pageTokens, type), cTail = pages(r, 1100, kvDim, pageTokens, type);
            Pages b = spliced(a, bTail, 400, 700, kvDim, pageTokens, type);
            Pages c = spliced(a, cTail, 992, 1100, kvDim, pageTokens, type);
            Pages[] seqs = {a, b, c, a};
            int[] length = {1000, 700, 1100, 600};   // the last: a second decode row on a, shorter
            float[] q = new float[seqs.length * heads * headDim];
            for (int i = 0; i < q.length; i++) q[i] = (float) (r.nextDouble() * 2 - 1);
            CpuAttention.Keys[] rows = new CpuAttention.Keys[seqs.length];
            for (int i = 0; i < seqs.length; i++) rows[i] = seqs[i].keys();
            CpuAttention attention = new CpuAttention(heads, kvHeads, headDim);
            float[] batched = new float[q.length];
            attention.attend(q, rows, length, batched, MANY);
            for (int t = 0; t < seqs.length; t++) {
                float[] alone = new float[heads * headDim];
                attention.attend(Arrays.copyOfRange(q, t * heads * headDim, (t + 1) * heads * headDim), new CpuAttention.Keys[] {rows[t]},
                        new int[] {length[t]}, alone, ONE);
                assertArrayEquals(alone, Arrays.copyOfRange(batched, t * heads * headDim, (t + 1) * heads * headDim), type + " row " + t);
                for (int h = 0; h < heads; h++) {
                    int g = h / (heads / kvHeads);
                    double[] sc = new double[length[t]];
                    double max = Double.NEGATIVE_INFINITY, sum = 0;
                    for (int p = 0; p < length[t]; p++) {
                        for (int i = 0; i < headDim; i++) sc[p] += (double) q[(t * heads + h) * headDim + i] * seqs[t].k()[p * kvDim + g * headDim + i];
                        sc[p] /= Math.sqrt(headDim);
                        max = Math.max(max, sc[p]);
                    }
                    for (int p = 0; p < length[t]; p++) sum += sc[p] = Math.exp(sc[p] - max);
                    for (int i = 0; i < headDim; i++) {
                        double o = 0;
                        for (int p = 0; p < length[t]; p++) o += sc[p] / sum * seqs[t].v()[p * kvDim + g * headDim + i];
                        assertEquals(o, batched[(t * heads + h) * headDim + i], 2e-5, type + " row " + t + " head " + h);
                    }
                }
            }
        }
    }

    /**
     * Q8_0 / Q4_0 pages of {@code len} random rows (K in [−2, 2], V in [−1, 1]) stored as the pool stores them
     * ({@link KvRowCodec#store}); the Pages' floats are the values they read back as (the codec's reading is checked
     * against a decoding by hand in kv-cache's KvRowCodecTest). The rows before quantisation go to {@code originalK},
     * {@code originalV} when given.
     */
    static Pages quantisedPages(SplittableRandom r, int len, int kvDim, int pageTokens, KvElementType type, Arena arena,
                                float[] originalK, float[] originalV) {
        int pages = (len + pageTokens - 1) / pageTokens;
        long rowBytes = type.rowBytes(kvDim);
        MemorySegment[] ks = new MemorySegment[pages], vs = new MemorySegment[pages];
        for (int p = 0; p < pages; p++) {
            ks[p] = arena.allocate(pageTokens * rowBytes, 64);
            vs[p] = arena.allocate(pageTokens * rowBytes, 64);
        }
        float[] k = new float[len * kvDim], v = new float[len * kvDim], kRow = new float[kvDim], vRow = new float[kvDim];
        for (int p = 0; p < len; p++) {
            for (int i = 0; i < kvDim; i++) {
                kRow[i] = (float) (r.nextDouble() * 4 - 2);
                vRow[i] = (float) (r.nextDouble() * 2 - 1);
            }
            if (originalK != null) System.arraycopy(kRow, 0, originalK, p * kvDim, kvDim);
            if (originalV != null) System.arraycopy(vRow, 0, originalV, p * kvDim, kvDim);
            long at = (p % pageTokens) * rowBytes;
            KvRowCodec.store(type, kRow, 0, kvDim, ks[p / pageTokens], at);
            KvRowCodec.store(type, vRow, 0, kvDim, vs[p / pageTokens], at);
            KvRowCodec.load(type, ks[p / pageTokens], at, k, p * kvDim, kvDim);
            KvRowCodec.load(type, vs[p / pageTokens], at, v, p * kvDim, kvDim);
        }
        return new Pages(new CpuAttention.Keys(ks, vs, pageTokens, type), k, v);
    }

    /** {@code base}'s pages (the same slabs) for positions below {@code at} (a page boundary), then {@code tail}'s, to len. */
    static Pages spliced(Pages base, Pages tail, int at, int len, int kvDim, int pageTokens, KvElementType type) {
        int pages = (len + pageTokens - 1) / pageTokens;
        MemorySegment[] ks = new MemorySegment[pages], vs = new MemorySegment[pages];
        for (int p = 0; p < pages; p++) {
            boolean shared = p < at / pageTokens;
            ks[p] = shared ? base.keys().keys()[p] : tail.keys().keys()[p];
            vs[p] = shared ? base.keys().values()[p] : tail.keys().values()[p];
        }
        float[] k = new float[len * kvDim], v = new float[len * kvDim];
        System.arraycopy(base.k(), 0, k, 0, at * kvDim);
        System.arraycopy(base.v(), 0, v, 0, at * kvDim);
        System.arraycopy(tail.k(), at * kvDim, k, at * kvDim, (len - at) * kvDim);
        System.arraycopy(tail.v(), at * kvDim, v, at * kvDim, (len - at) * kvDim);
        return new Pages(new CpuAttention.Keys(ks, vs, pageTokens, type), k, v);
    }
}
