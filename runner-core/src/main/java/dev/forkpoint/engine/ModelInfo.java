package dev.forkpoint.engine;

import java.util.Map;

/**
 * What {@code forkpoint show} prints about a model.
 *
 * @param tensorTypes tensor count per type name ("F32" → 12)
 * @param sha256      hex digest of the model file
 */
public record ModelInfo(String path, String architecture, String name, long parameterCount, Map<String, Integer> tensorTypes,
                        int contextLength, int embeddingLength, int layers, int heads, int kvHeads,
                        String tokenizer, int vocabSize, String chatTemplate, String sha256) {}
