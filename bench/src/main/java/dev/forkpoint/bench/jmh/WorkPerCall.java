package dev.forkpoint.bench.jmh;

import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.GgmlType;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.function.Function;

/**
 * The work one call of a benchmark in this package does, from its class and parameters, so that its time per call
 * can be read as a rate: bytes moved (weights for the matrix kernels, K and V for attention, text for the tokenizer)
 * and floating-point operations (0 where counting them means nothing).
 *
 * @param bytes     bytes one call must read (for the tokenizer: UTF-8 bytes of text encoded or decoded)
 * @param flops     floating-point operations of one call (a multiply-add counts 2)
 * @param bytesWhat what the bytes are, for the table's header
 */
public record WorkPerCall(long bytes, long flops, String bytesWhat) {

    /** Bytes and flops per call of {@code benchmark} (its simple class name), or empty where no rate applies. */
    public static Optional<WorkPerCall> of(String benchmark, Function<String, String> param) {
        try {
            return switch (benchmark) {
                case "MatmulBench" -> {
                    String[] dims = param.apply("shape").split("x");
                    long rows = Long.parseLong(dims[0]), cols = Long.parseLong(dims[1]);
                    long tokens = Long.parseLong(param.apply("tokens"));
                    yield Optional.of(new WorkPerCall(matrixBytes(param.apply("type"), rows, cols),
                            2 * rows * cols * tokens, "weights"));
                }
                case "AttentionBench" -> {
                    long positions = Long.parseLong(param.apply("context")) + 1;
                    long rowBytes = dev.forkpoint.kvcache.KvElementType.valueOf(param.apply("kv"))
                            .rowBytes(AttentionBench.KV_HEADS * AttentionBench.HEAD_DIM);
                    String st = param.apply("streams");   // rows of forked sequences: the K/V read once, the flops per row
                    long streams = st == null ? 1 : Long.parseLong(st);
                    yield Optional.of(new WorkPerCall(2 * positions * rowBytes,
                            4L * AttentionBench.HEADS * AttentionBench.HEAD_DIM * positions * streams, "K+V"));
                }
                case "MoeBench" -> Optional.of(new WorkPerCall(MoeBench.bytesPerToken(param.apply("type")),
                        2L * MoeBench.HIDDEN * (MoeBench.EXPERTS + 3L * MoeBench.TOP_K * MoeBench.FFN), "weights read"));
                case "RopeBench" -> {
                    long values = Long.parseLong(param.apply("tokens")) * RopeBench.HEADS * RopeBench.HEAD_DIM;
                    yield Optional.of(new WorkPerCall(2 * values * Float.BYTES, 3 * values, "activations in+out"));
                }
                case "RmsNormBench" -> {
                    long size = Long.parseLong(param.apply("size"));
                    yield Optional.of(new WorkPerCall(3 * size * Float.BYTES, 4 * size, "x, gamma, out"));
                }
                case "TokenizerBench" -> Optional.of(new WorkPerCall(
                        TokenizerBench.text(TokenizerBench.TEXT_BYTES, 5).getBytes(StandardCharsets.UTF_8).length, 0, "text"));
                default -> Optional.empty();
            };
        } catch (RuntimeException e) {
            return Optional.empty();   // a parameter this table does not know (e.g. a type GgmlType cannot parse)
        }
    }

    /**
     * Bytes of a MatmulBench matrix: a GGML type's blocks; MLX&lt;bits&gt;_G&lt;group&gt; packed codes plus a BF16 scale and
     * bias per group; MXFP4, NVFP4, MXFP8 packed codes plus one scale byte per group.
     */
    static long matrixBytes(String type, long rows, long cols) {
        if (type.startsWith("MLX")) {
            String[] p = type.substring(3).split("_G");
            long bits = Long.parseLong(p[0]), group = Long.parseLong(p[1]);
            return rows * cols * bits / 8 + rows * (cols / group) * 4;
        }
        if (type.endsWith("FP4") || type.endsWith("FP8")) {
            FpFormat f = FpFormat.valueOf(type);
            return rows * cols * f.bits() / 8 + rows * (cols / f.groupSize());
        }
        return GgmlType.parse(type).bytesFor(rows * cols);
    }

    /** Bytes per second at {@code secondsPerCall}, in GB/s (10⁹). */
    public double gigabytesPerSecond(double secondsPerCall) {
        return bytes / secondsPerCall / 1e9;
    }

    /** Operations per second at {@code secondsPerCall}, in GFLOP/s (10⁹); NaN where flops are not counted. */
    public double gigaflopsPerSecond(double secondsPerCall) {
        return flops == 0 ? Double.NaN : flops / secondsPerCall / 1e9;
    }
}
