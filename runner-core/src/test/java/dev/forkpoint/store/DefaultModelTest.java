package dev.forkpoint.store;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DefaultModelTest {
    @TempDir
    Path tmp;

    @Test
    void generationIsByteForByteReproducible() throws IOException {
        DefaultModel.write(tmp.resolve("a.gguf"));
        DefaultModel.write(tmp.resolve("b.gguf"));
        assertArrayEquals(Files.readAllBytes(tmp.resolve("a.gguf")), Files.readAllBytes(tmp.resolve("b.gguf")));
    }

    @Test
    void readsBackAsTheDocumentedLlama() throws IOException {
        DefaultModel.write(tmp.resolve("m.gguf"));
        try (GgufFile f = GgufFile.open(tmp.resolve("m.gguf"))) {
            assertEquals("llama", f.getString("general.architecture"));
            assertEquals("forkpoint-default (random weights)", f.getString("general.name"));
            assertEquals(64, f.getInt("llama.embedding_length"));
            assertEquals(2, f.getInt("llama.block_count"));
            assertEquals(4, f.getInt("llama.attention.head_count"));
            assertEquals(2, f.getInt("llama.attention.head_count_kv"));
            assertEquals(160, f.getInt("llama.feed_forward_length"));
            assertEquals(2048, f.getInt("llama.context_length"));
            assertEquals(10000.0, f.getDouble("llama.rope.freq_base"));
            assertEquals(1e-5, f.getDouble("llama.attention.layer_norm_rms_epsilon"), 1e-12);
            assertEquals("gpt2", f.getString("tokenizer.ggml.model"));
            assertEquals("default", f.getString("tokenizer.ggml.pre"));
            assertEquals(256, f.getInt("tokenizer.ggml.bos_token_id"));
            assertEquals(257, f.getInt("tokenizer.ggml.eos_token_id"));
            assertTrue(f.getBool("tokenizer.ggml.add_bos_token", false));
            assertEquals(0, f.getStringArray("tokenizer.ggml.merges").length);

            String[] tokens = f.getStringArray("tokenizer.ggml.tokens");
            assertEquals(258, tokens.length);
            // GPT-2's byte-level alphabet, as its published vocabularies show it.
            assertEquals("A", tokens['A']);
            assertEquals("~", tokens['~']);
            assertEquals("\u0120", tokens[' '], "space is Ġ");
            assertEquals("\u010A", tokens['\n'], "newline is Ċ");
            assertEquals("\u0100", tokens[0]);
            assertEquals("\u0121", tokens[0x7F]);
            assertEquals("\u0143", tokens[0xAD], "soft hyphen is Ń");
            assertEquals("\u00FF", tokens[0xFF]);
            assertEquals(258, new java.util.HashSet<>(java.util.List.of(tokens)).size(), "258 tokens, all distinct");
            assertEquals("<|begin_of_text|>", tokens[256]);
            assertEquals("<|end_of_text|>", tokens[257]);
            int[] types = f.getIntArray("tokenizer.ggml.token_type");
            assertEquals(1, types[0]);
            assertEquals(1, types[255]);
            assertEquals(3, types[256]);
            assertEquals(3, types[257]);

            assertEquals(3 + 9 * 2, f.tensors().size());
            assertArrayEquals(new long[] {64, 258}, f.tensor("token_embd.weight").shape());
            assertArrayEquals(new long[] {64, 258}, f.tensor("output.weight").shape());
            assertArrayEquals(new long[] {64, 32}, f.tensor("blk.1.attn_k.weight").shape());
            assertArrayEquals(new long[] {160, 64}, f.tensor("blk.0.ffn_down.weight").shape());
            assertArrayEquals(new long[] {64}, f.tensor("output_norm.weight").shape());
            for (GgufTensor t : f.tensors()) {
                assertEquals(GgmlType.F32, t.type(), t.name());
                double sum = 0, sumSq = 0;
                var layout = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
                for (long i = 0; i < t.elementCount(); i++) {
                    double v = t.data().getAtIndex(layout, i);
                    sum += v;
                    sumSq += v * v;
                }
                double mean = sum / t.elementCount();
                double sd = Math.sqrt(sumSq / t.elementCount() - mean * mean);
                if (t.shape().length == 1) {
                    assertEquals(1.0, mean, 0.03, t.name());
                    assertTrue(sd > 0.02 && sd < 0.1, t.name() + " sd " + sd);
                } else if (t.name().equals("output.weight")) {
                    for (int token : new int[] {'a', ' ', '\n', 257, 0, 0x1B, 0x80, 256}) {
                        double rowSumSq = 0;
                        for (int i = 0; i < 64; i++) rowSumSq += Math.pow(t.data().getAtIndex(layout, token * 64L + i), 2);
                        double rowSd = Math.sqrt(rowSumSq / 64);
                        double expected = DefaultModel.outputRowScale(token);
                        assertEquals(expected, rowSd, expected * 0.3, "output row " + token);
                    }
                    double likely = DefaultModel.LIKELY_SCALE, unlikely = DefaultModel.UNLIKELY_SCALE;
                    assertEquals(List.of(likely, likely, DefaultModel.EOS_SCALE, unlikely, unlikely, unlikely),
                            List.of(DefaultModel.outputRowScale('~'), DefaultModel.outputRowScale(' '), DefaultModel.outputRowScale(257),
                                    DefaultModel.outputRowScale(0x7F), DefaultModel.outputRowScale(256), DefaultModel.outputRowScale('\t')));
                } else {
                    double expected = 0.8 / Math.sqrt(t.shape()[0]);
                    assertEquals(0, mean, expected / 5, t.name());
                    assertEquals(expected, sd, expected * 0.1, t.name());
                }
            }
        }
    }

    @Test
    void ensureGeneratesOnceAndRepairsADamagedCache() throws IOException {
        Path dir = tmp.resolve("cache/forkpoint");
        Path file = DefaultModel.ensure(dir);
        assertEquals(dir.resolve(DefaultModel.FILE_NAME), file);
        assertTrue(DefaultModel.FILE_NAME.contains("v" + DefaultModel.FORMAT_VERSION));
        byte[] original = Files.readAllBytes(file);
        FileTime stamp = FileTime.fromMillis(1_000_000_000_000L);
        Files.setLastModifiedTime(file, stamp);
        assertEquals(file, DefaultModel.ensure(dir));
        assertEquals(stamp, Files.getLastModifiedTime(file), "an intact cached file is reused, not rewritten");
        Files.write(file, new byte[] {1, 2, 3});
        assertEquals(file, DefaultModel.ensure(dir));
        assertArrayEquals(original, Files.readAllBytes(file));
        try (var listing = Files.list(dir)) {
            assertEquals(1, listing.count(), "no temporary files are left behind");
        }
    }

    @Test
    void temporariesOfAWriterKilledMidWriteAreDeletedNotThoseOfALiveOne() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("cache/forkpoint"));
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        long deadPid = gone.pid();
        Path dead = Files.writeString(dir.resolve(DefaultModel.FILE_NAME + "." + deadPid + ".123.partial.tmp"), "half a model");
        Path dead2 = Files.writeString(dir.resolve(DefaultModel.FILE_NAME + "." + deadPid + ".456.partial"), "half a model");
        Path live = Files.writeString(dir.resolve(DefaultModel.FILE_NAME + "." + ProcessHandle.current().pid() + ".789.partial"), "being written");
        Path other = Files.writeString(dir.resolve("notes.txt"), "not ours");
        Path file = DefaultModel.ensure(dir);
        assertTrue(Files.isRegularFile(file));
        assertFalse(Files.exists(dead), "a dead writer's temporary is deleted");
        assertFalse(Files.exists(dead2));
        assertTrue(Files.exists(live), "a live writer's temporary is left alone");
        assertTrue(Files.exists(other));
        Files.writeString(dead, "again");
        DefaultModel.ensure(dir);   // also when the model file is already there
        assertFalse(Files.exists(dead));
    }

    @Test
    void cacheDirectoryFollowsXdgThenHome() {
        assertEquals(Path.of("/x/cache/forkpoint"), DefaultModel.cacheDirectory(Map.of("XDG_CACHE_HOME", "/x/cache", "HOME", "/h")));
        String os = System.getProperty("os.name").toLowerCase();
        Path expected = os.contains("mac") ? Path.of("/h/Library/Caches/forkpoint") : Path.of("/h/.cache/forkpoint");
        if (!os.contains("windows")) {
            assertEquals(expected, DefaultModel.cacheDirectory(Map.of("HOME", "/h")));
            assertEquals(expected, DefaultModel.cacheDirectory(Map.of("HOME", "/h", "XDG_CACHE_HOME", "relative")),
                    "a relative XDG_CACHE_HOME is ignored, as the XDG spec says");
        }
    }
}
