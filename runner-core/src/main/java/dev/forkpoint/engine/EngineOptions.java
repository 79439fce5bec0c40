package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.kvcache.KvElementType;

import java.util.Locale;

/**
 * How a loaded model holds its KV cache, and which backend it runs on.
 *
 * @param kvCacheBytes the KV pool's byte budget ({@code kv_cache_bytes}); 0 = derived from the model: the default
 *                     num_ctx ({@link LoadedModel#defaultNumCtx()}) for one running sequence plus as much again for
 *                     one cached sequence, in whole pages. The pool commits memory lazily, in chunks, as pages are
 *                     first used, so a large budget costs nothing until it is filled.
 * @param kvType       the element type of stored keys and values: F32 (exact), F16 (half the memory), Q8_0 or Q4_0
 *                     (quantised blocks of 32: 17/64 and 9/64 of F32's bytes; error bounds in {@code KvRowCodec})
 * @param sequences    with kvCacheBytes 0: how many sequences of the default num_ctx the derived budget holds (2: one
 *                     running, one cached; a server running N requests at once asks for N + 1)
 * @param checkpointBytes the byte budget of recurrent-state checkpoints (hybrid models; {@code --checkpoint-bytes});
 *                     0 = {@value #DEFAULT_CHECKPOINTS} checkpoints of the model's recurrent state per sequence
 * @param backend      the backend ({@code --backend}); null = {@link BackendChoice#AUTO}
 * @param numCtx       the default context window in tokens ({@code --num-ctx}, {@code OLLAMA_CONTEXT_LENGTH}): what a
 *                     request with num_ctx 0 gets and what the derived KV budget is sized for; 0 = Ollama's
 *                     {@value LoadedModel#OLLAMA_DEFAULT_NUM_CTX}. Either way at most the model's trained context
 *                     ({@link LoadedModel#defaultNumCtx()}).
 * @param mlxLibrary   the MLX-C library to load for the MLX backend ({@code --mlx-lib}: a file or folder); null = look in
 *                     the usual places ({@code FORKPOINT_MLXC_LIB}, Homebrew, an installed Ollama, the loader path)
 * @param kernels      the CPU backend's kernels ({@code --kernels java|native|auto}); null = {@link KernelChoice#AUTO}
 */
public record EngineOptions(long kvCacheBytes, KvElementType kvType, int sequences, long checkpointBytes, BackendChoice backend,
                            int numCtx, String mlxLibrary, KernelChoice kernels) {
    /** Checkpoints the derived budget holds per sequence: a prompt's ladder and boundaries, and a reply's end. */
    public static final int DEFAULT_CHECKPOINTS = 24;

    public EngineOptions {
        if (kvCacheBytes < 0) throw new InvalidInputException("kv_cache_bytes must be >= 0 (0 = derived from num_ctx), got " + kvCacheBytes);
        if (kvType == null) kvType = KvElementType.F32;
        if (sequences < 1) throw new InvalidInputException("the derived KV budget must hold at least 1 sequence, got " + sequences);
        if (checkpointBytes < 0) throw new InvalidInputException("checkpoint_bytes must be >= 0 (0 = derived from the model's recurrent state), got " + checkpointBytes);
        if (backend == null) backend = BackendChoice.AUTO;
        if (mlxLibrary != null && mlxLibrary.isBlank()) mlxLibrary = null;
        if (kernels == null) kernels = KernelChoice.AUTO;
        if (numCtx < 0) throw new InvalidInputException("num_ctx must be >= 0 (0 = Ollama's default " + LoadedModel.OLLAMA_DEFAULT_NUM_CTX + "), got " + numCtx);
    }

    public EngineOptions(long kvCacheBytes, KvElementType kvType, int sequences, long checkpointBytes, BackendChoice backend,
                         int numCtx, String mlxLibrary) {
        this(kvCacheBytes, kvType, sequences, checkpointBytes, backend, numCtx, mlxLibrary, KernelChoice.AUTO);
    }

    public EngineOptions(long kvCacheBytes, KvElementType kvType, int sequences, long checkpointBytes, BackendChoice backend,
                         int numCtx) {
        this(kvCacheBytes, kvType, sequences, checkpointBytes, backend, numCtx, null);
    }

    public EngineOptions(long kvCacheBytes, KvElementType kvType, int sequences, long checkpointBytes, BackendChoice backend) {
        this(kvCacheBytes, kvType, sequences, checkpointBytes, backend, 0);
    }

    public EngineOptions(long kvCacheBytes, KvElementType kvType, int sequences, long checkpointBytes) {
        this(kvCacheBytes, kvType, sequences, checkpointBytes, BackendChoice.AUTO);
    }

    public EngineOptions(long kvCacheBytes, KvElementType kvType, int sequences) {
        this(kvCacheBytes, kvType, sequences, 0);
    }

    public EngineOptions(long kvCacheBytes, KvElementType kvType) {
        this(kvCacheBytes, kvType, 2);
    }

    public EngineOptions withCheckpointBytes(long bytes) {
        return new EngineOptions(kvCacheBytes, kvType, sequences, bytes, backend, numCtx, mlxLibrary, kernels);
    }

    public static EngineOptions defaults() {
        return new EngineOptions(0, KvElementType.F32);
    }

    public EngineOptions withKvCacheBytes(long bytes) {
        return new EngineOptions(bytes, kvType, sequences, checkpointBytes, backend, numCtx, mlxLibrary, kernels);
    }

    public EngineOptions withSequences(int n) {
        return new EngineOptions(kvCacheBytes, kvType, n, checkpointBytes, backend, numCtx, mlxLibrary, kernels);
    }

    public EngineOptions withKvType(KvElementType type) {
        return new EngineOptions(kvCacheBytes, type, sequences, checkpointBytes, backend, numCtx, mlxLibrary, kernels);
    }

    public EngineOptions withBackend(BackendChoice choice) {
        return new EngineOptions(kvCacheBytes, kvType, sequences, checkpointBytes, choice, numCtx, mlxLibrary, kernels);
    }

    /** These options with MLX-C looked for at {@code library} (null = the usual places). */
    public EngineOptions withMlxLibrary(String library) {
        return new EngineOptions(kvCacheBytes, kvType, sequences, checkpointBytes, backend, numCtx, library, kernels);
    }

    /** These options with the CPU backend's kernels {@code choice}. */
    public EngineOptions withKernels(KernelChoice choice) {
        return new EngineOptions(kvCacheBytes, kvType, sequences, checkpointBytes, backend, numCtx, mlxLibrary, choice);
    }

    /** These options with the default context {@code n} (0 = Ollama's default). */
    public EngineOptions withNumCtx(int n) {
        return new EngineOptions(kvCacheBytes, kvType, sequences, checkpointBytes, backend, n, mlxLibrary, kernels);
    }

    /** "f32", "f16", "q8_0" or "q4_0" (any case) as an element type; anything else is refused naming kv_type. */
    public static KvElementType parseKvType(String name) {
        String n = name == null ? "" : name.trim().toUpperCase(Locale.ROOT);
        for (KvElementType t : KvElementType.values()) if (t.name().equals(n)) return t;
        throw new InvalidInputException("kv_type must be f32, f16, q8_0 or q4_0, got '" + name + "'");
    }
}
