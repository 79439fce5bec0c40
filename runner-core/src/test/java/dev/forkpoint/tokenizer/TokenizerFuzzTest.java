package dev.forkpoint.tokenizer;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.fuzz.TinyLlama;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Tokenizers from fuzzed files — a {@code tokenizer.json} alone, and a folder whose {@code tokenizer_config.json} is
 * fuzzed — and fuzzed text on the real vocabularies of ../shared: every id is inside the vocabulary, decoding never
 * fails on what encoding produced, and text comes back as it was where the vocabulary can represent it.
 */
class TokenizerFuzzTest {
    static final String PROBE = "Hello, world! <|bos|> 12345 \n\t é 日本 🙂";
    private static Path dir, folder;
    private static List<Tokenizer> real;

    private static synchronized Path dir() throws IOException {
        if (dir == null) {
            dir = Files.createTempDirectory("forkpoint-fuzz-tokenizer-");
            dir.toFile().deleteOnExit();
            folder = TinyLlama.hfFolderCopy();
        }
        return dir;
    }

    /** Loading the real vocabularies takes seconds: before fuzzing, not inside the first input's time limit. */
    @BeforeAll
    static void load() throws IOException {
        dir();
        try {
            real();
        } catch (org.opentest4j.TestAbortedException noSharedFolder) {
            // encodeDecode skips itself; the file targets need no shared data
        }
    }

    @FuzzTest
    void tokenizerJson(byte[] json) throws Exception {
        Path file = dir().resolve("tokenizer.json");
        Files.write(file, json);
        FuzzInvariant.typedErrorOrValid(() -> exercise(Tokenizer.fromPath(file), PROBE));
    }

    @FuzzTest
    void tokenizerConfig(byte[] json) throws Exception {
        dir();
        Files.write(folder.resolve("tokenizer_config.json"), json);
        FuzzInvariant.typedErrorOrValid(() -> exercise(Tokenizer.fromPath(folder), PROBE));
    }

    @FuzzTest
    void encodeDecode(FuzzedDataProvider data) {
        List<Tokenizer> tokenizers = real();
        Tokenizer t = tokenizers.get(data.consumeInt(0, tokenizers.size() - 1));
        boolean addSpecial = data.consumeBoolean(), parseSpecial = data.consumeBoolean();
        String text = data.consumeRemainingAsString();
        int[] ids = t.encode(text, addSpecial, parseSpecial);
        inVocabulary(t, ids);
        String decoded = t.decode(ids);
        if (!parseSpecial && representable(t, text)) {
            String plain = t.decode(t.encode(text, false, false));
            check(plain.equals(text) || plain.equals(java.text.Normalizer.normalize(text, java.text.Normalizer.Form.NFC)),
                    t.model() + " vocabulary of " + t.vocabSize() + ": decode(encode(" + quoted(text) + ")) = " + quoted(plain));
        }
        check(decoded != null, "decode returned null");
        StreamingDecoder stream = t.streamingDecoder();
        StringBuilder streamed = new StringBuilder();
        for (int id : ids) streamed.append(stream.push(id));
        streamed.append(stream.flush());
        // the streaming decoder continues a prompt, so it keeps the space that decode drops at the start of a text
        String s = streamed.toString();
        check(s.equals(decoded) || (s.startsWith(" ") && s.substring(1).equals(decoded)),
                "streamed decoding " + quoted(s) + " differs from decode " + quoted(decoded));
    }

    /** Encodes and decodes {@code text}, checking ids and pieces. */
    static void exercise(Tokenizer t, String text) {
        check(t.vocabSize() > 0, "empty vocabulary");
        for (boolean special : new boolean[]{false, true}) {
            int[] ids = t.encode(text, special, special);
            inVocabulary(t, ids);
            t.decode(ids);
        }
        for (int id : new int[]{t.bosId(), t.eosId(), t.eotId()}) {
            check(id >= -1 && id < t.vocabSize(), "special id " + id + " outside the vocabulary of " + t.vocabSize());
            if (id >= 0) {
                t.piece(id);
                t.tokenBytes(id);
                t.isEndOfGeneration(id);
            }
        }
    }

    static void inVocabulary(Tokenizer t, int[] ids) {
        for (int id : ids) check(id >= 0 && id < t.vocabSize(), "id " + id + " outside the vocabulary of " + t.vocabSize());
    }

    /**
     * Valid UTF-16 (no lone surrogate); for SentencePiece vocabularies no "▁" (their space marker, which decodes as a
     * space) and nothing that becomes an unknown token.
     */
    static boolean representable(Tokenizer t, String text) {
        if (!text.equals(new String(text.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8))) return false;
        if (t.model().equals("llama") && text.indexOf('\u2581') >= 0) return false;
        for (int id : t.encode(text, false, false)) if (t.tokenBytes(id).length == 0) return false;   // <unk>
        return true;
    }

    static String quoted(String s) {
        StringBuilder b = new StringBuilder("\"");
        s.codePoints().limit(200).forEach(c -> b.append(c < 0x20 || c == 0x7f ? String.format("\\u%04x", c) : Character.toString(c)));
        return b.append('"').toString();
    }

    private static synchronized List<Tokenizer> real() {
        if (real != null) return real;
        Path shared = TestData.shared();
        List<Tokenizer> out = new ArrayList<>();
        try {
            for (String gguf : List.of("models/stories260K.gguf", "tokenizers/llamacpp/ggml-vocab-llama-spm.gguf", "tokenizers/llamacpp/ggml-vocab-gpt-2.gguf")) {
                Path p = shared.resolve(gguf);
                if (Files.isRegularFile(p)) {
                    try (GgufFile f = GgufFile.open(p)) {
                        out.add(Tokenizer.fromGguf(f));
                    }
                }
            }
            for (String hf : List.of("tokenizers/qwen2", "tokenizers/llama3/tokenizer.model", "tokenizers/hf/gpt2.tokenizer.json",
                    "tokenizers/hf/tinyllama.tokenizer.json", "models/qwen35-tiny-dense")) {
                Path p = shared.resolve(hf);
                if (Files.exists(p)) out.add(Tokenizer.fromPath(p));
            }
            out.add(Tokenizer.fromPath(TinyLlama.hfFolderCopy()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        real = List.copyOf(out);
        return real;
    }
}
