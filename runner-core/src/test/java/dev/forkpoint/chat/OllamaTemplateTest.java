package dev.forkpoint.chat;

import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Go-template subset of a store model's TEMPLATE layer, rendered as Ollama collapses a chat into turns. */
class OllamaTemplateTest {
    private static final String CHATML = """
            {{- if .System }}<|im_start|>system
            {{ .System }}<|im_end|>
            {{ end }}<|im_start|>user
            {{ .Prompt }}<|im_end|>
            <|im_start|>assistant
            {{ .Response }}<|im_end|>
            """;

    @Test
    void rendersTurnsAndCutsTheLastAtResponse() {
        OllamaTemplate t = OllamaTemplate.parse(CHATML);
        RenderedChat r = t.renderChat(List.of(ChatMessage.of("system", "S"), ChatMessage.of("user", "hi"),
                ChatMessage.of("assistant", "hello"), ChatMessage.of("user", "again")));
        assertEquals("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n"
                + "<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n", r.prompt());
        assertEquals(r.prompt().indexOf("hello<|im_end|>\n") + "hello<|im_end|>\n".length(), r.messageEnds()[2]);
        assertEquals("A: q", OllamaTemplate.parse("{{ if .System }}{{ .System }}{{ else }}A{{ end }}: {{ .Prompt }}").render("", "q", "", true));
    }

    @Test
    void refusesActionsOutsideTheSubset() {
        for (String bad : List.of("{{ range .Messages }}{{ end }}", "{{ .Tools }}", "{{ if .System }}x", "{{ end }}", "{{ .Prompt")) {
            var e = assertThrows(InvalidInputException.class, () -> OllamaTemplate.parse(bad), bad);
            assertTrue(e.getMessage().contains("template"), e.getMessage());
        }
    }
}
