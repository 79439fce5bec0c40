package dev.forkpoint.chat;

import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tokenizer.Tokenizer;
import dev.forkpoint.tokenizer.TokenOffsets;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A chat is encoded once ({@link ChatTemplate#encode}): its tokens are the whole rendered prompt's encoding, and its
 * message boundaries are exactly what encoding each message prefix separately finds (the reference, written here:
 * the ends whose prefix text encodes to a prefix of the prompt's tokens). Real vocabularies — byte-level BPE (Qwen2,
 * the Qwen3.5 test model's tokenizer.json), tiktoken (Llama 3), SentencePiece (llama.cpp's test vocabulary,
 * TinyLlama's tokenizer.json, stories260K) — with the public templates under test resources and dialogs whose message
 * ends fall after special tokens, after plain text and inside what a merge could span.
 */
class ChatTokensTest {
    private static final Map<String, Tokenizer> TOKENIZERS = new LinkedHashMap<>();

    @BeforeAll
    static void load() throws IOException {
        TOKENIZERS.put("qwen2", Tokenizer.fromPath(TestData.shared("tokenizers/qwen2")));
        TOKENIZERS.put("qwen35-tiny-dense", Tokenizer.fromPath(TestData.shared("models/qwen35-tiny-dense")));
        TOKENIZERS.put("llama3", Tokenizer.fromPath(TestData.shared("tokenizers/llama3/tokenizer.model")));
        TOKENIZERS.put("tinyllama", Tokenizer.fromPath(TestData.shared("tokenizers/hf/tinyllama.tokenizer.json")));
        TOKENIZERS.put("llama-spm", gguf(TestData.shared("tokenizers/llamacpp/ggml-vocab-llama-spm.gguf")));
        TOKENIZERS.put("stories260K", gguf(TestData.shared("models/stories260K.gguf")));
    }

    private static Tokenizer gguf(Path path) throws IOException {
        try (GgufFile file = GgufFile.open(path)) {
            return Tokenizer.fromGguf(file);
        }
    }

    private static final List<List<ChatMessage>> DIALOGS = List.of(
            List.of(ChatMessage.of("system", "You are terse."), ChatMessage.of("user", "Name a colour."),
                    ChatMessage.of("assistant", " Blue. "), ChatMessage.of("user", "Another one?")),
            List.of(ChatMessage.of("user", "Héllo, wörld — ünïcode 🙂 and 中文"), ChatMessage.of("assistant", "Ça va 🙂"),
                    ChatMessage.of("user", "  leading and trailing spaces  ")),
            List.of(ChatMessage.of("user", "line one\nline two\n\n"), ChatMessage.of("assistant", "\n\nok\n"),
                    ChatMessage.of("user", "x"), ChatMessage.of("assistant", "yyyyyyyy"), ChatMessage.of("user", "zz zz")));

    private static final List<String> TEMPLATES = List.of("llama2.jinja", "llama3.jinja", "qwen2_5.jinja", "qwen3.jinja");

    @Test
    void theTokensAreTheWholePromptsEncodingAndTheBoundariesThoseOfTheMessagePrefixes() {
        int checked = 0, found = 0;
        for (var t : TOKENIZERS.entrySet()) {
            Tokenizer tokenizer = t.getValue();
            List<ChatTemplate> templates = new ArrayList<>();
            templates.add(ChatTemplate.of(null, tokenizer));   // the plain format
            for (String name : TEMPLATES) templates.add(ChatTemplate.of(Templates.resource(name), tokenizer));
            for (int ti = 0; ti < templates.size(); ti++) {
                for (List<ChatMessage> dialog : DIALOGS) {
                    for (boolean generationPrompt : new boolean[] {true, false}) {
                        RenderedChat chat = templates.get(ti).render(dialog, List.of(), generationPrompt);
                        String where = t.getKey() + " / " + (ti == 0 ? "plain" : TEMPLATES.get(ti - 1)) + " / " + dialog.getFirst().content();
                        ChatTokens encoded = templates.get(ti).encode(chat);
                        int[] full = tokenizer.encode(chat.prompt(), true, true);
                        assertArrayEquals(full, encoded.tokens(), where);
                        int[] reference = prefixBoundaries(tokenizer, chat, full);
                        assertArrayEquals(reference, encoded.boundaries(), () -> where + ": " + Arrays.toString(encoded.boundaries())
                                + " but the message prefixes encode to " + Arrays.toString(reference) + " in " + chat.prompt());
                        checked++;
                        found += encoded.boundaries().length;
                    }
                }
            }
        }
        assertEquals(TOKENIZERS.size() * (TEMPLATES.size() + 1) * DIALOGS.size() * 2, checked);
        assertTrue(found > checked * 2, "boundaries found: " + found + " in " + checked + " chats");
    }

    /** The reference: each known message end whose prefix text encodes to a prefix of the prompt's tokens. */
    private static int[] prefixBoundaries(Tokenizer tokenizer, RenderedChat chat, int[] full) {
        List<Integer> out = new ArrayList<>();
        for (int end : chat.messageEnds()) {
            if (end <= 0) continue;
            int[] prefix = tokenizer.encode(chat.prompt().substring(0, end), true, true);
            if (tokenizer.addsEos() && prefix.length > 0) prefix = Arrays.copyOf(prefix, prefix.length - 1);
            if (prefix.length == 0 || prefix.length > full.length || !Arrays.equals(prefix, 0, prefix.length, full, 0, prefix.length)) continue;
            if (!out.isEmpty() && out.getLast() >= prefix.length) continue;
            out.add(prefix.length);
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    @Test
    void onlyTheEndsWantedAreFoundAndAChatWantingNoneIsRenderedOnce() {
        RenderCountingTokenizer counting = new RenderCountingTokenizer("<|im_end|>");   // counts renders by the eos_token each reads
        ChatTemplate template = ChatTemplate.of(Templates.resource("qwen2_5.jinja"), counting);
        List<ChatMessage> dialog = DIALOGS.get(2);
        RenderedChat all = template.render(dialog, List.of(), true, ThinkMode.DEFAULT);
        // the chat, the chat with marks, then two messages for each (previous, own) shape not met before: user after
        // nothing, assistant after user, user after assistant
        assertEquals(2 + 3, counting.renders, "the chat, with marks, and one two-message render per shape");
        assertArrayEquals(template.renderByPrefixes(dialog, List.of(), true, ThinkMode.DEFAULT).messageEnds(), all.messageEnds());
        counting.renders = 0;
        assertArrayEquals(all.messageEnds(), template.render(dialog, List.of(), true, ThinkMode.DEFAULT).messageEnds());
        assertEquals(2, counting.renders, "again: the chat and the chat with marks, however many messages");
        counting.renders = 0;
        RenderedChat two = template.render(dialog, List.of(), true, ThinkMode.DEFAULT, 2);
        assertEquals(2, counting.renders);
        assertEquals(all.prompt(), two.prompt());
        int n = dialog.size();
        int[] want = new int[n];
        Arrays.fill(want, -1);
        want[n - 2] = all.messageEnds()[n - 2];
        want[n - 1] = all.messageEnds()[n - 1];
        assertTrue(want[n - 2] > 0 && want[n - 1] > want[n - 2], Arrays.toString(all.messageEnds()));
        assertArrayEquals(want, two.messageEnds());
        counting.renders = 0;
        RenderedChat none = template.render(dialog, List.of(), true, ThinkMode.DEFAULT, 0);
        assertEquals(1, counting.renders, "no ends wanted: one render");
        assertEquals(all.prompt(), none.prompt());
        assertTrue(Arrays.stream(none.messageEnds()).allMatch(e -> e == -1), Arrays.toString(none.messageEnds()));
    }

    @Test
    void anOffsetInsideATokenHasNoIndexAndOneAtATokenEdgeHasItsIndex() {
        Tokenizer qwen = TOKENIZERS.get("qwen2");
        String text = "Hello world";
        int[] tokens = qwen.encode(text, true, true);
        assertEquals(2, tokens.length, Arrays.toString(tokens));   // "Hello", " world"; Qwen adds no BOS
        assertArrayEquals(new int[] {-1, 1, -1, 2}, TokenOffsets.indices(qwen, text, tokens, new int[] {3, 5, 8, 11}));
        Tokenizer spm = TOKENIZERS.get("llama-spm");
        int[] withBos = spm.encode(text, true, true);
        assertEquals(spm.bosId(), withBos[0]);
        assertEquals(3, withBos.length, Arrays.toString(withBos));   // BOS, "▁Hello", "▁world": the space prefix is not in the text
        assertArrayEquals(new int[] {-1, 2, 3}, TokenOffsets.indices(spm, text, withBos, new int[] {3, 5, 11}));
        assertArrayEquals(new int[] {-1, -1, 3}, TokenOffsets.indices(spm, text, withBos, new int[] {0, 12, 11}),
                "offsets outside (0, length] or out of order have none");
    }
}
