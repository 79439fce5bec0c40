package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;

import java.util.Optional;

/**
 * The hyperparameters of a synthetic Llama-architecture model.
 *
 * @param headCount     query heads; the head dimension is {@code dim / headCount}
 * @param specialTokens control tokens at the end of the vocabulary (BOS first, then EOS, then reserved ones)
 * @param ropeScaling   Llama 3 frequency scaling written as {@code rope_freqs.weight}, when the shape has it
 */
record ModelShape(String name, int dim, int layers, int headCount, int kvHeadCount, int ffnDim, int vocabSize,
                  int contextLength, float ropeFreqBase, float rmsEps, int specialTokens,
                  Optional<Llama3RopeScaling> ropeScaling) {

    /** Exactly the shape of Meta's Llama-3.2-1B: 1.24 B parameters, tied embeddings, 128 256-token vocabulary. */
    static final ModelShape LLAMA_3_2_1B = new ModelShape("llama-3.2-1b", 2048, 16, 32, 8, 8192, 128_256, 131_072,
            500_000f, 1e-5f, 256, Optional.of(new Llama3RopeScaling(32, 1, 4, 8192)));

    /**
     * A tiny shape for tests: 1.7 M parameters. Every row length is a multiple of 256 so that every file type,
     * the K-quants included, can encode it.
     */
    static final ModelShape TINY = new ModelShape("tiny", 256, 2, 4, 2, 768, 320, 2048, 10_000f, 1e-5f, 8,
            Optional.empty());

    /**
     * A very small shape with a long context, for prefix-cache benchmarks on a CPU (`bench cache`): dim 64, 2 layers,
     * 2 heads of 32, 1 KV head, FFN 128, the 320-token byte-level vocabulary, context 131 072. A 65 536-token prefill
     * is then dominated by attention over the prompt, not by the weights. Rows are multiples of 32, not 256: f16,
     * q8_0 and q4_0 only.
     */
    static final ModelShape LONG_CONTEXT = new ModelShape("long-context", 64, 1, 1, 1, 128, 320, 131_072, 10_000f, 1e-5f, 8,
            Optional.empty());

    ModelShape {
        if (dim % headCount != 0) throw new IllegalArgumentException("dim " + dim + " is not a multiple of " + headCount + " heads");
        if (headCount % kvHeadCount != 0) throw new IllegalArgumentException(headCount + " heads do not group into " + kvHeadCount + " KV heads");
        if (vocabSize < 256 + specialTokens + 2) throw new IllegalArgumentException("vocabulary " + vocabSize + " is too small");
    }

    static ModelShape byName(String name) {
        return switch (name.toLowerCase()) {
            case "llama-3.2-1b" -> LLAMA_3_2_1B;
            case "tiny" -> TINY;
            case "long-context" -> LONG_CONTEXT;
            default -> throw new InvalidInputException("unknown shape '" + name + "' (known: llama-3.2-1b, tiny, long-context)");
        };
    }

    int headDim() { return dim / headCount; }

    int kvDim() { return kvHeadCount * headDim(); }

    /** Id of the first control token; ids below it are byte tokens and fillers. */
    int firstSpecialId() { return vocabSize - specialTokens; }

    int bosId() { return firstSpecialId(); }

    int eosId() { return firstSpecialId() + 1; }
}
