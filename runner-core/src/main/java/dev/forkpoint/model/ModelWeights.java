package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.format.ModelFormatException;

import java.util.function.IntConsumer;

/** The weights of a decoder-only transformer, by llama.cpp's GGUF tensor names, prepared on a backend. */
record ModelWeights(Weight tokenEmbedding, LayerWeights[] layers, Weight outputNorm, Weight output) {

    /** What an architecture's blocks hold beyond the Llama core. */
    record Parts(boolean qkvBias, boolean qkNorm) {}

    static ModelWeights load(ModelTensors f, Backend b, ModelConfig c, Parts parts, IntConsumer tensorLoaded) {
        var loader = new Object() {
            int loaded;

            Weight get(String name, long... shape) {
                long[] actual = f.shape(name).orElseThrow(() -> new ModelFormatException(f.path(), "tensor " + name, "missing"));
                if (shape.length > 0 && !java.util.Arrays.equals(actual, shape)) {
                    throw new ModelFormatException(f.path(), "tensor " + name, "shape " + java.util.Arrays.toString(actual)
                            + ", expected " + java.util.Arrays.toString(shape));
                }
                Weight w = f.weight(name, b);
                tensorLoaded.accept(++loaded);
                return w;
            }

            Weight optional(String name, long... shape) {
                return f.shape(name).isPresent() ? get(name, shape) : null;
            }
        };
        int qDim = c.heads() * c.headDim();
        int kv = c.kvDim();
        // the layer count comes from metadata: check the last layer is there before sizing anything by it
        String lastLayer = "blk." + (c.layers() - 1) + ".attn_norm.weight";
        if (f.shape(lastLayer).isEmpty()) {
            throw new ModelFormatException(f.path(), "tensor " + lastLayer, "missing: the model declares " + c.layers()
                    + " layers (block_count / num_hidden_layers)");
        }
        Weight embd = loader.get("token_embd.weight", c.dim(), c.vocabSize());
        LayerWeights[] layers = new LayerWeights[c.layers()];
        for (int i = 0; i < layers.length; i++) {
            String p = "blk." + i + ".";
            layers[i] = new LayerWeights(
                    loader.get(p + "attn_norm.weight", c.dim()),
                    loader.get(p + "attn_q.weight", c.dim(), qDim),
                    loader.get(p + "attn_k.weight", c.dim(), kv),
                    loader.get(p + "attn_v.weight", c.dim(), kv),
                    loader.get(p + "attn_output.weight", qDim, c.dim()),
                    parts.qkvBias() ? loader.get(p + "attn_q.bias", qDim) : loader.optional(p + "attn_q.bias", qDim),
                    parts.qkvBias() ? loader.get(p + "attn_k.bias", kv) : loader.optional(p + "attn_k.bias", kv),
                    parts.qkvBias() ? loader.get(p + "attn_v.bias", kv) : loader.optional(p + "attn_v.bias", kv),
                    parts.qkNorm() ? loader.get(p + "attn_q_norm.weight", c.headDim()) : null,
                    parts.qkNorm() ? loader.get(p + "attn_k_norm.weight", c.headDim()) : null,
                    loader.get(p + "ffn_norm.weight", c.dim()),
                    loader.get(p + "ffn_gate.weight", c.dim(), c.ffnDim()),
                    loader.get(p + "ffn_up.weight", c.dim(), c.ffnDim()),
                    loader.get(p + "ffn_down.weight", c.ffnDim(), c.dim()));
        }
        Weight norm = loader.get("output_norm.weight", c.dim());
        Weight output = f.shape("output.weight").isPresent() ? loader.get("output.weight", c.dim(), c.vocabSize()) : embd;
        return new ModelWeights(embd, layers, norm, output);
    }
}
