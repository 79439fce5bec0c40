package dev.forkpoint.backend;

import dev.forkpoint.InvalidInputException;

import java.util.Locale;

/**
 * Which backend a model runs on ({@code --backend}): the CPU backend, the MLX backend (Apple Silicon), or
 * {@link #AUTO}: MLX on macOS arm64 when MLX-C loads, else the CPU. {@link dev.forkpoint.backend.choice.Backends} turns a choice into a backend.
 */
public enum BackendChoice {
    CPU, MLX, AUTO;

    /** The option's spelling: "cpu", "mlx", "auto". */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** "cpu", "mlx" or "auto" (any case, surrounding blanks ignored); anything else is refused naming --backend. */
    public static BackendChoice parse(String value) {
        String v = value == null ? "" : value.trim().toUpperCase(Locale.ROOT);
        for (BackendChoice c : values()) if (c.name().equals(v)) return c;
        throw new InvalidInputException("--backend must be cpu, mlx or auto, got '" + value + "'");
    }
}
