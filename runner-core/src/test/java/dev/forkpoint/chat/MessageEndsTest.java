package dev.forkpoint.chat;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Templates the marks cannot vouch for ({@link MessageEnds}): content transformed at its end, repeated, dropped or
 * reordered, and input that holds the marks' code points. Each falls back to one render per message prefix (counted:
 * a render reads {@code eos_token} once) and so finds exactly the prefixes' ends; a template the marks can vouch for
 * renders the chat twice.
 */
class MessageEndsTest {
    private static final List<ChatMessage> DIALOG = List.of(ChatMessage.of("system", "Be brief."), ChatMessage.of("user", "Hi"),
            ChatMessage.of("assistant", "Hello."), ChatMessage.of("user", "2+2?"));

    private static final String TAGS = "{% for m in messages %}<{{ m.role }}>CONTENT</{{ m.role }}>\n{% endfor %}"
            + "{% if add_generation_prompt %}<assistant>{% endif %}";

    /**
     * Renders messages with TAGS showing content as given: the ends equal the prefixes'; the renders of the second
     * time (what the template writes after a message learned the first time) are counted.
     */
    private static int rendersFor(String content, List<ChatMessage> messages) {
        RenderCountingTokenizer counting = new RenderCountingTokenizer("</s>");
        ChatTemplate template = ChatTemplate.of(TAGS.replace("CONTENT", content), counting);
        RenderedChat reference = template.renderByPrefixes(messages, List.of(), true, ThinkMode.DEFAULT);
        template.render(messages, List.of(), true);
        counting.renders = 0;
        RenderedChat chat = template.render(messages, List.of(), true);
        assertEquals(reference.prompt(), chat.prompt());
        assertArrayEquals(reference.messageEnds(), chat.messageEnds(), () -> Arrays.toString(chat.messageEnds()) + " in " + chat.prompt());
        return counting.renders;
    }

    @Test
    void aTemplateThatKeepsContentRendersTheChatTwice() {
        assertEquals(2, rendersFor("{{ m.content }}", DIALOG), "the chat and the chat with marks");
        RenderCountingTokenizer counting = new RenderCountingTokenizer("</s>");
        ChatTemplate template = ChatTemplate.of(TAGS.replace("CONTENT", "{{ m.content }}"), counting);
        RenderedChat chat = template.render(DIALOG, List.of(), true);
        assertEquals(2 + 4, counting.renders, "the first time, a closing's render per (previous, own) role pair met: "
                + "system alone, system-user, user-assistant, assistant-user");
        String prompt = chat.prompt();
        assertArrayEquals(new int[] {prompt.indexOf("<user>"), prompt.indexOf("<assistant>"), prompt.indexOf("<user>2+2?"),
                prompt.lastIndexOf("<assistant>")}, chat.messageEnds());
    }

    @Test
    void contentTrimmedAtItsEndFallsBackToThePrefixes() {
        List<ChatMessage> spaced = List.of(ChatMessage.of("user", "Hi  "), ChatMessage.of("assistant", "Hello.\n"), ChatMessage.of("user", "x"));
        assertEquals(2 + spaced.size(), rendersFor("{{ m.content|trim }}", spaced), "the chat, with marks (refused), each prefix");
        // trimmed at its start only, the mark still follows what is left of it: no fallback
        List<ChatMessage> leading = List.of(ChatMessage.of("user", "  Hi"), ChatMessage.of("assistant", "\nHello."));
        assertEquals(2, rendersFor("{{ m.content|trim }}", leading));
    }

    @Test
    void contentRepeatedOrDroppedFallsBackToThePrefixes() {
        assertEquals(2 + DIALOG.size(), rendersFor("{{ m.content }}|{{ m.content }}", DIALOG));
        assertEquals(2 + DIALOG.size(), rendersFor("{{ m.content[:3] }}", DIALOG));
        assertEquals(2 + DIALOG.size(), rendersFor("{{ m.content|length }}", DIALOG));
    }

    @Test
    void contentReorderedFallsBackToThePrefixes() {
        RenderCountingTokenizer counting = new RenderCountingTokenizer("</s>");
        // the system message last, as some templates put it before the last user turn
        ChatTemplate template = ChatTemplate.of("{% for m in messages %}{% if m.role != 'system' %}<{{ m.role }}>{{ m.content }}\n"
                + "{% endif %}{% endfor %}{% if messages[0].role == 'system' %}<system>{{ messages[0].content }}\n{% endif %}", counting);
        RenderedChat reference = template.renderByPrefixes(DIALOG, List.of(), false, ThinkMode.DEFAULT);
        template.render(DIALOG, List.of(), false);
        counting.renders = 0;
        RenderedChat chat = template.render(DIALOG, List.of(), false);
        assertArrayEquals(reference.messageEnds(), chat.messageEnds());
        assertEquals(2 + DIALOG.size() - 1, counting.renders, "the chat, with marks (refused), each prefix but the whole");
    }

    @Test
    void inputHoldingTheMarksCodePointsFallsBackToThePrefixes() {
        List<ChatMessage> marked = List.of(ChatMessage.of("user", "a" + MessageEnds.mark(1) + "b"), ChatMessage.of("assistant", "c"),
                ChatMessage.of("user", "d"));
        assertEquals(1 + marked.size(), rendersFor("{{ m.content }}", marked), "the chat, then each prefix");
    }
}
