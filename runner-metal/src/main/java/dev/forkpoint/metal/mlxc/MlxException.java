package dev.forkpoint.metal.mlxc;

/**
 * An MLX-C function failed: it returned non-zero (or an empty handle) and MLX's error handler gave
 * {@link #mlxMessage()}. An error for the operation that raised it, never for the process: the next call works.
 */
public final class MlxException extends RuntimeException {

    private final String function;
    private final int returnCode;
    private final String mlxMessage;

    public MlxException(String function, int returnCode, String mlxMessage) {
        super(function + " failed (rc " + returnCode + "): "
                + (mlxMessage == null ? "MLX reported no message" : mlxMessage));
        this.function = function;
        this.returnCode = returnCode;
        this.mlxMessage = mlxMessage;
    }

    /** The MLX-C function, e.g. {@code mlx_matmul}. */
    public String function() {
        return function;
    }

    /** What it returned; -1 for functions that return a handle, pointer or value and no code. */
    public int returnCode() {
        return returnCode;
    }

    /** MLX's message as its error handler received it, or null when it gave none. */
    public String mlxMessage() {
        return mlxMessage;
    }
}
