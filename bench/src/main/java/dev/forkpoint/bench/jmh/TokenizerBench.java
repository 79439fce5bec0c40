package dev.forkpoint.bench.jmh;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tokenizer.Tokenizer;
import org.openjdk.jmh.annotations.*;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Tokenizer throughput on {@value #TEXT_BYTES} bytes of seeded English-like text (words, capitals, digits,
 * punctuation, line breaks and a few accented words): {@code encode} and {@code decode} of the whole text.
 * {@code bench jmh} prints MB/s of text beside the score. Vocabularies come from the shared test data
 * ({@code ../shared}, or the folder in {@code -Dforkpoint.shared=DIR}):
 * {@code stories260K} (SentencePiece, 512 tokens), {@code llama-spm} (SentencePiece, Llama 2's 32,000) and
 * {@code gpt2} (byte-level BPE with 50,000 merges). A missing file fails only that parameter, saying which file.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1)
public class TokenizerBench {
    static final int TEXT_BYTES = 64 * 1024;

    @Param({"stories260K", "llama-spm", "gpt2"})
    public String vocab;

    private Tokenizer tokenizer;
    private String text;
    private int[] ids;

    @Setup
    public void setUp() throws IOException {
        Path file = vocabularyFile(vocab);
        try (GgufFile gguf = GgufFile.open(file)) {
            tokenizer = Tokenizer.fromGguf(gguf);
        }
        text = text(TEXT_BYTES, 5);
        ids = tokenizer.encode(text, false, false);
        System.out.printf("%n[%s] %d bytes of text, %d tokens%n", vocab, text.getBytes(StandardCharsets.UTF_8).length, ids.length);
    }

    @Benchmark
    public int[] encode() {
        return tokenizer.encode(text, false, false);
    }

    @Benchmark
    public String decode() {
        return tokenizer.decode(ids);
    }

    static Path vocabularyFile(String vocab) {
        String relative = switch (vocab) {
            case "stories260K" -> "models/stories260K.gguf";
            case "llama-spm" -> "tokenizers/llamacpp/ggml-vocab-llama-spm.gguf";
            case "gpt2" -> "tokenizers/llamacpp/ggml-vocab-gpt-2.gguf";
            default -> throw new IllegalArgumentException("unknown vocab " + vocab + " (stories260K, llama-spm, gpt2)");
        };
        Path shared = sharedFolder();
        Path file = shared == null ? null : shared.resolve(relative);
        if (file == null || !Files.isRegularFile(file)) {
            throw new IllegalStateException("skipping vocab " + vocab + ": " + relative + " not found under "
                    + (shared == null ? "../shared (set -Dforkpoint.shared=DIR)" : shared));
        }
        return file;
    }

    /** -Dforkpoint.shared, else the first folder named "shared" beside the working directory or one of its parents. */
    private static Path sharedFolder() {
        String property = System.getProperty("forkpoint.shared");
        if (property != null) return Path.of(property);
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path candidate = p.resolveSibling("shared");
            if (Files.isDirectory(candidate.resolve("models"))) return candidate;
        }
        return null;
    }

    private static final String[] WORDS = {"the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was",
            "with", "be", "by", "on", "not", "he", "she", "this", "are", "or", "his", "from", "at", "which", "but",
            "have", "an", "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
            "been", "if", "more", "when", "will", "would", "who", "so", "no", "little", "girl", "dog", "ran", "happy",
            "tree", "played", "friend", "garden", "morning", "river", "bright", "quickly", "remembered", "together",
            "café", "naïve", "über", "tokenizer", "benchmark", "don't", "it's", "we'll"};

    /** Seeded English-like text of at least {@code bytes} UTF-8 bytes. */
    static String text(int bytes, long seed) {
        var random = new SplittableRandom(seed);
        var sb = new StringBuilder(bytes + 16);
        boolean sentenceStart = true;
        int utf8 = 0;
        while (utf8 < bytes) {
            String w = WORDS[random.nextInt(WORDS.length)];
            int r = random.nextInt(40);
            if (r == 0) w = Integer.toString(random.nextInt(100_000));
            if (sentenceStart) w = Character.toUpperCase(w.charAt(0)) + w.substring(1);
            String piece = (sb.isEmpty() ? "" : " ") + w;
            sentenceStart = false;
            int p = random.nextInt(20);
            if (p == 0) { piece += "."; sentenceStart = true; }
            else if (p == 1) piece += ",";
            else if (p == 2) { piece += ".\n"; sentenceStart = true; }
            sb.append(piece);
            utf8 += piece.getBytes(StandardCharsets.UTF_8).length;
        }
        return sb.toString();
    }
}
