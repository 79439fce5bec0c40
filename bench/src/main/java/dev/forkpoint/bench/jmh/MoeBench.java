package dev.forkpoint.bench.jmh;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.ExpertWeights;
import dev.forkpoint.backend.ExpertWeights.ExpertRows;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.GgmlType;
import org.openjdk.jmh.annotations.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Mixture-of-experts decode on the CPU backend for a Qwen3.5-35B-A3B-like block: hidden 2048, 256 experts of
 * ffn 512, top-8, renormalised; gate and up fused in one [E, 2I, H] tensor, down [E, H, I]; an F32 router. One call
 * is one token (the time per token of the block), through {@code ops().moe}; the calls cycle through {@code inputs} seeded input
 * rows (64: each call routes to other experts; 1: a fixed row keeps its 8 experts in cache, for comparison).
 * <p>The weights are built in memory as valid blocks of random bits (Q4_0: an f16 scale and 16 random code bytes per
 * 32 values; MLX4_G64: random 4-bit codes with BF16 scale and bias per 64), no quantisation pass: about 450 MB of
 * experts, built in a second or two. Setup prints the expert bytes in all and the weight bytes one token read, as
 * counted by the kernels ({@link CpuBackend#moeWeightBytesRead}): router + 8 experts' gate, up and down rows,
 * about 3 % of the experts plus the router.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0"})
public class MoeBench {
    static final int HIDDEN = 2048, EXPERTS = 256, TOP_K = 8, FFN = 512;

    @Param({"Q4_0", "MLX4_G64"})
    public String type;

    @Param({"1", "2"})
    public int threads;

    /** Input rows cycled through: 64 (other experts each call, read from memory), 1 (the same 8 experts, hot in cache). */
    @Param({"64"})
    public int inputs;

    private Arena arena;
    private CpuBackend backend;
    private ExpertWeights experts;
    private Activation[] rows;
    private int next;

    @Setup
    public void setUp() {
        arena = Arena.ofShared();
        backend = new CpuBackend(threads);
        SplittableRandom rnd = new SplittableRandom(1);
        Weight router = backend.weight(f32("blk.0.ffn_gate_inp.weight", EXPERTS, HIDDEN, 0.05, rnd));
        Weight gateUp = matrix("blk.0.ffn_gate_up_exps.weight", EXPERTS * 2 * FFN, HIDDEN, rnd);
        Weight down = matrix("blk.0.ffn_down_exps.weight", EXPERTS * HIDDEN, FFN, rnd);
        experts = new ExpertWeights(router, new ExpertRows(gateUp, 2 * FFN, 0, FFN), new ExpertRows(gateUp, 2 * FFN, FFN, FFN),
                new ExpertRows(down, HIDDEN, 0, HIDDEN), EXPERTS, TOP_K, true);
        Weight table = backend.weight(f32("bench.rows", inputs, HIDDEN, 1.0, rnd));
        rows = new Activation[inputs];
        for (int i = 0; i < inputs; i++) rows[i] = backend.ops().embed(table, new int[] {i});

        long before = CpuBackend.moeWeightBytesRead();
        backend.ops().moe(rows[0], experts);
        long perToken = CpuBackend.moeWeightBytesRead() - before;
        long expertBytes = expertBytes(type);
        System.out.printf("%n[MoE %s] expert bytes: %d (%.1f MB), router %d; weight bytes read per token: %d (%.2f MB, %.2f %% of experts+router; "
                        + "expected %d)%n", type, expertBytes, expertBytes / 1e6, routerBytes(), perToken, perToken / 1e6,
                100.0 * perToken / (expertBytes + routerBytes()), bytesPerToken(type));
    }

    /** Bytes one decode token reads: the router plus top-k experts' gate, up and down rows. */
    static long bytesPerToken(String type) {
        return routerBytes() + TOP_K * (expertBytes(type) / EXPERTS);
    }

    static long routerBytes() {
        return (long) EXPERTS * HIDDEN * Float.BYTES;
    }

    /** All experts' gate, up and down bytes. */
    static long expertBytes(String type) {
        long values = (long) EXPERTS * (2L * FFN * HIDDEN + (long) HIDDEN * FFN);
        return type.equals("Q4_0") ? values / 32 * 18 : values / 2 + values / 64 * 4;
    }

    private GgmlTensor f32(String name, int rows, int cols, double sigma, SplittableRandom rnd) {
        MemorySegment data = arena.allocate((long) rows * cols * Float.BYTES, 64);
        for (long i = 0; i < (long) rows * cols; i++) {
            data.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) (rnd.nextGaussian() * sigma));
        }
        return new GgmlTensor(name, GgmlType.F32, new long[] {cols, rows}, data);
    }

    private Weight matrix(String name, int rows, int cols, SplittableRandom rnd) {
        ValueLayout.OfShort i16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        if (type.equals("Q4_0")) {
            long blocks = (long) rows * cols / 32;
            MemorySegment data = randomBytes(blocks * 18, rnd);
            short scale = Float.floatToFloat16(0.002f);
            for (long b = 0; b < blocks; b++) data.set(i16, b * 18, scale);
            return backend.weight(new GgmlTensor(name, GgmlType.Q4_0, new long[] {cols, rows}, data));
        }
        if (!type.equals("MLX4_G64")) throw new IllegalArgumentException("type " + type + ": Q4_0 or MLX4_G64");
        AffineFormat f = new AffineFormat(4, 64);
        long groups = (long) rows * cols / 64;
        MemorySegment packed = randomBytes((long) rows * f.packedBytesPerRow(cols), rnd);
        MemorySegment scales = arena.allocate(groups * 2, 64), biases = arena.allocate(groups * 2, 64);
        for (long g = 0; g < groups; g++) {
            scales.set(i16, 2 * g, (short) (Float.floatToRawIntBits(0.002f * (1 + 0.1f * (float) rnd.nextDouble())) >>> 16));
            biases.set(i16, 2 * g, (short) (Float.floatToRawIntBits(-0.015f) >>> 16));
        }
        return backend.weight(new AffineTensor(name, rows, cols, f, packed, GgmlType.BF16, scales, biases));
    }

    private MemorySegment randomBytes(long size, SplittableRandom rnd) {
        MemorySegment data = arena.allocate(size, 64);
        ValueLayout.OfLong i64 = ValueLayout.JAVA_LONG_UNALIGNED;
        long i = 0;
        for (; i + 8 <= size; i += 8) data.set(i64, i, rnd.nextLong());
        for (; i < size; i++) data.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        return data;
    }

    @TearDown
    public void tearDown() {
        backend.close();
        arena.close();
    }

    /** One token through the block (a different input row each call). */
    @Benchmark
    public Activation decodeToken() {
        Activation x = rows[next];
        next = (next + 1) % inputs;
        return backend.ops().moe(x, experts);
    }
}
