package dev.forkpoint.cli;

import dev.forkpoint.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code forkpoint tokenize --tokenizer}: Hugging Face tokenizer files without a model. */
class CliTokenizerFilesTest {
    @TempDir
    Path tmp;

    private CliHarness cli() { return new CliHarness(tmp); }

    @Test
    void llama3TiktokenFileAddsBos() {
        Path model = TestData.shared("tokenizers/llama3/tokenizer.model");
        var r = cli().run("tokenize", "--tokenizer", model.toString(), "--text", "This is a test sentence.");
        assertEquals(0, r.exitCode(), r::toString);
        // Meta's llama/test_tokenizer.py ids for this sentence, BOS first
        assertEquals("128000 2028 374 264 1296 11914 13\n", r.out());
    }

    @Test
    void qwen2FolderParsesSpecialTokensAndPrintsPieces() {
        Path folder = TestData.shared("tokenizers/qwen2");
        var r = cli().run("tokenize", "--tokenizer", folder.toString(), "--text", "<|im_start|>user\n", "--pieces");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("151644\t<|im_start|>\n872\tuser\n198\tĊ\n", r.out());
        var plain = cli().run("tokenize", "--tokenizer", folder.toString(), "--text", "<|im_start|>", "--no-parse-special");
        assertEquals(0, plain.exitCode(), plain::toString);
        assertFalse(plain.out().contains("151644"), plain::toString);
    }

    @Test
    void badTokenizerPathIsBadInput() {
        var r = cli().run("tokenize", "--tokenizer", tmp.resolve("nothing.json").toString(), "--text", "x");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().startsWith("forkpoint: error: ") && r.err().contains("nothing.json"), r::toString);
        var both = cli().run("tokenize", "--tokenizer", tmp.toString(), "--model", "x.gguf", "--text", "x");
        assertEquals(2, both.exitCode(), both::toString);
        assertTrue(both.err().contains("--tokenizer"), both::toString);
    }
}
