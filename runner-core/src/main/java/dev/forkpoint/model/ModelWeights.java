package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.format.ModelFormatException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntConsumer;

/** The weights of a decoder-only transformer, by llama.cpp's GGUF tensor names, prepared on a backend. */
record ModelWeights(Weight tokenEmbedding, LayerWeights[] layers, Weight outputNorm, Weight output) {

    /** What an architecture's blocks hold beyond the Llama core. */
    record Parts(boolean qkvBias, boolean qkNorm) {}

    /**
     * Every weight a dense transformer of {@code c} with {@code parts} may have, in load order: the one table of
     * names and shapes that loading checks and that the converter checks a Hugging Face folder against.
     */
    static List<ExpectedWeight> expected(ModelConfig c, Parts parts) {
        long d = c.dim(), q = (long) c.heads() * c.headDim(), kv = c.kvDim(), ffn = c.ffnDim(), head = c.headDim();
        List<ExpectedWeight> out = new ArrayList<>();
        out.add(new ExpectedWeight("token_embd.weight", new long[]{d, c.vocabSize()}, true));
        for (int i = 0; i < c.layers(); i++) {
            String p = "blk." + i + ".";
            out.add(new ExpectedWeight(p + "attn_norm.weight", new long[]{d}, true));
            out.add(new ExpectedWeight(p + "attn_q.weight", new long[]{d, q}, true));
            out.add(new ExpectedWeight(p + "attn_k.weight", new long[]{d, kv}, true));
            out.add(new ExpectedWeight(p + "attn_v.weight", new long[]{d, kv}, true));
            out.add(new ExpectedWeight(p + "attn_output.weight", new long[]{q, d}, true));
            out.add(new ExpectedWeight(p + "attn_q.bias", new long[]{q}, parts.qkvBias()));
            out.add(new ExpectedWeight(p + "attn_k.bias", new long[]{kv}, parts.qkvBias()));
            out.add(new ExpectedWeight(p + "attn_v.bias", new long[]{kv}, parts.qkvBias()));
            if (parts.qkNorm()) {
                out.add(new ExpectedWeight(p + "attn_q_norm.weight", new long[]{head}, true));
                out.add(new ExpectedWeight(p + "attn_k_norm.weight", new long[]{head}, true));
            }
            out.add(new ExpectedWeight(p + "ffn_norm.weight", new long[]{d}, true));
            out.add(new ExpectedWeight(p + "ffn_gate.weight", new long[]{d, ffn}, true));
            out.add(new ExpectedWeight(p + "ffn_up.weight", new long[]{d, ffn}, true));
            out.add(new ExpectedWeight(p + "ffn_down.weight", new long[]{ffn, d}, true));
        }
        out.add(new ExpectedWeight("output_norm.weight", new long[]{d}, true));
        out.add(new ExpectedWeight("output.weight", new long[]{d, c.vocabSize()}, false));   // absent: tied to the embeddings
        return out;
    }

    static ModelWeights load(ModelTensors f, Backend b, ModelConfig c, Parts parts, IntConsumer tensorLoaded) {
        // the layer count comes from metadata: check the last layer is there before sizing anything by it
        String lastLayer = "blk." + (c.layers() - 1) + ".attn_norm.weight";
        if (f.shape(lastLayer).isEmpty()) {
            throw new ModelFormatException(f.path(), "tensor " + lastLayer, "missing: the model declares " + c.layers()
                    + " layers (block_count / num_hidden_layers)");
        }
        Map<String, ExpectedWeight> table = new HashMap<>();
        for (ExpectedWeight e : expected(c, parts)) table.put(e.name(), e);
        var loader = new Object() {
            int loaded;

            /** The weight {@code name} of the table: a required one must be there, an optional one is null when absent. */
            Weight get(String name) {
                ExpectedWeight e = table.get(name);
                if (e == null) return null;   // a part this architecture does not have
                Optional<long[]> actual = f.shape(name);
                if (actual.isEmpty()) {
                    if (e.required()) throw new ModelFormatException(f.path(), "tensor " + name, "missing");
                    return null;
                }
                if (!e.fits(actual.get())) {
                    throw new ModelFormatException(f.path(), "tensor " + name, "shape " + Arrays.toString(actual.get())
                            + ", expected " + e.shapesString());
                }
                Weight w = f.weight(name, b);
                tensorLoaded.accept(++loaded);
                return w;
            }
        };
        Weight embd = loader.get("token_embd.weight");
        LayerWeights[] layers = new LayerWeights[c.layers()];
        for (int i = 0; i < layers.length; i++) {
            String p = "blk." + i + ".";
            layers[i] = new LayerWeights(
                    loader.get(p + "attn_norm.weight"),
                    loader.get(p + "attn_q.weight"),
                    loader.get(p + "attn_k.weight"),
                    loader.get(p + "attn_v.weight"),
                    loader.get(p + "attn_output.weight"),
                    loader.get(p + "attn_q.bias"),
                    loader.get(p + "attn_k.bias"),
                    loader.get(p + "attn_v.bias"),
                    loader.get(p + "attn_q_norm.weight"),
                    loader.get(p + "attn_k_norm.weight"),
                    loader.get(p + "ffn_norm.weight"),
                    loader.get(p + "ffn_gate.weight"),
                    loader.get(p + "ffn_up.weight"),
                    loader.get(p + "ffn_down.weight"));
        }
        Weight norm = loader.get("output_norm.weight");
        Weight output = loader.get("output.weight");
        return new ModelWeights(embd, layers, norm, output != null ? output : embd);
    }
}
