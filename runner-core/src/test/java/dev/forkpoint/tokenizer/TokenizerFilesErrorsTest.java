package dev.forkpoint.tokenizer;

import dev.forkpoint.format.ModelFormatException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Broken or unsupported tokenizer files are refused with the file, the field and what is wrong. */
class TokenizerFilesErrorsTest {
    @TempDir
    Path dir;

    private static final String GOOD_MODEL = """
            "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}""";

    private Path write(String name, String content) throws IOException {
        Path p = dir.resolve(name);
        Files.createDirectories(p.getParent());
        Files.writeString(p, content);
        return p;
    }

    private static ModelFormatException refused(Path path, String... mentions) {
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> Tokenizer.fromPath(path));
        assertTrue(e.getMessage().contains(path.toString()), e::getMessage);
        for (String m : mentions) assertTrue(e.getMessage().contains(m), () -> "expected '" + m + "' in: " + e.getMessage());
        return e;
    }

    @Test
    void minimalTokenizerJsonWorks() throws IOException {
        Tokenizer t = Tokenizer.fromPath(write("tokenizer.json", "{" + GOOD_MODEL + "}"));
        assertEquals(3, t.vocabSize());
        assertEquals(2, t.encode("ab", true, true)[0]);
    }

    @Test
    void invalidJsonNamesLineAndColumn() throws IOException {
        refused(write("tokenizer.json", "{\"model\": {\n  \"type\": BPE}}"), "JSON", "line 2");
    }

    @Test
    void unsupportedModelTypeIsNamed() throws IOException {
        ModelFormatException e = refused(write("tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}"),
                "model.type", "Unigram", "BPE");
        assertEquals("field model.type", e.field());
    }

    @Test
    void badMergesAndVocabEntriesAreNamed() throws IOException {
        refused(write("m1.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a\"]}}"), "model.merges[0]");
        refused(write("m2.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}"), "model.merges[0]", "not in model.vocab");
        refused(write("m3.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"zero\"}, \"merges\": []}}"), "model.vocab[\"a\"]", "integer");
        refused(write("m5.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 2000000000}, \"merges\": []}}"), "model.vocab[\"a\"]", "large");
        refused(write("m4.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [[\"a\", 5]]}}"), "model.merges[0][1]", "string");
    }

    @Test
    void unsupportedComponentsAreRefusedByName() throws IOException {
        refused(write("p.json", "{" + GOOD_MODEL + ", \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}}"),
                "pre_tokenizer.type", "BertPreTokenizer");
        refused(write("n.json", "{" + GOOD_MODEL + ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Precompiled\"}]}}"),
                "normalizer.normalizers[0].type", "Precompiled");
        refused(write("d.json", "{" + GOOD_MODEL + ", \"decoder\": {\"type\": \"WordPiece\"}}"), "decoder.type", "WordPiece");
        refused(write("r.json", "{" + GOOD_MODEL + ", \"pre_tokenizer\": {\"type\": \"Split\", \"behavior\": \"Isolated\", "
                + "\"pattern\": {\"Regex\": \"(unclosed\"}}}"), "pre_tokenizer.pattern.Regex");
    }

    @Test
    void sentencePieceProtobufIsRefusedWithAHint() throws IOException {
        Path p = dir.resolve("tokenizer.model");
        Files.write(p, new byte[]{0x0A, 0x0B, 0x0A, 0x05, '<', 'u', 'n', 'k', '>', 0x15, 0, 0, 0, 0});
        refused(p, "SentencePiece", "tokenizer.json", "GGUF");
    }

    @Test
    void brokenTiktokenLineIsNamed() throws IOException {
        refused(write("t/tokenizer.model", "IQ== 0\nIg== x\n"), "line 2", "rank");
        refused(write("u/tokenizer.model", "IQ== 0\nIg== 1\n"), "128000");
    }

    @Test
    void foldersNeedAKnownLayoutAndFamily() throws IOException {
        Files.createDirectories(dir.resolve("empty"));
        refused(dir.resolve("empty"), "tokenizer.json");
        write("vm/vocab.json", "{\"a\": 0, \"b\": 1, \"ab\": 2}");
        write("vm/merges.txt", "#version: 0.2\na b\n");
        refused(dir.resolve("vm"), "tokenizer_class", "Qwen2Tokenizer");
        write("vm/tokenizer_config.json", "{\"tokenizer_class\": \"Qwen2Tokenizer\", \"eos_token\": \"<nope>\"}");
        refused(dir.resolve("vm"), "eos_token", "<nope>");
        write("vm/tokenizer_config.json", "{\"tokenizer_class\": \"Qwen2Tokenizer\"}");
        write("vm/merges.txt", "#version: 0.2\na b\na c\n");
        refused(dir.resolve("vm").resolve("merges.txt").getParent(), "merges.txt", "line 3");
        refused(dir.resolve("missing"), "neither");
    }
}
