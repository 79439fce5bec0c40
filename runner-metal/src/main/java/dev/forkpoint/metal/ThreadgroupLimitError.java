package dev.forkpoint.metal;

import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * MLX's refusal of a threadgroup larger than its pipeline allows, parsed from the error message. MLX's Metal backend
 * checks each dispatch against {@code maxTotalThreadsPerThreadgroup} and throws "Maximum threads per threadgroup is
 * N but requested R for kernel NAME." (as MLX-C's error handler receives it, sometimes behind a prefix such as
 * "mlx: "). {@code limit} is N, the pipeline's real limit.
 */
public record ThreadgroupLimitError(int limit, OptionalInt requested, Optional<String> kernel) {

    private static final Pattern MESSAGE = Pattern.compile(
            "Maximum threads per threadgroup is (\\d{1,9})(?: but requested (\\d{1,9}))?(?: for kernel (\\S+?))?\\.?(?=\\s|$)");

    public ThreadgroupLimitError {
        if (limit < 1) {
            throw new IllegalArgumentException("threadgroup limit must be positive, got " + limit);
        }
    }

    /** The limit MLX reported, or empty when {@code mlxMessage} is some other error (or a null). */
    public static Optional<ThreadgroupLimitError> parse(String mlxMessage) {
        if (mlxMessage == null) {
            return Optional.empty();
        }
        Matcher m = MESSAGE.matcher(mlxMessage);
        if (!m.find()) {
            return Optional.empty();
        }
        int limit = Integer.parseInt(m.group(1));
        if (limit < 1) {
            return Optional.empty();
        }
        OptionalInt requested = m.group(2) == null ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(m.group(2)));
        return Optional.of(new ThreadgroupLimitError(limit, requested, Optional.ofNullable(m.group(3))));
    }

    @Override
    public String toString() {
        return "the pipeline" + kernel.map(k -> " of " + k).orElse("") + " allows " + limit + " threads per threadgroup"
                + (requested.isPresent() ? " (" + requested.getAsInt() + " were requested)" : "");
    }
}
