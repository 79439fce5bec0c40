package dev.forkpoint.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An architecture's tensor names in the Hugging Face / mlx-community layout ({@code model.layers.3.self_attn.q_proj.weight})
 * and their llama.cpp GGUF equivalents ({@code blk.3.attn_q.weight}). Suffixes ({@code .weight}, {@code .bias}, and
 * MLX's {@code .scales} / {@code .biases}) carry over. Each spec composes its names ({@link Architecture.Spec#tensorNames()})
 * from {@link #DECODER}, the names every decoder here shares, and parts of its own declared in its spec file
 * ({@link #layer}, {@link #bare}, {@link #prefixes}, {@link #PER_EXPERT}), joined with {@link #and}. Where two Hugging
 * Face names share a GGUF name, the GGUF name maps back to the part listed first.
 */
public final class TensorNames {
    private enum Scope { MODEL, LAYER, BARE, PREFIX, PER_EXPERT }

    /** One name pair: a Hugging Face name (or prefix) and its GGUF equivalent. */
    private record Pair(Scope scope, String hf, String gguf) {}

    private static final Pattern HF_LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)\\.([a-z_]+)");
    private static final Pattern GGUF_LAYER = Pattern.compile("blk\\.(\\d+)\\.(.+)\\.([a-z_]+)");
    private static final Pattern HF_EXPERT = Pattern.compile("model\\.layers\\.(\\d+)\\.mlp\\.experts\\.(\\d+)\\.(gate|up|down)_proj\\.([a-z_]+)");
    private static final Pattern HF_LAYER_BARE = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");
    private static final Pattern GGUF_LAYER_BARE = Pattern.compile("blk\\.(\\d+)\\.(.+)");
    private static final Pattern GLOBAL = Pattern.compile("(.+)\\.([a-z_]+)");

    /**
     * The names every decoder here shares: embeddings, final norm and output; per layer the two norms, attention's
     * q, k, v, o and its q/k head norms, the SwiGLU feed-forward.
     */
    public static final TensorNames DECODER = model(
            "model.embed_tokens", "token_embd",
            "model.norm", "output_norm",
            "lm_head", "output").and(layer(
            "input_layernorm", "attn_norm",
            "self_attn.q_proj", "attn_q",
            "self_attn.k_proj", "attn_k",
            "self_attn.v_proj", "attn_v",
            "self_attn.o_proj", "attn_output",
            "self_attn.q_norm", "attn_q_norm",
            "self_attn.k_norm", "attn_k_norm",
            "post_attention_layernorm", "ffn_norm",
            "mlp.gate_proj", "ffn_gate",
            "mlp.up_proj", "ffn_up",
            "mlp.down_proj", "ffn_down"));

    /**
     * Hugging Face's one-tensor-per-expert names ({@code model.layers.L.mlp.experts.E.gate_proj.weight}), read as
     * {@code blk.L.ffn_gate_exps.E.weight}; GGUF has no such names, so they do not map back.
     */
    static final TensorNames PER_EXPERT = new TensorNames(List.of(new Pair(Scope.PER_EXPERT, "", "")));

    private final List<Pair> pairs;

    private TensorNames(List<Pair> pairs) {
        this.pairs = List.copyOf(pairs);
    }

    /** Whole-model tensors, as Hugging Face / GGUF name pairs without suffix ({@code "lm_head", "output"}). */
    static TensorNames model(String... hfGguf) { return of(Scope.MODEL, hfGguf); }

    /** Layer tensors, as pairs of names inside a layer without suffix ({@code "self_attn.q_proj", "attn_q"}). */
    static TensorNames layer(String... hfGguf) { return of(Scope.LAYER, hfGguf); }

    /**
     * Layer tensors that Hugging Face names without a {@code .weight} suffix, as pairs of whole names inside a layer
     * ({@code "linear_attn.dt_bias", "ssm_dt.bias"}).
     */
    static TensorNames bare(String... hfGguf) { return of(Scope.BARE, hfGguf); }

    /** Name prefixes that stand for another ({@code "model.language_model.", "model."}), as pairs. */
    static TensorNames prefixes(String... fromTo) { return of(Scope.PREFIX, fromTo); }

    private static TensorNames of(Scope scope, String... pairs) {
        if (pairs.length % 2 != 0) throw new IllegalArgumentException("names come in pairs: " + List.of(pairs));
        List<Pair> out = new ArrayList<>();
        for (int i = 0; i < pairs.length; i += 2) out.add(new Pair(scope, pairs[i], pairs[i + 1]));
        return new TensorNames(out);
    }

    /** These names and then {@code parts}'. */
    TensorNames and(TensorNames... parts) {
        List<Pair> all = new ArrayList<>(pairs);
        for (TensorNames p : parts) all.addAll(p.pairs);
        return new TensorNames(all);
    }

    /** The GGUF name of a Hugging Face tensor name, or empty when it has none (rotary caches, vision towers, …). */
    public Optional<String> toGguf(String name) {
        String hf = canonical(name);
        if (pairs.stream().anyMatch(p -> p.scope == Scope.PER_EXPERT)) {
            Matcher expert = HF_EXPERT.matcher(hf);
            if (expert.matches()) {
                return Optional.of("blk." + expert.group(1) + ".ffn_" + expert.group(3) + "_exps." + expert.group(2) + "." + expert.group(4));
            }
        }
        return map(hf, true);
    }

    /** The Hugging Face name of a GGUF tensor name, or empty when it has none ({@code rope_freqs.weight}). */
    public Optional<String> toHf(String gguf) {
        return map(gguf, false);
    }

    /** The name with the first of these prefixes it starts with replaced ({@link #prefixes}); others as they are. */
    public String canonical(String name) {
        for (Pair p : pairs) if (p.scope == Scope.PREFIX && name.startsWith(p.hf)) return p.gguf + name.substring(p.hf.length());
        return name;
    }

    /** {@code name} in the other layout: to GGUF's names when {@code toGguf}, else to Hugging Face's. */
    private Optional<String> map(String name, boolean toGguf) {
        Function<Pair, String> from = toGguf ? Pair::hf : Pair::gguf, to = toGguf ? Pair::gguf : Pair::hf;
        String layers = toGguf ? "blk." : "model.layers.";
        Matcher bare = (toGguf ? HF_LAYER_BARE : GGUF_LAYER_BARE).matcher(name);
        if (bare.matches()) {
            for (Pair p : pairs) if (p.scope == Scope.BARE && from.apply(p).equals(bare.group(2))) return Optional.of(layers + bare.group(1) + "." + to.apply(p));
        }
        Matcher m = (toGguf ? HF_LAYER : GGUF_LAYER).matcher(name);
        if (m.matches()) {
            for (Pair p : pairs) {
                if (p.scope == Scope.LAYER && from.apply(p).equals(m.group(2))) return Optional.of(layers + m.group(1) + "." + to.apply(p) + "." + m.group(3));
            }
            return Optional.empty();
        }
        m = GLOBAL.matcher(name);
        if (m.matches()) {
            for (Pair p : pairs) if (p.scope == Scope.MODEL && from.apply(p).equals(m.group(1))) return Optional.of(to.apply(p) + "." + m.group(2));
        }
        return Optional.empty();
    }
}
