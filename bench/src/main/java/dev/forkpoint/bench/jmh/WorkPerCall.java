package dev.forkpoint.bench.jmh;

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
                    yield Optional.of(new WorkPerCall(GgmlType.parse(param.apply("type")).bytesFor(rows * cols),
                            2 * rows * cols * tokens, "weights"));
                }
                case "AttentionBench" -> {
                    long positions = Long.parseLong(param.apply("context")) + 1;
                    int element = param.apply("kv").equals("F16") ? 2 : 4;
                    long kvDim = AttentionBench.KV_HEADS * AttentionBench.HEAD_DIM;
                    yield Optional.of(new WorkPerCall(2 * positions * kvDim * element,
                            4L * AttentionBench.HEADS * AttentionBench.HEAD_DIM * positions, "K+V"));
                }
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

    /** Bytes per second at {@code secondsPerCall}, in GB/s (10⁹). */
    public double gigabytesPerSecond(double secondsPerCall) {
        return bytes / secondsPerCall / 1e9;
    }

    /** Operations per second at {@code secondsPerCall}, in GFLOP/s (10⁹); NaN where flops are not counted. */
    public double gigaflopsPerSecond(double secondsPerCall) {
        return flops == 0 ? Double.NaN : flops / secondsPerCall / 1e9;
    }
}
