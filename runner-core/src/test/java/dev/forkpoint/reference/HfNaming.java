package dev.forkpoint.reference;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An independent mapping between llama.cpp's GGUF tensor names and Hugging Face's for the dense decoders (Llama,
 * Qwen2, Qwen3), written here from the two projects' published layouts, not from the converter or the loader
 * ({@code model.TensorNames}, the architecture specs), so that round-trip tests catch a disagreement, as
 * {@link ReferenceTransformer} does for the forward pass. Also the Llama q/k row order: llama.cpp's converter keeps
 * each head's rotary pairs adjacent (rows 2i, 2i+1) where Hugging Face splits them into halves (rows i, i + d/2).
 */
public final class HfNaming {
    private HfNaming() {}

    private static final Map<String, String> GLOBAL = Map.of(
            "token_embd", "model.embed_tokens", "output_norm", "model.norm", "output", "lm_head");
    private static final Map<String, String> LAYER = Map.ofEntries(
            Map.entry("attn_norm", "input_layernorm"), Map.entry("ffn_norm", "post_attention_layernorm"),
            Map.entry("attn_q", "self_attn.q_proj"), Map.entry("attn_k", "self_attn.k_proj"),
            Map.entry("attn_v", "self_attn.v_proj"), Map.entry("attn_output", "self_attn.o_proj"),
            Map.entry("attn_q_norm", "self_attn.q_norm"), Map.entry("attn_k_norm", "self_attn.k_norm"),
            Map.entry("ffn_gate", "mlp.gate_proj"), Map.entry("ffn_up", "mlp.up_proj"), Map.entry("ffn_down", "mlp.down_proj"));
    private static final Pattern BLOCK = Pattern.compile("blk\\.(\\d+)\\.(\\w+)\\.(weight|bias)");
    private static final Pattern TOP = Pattern.compile("(\\w+)\\.(weight|bias)");

    /** The Hugging Face name of a dense decoder's GGUF tensor ({@code blk.3.attn_q.weight} → {@code model.layers.3.self_attn.q_proj.weight}). */
    public static String hf(String gguf) {
        Matcher m = BLOCK.matcher(gguf);
        if (m.matches() && LAYER.containsKey(m.group(2))) return "model.layers." + m.group(1) + "." + LAYER.get(m.group(2)) + "." + m.group(3);
        m = TOP.matcher(gguf);
        if (m.matches() && GLOBAL.containsKey(m.group(1))) return GLOBAL.get(m.group(1)) + "." + m.group(2);
        throw new IllegalArgumentException("no Hugging Face name known for " + gguf);
    }

    /** The Hugging Face row that Llama's GGUF q/k row {@code ggufRow} holds, for heads of {@code headDim} rows. */
    public static int llamaHfRow(int ggufRow, int headDim) {
        int head = ggufRow / headDim, within = ggufRow % headDim;
        int pair = within / 2, half = within % 2;
        return head * headDim + half * (headDim / 2) + pair;
    }
}
