package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.sampling.Sampler;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.sampling.StopSequences;
import dev.forkpoint.tokenizer.StreamingDecoder;
import dev.forkpoint.tokenizer.Tokenizer;

/**
 * One completion from prompt to done: checks the request against the context, prefills the prompt in chunks of
 * num_batch, then samples and evaluates one token at a time until an end-of-generation token, a stop string,
 * num_predict or the end of the context.
 */
final class Generation {
    private final LoadedModel model;
    private final GenerationRequest request;
    private final TokenSink sink;

    Generation(LoadedModel model, GenerationRequest request, TokenSink sink) {
        this.model = model;
        this.request = request;
        this.sink = sink;
    }

    GenerationResult run() {
        SamplingOptions options = request.sampling().validate();
        Tokenizer tokenizer = model.tokenizer();
        int modelContext = model.config().contextLength();
        int numCtx = request.numCtx() == 0 ? modelContext : request.numCtx();
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

        long t0 = System.nanoTime();
        KvStore kv = model.newKvStore(numCtx);
        float[] logits = model.prefill(prompt, kv, numBatch);
        long t1 = System.nanoTime();

        Sampler sampler = new Sampler(options, logits.length);
        StopSequences stops = new StopSequences(options.stop());
        StreamingDecoder decoder = tokenizer.streamingDecoder();
        int[] history = java.util.Arrays.copyOf(prompt, prompt.length + maxNew);
        int historyLength = prompt.length;
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
        int[] ids = java.util.Arrays.copyOfRange(history, prompt.length, historyLength);
        return new GenerationResult(prompt.length, t1 - t0, ids, t2 - t1, doneReason, text.toString());
    }

    private void emit(String piece, StringBuilder text) {
        if (piece.isEmpty()) return;
        text.append(piece);
        sink.text(piece);
    }
}
