package dev.forkpoint.model;

import dev.forkpoint.reference.HfNaming;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Each architecture's tensor names ({@link Architecture.Spec#tensorNames()}): the names every decoder shares agree
 * with the test tree's own table ({@link HfNaming}) in both directions for every spec; the names only some
 * architectures have map for the specs that own them and for no other (the expected GGUF names are llama.cpp's);
 * Llama's q/k row order is the one {@link HfNaming} derives independently.
 */
class TensorNamesTest {
    private static final List<String> DENSE_GGUF = List.of("token_embd.weight", "output_norm.weight", "output.weight",
            "blk.2.attn_norm.weight", "blk.2.attn_q.weight", "blk.2.attn_q.bias", "blk.2.attn_k.weight", "blk.2.attn_k.bias",
            "blk.2.attn_v.weight", "blk.2.attn_v.bias", "blk.2.attn_output.weight", "blk.2.attn_q_norm.weight",
            "blk.2.attn_k_norm.weight", "blk.2.ffn_norm.weight", "blk.2.ffn_gate.weight", "blk.2.ffn_up.weight", "blk.2.ffn_down.weight");

    private static TensorNames names(String arch) { return Architectures.find(arch).orElseThrow().tensorNames(); }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen2", "qwen3", "qwen35", "qwen35moe", "qwen3next", "qwen3moe"})
    void theSharedNamesAgreeWithTheIndependentTable(String arch) {
        TensorNames n = names(arch);
        for (String gguf : DENSE_GGUF) {
            assertEquals(Optional.of(HfNaming.hf(gguf)), n.toHf(gguf), arch + " " + gguf);
            assertEquals(Optional.of(gguf), n.toGguf(HfNaming.hf(gguf)), arch + " " + gguf);
        }
        assertEquals(Optional.empty(), n.toGguf("model.layers.0.self_attn.rotary_emb.inv_freq"), arch);
        assertEquals(Optional.empty(), n.toHf("rope_freqs.weight"), arch);
    }

    /** A Hugging Face name, its GGUF name for the specs listed (by GGUF architecture, '|'-separated), none for the others. */
    @ParameterizedTest
    @CsvSource({
            "model.layers.1.linear_attn.in_proj_qkv.weight, blk.1.attn_qkv.weight, qwen35|qwen35moe|qwen3next",
            "model.layers.1.linear_attn.A_log, blk.1.ssm_a_log, qwen35|qwen35moe|qwen3next",
            "model.layers.1.linear_attn.dt_bias, blk.1.ssm_dt.bias, qwen35|qwen35moe|qwen3next",
            "model.layers.1.linear_attn.conv1d.weight, blk.1.ssm_conv1d.weight, qwen35|qwen35moe|qwen3next",
            "model.layers.1.linear_attn.in_proj_qkvz.weight, blk.1.ssm_in.weight, qwen3next",
            "model.layers.1.linear_attn.in_proj_ba.weight, blk.1.ssm_ba.weight, qwen3next",
            "model.language_model.layers.1.linear_attn.out_proj.weight, blk.1.ssm_out.weight, qwen35|qwen35moe",
            "language_model.model.embed_tokens.weight, token_embd.weight, qwen35|qwen35moe",
            "model.layers.1.mlp.gate.weight, blk.1.ffn_gate_inp.weight, qwen35moe|qwen3next|qwen3moe",
            "model.layers.1.mlp.experts.gate_up_proj, blk.1.ffn_gate_up_exps.weight, qwen35moe|qwen3next|qwen3moe",
            "model.layers.1.mlp.switch_mlp.down_proj.weight, blk.1.ffn_down_exps.weight, qwen35moe|qwen3next|qwen3moe",
            "model.layers.1.mlp.experts.5.up_proj.weight, blk.1.ffn_up_exps.5.weight, qwen3next|qwen3moe",
            "model.layers.1.mlp.shared_expert.down_proj.weight, blk.1.ffn_down_shexp.weight, qwen35moe|qwen3next",
            "model.layers.1.mlp.shared_expert_gate.weight, blk.1.ffn_gate_inp_shexp.weight, qwen35moe|qwen3next",
    })
    void theOtherNamesBelongToTheSpecsThatHaveThem(String hf, String gguf, String owners) {
        List<String> own = List.of(owners.split("\\|"));
        for (String arch : List.of("llama", "qwen2", "qwen3", "qwen35", "qwen35moe", "qwen3next", "qwen3moe")) {
            assertEquals(own.contains(arch) ? Optional.of(gguf) : Optional.empty(), names(arch).toGguf(hf), arch + " " + hf);
        }
    }

    @ParameterizedTest
    @CsvSource({"4, 8", "2, 64", "1, 2"})
    void llamasRowOrderIsTheIndependentOneAndTheOthersKeepHuggingFacesOrder(int heads, int headDim) {
        int[] expected = new int[heads * headDim];
        for (int r = 0; r < expected.length; r++) expected[r] = HfNaming.llamaHfRow(r, headDim);
        assertArrayEquals(expected, Architectures.find("llama").orElseThrow().ggufQkRowOrder(heads, headDim));
        for (String arch : List.of("qwen2", "qwen3", "qwen35", "qwen35moe", "qwen3next", "qwen3moe")) {
            assertNull(Architectures.find(arch).orElseThrow().ggufQkRowOrder(heads, headDim), arch);
        }
    }
}
