package dev.forkpoint.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.TestData;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.hf.HfConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * config.json of the Qwen3.5 family read into {@link ModelConfig}: the language model's fields from {@code text_config},
 * layer kinds from {@code layer_types} or {@code full_attention_interval}, partial rotary dims, the experts; bad
 * values refused naming {@code text_config.<field>}.
 */
class HybridConfigTest {
    @TempDir
    Path dir;

    private ModelConfig read(String model, Consumer<ObjectNode> edit) throws Exception {
        return read(model, null, edit);
    }

    /** The tiny model's config.json, edited, read as architecture {@code arch} (null: its own model_type). */
    private ModelConfig read(String model, String arch, Consumer<ObjectNode> edit) throws Exception {
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = (ObjectNode) json.readTree(TestData.shared("models/qwen35-tiny-" + model + "/config.json").toFile());
        edit.accept(root);
        Path file = dir.resolve(model + "-" + System.nanoTime() + ".json");
        json.writeValue(file.toFile(), root);
        HfConfig hf = HfConfig.read(file);
        return ModelConfig.fromHf(hf, Architectures.named(arch != null ? arch : hf.modelType(), file, "model_type"));
    }

    private static ObjectNode text(ObjectNode root) { return (ObjectNode) root.get("text_config"); }

    @Test
    void theTinyModelsConfigsAsTheReferenceReadsThem() throws Exception {
        ModelConfig dense = read("dense", r -> {});
        assertEquals("qwen35", dense.architecture());
        assertEquals(64, dense.dim());
        assertEquals(32, dense.headDim());
        assertEquals(8, dense.rope().dims(), "partial_rotary_factor 0.25 of head_dim 32");
        assertTrue(dense.rope().neox());
        assertArrayEquals(new boolean[] {true, true, true, false}, dense.linear().linearLayers());
        assertEquals(1, dense.kvLayers());
        assertEquals(2 * 16 * 2 + 4 * 16, dense.linear().convChannels());
        assertTrue(dense.gatedAttention());
        assertNull(dense.experts());
        ModelConfig moe = read("moe", r -> {});
        assertEquals("qwen35moe", moe.architecture());
        assertEquals(4, moe.experts().count());
        assertEquals(2, moe.experts().topK());
        assertEquals(48, moe.experts().sharedFfnDim());
        assertTrue(moe.experts().renormalize());
    }

    /**
     * The one config.json read as each architecture: Qwen3.5-MoE routes every layer and renormalises whatever it
     * says; Qwen3-Next honours norm_topk_prob (default true) and mlp_only_layers; Qwen3.5's default is false.
     */
    @Test
    void theSpecSaysHowConfigJsonLaysOutTheExperts() throws Exception {
        Consumer<ObjectNode> dense1 = r -> {
            text(r).put("norm_topk_prob", false);
            text(r).put("intermediate_size", 64);
            text(r).putArray("mlp_only_layers").add(1);
        };
        ModelConfig fixed = read("moe", "qwen35moe", dense1);
        assertTrue(fixed.experts().renormalize());
        assertArrayEquals(new boolean[] {true, true, true, true}, fixed.experts().sparseLayers());
        ModelConfig next = read("moe", "qwen3next", dense1);
        assertFalse(next.experts().renormalize());
        assertArrayEquals(new boolean[] {true, false, true, true}, next.experts().sparseLayers());
        assertTrue(read("moe", "qwen3next", r -> text(r).remove("norm_topk_prob")).experts().renormalize());
        assertFalse(read("moe", "qwen35", r -> text(r).remove("norm_topk_prob")).experts().renormalize());
        assertTrue(read("moe", "qwen35", r -> text(r).put("norm_topk_prob", true)).experts().renormalize());
    }

    @Test
    void withoutLayerTypesTheIntervalGivesTheSchedule() throws Exception {
        ModelConfig c = read("dense", r -> {
            text(r).remove("layer_types");
            text(r).put("full_attention_interval", 2);
        });
        assertArrayEquals(new boolean[] {true, false, true, false}, c.linear().linearLayers());
        assertEquals("linear, attention, linear, attention", c.linear().layerKinds());
    }

    @Test
    void badFieldsAreRefusedNamingThem() {
        var e = assertThrows(ModelFormatException.class, () -> read("dense", r -> ((ArrayNode) text(r).get("layer_types")).set(1, "mamba")));
        assertTrue(e.getMessage().contains("text_config.layer_types[1]") && e.getMessage().contains("mamba"), e.getMessage());
        e = assertThrows(ModelFormatException.class, () -> read("dense", r -> ((ArrayNode) text(r).get("layer_types")).remove(0)));
        assertTrue(e.getMessage().contains("text_config.layer_types") && e.getMessage().contains("3 entries"), e.getMessage());
        e = assertThrows(ModelFormatException.class, () -> read("dense", r -> text(r).put("linear_num_value_heads", 3)));
        assertTrue(e.getMessage().contains("linear_num_value_heads") && e.getMessage().contains("multiple"), e.getMessage());
        e = assertThrows(ModelFormatException.class, () -> read("dense", r -> text(r).remove("linear_key_head_dim")));
        assertTrue(e.getMessage().contains("text_config.linear_key_head_dim") && e.getMessage().contains("missing"), e.getMessage());
        e = assertThrows(ModelFormatException.class, () -> read("moe", r -> text(r).put("num_experts_per_tok", 9)));
        assertTrue(e.getMessage().contains("num_experts_per_tok"), e.getMessage());
        e = assertThrows(ModelFormatException.class, () -> read("dense", r -> {
            ArrayNode kinds = (ArrayNode) text(r).get("layer_types");
            for (int i = 0; i < kinds.size(); i++) kinds.set(i, "full_attention");
        }));
        assertTrue(e.getMessage().contains("text_config.layer_types") && e.getMessage().contains("no linear-attention layer"), e.getMessage());
        e = assertThrows(ModelFormatException.class, () -> read("dense", r -> {
            text(r).remove("layer_types");
            text(r).put("full_attention_interval", 1);
        }));
        assertTrue(e.getMessage().contains("full_attention_interval"), e.getMessage());
        e = assertThrows(ModelFormatException.class, () -> read("dense", r -> ((ObjectNode) text(r).get("rope_parameters")).put("partial_rotary_factor", 0.01)));
        assertTrue(e.getMessage().contains("partial_rotary_factor"), e.getMessage());
    }
}
