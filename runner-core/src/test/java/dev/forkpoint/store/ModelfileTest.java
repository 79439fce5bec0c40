package dev.forkpoint.store;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Modelfile subset and the params layer's typing and JSON. */
class ModelfileTest {
    @Test
    void parsesTheSubsetWithQuotesCommentsAndMultiLineValues() {
        Modelfile m = Modelfile.parse("""
                # comment
                from ./model.gguf
                PARAMETER temperature 0.7
                PARAMETER stop "<|im_end|>"
                PARAMETER stop <|im_start|>
                SYSTEM "You are \\"brief\\"."
                TEMPLATE \"\"\"{{ .System }}
                {{ .Prompt }}\"\"\"
                """);
        assertEquals("./model.gguf", m.from());
        assertEquals("You are \"brief\".", m.system());
        assertEquals("{{ .System }}\n{{ .Prompt }}", m.template());
        Map<String, Object> p = ModelParams.fromModelfile(m.parameters());
        assertEquals(0.7f, p.get("temperature"));
        assertEquals(List.of("<|im_end|>", "<|im_start|>"), p.get("stop"));
        assertNull(Modelfile.parse("FROM x").template());
    }

    @Test
    void refusesOtherInstructionsNamingThem() {
        for (String[] c : new String[][] {{"FROM x\nADAPTER y", "ADAPTER"}, {"FROM x\nLICENSE MIT", "LICENSE"},
                {"FROM x\nMESSAGE user hi", "MESSAGE"}, {"FROM x\nWHATEVER 1", "WHATEVER"}, {"PARAMETER top_k 1", "FROM"},
                {"FROM x\nSYSTEM \"\"\"open", "SYSTEM"}}) {
            var e = assertThrows(InvalidInputException.class, () -> Modelfile.parse(c[0]), c[0]);
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
        }
    }

    @Test
    void paramsAreTypedAndWrittenAsOllamaWritesThem() throws Exception {
        Map<String, Object> p = ModelParams.fromModelfile(List.of(new String[] {"num_ctx", "4096"}, new String[] {"temperature", "0"},
                new String[] {"top_p", "0.9"}, new String[] {"stop", "a\"b"}, new String[] {"use_mmap", "false"}));
        String json = new String(ModelParams.toJson(p), StandardCharsets.UTF_8);
        assertEquals("{\"num_ctx\":4096,\"stop\":[\"a\\\"b\"],\"temperature\":0,\"top_p\":0.9,\"use_mmap\":false}", json);
        var read = ModelParams.read(new ObjectMapper().readTree(json));
        assertEquals(4096L, read.get("num_ctx"));
        assertEquals(List.of("a\"b"), read.get("stop"));
        for (String[] bad : new String[][] {{"num_ctx", "4k"}, {"top_k", "1.5"}, {"temperature", "warm"}, {"use_mmap", "maybe"}, {"colour", "1"}}) {
            var e = assertThrows(InvalidInputException.class, () -> ModelParams.fromModelfile(List.<String[]>of(bad)));
            assertTrue(e.getMessage().contains(bad[0]), e.getMessage());
        }
        assertEquals(Map.of("stop", List.of("x"), "seed", 3L),
                ModelParams.fromJson(new ObjectMapper().readTree("{\"stop\":\"x\",\"seed\":3}")));
    }
}
