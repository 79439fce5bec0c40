package dev.forkpoint.engine;

import java.util.Map;

/**
 * What {@code forkpoint show} prints about a model.
 *
 * @param tensorTypes tensor count per type name ("F32" → 12)
 * @param sha256      hex digest of the model file
 * @param layerKinds  the layers' kinds in order, runs compressed ("linear ×3, attention, …"; "attention ×N" for
 *                    attention-only models)
 * @param kvBytesPerToken       bytes of keys and values one token costs, all attention layers
 * @param recurrentBytesPerSequence bytes of the recurrent state one sequence keeps (0 for attention-only models)
 * @param experts     "top-K of E" for a mixture of experts, or null
 * @param backend     the name of the backend the model was loaded on ("cpu")
 */
public record ModelInfo(String path, String architecture, String name, long parameterCount, Map<String, Integer> tensorTypes,
                        int contextLength, int embeddingLength, int layers, int heads, int kvHeads,
                        String tokenizer, int vocabSize, String chatTemplate, String sha256,
                        String layerKinds, long kvBytesPerToken, long recurrentBytesPerSequence, String experts,
                        String backend) {}
