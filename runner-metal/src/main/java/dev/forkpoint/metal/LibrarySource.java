package dev.forkpoint.metal;

/** The kinds of place MLX-C is looked for, in the order they are tried (the first hit wins). */
public enum LibrarySource {
    /** The {@code --mlx-lib} option: a library file, or a folder holding one. */
    OPTION("--mlx-lib"),
    /** The {@code FORKPOINT_MLXC_LIB} environment variable: a library file, or a folder holding one. */
    ENVIRONMENT("FORKPOINT_MLXC_LIB"),
    /** {@code brew install mlx-c}. */
    HOMEBREW("Homebrew"),
    /** The MLX-C an installed Ollama bundles under {@code lib/ollama/mlx_*}. */
    OLLAMA("Ollama"),
    /** The system's dynamic loader search path (dlopen of the bare library name). */
    SYSTEM_LOADER("system loader");

    private final String label;

    LibrarySource(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
