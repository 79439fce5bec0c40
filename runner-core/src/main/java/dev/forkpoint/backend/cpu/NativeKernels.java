package dev.forkpoint.backend.cpu;

import dev.forkpoint.CacheDirectory;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.KernelChoice;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The native CPU kernels ({@code native/cpu/forkpoint_kernels.c}: Q8_0, Q4_0; {@code forkpoint_kquants.c}: Q4_K,
 * Q6_K; {@code forkpoint_affine.c}: MLX affine 4 and 8 bits; {@code forkpoint_float.c}: F32, F16, BF16) loaded through FFM: one instruction-set
 * {@link Variant} of the library {@link NativeBuild} made, its functions bound as critical downcalls (no thread-state
 * transition; heap arrays passed in place, no copies). Each call computes one slice of rows; the Java worker pool does
 * the threading. The library and its variant are found once per process ({@link #forChoice}); a choice that cannot be
 * met is said once: {@code auto} falls back to the Java kernels, {@code native} is refused.
 */
final class NativeKernels {
    private static final System.Logger LOG = System.getLogger(NativeKernels.class.getName());
    private static final Linker LINKER = Linker.nativeLinker();
    /** void f(const uint8_t* w, int blocks, int rows, const int8_t* xq, const float* xd, int n, float* out, int stride) */
    private static final FunctionDescriptor ROWS = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS,
            JAVA_INT, ADDRESS, JAVA_INT);
    /**
     * The K-quants': void f(const uint8_t* w, int blocks, int rows, const int8_t* xq, const float* xd,
     * const int16_t* xs, int n, float* out, int stride), blocks of 256 and xs the activations' sums of 16 codes.
     */
    private static final FunctionDescriptor K_ROWS = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS,
            ADDRESS, JAVA_INT, ADDRESS, JAVA_INT);
    /**
     * The attention kernel ({@code forkpoint_attention.c}): void fp_attn(const float* q, const int32_t* rows,
     * const int32_t* lengths, int32_t count, const int64_t* kpages, const int64_t* vpages, int32_t page_tokens,
     * int32_t kind, int32_t heads, int32_t kv_heads, int32_t head_dim, float scale, int32_t b0, int32_t b1,
     * float* partials, const int32_t* part_off, int32_t block_stride, float* out, float* scratch).
     */
    private static final FunctionDescriptor ATTN = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
            JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_FLOAT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS);
    /** void fp_attn_fold(const float* partials, int32_t blocks, int32_t stride, int32_t heads, int32_t head_dim, float* out, float* scratch) */
    private static final FunctionDescriptor ATTN_FOLD = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
            ADDRESS, ADDRESS);
    /**
     * The MLX affine kernels': void f(const uint8_t* codes, const uint8_t* scales, const uint8_t* biases, int scaleKind,
     * int groupShift, int blocks, int rows, const int8_t* xq, const float* xd, const float* xg, int n, float* out,
     * int stride), xg the activations' per-group sums X_g.
     */
    private static final FunctionDescriptor AFFINE_ROWS = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, JAVA_INT,
            JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT);
    /**
     * The float kernels' ({@code forkpoint_float.c}): void f(const uint8_t* w, int kind, int cols, int rows,
     * const float* x, int n, float* out, int stride), kind a {@link FloatKind}'s code.
     */
    private static final FunctionDescriptor FLOAT_ROWS = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT,
            ADDRESS, JAVA_INT, ADDRESS, JAVA_INT);
    static final int ABI_VERSION = 1;

    /** The weight types of the float kernels: the code {@code forkpoint_float.c} takes and the bytes of one value. */
    enum FloatKind {
        F32(0, 4), F16(1, 2), BF16(2, 2);

        final int code;
        final int bytes;

        FloatKind(int code, int bytes) {
            this.code = code;
            this.bytes = bytes;
        }
    }

    /** An instruction-set variant of the kernels: its symbol suffix and the feature bit fp_cpu_features sets for it. */
    enum Variant {
        AVX512_VNNI("avx512vnni", 2), AVX2("avx2", 1), NEON("neon", 4), PORTABLE("c", 0);

        final String suffix;
        final int feature;

        Variant(String suffix, int feature) {
            this.suffix = suffix;
            this.feature = feature;
        }
    }

    /** The loaded library: what it was built with and the variants this CPU runs, best first. */
    record Library(SymbolLookup symbols, Path path, String compiler, List<Variant> runnable) {}

    private static volatile Object loaded;   // a Library, or the String reason there is none

    private final Variant variant;
    private final MethodHandle q8_0;
    private final MethodHandle q4_0;
    private final MethodHandle q4_K;
    private final MethodHandle q6_K;
    private final MethodHandle attn;
    private final MethodHandle attnFold;
    private final MethodHandle affine4;
    private final MethodHandle affine8;
    private final MethodHandle floatRows;

    private NativeKernels(Library library, Variant variant) {
        this.variant = variant;
        this.q8_0 = bind(library, "fp_q8_0_rows_" + variant.suffix, ROWS);
        this.q4_0 = bind(library, "fp_q4_0_rows_" + variant.suffix, ROWS);
        this.q4_K = bind(library, "fp_q4_k_rows_" + variant.suffix, K_ROWS);
        this.q6_K = bind(library, "fp_q6_k_rows_" + variant.suffix, K_ROWS);
        this.attn = bind(library, "fp_attn_" + variant.suffix, ATTN);
        this.attnFold = bind(library, "fp_attn_fold_" + variant.suffix, ATTN_FOLD);
        this.affine4 = bind(library, "fp_affine4_rows_" + variant.suffix, AFFINE_ROWS);
        this.affine8 = bind(library, "fp_affine8_rows_" + variant.suffix, AFFINE_ROWS);
        this.floatRows = bind(library, "fp_float_rows_" + variant.suffix, FLOAT_ROWS);
    }

    /**
     * The kernels {@code choice} asks for on this machine: empty for {@code java}; for {@code auto} the best variant,
     * or empty (said once) when no C compiler built them; for {@code native} the best variant, or an
     * {@link InvalidInputException} saying why not.
     */
    static Optional<NativeKernels> forChoice(KernelChoice choice) {
        KernelChoice c = resolve(choice, System.getenv());
        return c == KernelChoice.JAVA ? Optional.empty() : forChoice(c, library(System.getenv()), System.getenv());
    }

    /** The environment variable that pins the native kernels to one variant (avx512vnni, avx2, neon, c) this CPU runs. */
    static final String VARIANT_ENV = "FORKPOINT_KERNEL_VARIANT";

    /**
     * The variant to run from {@code runnable} (best first): the best, or the one {@value #VARIANT_ENV} names (to
     * measure or test a lesser variant on a machine that runs a better one); a name that is no variant, or one this CPU
     * does not run, is refused naming the variable.
     */
    static Variant pick(List<Variant> runnable, Map<String, String> env) {
        String v = env.get(VARIANT_ENV);
        if (v == null || v.isBlank()) return runnable.getFirst();
        String name = v.strip().toLowerCase(Locale.ROOT);
        List<String> all = Arrays.stream(Variant.values()).map(x -> x.suffix).toList();
        List<String> here = runnable.stream().map(x -> x.suffix).toList();
        Variant wanted = Arrays.stream(Variant.values()).filter(x -> x.suffix.equals(name)).findFirst()
                .orElseThrow(() -> new InvalidInputException("$" + VARIANT_ENV + " must be one of " + String.join(", ", all) + ", got '" + v + "'"));
        if (!runnable.contains(wanted)) {
            throw new InvalidInputException("$" + VARIANT_ENV + "=" + name + ": this CPU runs " + String.join(", ", here));
        }
        return wanted;
    }

    /** The environment variable that sets what {@code auto} means: java, native or auto (the default). */
    static final String ENV = "FORKPOINT_KERNELS";

    /**
     * {@code choice}, except that {@code auto} follows {@value #ENV} when it is set (so that a whole run — a server, the
     * test suite — can be put on one kind of kernels); a value of the variable other than java, native or auto is
     * refused naming it.
     */
    static KernelChoice resolve(KernelChoice choice, Map<String, String> env) {
        String v = env.get(ENV);
        if (choice != KernelChoice.AUTO || v == null || v.isBlank()) return choice;
        try {
            return KernelChoice.parse(v);
        } catch (InvalidInputException e) {
            throw new InvalidInputException("$" + ENV + " must be java, native or auto, got '" + v + "'");
        }
    }

    /** {@link #forChoice(KernelChoice)} given what loading the library gave: a {@link Library} or the reason there is none. */
    static Optional<NativeKernels> forChoice(KernelChoice choice, Object lib) {
        return forChoice(choice, lib, Map.of());
    }

    /** {@link #forChoice(KernelChoice, Object)} with the variant {@link #pick}ed by {@code env}. */
    static Optional<NativeKernels> forChoice(KernelChoice choice, Object lib, Map<String, String> env) {
        if (choice == KernelChoice.JAVA) return Optional.empty();
        if (lib instanceof Library l) return Optional.of(new NativeKernels(l, pick(l.runnable(), env)));
        if (choice == KernelChoice.NATIVE) {
            throw new InvalidInputException("--kernels native: " + lib + "; use --kernels java or auto");
        }
        return Optional.empty();
    }

    /** A specific variant, when the library was built and this CPU runs it (for the tests); else empty. */
    static Optional<NativeKernels> variant(Variant v) {
        return library(System.getenv()) instanceof Library l && l.runnable().contains(v) ? Optional.of(new NativeKernels(l, v)) : Optional.empty();
    }

    /** The library, or the reason there is none: built and loaded once per process, said once. */
    static Object library(Map<String, String> env) {
        Object l = loaded;
        if (l != null) return l;
        synchronized (NativeKernels.class) {
            if (loaded == null) {
                loaded = load(env, CacheDirectory.of(env));
                if (loaded instanceof Library lib) {
                    String pinned = env.get(VARIANT_ENV);
                    LOG.log(System.Logger.Level.INFO, "native CPU kernels: {0} (built with {1}: {2}){3}",
                            lib.runnable().getFirst().suffix, lib.compiler(), lib.path(),
                            pinned == null || pinned.isBlank() ? "" : "; $" + VARIANT_ENV + "=" + pinned.strip());
                } else {
                    LOG.log(System.Logger.Level.INFO, "native CPU kernels not used: {0}; the Java kernels run", loaded);
                }
            }
            return loaded;
        }
    }

    static Object load(Map<String, String> env, Path cache) {
        return switch (NativeBuild.library(env, cache)) {
            case NativeBuild.Outcome.Unavailable u -> u.reason();
            case NativeBuild.Outcome.Built b -> {
                try {
                    SymbolLookup symbols = SymbolLookup.libraryLookup(b.library(), Arena.global());
                    MethodHandle abi = LINKER.downcallHandle(symbols.find("fp_abi_version").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
                    int version = (int) abi.invokeExact();
                    if (version != ABI_VERSION) yield b.library() + " has ABI version " + version + ", not " + ABI_VERSION;
                    MethodHandle features = LINKER.downcallHandle(symbols.find("fp_cpu_features").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
                    int f = (int) features.invokeExact();
                    List<Variant> runnable = new ArrayList<>();
                    for (Variant v : Variant.values()) {
                        if ((v.feature == 0 || (f & v.feature) != 0) && symbols.find("fp_q8_0_rows_" + v.suffix).isPresent()) runnable.add(v);
                    }
                    yield new Library(symbols, b.library(), b.compiler(), List.copyOf(runnable));
                } catch (Throwable t) {
                    yield "the kernels built at " + b.library() + " do not load: " + t;
                }
            }
        };
    }

    private static MethodHandle bind(Library library, String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = library.symbols().find(name)
                .orElseThrow(() -> new IllegalStateException(library.path() + " lacks " + name));
        return LINKER.downcallHandle(symbol, descriptor, Linker.Option.critical(true));
    }

    Variant variant() { return variant; }

    /**
     * {@link PackedMatrix#invariantTokens()} of a matrix on {@code kernels}: any token count on the native kernels (a
     * token's results never depend on n), the Java decode kernels' bound without them (null).
     */
    static int invariantTokens(NativeKernels kernels) {
        return kernels != null ? Integer.MAX_VALUE : KernelSupport.DECODE_MAX_ROWS;
    }

    /** Tokens one native call takes: the kernels keep one accumulator per token in registers. */
    static final int MAX_TOKENS = 16;

    /**
     * Rows of a Q8_0 matrix times any number of tokens of Q8_0 activations: out[t·outStride + outOffset + i] for the
     * {@code rows} rows starting at byte {@code weightOffset} of {@code w} and every token t &lt; n, in calls of at most
     * {@value #MAX_TOKENS} tokens over the same rows (so the rows' bytes stay in cache between them). A token's results
     * do not depend on n: a prefill's rows are its decode rows, bit for bit.
     */
    void q8_0(MemorySegment w, long weightOffset, int blocks, int rows, byte[] xq, float[] xd, int n, float[] out,
              int outOffset, int outStride) {
        call(q8_0, w, weightOffset, 34L * blocks * rows, blocks, 32, rows, xq, xd, null, n, out, outOffset, outStride);
    }

    /** {@link #q8_0} for a Q4_0 matrix. */
    void q4_0(MemorySegment w, long weightOffset, int blocks, int rows, byte[] xq, float[] xd, int n, float[] out,
              int outOffset, int outStride) {
        call(q4_0, w, weightOffset, 18L * blocks * rows, blocks, 32, rows, xq, xd, null, n, out, outOffset, outStride);
    }

    /**
     * {@link #q8_0} for a Q4_K matrix of {@code blocks} super-blocks (256 values) per row, times Q8_K activations
     * ({@link Q8Activations#q8_K}): {@code xq} its codes as bytes, {@code xd} its scales, {@code xs} its sums of 16 codes.
     */
    void q4_K(MemorySegment w, long weightOffset, int blocks, int rows, byte[] xq, float[] xd, short[] xs, int n, float[] out,
              int outOffset, int outStride) {
        call(q4_K, w, weightOffset, 144L * blocks * rows, blocks, 256, rows, xq, xd, xs, n, out, outOffset, outStride);
    }

    /** {@link #q4_K} for a Q6_K matrix. */
    void q6_K(MemorySegment w, long weightOffset, int blocks, int rows, byte[] xq, float[] xd, short[] xs, int n, float[] out,
              int outOffset, int outStride) {
        call(q6_K, w, weightOffset, 210L * blocks * rows, blocks, 256, rows, xq, xd, xs, n, out, outOffset, outStride);
    }

    /**
     * One call of the attention kernel (see {@code forkpoint_attention.c} and {@link NativeAttention}, which checks
     * every argument: the C code trusts them). {@code partials} null: fold blocks [b0, b1) and write the rows' results
     * into {@code out}; else write each block's partial there. {@code kvKind}: the stored rows' element kind
     * ({@link NativeAttention#kind}).
     */
    void attention(MemorySegment q, MemorySegment rows, MemorySegment lengths, int count, MemorySegment kPages, MemorySegment vPages,
                   int pageTokens, int kvKind, int heads, int kvHeads, int headDim, float scale, int b0, int b1,
                   MemorySegment partials, MemorySegment partOffsets, int blockStride, MemorySegment out, MemorySegment scratch) {
        try {
            attn.invokeExact(q, rows, lengths, count, kPages, vPages, pageTokens, kvKind, heads, kvHeads, headDim, scale, b0, b1,
                    partials, partOffsets, blockStride, out, scratch);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Folds {@code blocks} partial records of one row ({@code stride} floats apart) in block order and writes its result. */
    void attentionFold(MemorySegment partials, int blocks, int stride, int heads, int headDim, MemorySegment out, MemorySegment scratch) {
        try {
            attnFold.invokeExact(partials, blocks, stride, heads, headDim, out, scratch);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Rows of an MLX affine matrix at {@code bits} 4 or 8 times any number of tokens of Q8_0 activations, as
     * {@link #q8_0}: the {@code rows} rows from {@code firstRow} on of the codes {@code packed} ({@code rowBytes} each),
     * {@code scales} and {@code biases} ({@code groups} values per row of {@code scaleKind} 0 F32, 1 F16, 2 BF16),
     * groups of 32·2^{@code groupShift} elements; {@code xq} the activation codes (at 4 bits each block's even-indexed
     * codes, then its odd-indexed ones), {@code xd} their block scales, {@code xg} per token and group X_g = Σ d_k·Σ x.
     */
    void affine(int bits, MemorySegment packed, MemorySegment scales, MemorySegment biases, int scaleKind, int groupShift,
                long rowBytes, int groups, int firstRow, int rows, int blocks, byte[] xq, float[] xd, float[] xg, int n,
                float[] out, int outOffset, int outStride) {
        MethodHandle h = switch (bits) {
            case 4 -> affine4;
            case 8 -> affine8;
            default -> throw new IllegalArgumentException("no native affine kernel for " + bits + " bits");
        };
        if (n < 1 || rows < 0 || firstRow < 0 || scaleKind < 0 || scaleKind > 2 || groupShift < 0 || groupShift > 2
                || groups << groupShift != blocks || rowBytes != (long) blocks * 4 * bits
                || (long) n * blocks * 32 > xq.length || (long) n * blocks > xd.length || (long) n * groups > xg.length
                || outOffset < 0 || (rows > 0 && (long) outOffset + (long) (n - 1) * outStride + rows > out.length)) {
            throw new IllegalArgumentException("native kernel arguments out of range: n " + n + ", rows " + rows + ", blocks " + blocks);
        }
        if (rows == 0) return;
        long valueBytes = scaleKind == 0 ? 4 : 2;
        // the slices check the weights' bounds: the C code trusts its arguments
        MemorySegment codes = packed.asSlice(firstRow * rowBytes, rows * rowBytes);
        MemorySegment s = scales.asSlice(firstRow * groups * valueBytes, (long) rows * groups * valueBytes);
        MemorySegment b = biases.asSlice(firstRow * groups * valueBytes, (long) rows * groups * valueBytes);
        MemorySegment x = MemorySegment.ofArray(xq), d = MemorySegment.ofArray(xd), sums = MemorySegment.ofArray(xg);
        MemorySegment results = MemorySegment.ofArray(out);
        try {
            for (int t0 = 0; t0 < n; t0 += MAX_TOKENS) {
                int count = Math.min(MAX_TOKENS, n - t0);
                h.invokeExact(codes, s, b, scaleKind, groupShift, blocks, rows, x.asSlice((long) t0 * blocks * 32),
                        d.asSlice(4L * t0 * blocks), sums.asSlice(4L * t0 * groups), count,
                        results.asSlice(4L * ((long) t0 * outStride + outOffset)), outStride);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Tokens one call of the float kernels takes: the call tiles them over its rows, whose bytes stay in cache for all
     * of them (64 tokens of 2048 floats are 512 KiB, an L2's worth). A token's results do not depend on it.
     */
    static final int FLOAT_TOKENS = 64;

    /**
     * Rows of an F32, F16 or BF16 matrix times any number of tokens of float activations: out[t·outStride + outOffset
     * + i] = Σ_c W[firstRow + i][c] · x[t·cols + c] for i &lt; {@code rows} and every t &lt; n, the weights read in
     * place from {@code w} (row-major, {@code cols} values of {@code kind} a row), in calls of at most
     * {@value #FLOAT_TOKENS} tokens over the same rows. A (row, token) result depends on that row and that token only
     * (see {@code forkpoint_float.c}): a prefill's rows are its decode rows, bit for bit.
     */
    void floatRows(FloatKind kind, MemorySegment w, int firstRow, int rows, int cols, float[] x, int n, float[] out,
                   int outOffset, int outStride) {
        if (n < 1 || rows < 0 || firstRow < 0 || cols < 1 || (long) n * cols > x.length
                || outOffset < 0 || (rows > 0 && (long) outOffset + (long) (n - 1) * outStride + rows > out.length)) {
            throw new IllegalArgumentException("native kernel arguments out of range: n " + n + ", rows " + rows + ", cols " + cols);
        }
        if (rows == 0) return;
        long rowBytes = (long) cols * kind.bytes;
        MemorySegment weights = w.asSlice(firstRow * rowBytes, rows * rowBytes);   // checks the weights' bounds
        MemorySegment activations = MemorySegment.ofArray(x), results = MemorySegment.ofArray(out);
        try {
            for (int t0 = 0; t0 < n; t0 += FLOAT_TOKENS) {
                int count = Math.min(FLOAT_TOKENS, n - t0);
                floatRows.invokeExact(weights, kind.code, cols, rows, activations.asSlice(4L * t0 * cols), count,
                        results.asSlice(4L * ((long) t0 * outStride + outOffset)), outStride);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** One slice of rows in calls of at most MAX_TOKENS tokens; {@code xs} null for the kernels without sums (Q8_0 activations). */
    private static void call(MethodHandle h, MemorySegment w, long weightOffset, long weightBytes, int blocks, int blockValues,
                             int rows, byte[] xq, float[] xd, short[] xs, int n, float[] out, int outOffset, int outStride) {
        // bounds in Java: the C code trusts its arguments
        if (n < 1 || rows < 0 || (long) n * blocks * blockValues > xq.length || (long) n * blocks > xd.length
                || (xs != null && (long) n * blocks * 16 > xs.length)
                || outOffset < 0 || (rows > 0 && (long) outOffset + (long) (n - 1) * outStride + rows > out.length)) {
            throw new IllegalArgumentException("native kernel arguments out of range: n " + n + ", rows " + rows + ", blocks " + blocks);
        }
        if (rows == 0) return;
        MemorySegment weights = w.asSlice(weightOffset, weightBytes);   // checks the weights' bounds
        MemorySegment codes = MemorySegment.ofArray(xq), scales = MemorySegment.ofArray(xd), results = MemorySegment.ofArray(out);
        MemorySegment sums = xs == null ? null : MemorySegment.ofArray(xs);
        try {
            for (int t0 = 0; t0 < n; t0 += MAX_TOKENS) {
                int count = Math.min(MAX_TOKENS, n - t0);
                MemorySegment codesAt = codes.asSlice((long) t0 * blocks * blockValues), scalesAt = scales.asSlice(4L * t0 * blocks);
                MemorySegment resultsAt = results.asSlice(4L * ((long) t0 * outStride + outOffset));
                if (sums == null) {
                    h.invokeExact(weights, blocks, rows, codesAt, scalesAt, count, resultsAt, outStride);
                } else {
                    h.invokeExact(weights, blocks, rows, codesAt, scalesAt, sums.asSlice(2L * 16 * t0 * blocks), count, resultsAt, outStride);
                }
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
