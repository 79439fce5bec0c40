package dev.forkpoint.metal.mlxc;

import dev.forkpoint.metal.LookupResult;
import dev.forkpoint.metal.MlxLibraryLocator;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * MLX-C, loaded and checked: the process's one binding ({@link MlxC}) with Forkpoint's error handler installed
 * before any other call, every non-zero return turned into an {@link MlxException} carrying MLX's message. MLX's
 * error handler and memory counters are global, so there is one per process ({@link #load} returns the same one
 * again); what is per thread (MLX's streams are thread-local) is in an {@link MlxSession}.
 */
public final class Mlx {

    private static final System.Logger LOG = System.getLogger(Mlx.class.getName());

    private static Mlx loaded;

    private final MlxC c;
    private final String where;
    private final String version;

    private Mlx(MlxC c, String where, String version) {
        this.c = c;
        this.where = where;
        this.version = version;
    }

    /** Finds MLX-C ({@code --mlx-lib} value, {@code FORKPOINT_MLXC_LIB}, Homebrew, Ollama, loader) and loads it. */
    public static Mlx load(Optional<String> mlxLibOption) {
        return load(MlxLibraryLocator.locate(mlxLibOption));
    }

    /**
     * Loads the MLX-C {@code lookup} found: opens it, checks every bound symbol, installs the error handler (first),
     * reads and logs {@code mlx_version}.
     *
     * @throws MlxUnavailableException when it was not found, does not open, or lacks a bound function
     * @throws IllegalStateException   when another MLX-C is already loaded in this process
     */
    public static synchronized Mlx load(LookupResult lookup) {
        return switch (lookup) {
            case LookupResult.NotFound n -> throw new MlxUnavailableException(
                    MlxUnavailableException.Reason.NOT_FOUND, n.report());
            case LookupResult.Found f -> {
                String where = f.target().toString();
                if (loaded != null) {
                    if (loaded.where.equals(where)) {
                        yield loaded;
                    }
                    throw new IllegalStateException("MLX-C is already loaded from " + loaded.where
                            + " (one per process: its error handler is global), not also from " + where);
                }
                SymbolLookup symbols;
                try {
                    symbols = f.target().open(Arena.global());
                } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
                    List<String> report = new ArrayList<>(f.report());
                    report.add("MLX-C at " + where + " does not load: " + e.getMessage());
                    throw new MlxUnavailableException(MlxUnavailableException.Reason.NOT_LOADABLE, report);
                }
                MlxC c = MlxC.bind(symbols, where);
                // before anything else: MLX-C's default handler prints and calls exit(-1)
                c.mlx_set_error_handler(MlxErrorHandler.stub(), MemorySegment.NULL, MemorySegment.NULL);
                MlxErrorHandler.take();
                Mlx mlx = new Mlx(c, where, readVersion(c));
                LOG.log(System.Logger.Level.INFO, "MLX-C at {0}: MLX {1}", where, mlx.version);
                loaded = mlx;
                yield mlx;
            }
        };
    }

    /** The raw bindings (every call unchecked: prefer the methods here and in {@link MlxSession}). */
    public MlxC bindings() {
        return c;
    }

    /** The library's path (or loader name). */
    public String where() {
        return where;
    }

    /** {@code mlx_version}: MLX's version, e.g. {@code 0.31.2}. */
    public String version() {
        return version;
    }

    /** {@code mlx_get_active_memory}: bytes in arrays MLX holds now (all threads; cache not counted). */
    public long activeMemory() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment res = arena.allocate(MlxC.C_SIZE_T);
            check("mlx_get_active_memory", c.mlx_get_active_memory(res));
            return res.get(MlxC.C_SIZE_T, 0);
        }
    }

    /** A session on the calling thread, with its default device and stream; every call of it on this thread. */
    public MlxSession openSession() {
        return new MlxSession(this);
    }

    /** After an MLX-C call that returns int: MLX's message for this thread is taken; non-zero throws it. */
    static void check(String function, int returnCode) {
        String message = MlxErrorHandler.take();
        if (returnCode != 0) {
            throw new MlxException(function, returnCode, message);
        }
    }

    /** After an MLX-C call that returns a handle: an empty one, or a message from MLX, is its failure. */
    static void checkHandle(String function, MemorySegment handle) {
        String message = MlxErrorHandler.take();
        if (message != null || handle.get(MlxC.C_POINTER, 0).equals(MemorySegment.NULL)) {
            throw new MlxException(function, -1, message);
        }
    }

    private static String readVersion(MlxC c) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment str = c.mlx_string_new(arena);
            try {
                check("mlx_version", c.mlx_version(str));
                MemorySegment data = c.mlx_string_data(str);
                MlxErrorHandler.take();
                if (data.equals(MemorySegment.NULL)) {
                    throw new MlxException("mlx_string_data", -1, "no string");
                }
                return data.reinterpret(Long.MAX_VALUE).getString(0);
            } finally {
                c.mlx_string_free(str);
                MlxErrorHandler.take();
            }
        }
    }
}
