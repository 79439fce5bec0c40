package dev.forkpoint.cli;

import dev.forkpoint.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 12's defects B, I and K through the CLI: num_predict 0 generates nothing and succeeds; a GGUF whose tensor
 * type was relabelled, or whose BOS id lies outside the vocabulary, is bad input naming the tensor or field (exit 2);
 * {@code tokenize} takes model folders like every command; an unsupported model_type is named with the supported ones.
 */
class CliBadModelsTest {
    @TempDir
    Path tmp;

    private CliHarness cli() { return new CliHarness(tmp); }

    private static Path stories() { return TestData.shared("models/stories260K.gguf"); }

    private static void assertBadInput(CliHarness.Result r, String... mentions) {
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("forkpoint: error: "), r::toString);
        for (String m : mentions) assertTrue(r.err().contains(m), () -> "expected '" + m + "' in\n" + r);
        assertFalse(r.err().contains("\tat "), () -> "no stack trace:\n" + r);
    }

    @Test
    void numPredictZeroGeneratesNothing() {
        var r = cli().run("run", "--model", stories().toString(), "--prompt", "Once upon a time", "--num-predict", "0");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("", r.out().strip(), r::toString);
    }

    /** The header offset of the u32 right after tensor {@code name}'s dimensions: its GGML type. */
    static int typeOffset(byte[] gguf, String name) {
        byte[] key = name.getBytes(StandardCharsets.UTF_8);
        outer:
        for (int i = 8; i + key.length < gguf.length; i++) {
            for (int j = 0; j < key.length; j++) if (gguf[i + j] != key[j]) continue outer;
            ByteBuffer b = ByteBuffer.wrap(gguf).order(ByteOrder.LITTLE_ENDIAN);
            if (b.getLong(i - 8) != key.length) continue;   // the tensor info's name, not a metadata string
            int at = i + key.length;
            int dims = b.getInt(at);
            if (dims < 1 || dims > 4) continue;
            return at + 4 + 8 * dims;
        }
        throw new AssertionError("no tensor info for " + name);
    }

    @Test
    void aTensorRelabelledF32ToF16IsNamed() throws IOException {
        byte[] bytes = Files.readAllBytes(stories());
        int at = typeOffset(bytes, "token_embd.weight");
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0, b.getInt(at), "F32 in the original");
        b.putInt(at, 1);   // F16
        Path bad = tmp.resolve("relabelled.gguf");
        Files.write(bad, bytes);
        var r = cli().run("run", "--model", bad.toString(), "--prompt", "Once upon a time", "--num-predict", "8", "--temperature", "0");
        assertBadInput(r, bad.getFileName().toString(), "token_embd.weight", "NaN or infinite");
    }

    @Test
    void aBosIdOutsideTheVocabularyIsNamed() throws IOException {
        byte[] bytes = Files.readAllBytes(stories());
        byte[] key = "tokenizer.ggml.bos_token_id".getBytes(StandardCharsets.UTF_8);
        int at = -1;
        outer:
        for (int i = 0; i + key.length < bytes.length; i++) {
            for (int j = 0; j < key.length; j++) if (bytes[i + j] != key[j]) continue outer;
            at = i + key.length;
            break;
        }
        assertTrue(at > 0);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(4, b.getInt(at), "a UINT32 value");
        b.putInt(at + 4, 0x8000_0000);   // 2^31
        Path bad = tmp.resolve("bos.gguf");
        Files.write(bad, bytes);
        assertBadInput(cli().run("run", "--model", bad.toString(), "--prompt", "x", "--num-predict", "1"),
                "tokenizer.ggml.bos_token_id", "2147483648", "outside the vocabulary");
        assertBadInput(cli().run("tokenize", "--model", bad.toString(), "--text", "x"), "tokenizer.ggml.bos_token_id");
    }

    @Test
    void tokenizeTakesAModelFolder() {
        Path folder = tmp.resolve("mlx");
        var conv = cli().run("convert", stories().toString(), folder.toString(), "--to", "mlx", "--no-quantize");
        assertEquals(0, conv.exitCode(), conv::toString);
        var fromFolder = cli().run("tokenize", "--model", folder.toString(), "--text", "Once upon a time");
        var fromFile = cli().run("tokenize", "--model", stories().toString(), "--text", "Once upon a time");
        assertEquals(0, fromFolder.exitCode(), fromFolder::toString);
        assertEquals(fromFile.out(), fromFolder.out());
    }

    @Test
    void anUnsupportedModelTypeIsNamedWithTheSupportedOnes() throws IOException {
        Path folder = tmp.resolve("other");
        Files.createDirectories(folder);
        Files.writeString(folder.resolve("config.json"), "{\"model_type\":\"mamba\",\"d_model\":64}");
        Files.writeString(folder.resolve("model.safetensors"), "");
        var r = cli().run("run", "--model", folder.toString(), "--prompt", "x");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("mamba") && r.err().contains("llama") && r.err().contains("qwen3"), r::toString);
        assertFalse(r.err().contains("hidden_size"), r::toString);
    }
}
