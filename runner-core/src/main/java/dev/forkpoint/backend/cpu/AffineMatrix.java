package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.I64;
import static dev.forkpoint.backend.cpu.KernelSupport.LE;

/**
 * An MLX affine-quantised matrix ({@link AffineTensor}) read in place: codes, scales and biases stay where the
 * tensor holds them (the mapped file); nothing is dequantised into a copy.
 * <p><b>Decode</b> (n ≤ {@link KernelSupport#DECODE_MAX_ROWS}) quantises the activations to Q8_0 blocks of 32
 * (d_k = f16(amax/127), q_x = rint(x·127/amax), as for Q4_0 and Q8_0 weights) and computes per row
 * <pre>Σ_k s_g(k) · d_k · Σ_{j∈k} q_j·q_x,j  +  Σ_g b_g · X_g,   X_g = Σ_{k∈g} d_k · Σ_{j∈k} q_x,j</pre>
 * where the group sums X_g are computed once per token. A row's scales and biases are converted to floats once
 * per row and call into a per-task scratch of one float per group (2·groups floats, shared by the call's tokens;
 * the weights themselves are never copied), so the hot loops read s_g from a float array and the bias term is a
 * vector dot product of b and X folded into the row's accumulators. The integer dot products are exact in 16-bit
 * lanes:
 * <ul>
 * <li>4 bits: each byte holds elements 2i (low nibble) and 2i+1 (high nibble); the activation quants are stored
 * de-interleaved per 2·WL elements (evens, then odds; WL = {@link KernelSupport#WL} shorts fill a register) so that
 * one wide byte load feeds two multiplies; a block's 32 products fold into WL short lanes, |Σ| ≤ 32/WL · 15 · 127
 * ≤ 7620, then into WL/2 int lanes.</li>
 * <li>8 bits: the codes are used as q − 128 (a byte's sign bit flipped, then sign-extended) and the bias as
 * b + 128·s; pairs of products fold into L lanes, |Σ| ≤ 2 · 128 · 127.</li>
 * <li>2, 3, 5, 6 bits: a row's codes are unpacked into a short scratch once per row (shared by all tokens of the
 * call) and multiplied like 8 bits without the offset (pairs, |Σ| ≤ 2 · 63 · 127).</li>
 * </ul>
 * Every token's dot products run the same code in the same order whatever the batch (row-outer, token-inner), so a
 * batch of decode rows gives bit-identical results to one row at a time. As in {@link Q4_0Matrix}, the per-lane work
 * is written out in place (no helpers taking or returning vectors: at 128 bits C2 stops inlining them and boxes).
 * <p><b>Prefill</b> goes through {@link FloatGemm} on the float activations, dequantising four rows at a time with
 * {@link #dequantizeRow} (vectorised at 4 and 8 bits).
 * <p><b>Native kernels</b> ({@link NativeKernels#affine}, {@code native/cpu/forkpoint_affine.c}): with them, 4- and
 * 8-bit matrices multiply every token count, decode and prefill alike, on the same Q8_0 activations and the same
 * group sums X_g as the Java decode kernel, as Σ_k (s_g·d_k)·Σ q·q_x + Σ_g b_g·X_g (integer block sums exact; the
 * float terms in the kernel's own lane order, so native and Java decode differ only by float rounding); a token's
 * results then never depend on the token count ({@link #invariantTokens}). 2, 3, 5 and 6 bits stay on the Java kernels.
 */
final class AffineMatrix implements PackedMatrix {
    private static final VectorSpecies<Short> S = KernelSupport.S;
    private static final VectorSpecies<Byte> B = KernelSupport.B;
    private static final int BL = KernelSupport.BL;
    private static final int BYTE_PARTS = KernelSupport.BYTE_PARTS;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final VectorSpecies<Integer> I = KernelSupport.I;
    private static final VectorSpecies<Short> W = KernelSupport.W;
    private static final VectorSpecies<Byte> WB = KernelSupport.WB;
    private static final VectorSpecies<Float> WF = KernelSupport.WF;
    private static final int WL = KernelSupport.WL;
    private static final int WFL = KernelSupport.WFL;
    private static final int L = KernelSupport.L;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(LE);

    private final AffineTensor tensor;
    private final MemorySegment packed;
    private final MemorySegment scales;
    private final MemorySegment biases;
    private final int rows;
    private final int cols;
    private final int bits;
    private final int blocks;      // 32-element blocks per row
    private final int groups;      // groups per row
    private final int groupShift;  // log2(group size / 32): block → group
    private final long rowBytes;
    private final int scaleKind;   // 0 F32, 1 F16, 2 BF16
    private final NativeKernels nativeKernels;   // null: the Java kernels (always at 2, 3, 5, 6 bits)

    AffineMatrix(AffineTensor t) {
        this(t, null);
    }

    /** With {@code nativeKernels} (null: none), which then multiply every token count at 4 and 8 bits. */
    AffineMatrix(AffineTensor t, NativeKernels nativeKernels) {
        AffineFormat f = t.format();
        this.tensor = t;
        this.packed = t.packed();
        this.scales = t.scales();
        this.biases = t.biases();
        this.rows = t.rows();
        this.cols = t.cols();
        this.bits = f.bits();
        this.blocks = cols / 32;
        this.groups = t.groupsPerRow();
        this.groupShift = Integer.numberOfTrailingZeros(f.groupSize() / 32);
        this.rowBytes = f.packedBytesPerRow(cols);
        this.scaleKind = switch (t.scaleType()) {
            case F16 -> 1;
            case BF16 -> 2;
            default -> 0;
        };
        this.nativeKernels = bits == 4 || bits == 8 ? nativeKernels : null;
    }

    public int invariantTokens() {
        return NativeKernels.invariantTokens(nativeKernels);
    }

    /** Which kernels multiply: "java", or the native variant ("native avx512vnni"). */
    String kernels() { return nativeKernels == null ? "java" : "native " + nativeKernels.variant().suffix; }

    public String typeName() { return tensor.format().typeName(); }
    public int rows() { return rows; }
    public int cols() { return cols; }
    public long rowBytes() { return rowBytes + 2L * groups * (scaleKind == 0 ? 4 : 2); }

    public void multiplyRows(int firstRow, int rowCount, float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, firstRow, rowCount, x, n, out);
        if (nativeKernels != null) {   // decode and prefill alike: a token's results do not depend on n
            Q8Activations a = Q8Activations.q8_0(x, n, cols);
            float[] d = a.d();
            float[] xs = groupSums(a.q(), d, n);
            byte[] codes = bits == 4 ? nibbleOrder(a.q()) : a.codes();
            // slices of whole 16-row tiles (the VNNI kernels' unit; a slice's last tile may be partial)
            pool.runRanges(rowCount, KernelSupport.parts(pool), 16, (from, to) -> nativeKernels.affine(bits, packed, scales,
                    biases, scaleKind, groupShift, rowBytes, groups, firstRow + from, to - from, blocks, codes, d, xs, n,
                    out, from, rowCount));
            return;
        }
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, firstRow, rowCount, x, n, out, pool);
            return;
        }
        Q8Activations a = Q8Activations.q8_0(x, n, cols);
        float[] d = a.d();
        float[] xs = groupSums(a.q(), d, n);
        short[] q = bits == 4 ? deinterleave(a.q()) : a.q();
        pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> {
            float[] sc = new float[groups], bs = new float[groups], lanes = new float[KernelSupport.WFL];
            if (bits == 4) {
                for (int r = firstRow + from; r < firstRow + to; r++) {
                    rowScales(r, sc, bs);
                    for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dot4(r, q, d, t, sc, bs, xs, lanes);
                }
            } else if (bits == 8) {
                for (int r = firstRow + from; r < firstRow + to; r++) {
                    rowScales(r, sc, bs);
                    for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dot8(r, q, d, t, sc, bs, xs);
                }
            } else {
                short[] codes = new short[cols];
                for (int r = firstRow + from; r < firstRow + to; r++) {
                    unpackRow(r, codes);
                    rowScales(r, sc, bs);
                    for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dotCodes(codes, q, d, t, sc, bs, xs);
                }
            }
        });
    }

    /** X_g per token and group: Σ over the group's blocks of d_k · Σ q_x (the block sums are exact integers). */
    private float[] groupSums(short[] q, float[] d, int n) {
        float[] xs = new float[n * groups];
        int perGroup = 1 << groupShift;
        for (int t = 0; t < n; t++) {
            for (int g = 0; g < groups; g++) {
                float s = 0;
                for (int k = 0; k < perGroup; k++) {
                    int b = t * blocks + g * perGroup + k, sum = 0;
                    for (int j = b * 32; j < b * 32 + 32; j++) sum += q[j];
                    s += d[b] * sum;
                }
                xs[t * groups + g] = s;
            }
        }
        return xs;
    }

    /**
     * The native 4-bit kernels' activation order, as bytes: per block of 32, the 16 even-indexed quants (which meet the
     * codes' low nibbles), then the 16 odd-indexed ones (high nibbles).
     */
    private static byte[] nibbleOrder(short[] q) {
        byte[] p = new byte[q.length];
        for (int c = 0; c < q.length; c += 32) {
            for (int i = 0; i < 16; i++) {
                p[c + i] = (byte) q[c + 2 * i];
                p[c + 16 + i] = (byte) q[c + 2 * i + 1];
            }
        }
        return p;
    }

    /** The 4-bit kernel's activation order: per 2·WL quants, the WL even-indexed ones, then the WL odd-indexed ones. */
    private static short[] deinterleave(short[] q) {
        short[] p = new short[q.length];
        for (int c = 0; c < q.length; c += 2 * WL) {
            for (int i = 0; i < WL; i++) {
                p[c + i] = q[c + 2 * i];
                p[c + WL + i] = q[c + 2 * i + 1];
            }
        }
        return p;
    }

    /**
     * Row r's scales and the biases the kernels pair with their codes (b, or b + 128·s for 8 bits, whose codes the
     * kernels use as q − 128) as floats, into the caller's scratch of one float per group. Converted once per row
     * and call (shared by all tokens) instead of once per block and token: the hot loops read plain floats.
     */
    private void rowScales(int r, float[] sc, float[] bs) {
        long g0 = (long) r * groups;
        switch (scaleKind) {
            case 1 -> {
                int g = 0;
                for (; g + L <= groups; g += L) {
                    long at = 2 * (g0 + g);
                    IntVector hs = (IntVector) ShortVector.fromMemorySegment(S, scales, at, LE).convertShape(VectorOperators.S2I, I, 0);
                    IntVector hb = (IntVector) ShortVector.fromMemorySegment(S, biases, at, LE).convertShape(VectorOperators.S2I, I, 0);
                    // Infinities and NaNs (exponent 31) take the table below; the rest convert exactly in vectors.
                    if (hs.and(0x7c00).compare(VectorOperators.EQ, 0x7c00).or(hb.and(0x7c00).compare(VectorOperators.EQ, 0x7c00)).anyTrue()) break;
                    halfToFloat(hs).intoArray(sc, g);
                    halfToFloat(hb).intoArray(bs, g);
                }
                float[] half = KernelSupport.HALF_TO_FLOAT;
                for (; g < groups; g++) {
                    sc[g] = half[scales.get(I16, 2 * (g0 + g)) & 0xffff];
                    bs[g] = half[biases.get(I16, 2 * (g0 + g)) & 0xffff];
                }
            }
            case 2 -> {
                int g = 0;
                for (; g + L <= groups; g += L) {
                    long at = 2 * (g0 + g);
                    ((IntVector) ShortVector.fromMemorySegment(S, scales, at, LE).convertShape(VectorOperators.S2I, I, 0))
                            .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(sc, g);
                    ((IntVector) ShortVector.fromMemorySegment(S, biases, at, LE).convertShape(VectorOperators.S2I, I, 0))
                            .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(bs, g);
                }
                for (; g < groups; g++) {
                    sc[g] = Float.intBitsToFloat(scales.get(I16, 2 * (g0 + g)) << 16);
                    bs[g] = Float.intBitsToFloat(biases.get(I16, 2 * (g0 + g)) << 16);
                }
            }
            default -> {
                int g = 0;
                for (; g + L <= groups; g += L) {
                    FloatVector.fromMemorySegment(F, scales, 4 * (g0 + g), LE).intoArray(sc, g);
                    FloatVector.fromMemorySegment(F, biases, 4 * (g0 + g), LE).intoArray(bs, g);
                }
                for (; g < groups; g++) {
                    sc[g] = scales.get(F32, 4 * (g0 + g));
                    bs[g] = biases.get(F32, 4 * (g0 + g));
                }
            }
        }
        if (bits == 8) {
            for (int g = 0; g < groups; g++) bs[g] += 128f * sc[g];
        }
    }

    /**
     * Finite float16 values (sign-extended in int lanes) as floats, exactly: the exponent and mantissa bits moved to
     * float's positions and multiplied by 2^112 (which rebiases normal numbers and turns subnormal halves, read as
     * subnormal floats, into their normal values), the sign put back. Called once per row on L groups, off the
     * per-block path, so its vectors are not an issue for C2's inlining.
     */
    static FloatVector halfToFloat(IntVector h) {
        FloatVector magnitude = h.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f);
        return magnitude.reinterpretAsInts().or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
    }

    /**
     * 4 bits: Σ_k s · d_k · Σ q·q_x over the row's 32-element blocks (16 bytes each). Per block, 16/WL wide byte
     * loads, each giving WL low nibbles (elements 2j …, even) and WL high nibbles (odd), multiplied with the
     * de-interleaved activation quants and summed lane-wise in one wide short vector, whose lane pairs are folded into
     * WL/2 ints, converted once and added by an FMA; even and odd blocks go to two accumulators.
     */
    private float dot4(int r, short[] q, float[] d, int t, float[] sc, float[] bs, float[] xs, float[] lanes) {
        MemorySegment w = packed;
        long base = r * rowBytes;
        int b0 = t * blocks;
        int gs = groupShift, x0 = t * groups;
        FloatVector acc0 = FloatVector.zero(WF), acc1 = acc0;
        int g = 0;
        for (; g + WFL <= groups; g += WFL) acc1 = FloatVector.fromArray(WF, bs, g).fma(FloatVector.fromArray(WF, xs, x0 + g), acc1);
        float tail = 0;
        for (; g < groups; g++) tail += bs[g] * xs[x0 + g];
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long o = base + (long) b * 16;
            int bi = b0 + b;
            ShortVector p = ShortVector.zero(W);
            for (int j = 0; j < 16; j += WL) {
                ShortVector v = (ShortVector) ByteVector.fromMemorySegment(WB, w, o + j, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, W, 0);
                int qi = bi * 32 + 2 * j;
                p = p.add(v.and((short) 0xf).mul(ShortVector.fromArray(W, q, qi)))
                        .add(v.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(W, q, qi + WL)));
            }
            IntVector x = p.reinterpretAsInts();
            IntVector s = x.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(x.lanewise(VectorOperators.ASHR, 16));
            acc0 = ((FloatVector) s.convertShape(VectorOperators.I2F, WF, 0))
                    .fma(FloatVector.broadcast(WF, sc[b >> gs] * d[bi]), acc0);
            long o1 = o + 16;
            int bi1 = bi + 1;
            ShortVector p1 = ShortVector.zero(W);
            for (int j = 0; j < 16; j += WL) {
                ShortVector u = (ShortVector) ByteVector.fromMemorySegment(WB, w, o1 + j, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, W, 0);
                int qi = bi1 * 32 + 2 * j;
                p1 = p1.add(u.and((short) 0xf).mul(ShortVector.fromArray(W, q, qi)))
                        .add(u.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(W, q, qi + WL)));
            }
            IntVector x1 = p1.reinterpretAsInts();
            IntVector s1 = x1.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(x1.lanewise(VectorOperators.ASHR, 16));
            acc1 = ((FloatVector) s1.convertShape(VectorOperators.I2F, WF, 0))
                    .fma(FloatVector.broadcast(WF, sc[(b + 1) >> gs] * d[bi1]), acc1);
        }
        if (b < blocks) {
            long o = base + (long) b * 16;
            int bi = b0 + b;
            ShortVector p = ShortVector.zero(W);
            for (int j = 0; j < 16; j += WL) {
                ShortVector v = (ShortVector) ByteVector.fromMemorySegment(WB, w, o + j, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, W, 0);
                int qi = bi * 32 + 2 * j;
                p = p.add(v.and((short) 0xf).mul(ShortVector.fromArray(W, q, qi)))
                        .add(v.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(W, q, qi + WL)));
            }
            IntVector x = p.reinterpretAsInts();
            IntVector s = x.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(x.lanewise(VectorOperators.ASHR, 16));
            acc0 = ((FloatVector) s.convertShape(VectorOperators.I2F, WF, 0))
                    .fma(FloatVector.broadcast(WF, sc[b >> gs] * d[bi]), acc0);
        }
        acc0.add(acc1).intoArray(lanes, 0);
        return KernelSupport.sumWide(lanes) + tail;
    }

    /**
     * 8 bits: Σ_k s · d_k · Σ (q − 128)·q_x over the row's 32-byte blocks: per block, 32/(2L) pair sums of two byte
     * loads (sign bit flipped, sign-extended) times the activation quants, each converted and added by an FMA; even
     * and odd blocks go to two accumulators.
     */
    private float dot8(int r, short[] q, float[] d, int t, float[] sc, float[] bs, float[] xs) {
        MemorySegment w = packed;
        long base = r * rowBytes;
        int b0 = t * blocks;
        int gs = groupShift, x0 = t * groups;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int g = 0;
        for (; g + L <= groups; g += L) acc1 = FloatVector.fromArray(F, bs, g).fma(FloatVector.fromArray(F, xs, x0 + g), acc1);
        float tail = 0;
        for (; g < groups; g++) tail += bs[g] * xs[x0 + g];
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long o = base + (long) b * 32;
            int bi = b0 + b;
            FloatVector s0 = FloatVector.broadcast(F, sc[b >> gs] * d[bi]);
            for (int j = 0; j < 32; j += 2 * L) {
                ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + (j & -BL), LE)
                        .lanewise(VectorOperators.XOR, (byte) 0x80)
                        .convertShape(VectorOperators.B2S, S, (j / L) & (BYTE_PARTS - 1));
                ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + ((j + L) & -BL), LE)
                        .lanewise(VectorOperators.XOR, (byte) 0x80)
                        .convertShape(VectorOperators.B2S, S, ((j + L) / L) & (BYTE_PARTS - 1));
                int qi = bi * 32 + j;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + L)));
                acc0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s0, acc0);
            }
            long o1 = o + 32;
            int bi1 = bi + 1;
            FloatVector s1 = FloatVector.broadcast(F, sc[(b + 1) >> gs] * d[bi1]);
            for (int j = 0; j < 32; j += 2 * L) {
                ShortVector u0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o1 + (j & -BL), LE)
                        .lanewise(VectorOperators.XOR, (byte) 0x80)
                        .convertShape(VectorOperators.B2S, S, (j / L) & (BYTE_PARTS - 1));
                ShortVector u1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o1 + ((j + L) & -BL), LE)
                        .lanewise(VectorOperators.XOR, (byte) 0x80)
                        .convertShape(VectorOperators.B2S, S, ((j + L) / L) & (BYTE_PARTS - 1));
                int qi = bi1 * 32 + j;
                ShortVector p = u0.mul(ShortVector.fromArray(S, q, qi)).add(u1.mul(ShortVector.fromArray(S, q, qi + L)));
                acc1 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s1, acc1);
            }
        }
        if (b < blocks) {
            long o = base + (long) b * 32;
            int bi = b0 + b;
            FloatVector s0 = FloatVector.broadcast(F, sc[b >> gs] * d[bi]);
            for (int j = 0; j < 32; j += 2 * L) {
                ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + (j & -BL), LE)
                        .lanewise(VectorOperators.XOR, (byte) 0x80)
                        .convertShape(VectorOperators.B2S, S, (j / L) & (BYTE_PARTS - 1));
                ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + ((j + L) & -BL), LE)
                        .lanewise(VectorOperators.XOR, (byte) 0x80)
                        .convertShape(VectorOperators.B2S, S, ((j + L) / L) & (BYTE_PARTS - 1));
                int qi = bi * 32 + j;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + L)));
                acc0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s0, acc0);
            }
        }
        return KernelSupport.sum(acc0.add(acc1)) + tail;
    }

    /** 2, 3, 5, 6 bits: Σ_k s · d_k · Σ q·q_x over a row's codes unpacked to shorts (pair sums, as {@link #dot8}). */
    private float dotCodes(short[] c, short[] q, float[] d, int t, float[] sc, float[] bs, float[] xs) {
        int b0 = t * blocks;
        int gs = groupShift, x0 = t * groups;
        FloatVector acc = FloatVector.zero(F);
        int g = 0;
        for (; g + L <= groups; g += L) acc = FloatVector.fromArray(F, bs, g).fma(FloatVector.fromArray(F, xs, x0 + g), acc);
        float tail = 0;
        for (; g < groups; g++) tail += bs[g] * xs[x0 + g];
        for (int b = 0; b < blocks; b++) {
            FloatVector s = FloatVector.broadcast(F, sc[b >> gs] * d[b0 + b]);
            for (int j = 0; j < 32; j += 2 * L) {
                int ci = b * 32 + j, qi = (b0 + b) * 32 + j;
                ShortVector p = ShortVector.fromArray(S, c, ci).mul(ShortVector.fromArray(S, q, qi))
                        .add(ShortVector.fromArray(S, c, ci + L).mul(ShortVector.fromArray(S, q, qi + L)));
                acc = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s, acc);
            }
        }
        return KernelSupport.sum(acc) + tail;
    }

    /** Row r's codes as shorts: 8 codes fill exactly {@code bits} bytes, read as one little-endian long. */
    private void unpackRow(int r, short[] codes) {
        long base = r * rowBytes, size = packed.byteSize();
        long mask = (1L << bits) - 1;
        for (int c = 0; c < cols; c += 8) {
            long o = base + (long) c / 8 * bits;
            long v;
            if (o + 8 <= size) {
                v = packed.get(I64, o);
            } else {
                v = 0;
                for (int k = 0; k < bits; k++) v |= (packed.get(ValueLayout.JAVA_BYTE, o + k) & 0xffL) << (8 * k);
            }
            for (int k = 0; k < 8; k++) codes[c + k] = (short) ((v >>> (k * bits)) & mask);
        }
    }

    /** Output lanes 0 … L−1 of interleaving a (even elements) with b (odd elements): a0 b0 a1 b1 …; and lanes L … 2L−1. */
    private static final VectorShuffle<Float> ZIP_LOW = VectorShuffle.fromOp(F, j -> (j & 1) == 0 ? j / 2 : L + j / 2);
    private static final VectorShuffle<Float> ZIP_HIGH = VectorShuffle.fromOp(F, j -> (j & 1) == 0 ? L / 2 + j / 2 : L + L / 2 + j / 2);

    /**
     * s·q + b for every element of the row (what prefill's {@link FloatGemm} and embedding lookups read): 4 and 8 bits
     * vectorised, L bytes at a time (at 4 bits the low and high nibbles are the even and odd elements, interleaved back
     * with a two-vector shuffle); the other widths through {@link AffineCodec#dequantizeRow}. Multiply then add, not
     * fused, so the values equal the codec's bit for bit.
     */
    public void dequantizeRow(int row, float[] dst, int dstOff) {
        KernelSupport.checkRow(this, row, dst, dstOff);
        if (bits != 4 && bits != 8) {
            AffineCodec.dequantizeRow(tensor, row, dst, dstOff);
            return;
        }
        long base = (long) row * rowBytes;
        long g0 = (long) row * groups;
        int elementShift = groupShift + 5;   // element → group: / group size
        for (long o = 0; o < rowBytes; o += BL) {
            ByteVector bytes = ByteVector.fromMemorySegment(B, packed, base + o, LE);
            for (int part = 0; part < BYTE_PARTS; part++) {
                IntVector v = (IntVector) bytes.convertShape(VectorOperators.ZERO_EXTEND_B2I, I, part);
                if (bits == 4) {
                    int e = (int) (2 * o) + part * 2 * L;
                    long g = g0 + (e >> elementShift);
                    float s = scaleAt(g), b = biasAt(g);
                    FloatVector even = ((FloatVector) v.and(0xf).convertShape(VectorOperators.I2F, F, 0)).mul(s).add(b);
                    FloatVector odd = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).convertShape(VectorOperators.I2F, F, 0)).mul(s).add(b);
                    even.rearrange(ZIP_LOW, odd).intoArray(dst, dstOff + e);
                    even.rearrange(ZIP_HIGH, odd).intoArray(dst, dstOff + e + L);
                } else {
                    int e = (int) o + part * L;
                    long g = g0 + (e >> elementShift);
                    ((FloatVector) v.convertShape(VectorOperators.I2F, F, 0)).mul(scaleAt(g)).add(biasAt(g)).intoArray(dst, dstOff + e);
                }
            }
        }
    }

    private float scaleAt(long i) { return halfOrFloat(scales, i); }

    private float biasAt(long i) { return halfOrFloat(biases, i); }

    private float halfOrFloat(MemorySegment m, long i) {
        return switch (scaleKind) {
            case 1 -> KernelSupport.HALF_TO_FLOAT[m.get(I16, 2 * i) & 0xffff];
            case 2 -> Float.intBitsToFloat(m.get(I16, 2 * i) << 16);
            default -> m.get(F32, 4 * i);
        };
    }
}
