package dev.forkpoint.backend.cpu;

import dev.forkpoint.kvcache.KvElementType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Attention over Q8_0 / Q4_0 KV pages, in Java and in every native variant this machine runs:
 * <ul>
 * <li>the same bits as over F32 pages that hold the values the quantised ones read back as (both kernels convert a
 *     quantised row to floats exactly, then compute as for F32);</li>
 * <li>against float64 attention over the rows as they were before quantisation, within the bound the README states:
 *     per (row, head), |o − ô| ≤ ε_V + (e^{2Δ} − 1)·max|v| + 3·10⁻⁵, where ε_V is the largest error of a stored V
 *     element of that head, Δ = scale·Σ_d |q_d|·ε_K the largest change of a score (ε_K the largest K element error)
 *     — the softmax weights then move by at most a factor e^{±2Δ}.</li>
 * </ul>
 */
class QuantisedKvAttentionTest {
    static final WorkerPool POOL = new WorkerPool(4);
    static final Arena ARENA = Arena.ofShared();

    @AfterAll
    static void close() {
        POOL.close();
        ARENA.close();
    }

    /** (variant or null for Java, type, heads, kvHeads, headDim, length). */
    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        List<NativeKernels.Variant> kernels = new ArrayList<>(Arrays.asList(NativeKernels.Variant.values()));
        kernels.add(null);
        for (NativeKernels.Variant v : kernels) {
            for (KvElementType type : new KvElementType[] {KvElementType.Q8_0, KvElementType.Q4_0}) {
                out.add(Arguments.of(v, type, 8, 2, 64, 600));
                out.add(Arguments.of(v, type, 4, 4, 128, 700));
            }
        }
        return out.stream();
    }

    @ParameterizedTest
    @MethodSource("cases")
    void equalsAttentionOverTheValuesReadBackAndStaysWithinTheStatedBoundOfTheOriginals(NativeKernels.Variant variant, KvElementType type,
                                                                                     int heads, int kvHeads, int headDim, int len) {
        NativeKernels k = variant == null ? null : NativeVariants.kernels(variant, QuantisedKvAttentionTest.class);
        SplittableRandom r = new SplittableRandom(len * 31L + headDim);
        int kvDim = kvHeads * headDim, pageTokens = 16, width = heads * headDim;
        float[] k0 = new float[len * kvDim], v0 = new float[len * kvDim];
        CpuAttentionTest.Pages quant = CpuAttentionTest.quantisedPages(r, len, kvDim, pageTokens, type, ARENA, k0, v0);
        CpuAttentionTest.Pages read = f32Pages(quant, len, kvDim, pageTokens);
        int[] length = {len, len / 2, 1, len - 7, len - 6, len - 5};   // decode rows, then a tile of three
        float[] q = new float[length.length * width];
        for (int i = 0; i < q.length; i++) q[i] = (float) (r.nextDouble() * 2 - 1);
        CpuAttention attention = new CpuAttention(heads, kvHeads, headDim, k);
        float[] onQuant = new float[q.length], onF32 = new float[q.length];
        CpuAttention.Keys[] qRows = new CpuAttention.Keys[length.length], fRows = new CpuAttention.Keys[length.length];
        Arrays.fill(qRows, quant.keys());
        Arrays.fill(fRows, read.keys());
        attention.attend(q, qRows, length, onQuant, POOL);
        attention.attend(q, fRows, length, onF32, POOL);
        String who = (variant == null ? "java" : variant.toString()) + " " + type;
        assertArrayEquals(onF32, onQuant, who + ": quantised pages = F32 pages of the values they read back as, bit for bit");

        int group = heads / kvHeads;
        double scale = 1 / Math.sqrt(headDim), worst = 0, worstBound = Double.MAX_VALUE;
        for (int t = 0; t < length.length; t++) {
            for (int h = 0; h < heads; h++) {
                int g = h / group, qOff = (t * heads + h) * headDim;
                double epsK = 0, epsV = 0, maxV = 0, qAbs = 0;
                for (int p = 0; p < length[t]; p++) {
                    for (int i = 0; i < headDim; i++) {
                        int at = p * kvDim + g * headDim + i;
                        epsK = Math.max(epsK, Math.abs((double) k0[at] - quant.k()[at]));
                        epsV = Math.max(epsV, Math.abs((double) v0[at] - quant.v()[at]));
                        maxV = Math.max(maxV, Math.abs(v0[at]));
                    }
                }
                for (int i = 0; i < headDim; i++) qAbs += Math.abs(q[qOff + i]);
                double delta = scale * qAbs * epsK;
                double bound = epsV + Math.expm1(2 * delta) * maxV + 3e-5;
                double[] want = float64(q, qOff, k0, v0, g, headDim, kvDim, length[t]);
                for (int i = 0; i < headDim; i++) {
                    double err = Math.abs(want[i] - onQuant[qOff + i]);
                    worst = Math.max(worst, err);
                    worstBound = Math.min(worstBound, bound);
                    assertTrue(err <= bound, who + " row " + t + " head " + h + " dim " + i + ": error " + err + " > bound " + bound);
                }
            }
        }
        assertTrue(worst > 1e-5, who + ": quantisation should move the result (worst " + worst + ")");
        System.err.printf("QuantisedKvAttentionTest %s heads %d/%d dim %d len %d: worst |o - float64(originals)| = %.3g (tightest bound %.3g)%n",
                who, heads, kvHeads, headDim, len, worst, worstBound);
    }

    /** F32 pages holding {@code quant}'s values as read back. */
    private static CpuAttentionTest.Pages f32Pages(CpuAttentionTest.Pages quant, int len, int kvDim, int pageTokens) {
        int pages = (len + pageTokens - 1) / pageTokens;
        MemorySegment[] ks = new MemorySegment[pages], vs = new MemorySegment[pages];
        ValueLayout.OfFloat f = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.nativeOrder());
        for (int p = 0; p < pages; p++) {
            ks[p] = ARENA.allocate(4L * pageTokens * kvDim, 64);
            vs[p] = ARENA.allocate(4L * pageTokens * kvDim, 64);
        }
        for (int p = 0; p < len; p++) {
            for (int i = 0; i < kvDim; i++) {
                long at = 4L * ((p % pageTokens) * kvDim + i);
                ks[p / pageTokens].set(f, at, quant.k()[p * kvDim + i]);
                vs[p / pageTokens].set(f, at, quant.v()[p * kvDim + i]);
            }
        }
        return new CpuAttentionTest.Pages(new CpuAttention.Keys(ks, vs, pageTokens, KvElementType.F32), quant.k(), quant.v());
    }

    private static double[] float64(float[] q, int qOff, float[] k, float[] v, int g, int headDim, int kvDim, int visible) {
        double[] s = new double[visible];
        double max = Double.NEGATIVE_INFINITY, sum = 0;
        for (int p = 0; p < visible; p++) {
            for (int i = 0; i < headDim; i++) s[p] += (double) q[qOff + i] * k[p * kvDim + g * headDim + i];
            s[p] /= Math.sqrt(headDim);
            max = Math.max(max, s[p]);
        }
        for (int p = 0; p < visible; p++) sum += s[p] = Math.exp(s[p] - max);
        double[] o = new double[headDim];
        for (int p = 0; p < visible; p++) {
            for (int i = 0; i < headDim; i++) o[i] += s[p] / sum * v[p * kvDim + g * headDim + i];
        }
        return o;
    }
}
