package dev.forkpoint.backend;

import dev.forkpoint.InvalidInputException;

import java.util.Locale;

/**
 * Which kernels the CPU backend multiplies quantised matrices with ({@code --kernels}): the Java Vector API kernels
 * (portable, and the oracle the native ones are tested against), the native C kernels built for this CPU, or
 * {@link #AUTO}: native when a C compiler built them, else Java (said once).
 */
public enum KernelChoice {
    JAVA, NATIVE, AUTO;

    /** The option's spelling: "java", "native", "auto". */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** "java", "native" or "auto" (any case, surrounding blanks ignored); anything else is refused naming --kernels. */
    public static KernelChoice parse(String value) {
        String v = value == null ? "" : value.trim().toUpperCase(Locale.ROOT);
        for (KernelChoice c : values()) if (c.name().equals(v)) return c;
        throw new InvalidInputException("--kernels must be java, native or auto, got '" + value + "'");
    }
}
