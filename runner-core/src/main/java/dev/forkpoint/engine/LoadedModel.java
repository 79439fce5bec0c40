package dev.forkpoint.engine;

import dev.forkpoint.tokenizer.Tokenizer;

import java.io.IOException;
import java.nio.file.Path;

/** A model file loaded onto a backend, ready to generate. Not thread-safe: one generation at a time. */
public final class LoadedModel implements AutoCloseable {

    /** Loads a GGUF file on the CPU backend with {@code threads} threads; refuses unsupported architectures and tensor types. */
    public static LoadedModel load(Path gguf, int threads, LoadProgress progress) throws IOException {
        throw new UnsupportedOperationException("not implemented yet");
    }

    public ModelInfo info() {
        throw new UnsupportedOperationException("not implemented yet");
    }

    public Tokenizer tokenizer() {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** Runs a completion, streaming text to {@code sink}. */
    public GenerationResult generate(GenerationRequest request, TokenSink sink) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** The logits after evaluating {@code tokens} from position 0 (a fresh sequence), for the last token. */
    public float[] logits(int[] tokens) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    @Override
    public void close() {}
}
