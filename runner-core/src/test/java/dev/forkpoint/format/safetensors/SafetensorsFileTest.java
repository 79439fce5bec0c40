package dev.forkpoint.format.safetensors;

import dev.forkpoint.format.ModelFormatException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/** The safetensors reader against files laid out by hand from the format's definition, and the writer against the reader. */
class SafetensorsFileTest {
    @TempDir Path dir;

    /** A file built byte by byte: 8-byte LE header length, JSON header, data. */
    private Path handMade(String header, byte[] data) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h).put(data);
        Path p = dir.resolve("m" + System.nanoTime() + ".safetensors");
        Files.write(p, b.array());
        return p;
    }

    private static byte[] floats(float... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putFloat(f);
        return b.array();
    }

    @Test
    void readsAHandMadeFile() throws IOException {
        byte[] data = new byte[24 + 4];
        System.arraycopy(floats(1, 2, 3, 4, 5, 6), 0, data, 0, 24);
        data[24] = 7; data[25] = 0; data[26] = 0; data[27] = (byte) 0x80;   // one U32: 0x80000007
        Path p = handMade("{\"__metadata__\":{\"format\":\"mlx\"},\"b\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[24,28]},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", data);
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertEquals("mlx", f.metadata().get("format"));
            SafetensorsTensor a = f.tensor("a");
            assertArrayEquals(new long[]{2, 3}, a.shape());
            assertEquals(SafetensorsDtype.F32, a.dtype());
            assertEquals(6f, a.data().get(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 20));
            assertEquals(0x80000007, f.tensor("b").data().get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0));
            var missing = assertThrows(ModelFormatException.class, () -> f.tensor("c"));
            assertTrue(missing.getMessage().contains("tensor c"), missing.getMessage());
        }
    }

    @Test
    void writerOutputReadsBackBitExactly() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1.5f, -0f, Float.NaN, Float.MIN_VALUE);
            MemorySegment b = arena.allocateFrom(ValueLayout.JAVA_SHORT, (short) 0x3c00, (short) 0x7bff);
            Path p = dir.resolve("w.safetensors");
            new SafetensorsWriter().metadata("format", "mlx")
                    .tensor("x.weight", SafetensorsDtype.F32, new long[]{2, 2}, a)
                    .tensor("y", SafetensorsDtype.F16, new long[]{2}, b)
                    .write(p);
            long headerLength = ByteBuffer.wrap(Files.readAllBytes(p), 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
            assertEquals(0, headerLength % 8, "header padded to 8 bytes");
            try (SafetensorsFile f = SafetensorsFile.open(p)) {
                assertEquals(-1, f.tensor("x.weight").data().mismatch(a));
                assertEquals(-1, f.tensor("y").data().mismatch(b));
                assertArrayEquals(new long[]{2, 2}, f.tensor("x.weight").shape());
                assertEquals("mlx", f.metadata().get("format"));
            }
        }
    }

    private void assertRefused(String header, byte[] data, String... expectedParts) throws IOException {
        Path p = handMade(header, data);
        var e = assertThrows(ModelFormatException.class, () -> SafetensorsFile.open(p).close());
        assertTrue(e.getMessage().contains(p.toString()), e.getMessage());
        for (String part : expectedParts) assertTrue(e.getMessage().contains(part), "missing '" + part + "' in: " + e.getMessage());
    }

    @Test
    void refusesCorruptHeadersNamingFileAndTensor() throws IOException {
        byte[] d = floats(1, 2);
        assertRefused("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,9]}}", d, "tensor w", "outside");
        assertRefused("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", d, "tensor w", "needs 12");
        assertRefused("{\"w\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, "tensor w", "unknown dtype");
        assertRefused("{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", d, "tensor w", "dimension");
        assertRefused("{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", d, "tensor w", "data_offsets");
        assertRefused("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"v\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}",
                d, "overlaps");
        assertRefused("{\"w\": [1, 2", d, "header", "JSON");
        Path tiny = dir.resolve("tiny.safetensors");
        Files.write(tiny, new byte[]{1, 2, 3});
        assertTrue(assertThrows(ModelFormatException.class, () -> SafetensorsFile.open(tiny)).getMessage().contains("too short"));
        Path huge = dir.resolve("huge.safetensors");
        Files.write(huge, ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40).array());
        assertTrue(assertThrows(ModelFormatException.class, () -> SafetensorsFile.open(huge)).getMessage().contains("header length"));
    }

    @Test
    void shardsFollowTheIndexAndNameWhatIsMissing() throws IOException {
        Path folder = Files.createDirectories(dir.resolve("model"));
        try (Arena arena = Arena.ofConfined()) {
            new SafetensorsWriter().tensor("a", SafetensorsDtype.F32, new long[]{1}, arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1f))
                    .write(folder.resolve("model-00001-of-00002.safetensors"));
            new SafetensorsWriter().tensor("b", SafetensorsDtype.F32, new long[]{1}, arena.allocateFrom(ValueLayout.JAVA_FLOAT, 2f))
                    .write(folder.resolve("model-00002-of-00002.safetensors"));
        }
        Path index = folder.resolve(SafetensorsShards.INDEX);
        Files.writeString(index, "{\"metadata\":{},\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00002-of-00002.safetensors\"}}");
        try (SafetensorsShards s = SafetensorsShards.open(folder)) {
            assertEquals(2, s.files().size());
            assertEquals(2f, s.tensor("b").data().get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
        }
        Files.writeString(index, "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\",\"c\":\"model-00002-of-00002.safetensors\"}}");
        var wrong = assertThrows(ModelFormatException.class, () -> SafetensorsShards.open(folder).close());
        assertTrue(wrong.getMessage().contains("tensor c") && wrong.getMessage().contains("00002"), wrong.getMessage());
        Files.delete(folder.resolve("model-00002-of-00002.safetensors"));
        var missing = assertThrows(ModelFormatException.class, () -> SafetensorsShards.open(folder).close());
        assertTrue(missing.getMessage().contains("model-00002-of-00002.safetensors") && missing.getMessage().contains("missing"), missing.getMessage());
    }
}
