package dev.forkpoint.engine;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.choice.Backends;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.model.Architecture;
import dev.forkpoint.model.ModelFiles;
import dev.forkpoint.model.ModelConfig;
import dev.forkpoint.kvcache.CacheNamespace;
import dev.forkpoint.kvcache.CacheStats;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.RadixCache;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

/**
 * A model file loaded onto a backend, ready to generate: the file (mapped), its tokenizer, its architecture's
 * graph over the prepared weights, and its prefix cache: one {@link PagePool} of KV pages for the attention layers
 * (budget from {@link EngineOptions#kvCacheBytes()}, memory committed lazily) and one {@link RadixCache}, namespaced
 * by the model file's identity and the request's cache salt. A hybrid model's sequences also keep a recurrent state
 * per linear layer (in their KV stores); the cache holds copies of it at fork points, charged to
 * {@link #checkpointBudgetBytes()}. Every request goes through the cache. Evaluations are serialised: one forward
 * pass at a time (a {@link Scheduler}'s step holds this model's lock; {@link #generate} runs on a one-slot scheduler).
 */
public final class LoadedModel implements AutoCloseable {
    /** Ollama's default context window; the default num_ctx unless the model's trained context is smaller. */
    public static final int OLLAMA_DEFAULT_NUM_CTX = 4096;

    private final ModelFiles file;
    private final Backend backend;
    private final int threads;
    private final Architecture architecture;
    private final Tokenizer tokenizer;
    private final EngineOptions options;
    private final PagePool pool;
    private final RadixCache cache;
    private final String modelId;
    private final RecurrentLayout recurrent;   // null for attention-only models
    private final long checkpointBudget;
    private final long heapReserved;   // what this model's recurrent states may take of the heap (released on close)
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    private Ops ops;

    private LoadedModel(ModelFiles file, Backend backend, int threads, Architecture architecture, Tokenizer tokenizer,
                        EngineOptions options, PagePool pool, String modelId) {
        this.file = file;
        this.backend = backend;
        this.threads = threads;
        this.architecture = architecture;
        this.tokenizer = tokenizer;
        this.options = options;
        this.pool = pool;
        ModelConfig c = architecture.config();
        this.recurrent = c.linear() == null ? null : c.linear().recurrentLayout();
        this.checkpointBudget = recurrent == null ? 0
                : options.checkpointBytes() > 0 ? options.checkpointBytes()
                : Math.min((long) EngineOptions.DEFAULT_CHECKPOINTS * options.sequences() * recurrent.bytesPerSequence(),
                           Math.max(recurrent.bytesPerSequence(), Runtime.getRuntime().maxMemory() / 4));   // held on the heap
        this.cache = new RadixCache(pool, checkpointBudget);   // attention-only architectures store no checkpoints
        this.modelId = modelId;
        this.ops = backend.ops();
        this.heapReserved = recurrent == null ? 0 : reserveHeapFor(recurrent, options.sequences(), checkpointBudget);   // last: nothing can fail after it
    }

    /** Loads a model (GGUF file or model folder) with {@code threads} threads and the default {@link EngineOptions} (backend auto). */
    public static LoadedModel load(Path gguf, int threads, LoadProgress progress) throws IOException {
        return load(gguf, threads, progress, EngineOptions.defaults());
    }

    /**
     * Loads a model with {@code threads} threads on the backend {@link EngineOptions#backend()} selects
     * ({@link Backends#create}): a GGUF file, a Hugging Face / mlx-community folder or an Ollama safetensors manifest
     * ({@link ModelFiles#open}); refuses unsupported architectures and tensor types, and a backend that cannot run here.
     */
    public static LoadedModel load(Path model, int threads, LoadProgress progress, EngineOptions options) throws IOException {
        if (threads < 1) throw new dev.forkpoint.InvalidInputException("threads must be at least 1, got " + threads);
        if (options == null) options = EngineOptions.defaults();
        Backends.select(options.backend(), options.mlxLibrary());   // refuses an impossible --backend before the file is opened
        ModelFiles file = ModelFiles.open(model);
        Backend backend = null;
        PagePool pool = null;
        try {
            Tokenizer tokenizer = file.tokenizer();
            backend = Backends.create(options.backend(), options.mlxLibrary(), threads, options.kernels(), file.spec().name());
            backend.checkKvType(options.kvType());
            int total = file.tensors().count();
            Architecture arch = file.load(backend, done -> progress.update(done, total));
            String modelId = modelId(file.contentFiles());
            pool = newPool(arch.config(), options);
            progress.update(total, total);
            return new LoadedModel(file, backend, threads, arch, tokenizer, options, pool, modelId);
        } catch (IOException | RuntimeException | Error e) {
            if (pool != null) pool.close();
            if (backend != null) backend.close();
            file.close();
            throw e;
        }
    }

    /** The KV pool: kv_cache_bytes, or (when 0) room for the default num_ctx's positions of options.sequences() sequences. */
    private static PagePool newPool(ModelConfig c, EngineOptions options) {
        KvElementType type = options.kvType();
        if (c.headDim() % type.blockElements() != 0) {
            throw new dev.forkpoint.InvalidInputException("kv_type " + type.lowerName() + " stores keys and values in blocks of "
                    + type.blockElements() + " elements of a head, but this model's head dim is " + c.headDim() + "; use --kv-type f16");
        }
        KvLayout layout = KvLayout.of(c.kvLayers(), c.kvDim(), options.kvType());
        long budget = options.kvCacheBytes() == 0 ? layout.budgetFor(defaultNumCtx(c, options), options.sequences()) : options.kvCacheBytes();
        if (budget < layout.pageBytes()) {
            throw new dev.forkpoint.InvalidInputException("kv_cache_bytes " + budget + " is smaller than one KV page of this model ("
                    + layout.pageBytes() + " bytes = " + layout.pageTokens() + " positions × " + c.kvLayers() + " attention layers × K,V × "
                    + c.kvDim() + " × " + layout.elementType() + ")");
        }
        return new PagePool(layout, budget);
    }

    /**
     * Refuses, at load, a hybrid model whose recurrent states cannot fit the heap next to those of the hybrid models
     * already loaded in this process: each running sequence holds its state twice (committed and the open step's)
     * and up to {@link Generation#MAX_CAPTURES} + 1 snapshots until it ends, and the checkpoints are held there too.
     * Returns the bytes reserved, which {@link #close()} releases.
     */
    private static long reserveHeapFor(RecurrentLayout recurrent, int sequences, long checkpointBudget) {
        long live = (2L + Generation.MAX_CAPTURES + 1) * sequences * recurrent.bytesPerSequence();
        long need = live + checkpointBudget;
        long heap = Runtime.getRuntime().maxMemory(), allowed = heap / 4 * 3;
        synchronized (HEAP_RESERVED) {
            long others = HEAP_RESERVED.get();
            if (others + need > allowed) {
                throw new dev.forkpoint.InvalidInputException("the recurrent state of " + sequences + " sequences (" + live
                        + " bytes: " + recurrent.bytesPerSequence() + " per state, each running sequence holding its own twice and up to "
                        + (Generation.MAX_CAPTURES + 1) + " snapshots) and checkpoint_bytes " + checkpointBudget
                        + " do not fit three quarters of the Java heap (" + heap + " bytes"
                        + (others > 0 ? ", of which other loaded hybrid models hold " + others : "")
                        + "); lower --parallel or --checkpoint-bytes, load fewer models at once, or give the JVM more heap (-Xmx)");
            }
            HEAP_RESERVED.addAndGet(need);
        }
        return need;
    }

    /** Heap bytes reserved by the hybrid models loaded in this process. */
    private static final java.util.concurrent.atomic.AtomicLong HEAP_RESERVED = new java.util.concurrent.atomic.AtomicLong();

    /** The model's identity for the cache namespace: its files' real paths, sizes and modification times (no hashing at load). */
    private static String modelId(List<Path> files) throws IOException {
        StringBuilder id = new StringBuilder();
        for (Path path : files) {
            Path real = path.toRealPath();
            if (!id.isEmpty()) id.append('|');
            id.append(real).append('#').append(Files.size(real)).append('@').append(Files.getLastModifiedTime(real).toMillis());
        }
        return id.toString();
    }

    public ModelConfig config() { return architecture.config(); }

    public Tokenizer tokenizer() { return tokenizer; }

    /** The model's Jinja chat template ({@code tokenizer.chat_template}, tokenizer_config.json's), or null when it has none. */
    public String chatTemplateSource() { return file.chatTemplate(); }

    /** The model file or folder. */
    public Path path() { return file.path(); }

    /** The worker threads the backend was created with. */
    public int threads() { return threads; }

    /** The backend's name ("cpu"). */
    public String backendName() { return backend.name(); }

    /** The backend's kernels ({@link Backend#kernelsInUse()}: "java", "native avx512vnni", …; "-" on a backend without a choice). */
    public String kernels() {
        return backend.kernelsInUse();
    }

    public ModelInfo info() throws IOException {
        ModelConfig c = architecture.config();
        return new ModelInfo(file.path().toString(), c.architecture(), file.displayName(), file.parameterCount(), file.tensorTypes(),
                c.contextLength(), c.dim(), c.layers(), c.heads(), c.kvHeads(), tokenizer.model(), tokenizer.vocabSize(),
                file.chatTemplate(), sha256(file.contentFiles()),
                c.linear() != null ? c.linear().layerKinds() : "attention ×" + c.layers(),
                pool.layout().positionBytes(), recurrent == null ? 0 : recurrent.bytesPerSequence(),
                c.experts() == null ? null : "top-" + c.experts().topK() + " of " + c.experts().count()
                        + (c.experts().sharedFfnDim() > 0 ? " + shared expert" : ""),
                backend.name());
    }

    /**
     * The num_ctx a request with num_ctx 0 gets: {@link EngineOptions#numCtx()} (Ollama's 4096 when 0), clamped to the
     * model's trained context ({@link #numCtxClamped()} tells whether it was).
     */
    public int defaultNumCtx() {
        return defaultNumCtx(architecture.config(), options);
    }

    /** The default num_ctx asked for: {@link EngineOptions#numCtx()}, or Ollama's 4096 when that is 0. */
    public int requestedNumCtx() {
        return options.numCtx() > 0 ? options.numCtx() : OLLAMA_DEFAULT_NUM_CTX;
    }

    /** Whether an explicitly asked default num_ctx ({@link EngineOptions#numCtx()}) exceeds the trained context. */
    public boolean numCtxClamped() {
        return options.numCtx() > architecture.config().contextLength();
    }

    private static int defaultNumCtx(ModelConfig c, EngineOptions options) {
        return Math.min(options.numCtx() > 0 ? options.numCtx() : OLLAMA_DEFAULT_NUM_CTX, c.contextLength());
    }

    public EngineOptions options() { return options; }

    /** The prefix cache's current counts: tree nodes, cached tokens, pages used/free, budget. */
    public CacheStats cacheStats() { return cache.stats(); }

    /** Off-heap bytes the KV pool has committed so far (≤ its budget). */
    public long kvAllocatedBytes() { return pool.allocatedBytes(); }

    /**
     * Checks a request without running it and returns its prompt's token count; a bad field, a prompt that does not
     * fit num_ctx or a worst case beyond the KV budget throws {@link dev.forkpoint.InvalidInputException} naming it.
     */
    public int check(GenerationRequest request) {
        return Generation.plan(this, request).prompt().length;
    }

    /**
     * Runs a completion, streaming text to {@code sink} (on the caller's thread), through a one-slot {@link Scheduler}
     * ({@link SchedulerOptions#alone()}): the engine's one driver. Serialised with every other evaluation on this
     * model, including other schedulers' steps (one forward pass at a time per model). See {@link Scheduler#generate}.
     */
    public GenerationResult generate(GenerationRequest request, TokenSink sink) {
        try (Scheduler alone = new Scheduler(this, SchedulerOptions.alone())) {
            return alone.generate(request, sink);
        }
    }

    /**
     * The logits after evaluating {@code tokens} from position 0 in a fresh sequence (not matched against nor added to
     * the prefix cache), for the last token.
     */
    public synchronized float[] logits(int[] tokens) {
        if (tokens.length == 0) throw new dev.forkpoint.InvalidInputException("no tokens to evaluate");
        requireFits(tokens.length, tokens.length + " tokens");
        try (SequenceKv sequence = pool.newSequence()) {
            return prefill(tokens, newKvStore(sequence), GenerationRequest.DEFAULT_NUM_BATCH);
        }
    }

    /** How {@link #embed} pools the final hidden states: the model's own pooling, else the last token. */
    public dev.forkpoint.model.Pooling pooling() { return file.pooling(); }

    /**
     * The embedding of {@code tokens}: the model's final hidden states (the last RMSNorm's output, before the output
     * projection) pooled as {@link #pooling()} says, not normalised. The tokens are evaluated from position 0 in a
     * fresh sequence of their own, in chunks of {@code numBatch}, computing no logits; nothing is matched against nor
     * added to the prefix cache (cached prefixes are only evicted when their pages are needed). Serialised with every
     * other evaluation on this model, and all its KV pages are free again when it returns, so the running generations'
     * reserved pages are untouched; a server calls it on the scheduler's thread between two steps
     * ({@link Scheduler#runBetweenSteps}), so generations advance between embeddings. Throws
     * {@link dev.forkpoint.InvalidInputException} for no tokens, a pooling Forkpoint does not compute, or a sequence
     * that could not fit the KV budget even empty; {@link QueueFullException} when running generations hold the pages
     * it needs.
     */
    public synchronized float[] embed(int[] tokens, int numBatch) {
        dev.forkpoint.model.Pooling pooling = file.pooling();
        if (pooling.kind() == dev.forkpoint.model.Pooling.Kind.UNSUPPORTED) {
            throw new dev.forkpoint.InvalidInputException("this model's pooling is not supported for embeddings: " + pooling.source());
        }
        if (tokens.length == 0) throw new dev.forkpoint.InvalidInputException("no tokens to embed");
        if (numBatch < 1) throw new dev.forkpoint.InvalidInputException("num_batch must be at least 1, got " + numBatch);
        for (int t : tokens) {
            if (t < 0 || t >= config().vocabSize()) {
                throw new dev.forkpoint.InvalidInputException("token id " + t + " is outside the vocabulary [0, " + config().vocabSize() + ")");
            }
        }
        requireFits(tokens.length, tokens.length + " tokens");
        int pageTokens = pool.layout().pageTokens();
        int pages = (tokens.length + pageTokens - 1) / pageTokens;
        if (!cache.ensureFreePages(pages)) {
            throw new QueueFullException("server busy: an embedding of " + tokens.length + " tokens needs " + pages
                    + " KV pages, but running generations hold all but " + pool.freePages() + "; retry after 1 s", 1);
        }
        int dim = config().dim();
        double[] sum = new double[dim];
        float[] picked = null;
        try (SequenceKv sequence = pool.newSequence()) {
            KvStore kv = newKvStore(sequence);
            for (int start = 0; start < tokens.length; start += numBatch) {
                int n = Math.min(numBatch, tokens.length - start);
                int[] chunk = java.util.Arrays.copyOfRange(tokens, start, start + n);
                int[] rows = switch (pooling.kind()) {
                    case MEAN -> null;   // every row
                    case CLS -> start == 0 ? new int[] {0} : new int[0];
                    default -> start + n == tokens.length ? new int[] {n - 1} : new int[0];
                };
                float[][] states = hiddenStates(chunk, kv, rows);
                if (pooling.kind() == dev.forkpoint.model.Pooling.Kind.MEAN) {
                    for (float[] row : states) for (int i = 0; i < dim; i++) sum[i] += row[i];
                } else if (states.length > 0) {
                    picked = states[0];
                }
            }
        }
        if (pooling.kind() != dev.forkpoint.model.Pooling.Kind.MEAN) return picked;
        float[] mean = new float[dim];
        for (int i = 0; i < dim; i++) mean[i] = (float) (sum[i] / tokens.length);
        return mean;
    }

    /**
     * One step over {@code chunk} at the end of kv (begin, forward, commit; rolled back when anything throws) that
     * returns the final hidden states of the given rows of the chunk ({@code rows} null: all of them; empty: none, and
     * nothing is read back). The caller holds this model's lock.
     */
    private float[][] hiddenStates(int[] chunk, KvStore kv, int[] rows) {
        return backend.runStep(() -> {
            Ops o = ops;
            Segment segment = new Segment(chunk, kv.length(), kv);
            kv.begin(chunk.length);
            try {
                Activation hidden = architecture.forward(o, List.of(segment));
                float[][] states = rows == null ? o.hidden(hidden)
                        : rows.length == 0 ? new float[0][] : o.hidden(o.rows(hidden, rows));
                kv.prepareCommit();
                kv.commit();
                return states;
            } catch (RuntimeException | Error e) {
                try {
                    if (kv.pending() > 0) kv.rollback();
                } catch (RuntimeException | Error r) {
                    e.addSuppressed(r);
                }
                throw e;
            }
        });
    }

    /** Refuses up front (naming kv_cache_bytes) a sequence of {@code positions} that could not fit the pool even empty. */
    void requireFits(int positions, String what) {
        KvLayout layout = pool.layout();
        long pages = (positions + (long) layout.pageTokens() - 1) / layout.pageTokens() + 1;   // + 1: copy-on-write of a shared page
        if (pages > pool.totalPages()) {
            throw new dev.forkpoint.InvalidInputException(what + " need up to " + positions + " KV positions = " + pages * layout.pageBytes()
                    + " bytes (" + pages + " pages of " + layout.pageBytes() + " bytes, one for copy-on-write), but the KV budget is "
                    + pool.budgetBytes() + " bytes (" + pool.totalPages() + " pages; " + budgetOrigin()
                    + "); lower num_ctx or num_predict, or raise the default num_ctx (--num-ctx) or kv_cache_bytes (--kv-cache-bytes)");
        }
    }

    /** Where the pool's budget came from, for messages. */
    private String budgetOrigin() {
        return options.kvCacheBytes() > 0 ? "kv_cache_bytes " + options.kvCacheBytes()
                : "derived: " + options.sequences() + " sequences × the default num_ctx " + defaultNumCtx() + " × " + pool.layout().positionBytes() + " bytes per position";
    }

    /**
     * Refuses, before any tokenizing, a text that certainly holds more than {@code numCtx} tokens: one that is longer
     * than numCtx × the longest piece of the vocabulary (in chars) × {@value #NORMALIZATION_SLACK} (room for
     * normalisers that fold several characters into one). The work a request can cause before its context check is so
     * bounded by its context, not by the body size. {@code field} names the request's field in the message.
     */
    public void requirePromptMayFit(String text, int numCtx, String field) {
        requirePromptMayFit(text.length(), numCtx, field);
    }

    /**
     * The most characters a text of at most {@code numCtx} tokens can have ({@link #requirePromptMayFit}'s bound): a
     * longer one certainly holds more than numCtx tokens.
     */
    public long promptCharBound(int numCtx) {
        return (long) numCtx * maxTokenChars() * NORMALIZATION_SLACK;
    }

    /** {@link #requirePromptMayFit(String, int, String)} for a text of {@code chars} characters. */
    public void requirePromptMayFit(long chars, int numCtx, String field) {
        long limit = (long) numCtx * maxTokenChars() * NORMALIZATION_SLACK;
        if (chars > limit) {
            throw new dev.forkpoint.InvalidInputException(field + " is " + chars + " characters, more than num_ctx "
                    + numCtx + " tokens can hold (this vocabulary's longest token is " + maxTokenChars()
                    + " characters); shorten the " + field + " or raise num_ctx");
        }
    }

    /** How many characters one token covers at most, in the bound of {@link #requirePromptMayFit}. */
    static final int NORMALIZATION_SLACK = 4;

    private volatile int maxTokenChars;

    /** The longest piece of the vocabulary in chars (at least 1), computed once. */
    int maxTokenChars() {
        int m = maxTokenChars;
        if (m == 0) {
            m = 1;
            for (int id = 0, n = tokenizer.vocabSize(); id < n; id++) {
                String piece = tokenizer.piece(id);
                if (piece != null) m = Math.max(m, piece.length());
            }
            maxTokenChars = m;
        }
        return m;
    }

    /**
     * Called when a forward pass produced no logit above −∞ (all NaN or −∞): names the model's first float tensor that
     * holds non-finite values as the cause ({@link dev.forkpoint.format.ModelFormatException}: the file is unusable);
     * without one the failure is internal. Scans once; the answer is kept.
     */
    RuntimeException noFiniteLogits() {
        String found = nonFinite;
        if (found == null) nonFinite = found = file.tensors().firstNonFinite().orElse("");
        if (!found.isEmpty()) {
            return new dev.forkpoint.format.ModelFormatException(file.path(), "tensor " + found,
                    "holds a NaN or infinite value, so the model computes no finite logits; the file is damaged or the tensor's type is mislabelled");
        }
        return new IllegalStateException("the model computed no finite logits (every logit is NaN or -infinity)");
    }

    private volatile String nonFinite;

    RadixCache cache() { return cache; }

    PagePool pool() { return pool; }

    CacheNamespace namespace(String cacheSalt) { return new CacheNamespace(modelId, cacheSalt); }

    /** Test seam: replaces the ops the graph runs on by {@code wrap(current ops)} (e.g. a fault-injecting decorator). */
    synchronized void decorateOps(UnaryOperator<Ops> wrap) { ops = wrap.apply(ops); }

    KvStore newKvStore(SequenceKv sequence) {
        return backend.newKvStore(sequence, recurrent);
    }

    /**
     * How many of a prompt's deepest message boundaries ({@link GenerationRequest#messageBoundaries()}) a generation on
     * this model can use: a hybrid model captures checkpoints at up to {@link Generation#MAX_CAPTURES} offsets, the
     * deepest ones, so older boundaries are never used; an attention-only model's KV resumes anywhere and uses none (0).
     * Callers need not find more (a chat finds its ends with a second render and a few-message render per shape of message not met before, or a
     * render per end where its template defeats the marks: see {@code dev.forkpoint.chat.MessageEnds}).
     */
    public int forkPointsUsed() {
        return recurrent == null ? 0 : Generation.MAX_CAPTURES;
    }

    /** The recurrent state each sequence keeps (hybrid models), or null: then the cache stores no checkpoints. */
    RecurrentLayout recurrentLayout() { return recurrent; }

    /**
     * The byte budget of checkpoints: {@code --checkpoint-bytes}, or {@value EngineOptions#DEFAULT_CHECKPOINTS} states
     * per sequence, at most a quarter of the heap they live on; 0 for attention-only models.
     */
    public long checkpointBudgetBytes() { return checkpointBudget; }

    /**
     * Evaluates tokens after what kv holds, in chunks of exactly numBatch (the last one shorter), each one step
     * (begin, forward, commit; rolled back when anything throws), and returns the logits of the last token.
     */
    float[] prefill(int[] tokens, KvStore kv, int numBatch) {
        float[] logits = null;
        for (int start = 0; start < tokens.length; start += numBatch) {
            int n = Math.min(numBatch, tokens.length - start);
            int[] chunk = java.util.Arrays.copyOfRange(tokens, start, start + n);
            boolean last = start + n == tokens.length;
            float[] l = evaluate(chunk, kv, last);
            if (last) logits = l;
        }
        return logits;
    }

    /** Evaluates one token at the end of kv (one step) and returns its logits. */
    float[] step(int token, KvStore kv) {
        return evaluate(new int[] {token}, kv, true);
    }

    private float[] evaluate(int[] chunk, KvStore kv, boolean wantLogits) {
        return evaluate(new int[][] {chunk}, new KvStore[] {kv}, wantLogits)[0];
    }

    /**
     * One step for each of several sequences, in one forward pass: opens a step of tokens[i].length positions on
     * kvs[i] (all of them or, when one cannot, none), evaluates every sequence's tokens together, and commits every
     * step. When anything throws, every step opened is rolled back (each store exactly as before) and the error is
     * rethrown. Returns, per sequence, the logits of its last token (null entries when {@code wantLogits} is false).
     * The caller holds this model's lock. The step runs where the backend runs its ops ({@link Backend#runStep}).
     */
    float[][] evaluate(int[][] tokens, KvStore[] kvs, boolean wantLogits) {
        boolean[] want = new boolean[kvs.length];
        java.util.Arrays.fill(want, wantLogits);
        return evaluate(tokens, kvs, want);
    }

    /** {@link #evaluate(int[][], KvStore[], boolean)} with the logits of sequence i computed only when wantLogits[i]. */
    float[][] evaluate(int[][] tokens, KvStore[] kvs, boolean[] wantLogits) {
        if (wantLogits.length != kvs.length || tokens.length != kvs.length) {
            throw new IllegalArgumentException(tokens.length + " token lists, " + kvs.length + " stores, " + wantLogits.length + " logits flags");
        }
        return backend.runStep(() -> evaluateHere(tokens, kvs, wantLogits));
    }

    /**
     * Token rows one pass may mix from several sequences with each row's results as in a pass of its own
     * ({@link Backend#invariantRows()}).
     */
    int invariantRows() {
        return backend.invariantRows();
    }

    private float[][] evaluateHere(int[][] tokens, KvStore[] kvs, boolean[] wantLogits) {
        Ops o = ops;
        List<Segment> segments = new ArrayList<>(kvs.length);
        int opened = 0;
        try {
            for (int i = 0; i < kvs.length; i++) {
                Segment segment = new Segment(tokens[i], kvs[i].length(), kvs[i]);
                kvs[i].begin(tokens[i].length);
                opened++;
                segments.add(segment);
            }
            Activation hidden = architecture.forward(o, segments);
            float[][] logits = new float[kvs.length][];
            int wanted = 0;
            for (boolean w : wantLogits) if (w) wanted++;
            if (wanted > 0) {
                int[] last = new int[wanted];
                for (int i = 0, row = 0, k = 0; i < kvs.length; i++) {
                    row += tokens[i].length;
                    if (wantLogits[i]) last[k++] = row - 1;
                }
                float[][] computed = o.logits(o.rows(hidden, last), architecture.output());
                for (int i = 0, k = 0; i < kvs.length; i++) if (wantLogits[i]) logits[i] = computed[k++];
            }
            for (KvStore kv : kvs) kv.prepareCommit();   // all can commit, or none does
            for (KvStore kv : kvs) kv.commit();
            return logits;
        } catch (RuntimeException | Error e) {
            for (int i = 0; i < opened; i++) {
                try {
                    if (kvs[i].pending() > 0) kvs[i].rollback();
                } catch (RuntimeException | Error r) {
                    e.addSuppressed(r);
                }
            }
            throw e;
        }
    }

    /** The SHA-256 of the files' bytes, one after another (for a GGUF model: of the file). */
    private static String sha256(List<Path> files) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 20];
            for (Path path : files) {
                try (InputStream in = Files.newInputStream(path)) {
                    int n;
                    while ((n = in.read(buf)) > 0) md.update(buf, 0, n);
                }
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        try {
            pool.close();
            backend.close();
            file.close();
        } finally {
            if (heapReserved > 0) HEAP_RESERVED.addAndGet(-heapReserved);
        }
    }
}
