package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.RecurrentSnapshot;
import dev.forkpoint.kvcache.CacheMatch;
import dev.forkpoint.kvcache.CheckpointAt;
import dev.forkpoint.kvcache.CacheNamespace;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.sampling.Sampler;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.sampling.StopSequences;
import dev.forkpoint.sampling.structured.TokenConstraint;
import dev.forkpoint.tokenizer.StreamingDecoder;
import dev.forkpoint.tokenizer.Tokenizer;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * One completion from prompt to done, through the prefix cache, as a state machine that a caller drives one step at a
 * time: {@link #start()} matches the prompt against the cache (reusing the longest cached prefix, all but its last
 * token at most) and reports it; then the caller evaluates {@link #chunk(int) prefill chunks} of at most num_batch
 * tokens and, once the prompt is in, one {@link #nextToken() token} at a time, handing each step's logits back
 * ({@link #prefilled}, {@link #decoded}); the generation samples, streams text (complete UTF-8, stop strings withheld)
 * and ends at an end-of-generation token, a stop string, num_predict or the end of the context. Its one driver is the
 * {@link Scheduler} (one slot for {@link LoadedModel#generate} and the CLI, several for the server). Every evaluation
 * is one KV step of the driver (begin, forward, commit; rolled back when anything throws). However the request ends,
 * {@link #close(Throwable)} inserts its committed tokens into the cache and closes its sequence.
 *
 * <p>A hybrid model's recurrent state cannot be truncated: the generation resumes at the deepest checkpoint on the
 * matched prefix (restoring a copy; from 0 without one), ends prefill chunks at this prompt's fork points
 * ({@link dev.forkpoint.kvcache.CacheMatch#checkpointOffsets(int[], int, int)}: the fork point, message boundaries,
 * a ladder before the end, the end) and captures the state there, and at close also at the end of what was
 * committed; the cache stores them with the tokens. One INFO log line per request:
 * {@code cache total=<prompt tokens> matched=<cached prefix found> reused=<positions not evaluated> prefill=<evaluated>
 * chunks=<n>}, plus {@code checkpoint=<offset resumed at>} for hybrid models.
 * Not thread-safe: driven by the scheduler's thread, which holds the model's lock while it evaluates.
 */
final class Generation {
    private static final System.Logger LOG = System.getLogger(Generation.class.getName());

    private final LoadedModel model;
    private final GenerationRequest request;
    private final TokenSink sink;
    private final Plan plan;
    private final int[] prompt;
    private final int[] history;
    private int historyLength;

    private long startNanos, firstTokenNanos;
    private CacheNamespace namespace;
    private CacheMatch match;
    private SequenceKv sequence;
    private KvStore kv;
    private int evaluatedTo;        // prompt tokens whose KV is committed (reused ones included)
    private int reused;             // prompt tokens not evaluated: the match, or (stateful) the restored checkpoint's offset
    private int chunks;
    private int[] captureAt = new int[0];   // stateful models: ascending offsets to snapshot the recurrent state at
    private final List<CheckpointAt> captured = new java.util.ArrayList<>();
    private boolean stateMatchesLength;     // start() completed: the recurrent state is the committed tokens' state

    private Sampler sampler;
    private TokenConstraint constraint;   // structured output, or null
    private final StopSequences stops;
    private final StreamingDecoder decoder;
    private final StringBuilder text = new StringBuilder();
    private int generated;
    // log-probabilities (only when asked for): entries wait here until the text they produce is emitted
    private float[] rawLogits;                   // the logits before the sampler's penalties, reused
    private int[] topIds;
    private final java.util.ArrayDeque<Pending> pendingLogprobs = new java.util.ArrayDeque<>();
    private final List<TokenLogprob> logprobs = new java.util.ArrayList<>();
    private int rawChars;                        // chars the decoder has produced (emitted text is a prefix of them)
    private int nextToken = -1;     // the sampled token still to evaluate, or −1
    private final ThinkingBudget.Tracker thinking;   // null: no thinking budget
    private GenerationResult result;
    private boolean closed;

    Generation(LoadedModel model, GenerationRequest request, Plan plan, TokenSink sink) {
        this.model = model;
        this.request = request;
        this.sink = sink;
        this.plan = plan;
        this.prompt = plan.prompt();
        this.history = Arrays.copyOf(prompt, prompt.length + plan.maxNew());
        this.historyLength = prompt.length;
        this.stops = new StopSequences(plan.options().stop());
        this.decoder = model.tokenizer().streamingDecoder();
        this.thinking = request.thinkingBudget() == null ? null : new ThinkingBudget.Tracker(request.thinkingBudget());
    }

    /**
     * A request checked against the model: validated options, the context it runs in, its prefill chunk size, the
     * encoded prompt, the most tokens it may generate and its message boundaries.
     */
    record Plan(SamplingOptions options, int numCtx, int numBatch, int[] prompt, int maxNew, int[] boundaries) {}

    /**
     * Checks a request without running it, encoding its prompt unless it carries its tokens: a bad field or a worst
     * case that cannot fit the KV budget throws {@link InvalidInputException} naming what was wrong, a prompt (plus
     * num_predict) that does not fit num_ctx {@link ContextOverflowException}, the one context check of every API.
     */
    static Plan plan(LoadedModel model, GenerationRequest request) {
        SamplingOptions options = request.sampling().validate();
        if (request.topLogprobs() < GenerationRequest.LOGPROBS_OFF || request.topLogprobs() > TokenLogprob.MAX_TOP) {
            throw new InvalidInputException("top_logprobs must be in [0, " + TokenLogprob.MAX_TOP + "] (or -1: none), got " + request.topLogprobs());
        }
        Tokenizer tokenizer = model.tokenizer();
        int modelContext = model.config().contextLength();
        int numCtx = request.numCtx() == 0 ? model.defaultNumCtx() : request.numCtx();
        if (numCtx < 1 || numCtx > modelContext) {
            throw new InvalidInputException("num_ctx must be in [1, " + modelContext + "] (the model's context length), got " + request.numCtx());
        }
        int numBatch = request.numBatchFor(numCtx);
        if (numBatch < 1 || numBatch > numCtx) {
            throw new InvalidInputException("num_batch must be in [1, num_ctx=" + numCtx + "], got " + request.numBatch());
        }
        int[] prompt;
        if (request.promptTokens() != null) {
            prompt = request.promptTokens();
            int vocab = Math.min(tokenizer.vocabSize(), model.config().vocabSize());
            for (int i = 0; i < prompt.length; i++) {
                if (prompt[i] < 0 || prompt[i] >= vocab) {
                    throw new InvalidInputException("prompt token " + i + " is " + prompt[i] + ", outside the vocabulary [0, " + vocab + ")");
                }
            }
        } else {
            model.requirePromptMayFit(request.prompt(), numCtx, "prompt");
            prompt = tokenizer.encode(request.prompt(), true, true);
        }
        if (prompt.length == 0) throw new InvalidInputException("prompt is empty");
        if (prompt.length >= numCtx) throw new ContextOverflowException(prompt.length, -1, numCtx);
        int numPredict = options.numPredict();
        if (numPredict > 0 && numPredict > numCtx - prompt.length) {   // not prompt + numPredict: that overflows
            throw new ContextOverflowException(prompt.length, numPredict, numCtx);
        }
        int maxNew = numPredict < 0 ? numCtx - prompt.length : numPredict;   // 0: evaluate the prompt, generate nothing
        int[] boundaries = checkedBoundaries(request.messageBoundaries(), prompt.length);
        // structured output: the vocabulary's token tries are built here, on the caller's thread, once per tokenizer
        // (about a second for 150,000 tokens), not in the middle of a decode step that other sequences share
        if (request.grammar() != null) dev.forkpoint.sampling.structured.TokenTrie.of(tokenizer);
        model.requireFits(prompt.length + maxNew, "prompt (" + prompt.length + " tokens) + "
                + (numPredict < 0 ? "generation up to num_ctx " + numCtx : "num_predict (" + numPredict + ")"));
        return new Plan(options, numCtx, numBatch, prompt, maxNew, boundaries);
    }

    /** Matches the prompt against the prefix cache (locking the matched path) and opens the sequence. */
    void start() {
        if (namespace != null) throw new IllegalStateException("generation already started");
        startNanos = System.nanoTime();
        namespace = model.namespace(request.cacheSalt());
        match = model.cache().match(namespace, prompt);
        sequence = match.sequence();
        evaluatedTo = match.matchedTokens();
        kv = model.newKvStore(sequence);
        if (model.recurrentLayout() != null) {
            // the recurrent state cannot be truncated: resume at the deepest checkpoint on the matched path (or at 0),
            // restoring a copy of it, and capture new ones at this prompt's fork points
            evaluatedTo = match.statefulResumeOffset();
            sequence.truncate(evaluatedTo);
            match.checkpoint().ifPresent(c -> kv.restore((RecurrentSnapshot) c.checkpoint()));
            captureAt = captureOffsets(match, plan.boundaries(), model.checkpointBudgetBytes() / model.recurrentLayout().bytesPerSequence());
        }
        reused = evaluatedTo;
        stateMatchesLength = true;   // from here on the store's state is the state after its committed tokens
    }

    /**
     * The offsets to capture the state at: the fork point, then the deepest of the message boundaries, the ladder
     * (at most {@value #LADDER_CHECKPOINTS} rungs) and the prompt's end, {@value #MAX_CAPTURES} in all — a request holds
     * its snapshots until it ends — and none beyond what the budget can hold ({@code states}); none when it holds none.
     */
    static int[] captureOffsets(CacheMatch match, int[] boundaries, long states) {
        if (states < 1) return new int[0];
        int ladder = (int) Math.max(1, Math.min(LADDER_CHECKPOINTS, states / 2));
        int[] all = match.checkpointOffsets(boundaries, ladderFloor(boundaries), ladder);
        int keep = (int) Math.min(MAX_CAPTURES, states);
        if (all.length <= keep) return all;
        java.util.TreeSet<Integer> chosen = new java.util.TreeSet<>();
        int fork = match.matchedTokens();
        if (Arrays.binarySearch(all, fork) >= 0) chosen.add(fork);
        for (int i = all.length - 1; i >= 0 && chosen.size() < keep; i--) chosen.add(all[i]);
        return chosen.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The most states one request captures while it runs (plus one at its end). */
    static final int MAX_CAPTURES = 16;

    /** Checkpoints of the ladder before a prompt's end (N−1, N−2, …, N−2^(k−1)). */
    static final int LADDER_CHECKPOINTS = 12;

    /** Where the prompt's last message starts: its second-last message end, or 0. */
    private static int ladderFloor(int[] boundaries) {
        return boundaries.length >= 2 ? boundaries[boundaries.length - 2] : 0;
    }

    /** Reports the start (prompt tokens, reused tokens) to the sink; once, after {@link #start()}. */
    void started() {
        sink.started(prompt.length, reused);
    }

    /** Prompt tokens reused from the cache (after {@link #start()}). */
    int reused() { return reused; }

    /** Tokens generated so far. */
    int generated() { return generated; }

    /** Whether {@code n} tokens complete the prompt (a chunk of n is its last and needs logits). */
    boolean completesPrompt(int n) { return evaluatedTo + n == prompt.length; }

    /**
     * Gives up before anything was evaluated or reported (the request was not admitted after all): closes the
     * sequence without touching the cache or logging. Idempotent.
     */
    void abandon() {
        if (closed || sequence == null) return;
        closed = true;
        sequence.close();
    }

    /** The sequence's KV store (after {@link #start()}). */
    KvStore kv() { return kv; }

    /** Pages in the sequence's table now (shared prefix pages included), 0 before start or after close. */
    int pages() { return sequence == null || sequence.isClosed() ? 0 : sequence.pageCount(); }

    /** The most KV positions this generation can ever hold: prompt + the most tokens it may generate. */
    int worstCasePositions() { return prompt.length + plan.maxNew(); }

    /** The request's prefill chunk size. */
    int numBatch() { return plan.numBatch(); }

    /** Whether prompt tokens remain to be evaluated. */
    boolean prefilling() { return result == null && evaluatedTo < prompt.length; }

    /** The next prefill chunk: up to num_batch (and up to {@code budget} ≥ 1) of the prompt tokens not yet evaluated. */
    int[] chunk(int budget) {
        int n = Math.min(Math.min(plan.numBatch(), Math.max(1, budget)), prompt.length - evaluatedTo);
        for (int c : captureAt) {   // a chunk ends at the next checkpoint offset, where the state is captured
            if (c > evaluatedTo) {
                n = Math.min(n, c - evaluatedTo);
                break;
            }
        }
        return Arrays.copyOfRange(prompt, evaluatedTo, evaluatedTo + n);
    }

    /** A chunk of n prompt tokens was committed; {@code logits} (needed only for the prompt's last token) are its last token's. */
    void prefilled(int n, float[] logits) {
        evaluatedTo += n;
        chunks++;
        if (Arrays.binarySearch(captureAt, evaluatedTo) >= 0) captured.add(new CheckpointAt(evaluatedTo, kv.snapshot()));
        if (evaluatedTo < prompt.length) return;
        if (logits == null) throw new IllegalStateException("the prompt's last chunk was evaluated without logits");
        firstTokenNanos = System.nanoTime();
        if (plan.maxNew() == 0) {   // num_predict 0: the prompt is evaluated (and cached), nothing is generated
            finish("length");
            return;
        }
        sampler = new Sampler(plan.options(), logits.length);
        if (request.grammar() != null) constraint = new TokenConstraint(request.grammar(), model.tokenizer());
        accept(logits);
    }

    /** Whether a sampled token waits to be evaluated ({@link #nextToken()}). */
    boolean decoding() { return result == null && nextToken >= 0; }

    int nextToken() { return nextToken; }

    /** The last sampled token was committed; these are its logits. */
    void decoded(float[] logits) {
        nextToken = -1;
        accept(logits);
    }

    /** Whether the generation has ended normally ({@link #result()} is set). */
    boolean done() { return result != null; }

    GenerationResult result() { return result; }

    /** Samples the next token from {@code logits}, streams its text, and either ends the generation or queues the token. */
    private void accept(float[] logits) {
        Tokenizer tokenizer = model.tokenizer();
        if (!Sampler.anyLogit(logits)) throw model.noFiniteLogits();
        boolean wantsLogprobs = request.wantsLogprobs();
        if (wantsLogprobs) {   // the sampler may modify the logits (penalties): keep the model's own
            if (rawLogits == null || rawLogits.length != logits.length) rawLogits = new float[logits.length];
            System.arraycopy(logits, 0, rawLogits, 0, logits.length);
        }
        // a thinking budget spent: the closing tag (not under a grammar, which decides every token itself)
        int forced = thinking == null || constraint != null ? -1 : thinking.forcedToken();
        int id = forced >= 0 ? forced : sampler.sample(logits, history, historyLength, constraint == null ? null : constraint.allowed());
        if (tokenizer.isEndOfGeneration(id)) {
            finish("stop");
            return;
        }
        if (constraint != null) constraint.accept(id);
        history[historyLength++] = id;
        generated++;
        String raw = decoder.push(id);
        if (thinking != null) thinking.generated(raw);
        if (wantsLogprobs) queueLogprob(id, raw);
        emit(stops.accept(raw));
        if (stops.stopped() || constraint != null && constraint.complete()) {
            finish("stop");
        } else if (generated == plan.maxNew() || kv.length() == plan.numCtx()) {
            finish("length");
        } else {
            nextToken = id;
        }
    }

    private void finish(String reason) {
        String doneReason = reason;
        if (!stops.stopped()) {
            String rest = decoder.flush();
            if (!rest.isEmpty()) advanceRaw(rest.length());
            emit(stops.accept(rest));
            if (!stops.stopped()) emit(stops.flush());
            if (stops.stopped()) doneReason = "stop";
        }
        if (!pendingLogprobs.isEmpty()) {
            // what is left: tokens whose text was partly emitted (kept) or lies wholly in a withheld stop (dropped)
            List<TokenLogprob> out = new java.util.ArrayList<>();
            for (Pending p : pendingLogprobs) {
                if (!stops.stopped() || p.start < text.length() || p.end >= 0 && p.end <= text.length()) out.add(p.entry);
            }
            pendingLogprobs.clear();
            if (!out.isEmpty()) {
                logprobs.addAll(out);
                sink.text("", out);
            }
        }
        long end = System.nanoTime();
        int[] ids = Arrays.copyOfRange(history, prompt.length, historyLength);
        result = new GenerationResult(prompt.length, firstTokenNanos - startNanos, ids, end - firstTokenNanos, doneReason,
                text.toString(), reused, prompt.length - reused, stops.matchedStop(), logprobs);
    }

    /**
     * Ends the generation however it went: inserts the committed tokens (only those: a failed step was rolled back)
     * into the cache, closes the sequence (releasing its pages and the lock on its cached path) and logs the cache
     * line. Idempotent; an error here never hides {@code failure}, the generation's own.
     */
    void close(Throwable failure) {
        if (closed || sequence == null) return;
        closed = true;
        try {
            int committed = sequence.length();
            if (committed > 0) {
                // stateful models: the state at the end of what was committed (a reply's end) is a fork point too;
                // attention-only models capture nothing (their KV alone resumes anywhere)
                if (model.recurrentLayout() != null && stateMatchesLength && captureAt.length > 0 && !sequence.inStep()
                        && (captured.isEmpty() || captured.getLast().offset() < committed)) {
                    captured.add(new CheckpointAt(committed, kv.snapshot()));
                }
                model.cache().insert(namespace, Arrays.copyOf(history, committed), sequence,
                        stateMatchesLength ? captured : List.of());
                captured.clear();
            }
        } catch (RuntimeException | Error e) {
            if (failure == null) throw e;
            failure.addSuppressed(e);
        } finally {
            sequence.close();
            if (LOG.isLoggable(System.Logger.Level.INFO)) {
                int evaluated = prompt.length - reused;
                String checkpoint = model.recurrentLayout() == null ? "" : " checkpoint=" + match.statefulResumeOffset();
                LOG.log(System.Logger.Level.INFO, String.format(Locale.ROOT, "cache total=%d matched=%d reused=%d prefill=%d chunks=%d%s",
                        prompt.length, match.matchedTokens(), reused, evaluated, chunks, checkpoint));
            }
        }
    }

    /** Message boundaries ascending in [1, promptTokens]; anything else is refused naming message_boundaries. */
    private static int[] checkedBoundaries(int[] boundaries, int promptTokens) {
        int previous = 0;
        for (int b : boundaries) {
            if (b <= previous || b > promptTokens) {
                throw new InvalidInputException("message_boundaries must ascend within [1, " + promptTokens
                        + "] (prompt tokens), got " + Arrays.toString(boundaries));
            }
            previous = b;
        }
        return boundaries;
    }

    private void emit(String piece) {
        text.append(piece);
        if (!request.wantsLogprobs()) {
            if (!piece.isEmpty()) sink.text(piece);
            return;
        }
        List<TokenLogprob> released = List.of();
        while (!pendingLogprobs.isEmpty()) {
            Pending p = pendingLogprobs.peekFirst();
            if (p.end < 0 || p.end > text.length()) break;
            if (released.isEmpty()) released = new java.util.ArrayList<>();
            released.add(pendingLogprobs.pollFirst().entry);
        }
        if (piece.isEmpty() && released.isEmpty()) return;
        logprobs.addAll(released);
        sink.text(piece, released);
    }

    /**
     * A generated token's entry, waiting for its text: {@code start}/{@code end} are offsets into the decoder's output
     * (chars before and after the token's text); {@code end} is −1 while the token's bytes wait in the decoder for the
     * rest of their UTF-8 sequence.
     */
    private static final class Pending {
        final TokenLogprob entry;
        final int start;
        int end;

        Pending(TokenLogprob entry, int start, int end) {
            this.entry = entry;
            this.start = start;
            this.end = end;
        }
    }

    /** The decoder produced {@code chars} more chars: tokens whose bytes waited for them end there. */
    private void advanceRaw(int chars) {
        rawChars += chars;
        for (Pending p : pendingLogprobs) if (p.end < 0) p.end = rawChars;
    }

    /** Computes the sampled token's entry from the logits it was drawn from and queues it behind its text. */
    private void queueLogprob(int id, String raw) {
        Tokenizer tokenizer = model.tokenizer();
        // normalised over the logits the sampler draws from; alternatives listed only among the tokenizer's ids
        dev.forkpoint.sampling.LogSoftmax ls = new dev.forkpoint.sampling.LogSoftmax(rawLogits, rawLogits.length, plan.options().temperature());
        int vocab = Math.min(rawLogits.length, tokenizer.vocabSize());
        int n = request.topLogprobs();
        List<TokenLogprob> top = List.of();
        if (n > 0) {
            if (topIds == null) topIds = new int[n];
            int count = dev.forkpoint.sampling.LogSoftmax.top(rawLogits, vocab, topIds);
            TokenLogprob[] alternatives = new TokenLogprob[count];
            for (int i = 0; i < count; i++) alternatives[i] = entry(topIds[i], ls, List.of());
            top = List.of(alternatives);
        }
        int start = rawChars;
        if (!raw.isEmpty()) advanceRaw(raw.length());
        boolean held = raw.isEmpty() && tokenizer.tokenBytes(id).length > 0;   // its bytes wait for the rest of a character
        pendingLogprobs.addLast(new Pending(entry(id, ls, top), start, held ? -1 : rawChars));
    }

    private TokenLogprob entry(int id, dev.forkpoint.sampling.LogSoftmax ls, List<TokenLogprob> top) {
        Tokenizer tokenizer = model.tokenizer();
        byte[] bytes = tokenizer.tokenBytes(id);
        String token = bytes.length > 0 ? new String(bytes, java.nio.charset.StandardCharsets.UTF_8) : tokenizer.piece(id);
        double lp = ls.logprob(rawLogits[id]);
        if (lp == Double.NEGATIVE_INFINITY) lp = TokenLogprob.NEGATIVE_INFINITY_LOGPROB;
        return new TokenLogprob(id, token, bytes, lp, top);
    }
}
