package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.kvcache.CacheMatch;
import dev.forkpoint.kvcache.CacheNamespace;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.sampling.Sampler;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.sampling.StopSequences;
import dev.forkpoint.tokenizer.StreamingDecoder;
import dev.forkpoint.tokenizer.Tokenizer;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * One completion from prompt to done, through the prefix cache: checks the request against the context and the KV
 * budget, reuses the longest cached prefix of the prompt (all but its last token at most), prefills the rest in
 * chunks of exactly num_batch, then samples and evaluates one token at a time until an end-of-generation token, a
 * stop string, num_predict or the end of the context. Every evaluation is one KV step (begin, forward, commit;
 * rolled back when anything throws). However the request ends, its committed tokens are inserted into the cache and
 * its sequence is closed; a failure reaches the caller unchanged. One INFO log line per request:
 * {@code cache total=<prompt tokens> matched=<cached prefix found> reused=<KV positions kept> prefill=<evaluated> chunks=<n>}.
 */
final class Generation {
    private static final System.Logger LOG = System.getLogger(Generation.class.getName());

    private final LoadedModel model;
    private final GenerationRequest request;
    private final TokenSink sink;

    Generation(LoadedModel model, GenerationRequest request, TokenSink sink) {
        this.model = model;
        this.request = request;
        this.sink = sink;
    }

    /**
     * A request checked against the model: validated options, the context it runs in, its prefill chunk size, the
     * encoded prompt, the most tokens it may generate and its message boundaries.
     */
    record Plan(SamplingOptions options, int numCtx, int numBatch, int[] prompt, int maxNew, int[] boundaries) {}

    /**
     * Checks a request without running it: a bad field, a prompt that does not fit num_ctx or a worst case that cannot
     * fit the KV budget throws {@link InvalidInputException} naming what was wrong.
     */
    static Plan plan(LoadedModel model, GenerationRequest request) {
        SamplingOptions options = request.sampling().validate();
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
        int[] prompt = tokenizer.encode(request.prompt(), true, true);
        if (prompt.length == 0) throw new InvalidInputException("prompt is empty");
        if (prompt.length >= numCtx) {
            throw new InvalidInputException("prompt is " + prompt.length + " tokens but num_ctx is " + numCtx
                    + "; shorten the prompt or raise num_ctx");
        }
        int numPredict = options.numPredict();
        if (numPredict > 0 && prompt.length + numPredict > numCtx) {
            throw new InvalidInputException("prompt (" + prompt.length + " tokens) + num_predict (" + numPredict
                    + ") exceeds num_ctx " + numCtx);
        }
        int maxNew = numPredict < 0 ? numCtx - prompt.length : numPredict;
        int[] boundaries = checkedBoundaries(request.messageBoundaries(), prompt.length);
        model.requireFits(prompt.length + maxNew, "prompt (" + prompt.length + " tokens) + "
                + (numPredict < 0 ? "generation up to num_ctx " + numCtx : "num_predict (" + numPredict + ")"));
        return new Plan(options, numCtx, numBatch, prompt, maxNew, boundaries);
    }

    GenerationResult run() {
        Plan plan = plan(model, request);
        SamplingOptions options = plan.options();
        Tokenizer tokenizer = model.tokenizer();
        int numCtx = plan.numCtx(), numBatch = plan.numBatch(), maxNew = plan.maxNew();
        int[] prompt = plan.prompt(), boundaries = plan.boundaries();
        long t0 = System.nanoTime();
        CacheNamespace namespace = model.namespace(request.cacheSalt());
        CacheMatch match = model.cache().match(namespace, prompt);
        SequenceKv sequence = match.sequence();
        int reused = match.matchedTokens();
        int[] history = Arrays.copyOf(prompt, prompt.length + maxNew);
        int historyLength = prompt.length;
        Throwable failure = null;
        try {
            sink.started(prompt.length, reused);
            KvStore kv = model.newKvStore(sequence);
            int[] rest = Arrays.copyOfRange(prompt, reused, prompt.length);
            float[] logits = model.prefill(rest, kv, numBatch);
            long t1 = System.nanoTime();

            Sampler sampler = new Sampler(options, logits.length);
            StopSequences stops = new StopSequences(options.stop());
            StreamingDecoder decoder = tokenizer.streamingDecoder();
            StringBuilder text = new StringBuilder();
            String doneReason = "length";
            int generated = 0;
            while (generated < maxNew) {
                int id = sampler.sample(logits, history, historyLength);
                if (tokenizer.isEndOfGeneration(id)) {
                    doneReason = "stop";
                    break;
                }
                history[historyLength++] = id;
                generated++;
                emit(stops.accept(decoder.push(id)), text);
                if (stops.stopped()) {
                    doneReason = "stop";
                    break;
                }
                if (generated == maxNew || kv.length() == numCtx) break;
                logits = model.step(id, kv);
            }
            if (!stops.stopped()) {
                emit(stops.accept(decoder.flush()), text);
                if (!stops.stopped()) emit(stops.flush(), text);
                if (stops.stopped()) doneReason = "stop";
            }
            long t2 = System.nanoTime();
            int[] ids = Arrays.copyOfRange(history, prompt.length, historyLength);
            return new GenerationResult(prompt.length, t1 - t0, ids, t2 - t1, doneReason, text.toString(),
                    reused, prompt.length - reused, stops.matchedStop());
        } catch (RuntimeException | Error e) {
            failure = e;
            throw e;
        } finally {
            finish(namespace, history, sequence, match, boundaries, failure);
            if (LOG.isLoggable(System.Logger.Level.INFO)) {
                int evaluated = prompt.length - reused;
                LOG.log(System.Logger.Level.INFO, String.format(Locale.ROOT, "cache total=%d matched=%d reused=%d prefill=%d chunks=%d",
                        prompt.length, match.matchedTokens(), reused, evaluated, (evaluated + numBatch - 1) / numBatch));
            }
        }
    }

    /**
     * Inserts the committed tokens (only those: a failed step was rolled back) into the cache and closes the sequence.
     * An error here never hides the request's own failure.
     */
    private void finish(CacheNamespace namespace, int[] history, SequenceKv sequence, CacheMatch match, int[] boundaries,
                        Throwable failure) {
        try {
            int committed = sequence.length();
            if (committed > 0) {
                // Attention-only models keep no non-truncatable state, so the fork points
                // (match.checkpointOffsets(boundaries)) carry no checkpoint payload to store.
                model.cache().insert(namespace, Arrays.copyOf(history, committed), sequence, List.of());
            }
        } catch (RuntimeException | Error e) {
            if (failure == null) throw e;
            failure.addSuppressed(e);
        } finally {
            sequence.close();
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

    private void emit(String piece, StringBuilder text) {
        if (piece.isEmpty()) return;
        text.append(piece);
        sink.text(piece);
    }
}
