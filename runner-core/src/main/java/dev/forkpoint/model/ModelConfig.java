package dev.forkpoint.model;

import dev.forkpoint.backend.Rope;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tensor.GgmlType;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The hyper-parameters of a decoder-only transformer, read from GGUF metadata under the architecture's prefix
 * ({@code llama.embedding_length}, …).
 */
public record ModelConfig(String architecture, int dim, int layers, int heads, int kvHeads, int headDim,
                          int ffnDim, int vocabSize, int contextLength, float rmsEps, Rope rope) {

    public static ModelConfig fromGguf(GgufFile f, String arch, boolean neoxRope) {
        String p = arch + ".";
        int dim = positive(f, p + "embedding_length", f.getInt(p + "embedding_length"));
        int layers = positive(f, p + "block_count", f.getInt(p + "block_count"));
        int heads = positive(f, p + "attention.head_count", f.getInt(p + "attention.head_count"));
        int kvHeads = positive(f, p + "attention.head_count_kv", f.getInt(p + "attention.head_count_kv", heads));
        if (heads % kvHeads != 0) {
            throw new ModelFormatException(f.path(), "metadata " + p + "attention.head_count_kv",
                    "head_count " + heads + " is not a multiple of head_count_kv " + kvHeads);
        }
        int headDim = positive(f, p + "attention.key_length", f.getInt(p + "attention.key_length", dim / heads));
        int ffn = positive(f, p + "feed_forward_length", f.getInt(p + "feed_forward_length"));
        GgufTensor embd = f.tensor("token_embd.weight");
        int vocab = f.getInt(p + "vocab_size", embd.rows());
        int ctx = positive(f, p + "context_length", f.getInt(p + "context_length", 2048));
        float eps = (float) f.getDouble(p + "attention.layer_norm_rms_epsilon", 1e-5);
        if (!(eps > 0 && Float.isFinite(eps))) {
            throw new ModelFormatException(f.path(), "metadata " + p + "attention.layer_norm_rms_epsilon", "must be a positive finite float32, found " + eps);
        }
        int ropeDims = positive(f, p + "rope.dimension_count", f.getInt(p + "rope.dimension_count", headDim));
        if (ropeDims > headDim || ropeDims % 2 != 0) {
            throw new ModelFormatException(f.path(), "metadata " + p + "rope.dimension_count", "must be even and at most the head size " + headDim + ", found " + ropeDims);
        }
        double base = f.getDouble(p + "rope.freq_base", 10000.0);
        if (!(base > 0 && Double.isFinite(base))) {
            throw new ModelFormatException(f.path(), "metadata " + p + "rope.freq_base", "must be a positive finite number, found " + base);
        }
        float[] factors = f.findTensor("rope_freqs.weight").map(t -> ropeFactors(f, t, ropeDims)).orElse(null);
        return new ModelConfig(arch, dim, layers, heads, kvHeads, headDim, ffn, vocab, ctx, eps,
                new Rope(ropeDims, base, neoxRope, factors));
    }

    /**
     * The hyper-parameters of a Hugging Face {@code config.json}. Hugging Face layouts rotate half-split (NeoX) pairs
     * for every architecture; {@code rope_scaling} becomes per-pair frequency divisors.
     */
    public static ModelConfig fromHf(dev.forkpoint.format.hf.HfConfig c, String arch) {
        return new ModelConfig(arch, c.hiddenSize(), c.layers(), c.heads(), c.kvHeads(), c.headDim(), c.intermediateSize(),
                c.vocabSize(), c.maxPositions(), (float) c.rmsEps(),
                new Rope(c.headDim(), c.ropeTheta(), true, c.ropeFactors(c.headDim())));
    }

    private static float[] ropeFactors(GgufFile f, GgufTensor t, int ropeDims) {
        if (t.type() != GgmlType.F32 || t.elementCount() != ropeDims / 2) {
            throw new ModelFormatException(f.path(), "tensor rope_freqs.weight", "expected F32 [" + ropeDims / 2 + "], found " + t.type() + " " + t.shapeString());
        }
        return t.data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
    }

    private static int positive(GgufFile f, String key, int v) {
        if (v <= 0) throw new ModelFormatException(f.path(), "metadata " + key, "must be positive, found " + v);
        return v;
    }

    public int kvDim() { return kvHeads * headDim; }
}
