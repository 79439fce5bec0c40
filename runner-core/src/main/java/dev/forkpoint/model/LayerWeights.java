package dev.forkpoint.model;

import dev.forkpoint.backend.Weight;

/**
 * The weights of one decoder block. Optional parts are null: q/k/v biases (Qwen2) and per-head q/k norms (Qwen3).
 */
record LayerWeights(Weight attnNorm, Weight wq, Weight wk, Weight wv, Weight wo,
                    Weight qBias, Weight kBias, Weight vBias, Weight qNorm, Weight kNorm,
                    Weight ffnNorm, Weight gate, Weight up, Weight down) {}
