package dev.forkpoint.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** stories260K's vocabulary against llama2.c's reference run: prompt ids and the text of the generated ids. */
class Stories260KReferenceTest {

    @Test
    void promptIdsAndGeneratedTextMatchLlama2c() throws IOException {
        JsonNode ref = new ObjectMapper().readTree(TestData.shared("reference/stories260K_greedy_once_upon_a_time.json").toFile());
        Tokenizer t;
        try (GgufFile file = GgufFile.open(TestData.shared("models/stories260K.gguf"))) {
            t = Tokenizer.fromGguf(file);
        }
        assertEquals("llama", t.model());
        assertEquals(512, t.vocabSize());
        assertArrayEquals(ints(ref.get("prompt_tokens")), t.encode(ref.get("prompt").asText(), true, true));
        int[] all = ints(ref.get("all_tokens"));
        assertEquals(ref.get("text").asText(), t.decode(all));
        // Streaming the generated ids after the prompt gives the same continuation.
        StreamingDecoder d = t.streamingDecoder();
        StringBuilder out = new StringBuilder(t.decode(ints(ref.get("prompt_tokens"))));
        for (JsonNode id : ref.get("generated_tokens")) out.append(d.push(id.asInt()));
        out.append(d.flush());
        assertEquals(ref.get("text").asText(), out.toString());
    }

    private static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).asInt();
        return out;
    }
}
