package dev.forkpoint.reference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;

import java.io.IOException;
import java.nio.file.Path;

/**
 * {@code shared/reference/stories260K_greedy_once_upon_a_time.json}: llama2.c's greedy decode of stories260K from
 * "Once upon a time" (prompt ids with BOS, 60 generated ids, the text including the prompt) and the top-5 logits
 * after the prompt.
 *
 * @param top5Ids    ids of the five largest logits after the prompt, largest first
 * @param top5Logits their values
 */
record StoriesReference(String prompt, int[] promptTokens, int[] generatedTokens, String text, int[] top5Ids,
                        double[] top5Logits) {

    static Path model() {
        return TestData.shared("models/stories260K.gguf");
    }

    static StoriesReference load() throws IOException {
        JsonNode root = new ObjectMapper().readTree(TestData.shared("reference/stories260K_greedy_once_upon_a_time.json").toFile());
        JsonNode top = root.get("logits_after_prompt_top5");
        int[] ids = new int[top.size()];
        double[] logits = new double[top.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = top.get(i).get(0).asInt();
            logits[i] = top.get(i).get(1).asDouble();
        }
        return new StoriesReference(root.get("prompt").asText(), ints(root.get("prompt_tokens")),
                ints(root.get("generated_tokens")), root.get("text").asText(), ids, logits);
    }

    private static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).asInt();
        return out;
    }
}
