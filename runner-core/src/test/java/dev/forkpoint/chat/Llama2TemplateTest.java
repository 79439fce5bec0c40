package dev.forkpoint.chat;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.TestData;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tokenizer.Tokenizer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The classic Llama 2 [INST] &lt;&lt;SYS&gt;&gt; template on llama.cpp's SentencePiece test vocabulary. */
class Llama2TemplateTest {
    private static Tokenizer spm;
    private static ChatTemplate template;

    @BeforeAll
    static void load() throws IOException {
        try (GgufFile file = GgufFile.open(TestData.shared("tokenizers/llamacpp/ggml-vocab-llama-spm.gguf"))) {
            spm = Tokenizer.fromGguf(file);
        }
        assertEquals("<s>", spm.piece(spm.bosId()));
        assertEquals("</s>", spm.piece(spm.eosId()));
        assertTrue(spm.addsBos());
        template = ChatTemplate.of(Templates.resource("llama2.jinja"), spm);
    }

    private static final List<ChatMessage> DIALOG = List.of(
            ChatMessage.of("system", "You are terse."),
            ChatMessage.of("user", "Name a colour."),
            ChatMessage.of("assistant", " Blue. "),
            ChatMessage.of("user", "Another one?"));

    @Test
    void rendersInstAndSysBlocksWithoutADoubleBos() {
        RenderedChat chat = template.render(DIALOG, List.of(), true);
        String want = "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nName a colour. [/INST] Blue. </s><s>[INST] Another one? [/INST]";
        assertEquals(want, chat.prompt());
        // the system message alone renders nothing (it is folded into the first user turn): no boundary
        int first = want.indexOf(" Blue.");
        int second = want.indexOf("<s>[INST] Another");
        assertArrayEquals(new int[] {-1, first, second, want.length()}, chat.messageEnds());
    }

    @Test
    void rolesThatDoNotAlternateRaiseTheTemplatesMessage() {
        InvalidInputException e = assertThrows(InvalidInputException.class, () -> template.render(
                List.of(ChatMessage.of("user", "a"), ChatMessage.of("user", "b")), List.of(), true));
        assertEquals("Conversation roles must alternate user/assistant/user/assistant/...", e.getMessage());
    }

    @Test
    void tokenBoundariesAscendAndAreTheTokensOfThePrefixes() {
        RenderedChat chat = template.render(DIALOG, List.of(), true);
        int[] full = spm.encode(chat.prompt(), true, true);
        ChatTokens encoded = template.encode(chat);
        assertArrayEquals(full, encoded.tokens(), "the prompt is encoded as a whole");
        int[] boundaries = encoded.boundaries();
        assertTrue(boundaries.length >= 2, () -> "too few boundaries: " + Arrays.toString(boundaries));
        int previous = 0;
        for (int b : boundaries) {
            assertTrue(b > previous && b <= full.length, () -> Arrays.toString(boundaries) + " of " + full.length);
            previous = b;
            boolean matchesAMessageEnd = false;
            for (int end : chat.messageEnds()) {
                if (end <= 0) continue;
                int[] prefix = spm.encode(chat.prompt().substring(0, end), true, true);
                if (Arrays.equals(prefix, Arrays.copyOf(full, b))) matchesAMessageEnd = true;
            }
            assertTrue(matchesAMessageEnd, "boundary " + b + " is not the encoding of a rendered message prefix");
        }
        // the whole prompt is the last message's end
        assertEquals(full.length, boundaries[boundaries.length - 1]);
    }

    @Test
    void aTemplateThatDoesNotParseIsAModelFormatError() {
        ModelFormatException e = assertThrows(ModelFormatException.class,
                () -> ChatTemplate.of("{% for m in messages %}{{ m.content }}", spm));
        assertEquals("tokenizer.chat_template", e.field());
        assertTrue(e.getMessage().contains("tokenizer.chat_template"), e.getMessage());
    }

    @Test
    void withoutATemplateThePlainFormatIsUsed() {
        ChatTemplate plain = ChatTemplate.of(null, spm);
        RenderedChat chat = plain.render(List.of(ChatMessage.of("user", "a"), ChatMessage.of("assistant", "b")), List.of(), true);
        assertEquals("a\n\nb", chat.prompt());
        assertArrayEquals(new int[] {1, 4}, chat.messageEnds());
    }
}
