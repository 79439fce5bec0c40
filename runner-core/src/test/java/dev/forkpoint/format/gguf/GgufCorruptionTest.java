package dev.forkpoint.format.gguf;

import dev.forkpoint.TestData;
import dev.forkpoint.format.ModelFormatException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/** Truncated and bit-flipped copies of stories260K.gguf: each opens cleanly or fails with a ModelFormatException. */
class GgufCorruptionTest {
    static final Path NAME = Path.of("corrupt-stories260K.gguf");
    static byte[] original;
    static long dataOffset;

    @TempDir Path dir;

    @BeforeAll
    static void load() throws IOException {
        Path model = TestData.shared("models/stories260K.gguf");
        original = Files.readAllBytes(model);
        try (GgufFile f = GgufFile.open(model)) {
            dataOffset = f.dataOffset();
        }
        assertTrue(dataOffset > 10_000 && dataOffset < original.length, "header region of stories260K: " + dataOffset);
    }

    /** Parses the first {@code length} bytes; returns the exception, failing on success or any other throwable. */
    static ModelFormatException truncatedTo(int length) {
        try {
            GgufReader.parse(NAME, MemorySegment.ofArray(original).asSlice(0, length)).close();
        } catch (ModelFormatException e) {
            GgufBytes.assertWellFormed(e, NAME);
            assertTrue(e.offset() <= length, () -> "offset past the truncated end: " + e.getMessage());
            return e;
        } catch (Throwable t) {
            throw new AssertionError("truncated to " + length + " bytes: " + t, t);
        }
        return fail("truncated to " + length + " bytes opened without error");
    }

    @Test
    void everyTruncationOfTheHeaderRegionIsRejected() {
        for (int n = 0; n <= dataOffset; n++) truncatedTo(n);
    }

    @Test
    void truncationsInsideTensorDataAreRejectedAtOpen() {
        var rnd = new Random(7);
        for (int i = 0; i < 300; i++) {
            int n = (int) (dataOffset + 1 + rnd.nextInt((int) (original.length - dataOffset - 1)));
            var e = truncatedTo(n);
            assertTrue(e.field().startsWith("tensor ") && e.field().endsWith(" data"), e::getMessage);
            assertTrue(e.getMessage().contains("past the end"), e::getMessage);
        }
        var last = truncatedTo(original.length - 1);
        assertEquals("tensor blk.4.ffn_norm.weight data", last.field());
    }

    @Test
    void fieldNamesSayWhereTheFileEnds() {
        assertEquals("magic", truncatedTo(0).field());
        assertEquals("magic", truncatedTo(3).field());
        assertEquals("version", truncatedTo(4).field());
        assertEquals("tensor_count", truncatedTo(8).field());
        assertEquals("tensor_count", truncatedTo(16).field());
        assertEquals("tensor_count", truncatedTo(1000).field(), "48 tensor infos need more than 1000 bytes");
        assertTrue(truncatedTo(5000).field().startsWith("metadata tokenizer.ggml.tokens["));
        assertEquals("tensor data", truncatedTo((int) dataOffset - 1).field(), "padding before the data is missing");
        assertEquals("tensor token_embd.weight data", truncatedTo((int) dataOffset).field());
    }

    /** The mmap path (real files on disk) reports the same errors as the in-memory path. */
    @Test
    void truncatedFilesOnDiskAreRejected() throws IOException {
        for (int n : new int[] {0, 1, 4, 24, 1000, 9000, (int) dataOffset, (int) dataOffset + 4097, original.length - 1}) {
            Path file = dir.resolve("truncated-" + n + ".gguf");
            Files.write(file, Arrays.copyOf(original, n));
            var e = assertThrows(ModelFormatException.class, () -> GgufFile.open(file));
            GgufBytes.assertWellFormed(e, file);
            assertEquals(truncatedTo(n).field(), e.field());
            assertEquals(truncatedTo(n).offset(), e.offset());
        }
    }

    /**
     * Seeded random corruption, mostly in the header region where it matters: one to four bytes changed per case.
     * Opening must either succeed (the change hit tensor data or a value that is still valid) or throw a
     * well-formed ModelFormatException; nothing else.
     */
    @Test
    void randomByteFlipsNeverEscapeAsAnotherException() {
        var rnd = new Random(20261202);
        byte[] bytes = original.clone();
        int opened = 0, rejected = 0;
        for (int c = 0; c < 3000; c++) {
            int changes = 1 + rnd.nextInt(4);
            int[] at = new int[changes];
            for (int k = 0; k < changes; k++) {
                at[k] = rnd.nextInt(4) == 0 ? rnd.nextInt(bytes.length) : rnd.nextInt((int) dataOffset);
                bytes[at[k]] = rnd.nextBoolean() ? (byte) (bytes[at[k]] ^ (1 << rnd.nextInt(8))) : (byte) rnd.nextInt(256);
            }
            try (GgufFile f = GgufReader.parse(NAME, MemorySegment.ofArray(bytes))) {
                for (GgufTensor t : f.tensors()) {
                    assertTrue(t.offset() + t.byteSize() <= f.fileSize() - f.dataOffset());
                    t.data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, t.byteSize() - 1);
                }
                opened++;
            } catch (ModelFormatException e) {
                GgufBytes.assertWellFormed(e, NAME);
                rejected++;
            } catch (Throwable t) {
                throw new AssertionError("case " + c + ", bytes changed at " + Arrays.toString(at) + ": " + t, t);
            }
            for (int k = changes - 1; k >= 0; k--) bytes[at[k]] = original[at[k]];
        }
        assertTrue(opened > 100 && rejected > 100, "opened " + opened + ", rejected " + rejected);
    }
}
