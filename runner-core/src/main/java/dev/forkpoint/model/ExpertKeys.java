package dev.forkpoint.model;

/**
 * How an architecture's Hugging Face config.json lays out its mixture of experts, beyond the sizes every one reads
 * alike ({@code num_experts}, {@code num_experts_per_tok}, {@code moe_intermediate_size},
 * {@code shared_expert_intermediate_size}): which layers route, and whether the top-k weights are renormalised.
 * GGUF files route every layer and renormalise whatever the architecture.
 *
 * @param fixed       every layer routes, and {@code renormalize} holds whatever config.json says: its
 *                    {@code norm_topk_prob}, {@code decoder_sparse_step} and {@code mlp_only_layers} are not read
 *                    (Qwen3.5-MoE); else they are
 * @param renormalize whether the top-k weights are renormalised: the fixed value, else {@code norm_topk_prob}'s
 *                    default
 */
public record ExpertKeys(boolean fixed, boolean renormalize) {
    /** config.json's keys read, {@code norm_topk_prob} false when absent (as Qwen3-MoE's configuration class). */
    public static final ExpertKeys CONFIGURED = new ExpertKeys(false, false);
}
