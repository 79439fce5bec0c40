package dev.forkpoint.bench.jmh;

import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ChatTemplate;
import dev.forkpoint.chat.RenderedChat;
import dev.forkpoint.chat.ThinkMode;
import dev.forkpoint.tokenizer.Tokenizer;
import org.openjdk.jmh.annotations.*;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Rendering a chat for a hybrid model, which wants the ends of its last 16 messages (the prefix cache's fork points),
 * on Qwen3's template (runner-core's test resource {@code chat/qwen3.jinja}): {@code prefixes} renders each growing
 * prefix ({@link ChatTemplate#renderByPrefixes}: 1 + 16 renders), {@code marks} the chat and the chat with marks
 * (what the template writes after a message is learned in the first iterations and cached), {@code once} the chat
 * alone (no ends: an attention-only model). Seeded conversations of a system prompt, {@code messages} alternating
 * user and assistant turns of about 500 characters, and a last question.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1)
public class ChatRenderBench {
    @Param({"8", "32", "128"})
    public int messages;

    private ChatTemplate template;
    private List<ChatMessage> chat;

    @Setup
    public void setUp() throws IOException {
        String source;
        try (InputStream in = ChatRenderBench.class.getResourceAsStream("/chat/qwen3.jinja")) {
            if (in == null) throw new IOException("chat/qwen3.jinja (runner-core's test resources) is not on the class path");
            source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        template = ChatTemplate.of(source, new ChatMlPieces());
        SplittableRandom random = new SplittableRandom(messages);
        chat = new ArrayList<>();
        chat.add(ChatMessage.of("system", "You are a helpful assistant. ".repeat(20)));
        for (int i = 0; i < messages; i++) {
            String text = "word" + random.nextInt(1000) + " lorem ipsum dolor sit amet, consectetur. ".repeat(12);
            chat.add(ChatMessage.of(i % 2 == 0 ? "user" : "assistant", text));
        }
        chat.add(ChatMessage.of("user", "And the last question?"));
    }

    @Benchmark
    public RenderedChat prefixes() {
        return template.renderByPrefixes(chat, List.of(), true, ThinkMode.DEFAULT, 16);
    }

    @Benchmark
    public RenderedChat marks() {
        return template.render(chat, List.of(), true, ThinkMode.DEFAULT, 16);
    }

    @Benchmark
    public RenderedChat once() {
        return template.render(chat, List.of(), true, ThinkMode.DEFAULT, 0);
    }

    /** The two pieces a ChatML template reads (no BOS, {@code <|im_end|>} as EOS); it encodes nothing. */
    private static final class ChatMlPieces implements Tokenizer {
        public String model() { return "chatml-pieces"; }
        public int vocabSize() { return 2; }
        public int[] encode(String text, boolean addSpecial, boolean parseSpecial) { throw new UnsupportedOperationException(); }
        public String decode(int[] ids) { throw new UnsupportedOperationException(); }
        public byte[] tokenBytes(int id) { return new byte[0]; }
        public String piece(int id) { return "<|im_end|>"; }
        public int bosId() { return -1; }
        public int eosId() { return 1; }
        public int eotId() { return -1; }
        public boolean addsBos() { return false; }
        public boolean addsEos() { return false; }
        public boolean isEndOfGeneration(int id) { return id == 1; }
    }
}
