package dev.forkpoint.cli;

import dev.forkpoint.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code forkpoint convert}: GGUF to an MLX folder and back, then running the result; bad input gets one clear line
 * (no stack trace) and a non-zero exit.
 */
class CliConvertTest {
    @TempDir
    Path tmp;

    private CliHarness cli() { return new CliHarness(tmp); }

    private static Path stories() { return TestData.shared("models/stories260K.gguf"); }

    @Test
    void convertsToMlxAndBackAndTheResultRuns() throws Exception {
        Path folder = tmp.resolve("stories-mlx");
        var toMlx = cli().run("convert", stories().toString(), folder.toString(), "--to", "mlx", "--bits", "8", "--group-size", "32",
                "--keep-output");
        assertEquals(0, toMlx.exitCode(), toMlx::toString);
        assertTrue(toMlx.err().contains("model.layers.0.mlp.down_proj"), () -> "FFN down (172 inputs) is reported as kept:\n" + toMlx);
        assertTrue(Files.isRegularFile(folder.resolve("model.safetensors")));
        Path back = tmp.resolve("back.gguf");
        var toGguf = cli().run("convert", folder.toString(), back.toString(), "--to", "gguf", "--type", "q8_0");
        assertEquals(0, toGguf.exitCode(), toGguf::toString);
        var run = cli().run("run", "--model", back.toString(), "--prompt", "Once upon a time", "--temperature", "0", "--num-predict", "8");
        assertEquals(0, run.exitCode(), run::toString);
        assertFalse(run.out().isBlank(), run::toString);
        var help = cli().run("convert", "--help");
        assertEquals(0, help.exitCode());
        assertTrue(help.out().contains("--embedding-bits") && help.out().contains("--keep-output"), help::toString);
    }

    @Test
    void badInputGetsOneClearLine() throws Exception {
        Path folder = tmp.resolve("broken");
        Files.createDirectories(folder);
        Files.writeString(folder.resolve("model.safetensors"), "not a safetensors file");
        var noConfig = cli().run("convert", folder.toString(), tmp.resolve("x.gguf").toString(), "--to", "gguf");
        assertEquals(2, noConfig.exitCode(), noConfig::toString);
        assertTrue(noConfig.err().contains("config.json") && noConfig.err().contains("missing"), noConfig::toString);
        assertFalse(noConfig.err().contains("\tat "), noConfig::toString);
        assertEquals(1, noConfig.err().strip().lines().count(), noConfig::toString);

        var badTarget = cli().run("convert", stories().toString(), tmp.resolve("y").toString(), "--to", "onnx");
        assertEquals(2, badTarget.exitCode(), badTarget::toString);
        assertTrue(badTarget.err().contains("--to") && badTarget.err().contains("onnx"), badTarget::toString);

        var badBits = cli().run("convert", stories().toString(), tmp.resolve("z").toString(), "--to", "mlx", "--bits", "7");
        assertEquals(2, badBits.exitCode(), badBits::toString);
        assertTrue(badBits.err().contains("bits 7"), badBits::toString);

        var ggufToGguf = cli().run("convert", stories().toString(), tmp.resolve("w.gguf").toString(), "--to", "gguf");
        assertEquals(2, ggufToGguf.exitCode(), ggufToGguf::toString);
        assertTrue(ggufToGguf.err().contains("quantize"), ggufToGguf::toString);
        assertFalse(Files.exists(tmp.resolve("z")));
        assertFalse(Files.exists(tmp.resolve("x.gguf")));
    }
}
