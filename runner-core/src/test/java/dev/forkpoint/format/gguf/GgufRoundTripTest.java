package dev.forkpoint.format.gguf;

import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.MetadataValue.Array;
import dev.forkpoint.format.gguf.MetadataValue.Bool;
import dev.forkpoint.format.gguf.MetadataValue.Float;
import dev.forkpoint.format.gguf.MetadataValue.Int;
import dev.forkpoint.format.gguf.MetadataValue.Str;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.forkpoint.format.gguf.MetadataType.*;
import static org.junit.jupiter.api.Assertions.*;

class GgufRoundTripTest {
    @TempDir Path dir;

    /** Every value type, at the edges of its range, plus arrays of each, nested and empty arrays. */
    static Map<String, MetadataValue> everyValueType() {
        var m = new LinkedHashMap<String, MetadataValue>();
        m.put("u8", new Int(UINT8, 255));
        m.put("i8", new Int(INT8, -128));
        m.put("u16", new Int(UINT16, 65535));
        m.put("i16", new Int(INT16, -32768));
        m.put("u32", new Int(UINT32, 0xFFFF_FFFFL));
        m.put("i32", new Int(INT32, Integer.MIN_VALUE));
        m.put("u64", new Int(UINT64, -1L)); // 2^64-1 kept as its bits
        m.put("i64", new Int(INT64, Long.MIN_VALUE));
        m.put("f32", new Float(FLOAT32, 1.17549435E-38f));
        m.put("f32.nan", new Float(FLOAT32, java.lang.Float.NaN));
        m.put("f64", new Float(FLOAT64, -Math.PI));
        m.put("f64.inf", new Float(FLOAT64, Double.NEGATIVE_INFINITY));
        m.put("bool.true", new Bool(true));
        m.put("bool.false", new Bool(false));
        m.put("str", new Str("plain"));
        m.put("str.empty", new Str(""));
        m.put("str.unicode", new Str("héllo ✓ 日本語 🦙 \u0000 end"));
        m.put("ключ.🔑", new Str("a key that is not ASCII"));
        m.put("arr.u8", array(UINT8, new Int(UINT8, 0), new Int(UINT8, 128), new Int(UINT8, 255)));
        m.put("arr.i8", array(INT8, new Int(INT8, -1), new Int(INT8, 127)));
        m.put("arr.u16", array(UINT16, new Int(UINT16, 1), new Int(UINT16, 40000)));
        m.put("arr.i16", array(INT16, new Int(INT16, -2), new Int(INT16, 300)));
        m.put("arr.u32", array(UINT32, new Int(UINT32, 3_000_000_000L)));
        m.put("arr.i32", array(INT32, new Int(INT32, -7), new Int(INT32, Integer.MAX_VALUE)));
        m.put("arr.u64", array(UINT64, new Int(UINT64, Long.MAX_VALUE), new Int(UINT64, Long.MIN_VALUE)));
        m.put("arr.i64", array(INT64, new Int(INT64, -1), new Int(INT64, 1L << 40)));
        m.put("arr.f32", array(FLOAT32, new Float(FLOAT32, 0.5f), new Float(FLOAT32, -0.0f)));
        m.put("arr.f64", array(FLOAT64, new Float(FLOAT64, 1e300), new Float(FLOAT64, Double.MIN_VALUE)));
        m.put("arr.bool", array(BOOL, new Bool(true), new Bool(false), new Bool(true)));
        m.put("arr.str", array(STRING, new Str("a"), new Str(""), new Str("ü🦙")));
        m.put("arr.empty.u8", array(UINT8));
        m.put("arr.empty.str", array(STRING));
        m.put("arr.empty.arr", array(ARRAY));
        m.put("arr.arr", array(ARRAY, array(INT32, new Int(INT32, 1), new Int(INT32, 2)), array(STRING, new Str("x")), array(BOOL)));
        m.put("arr.arr.arr", array(ARRAY, array(ARRAY, array(FLOAT64, new Float(FLOAT64, 2.5))), array(ARRAY)));
        return m;
    }

    static Array array(MetadataType elementType, MetadataValue... values) {
        return new Array(elementType, List.of(values));
    }

    /** Tensors of several types and shapes (1 to 4 dims, sizes that force padding), filled with seeded random bytes. */
    static List<GgufWriter.TensorData> someTensors() {
        var rnd = new Random(42);
        var out = new ArrayList<GgufWriter.TensorData>();
        out.add(tensor(rnd, "f32.odd", GgmlType.F32, 3, 5));
        out.add(tensor(rnd, "f16.vec", GgmlType.F16, 7));
        out.add(tensor(rnd, "q8_0", GgmlType.Q8_0, 64, 3));
        out.add(tensor(rnd, "q4_k", GgmlType.Q4_K, 256, 2));
        out.add(tensor(rnd, "bf16.4d", GgmlType.BF16, 2, 3, 4, 5));
        out.add(tensor(rnd, "i8.one", GgmlType.I8, 1));
        out.add(tensor(rnd, "q6_k", GgmlType.Q6_K, 256));
        return out;
    }

    static GgufWriter.TensorData tensor(Random rnd, String name, GgmlType type, long... shape) {
        long elements = 1;
        for (long d : shape) elements *= d;
        byte[] data = new byte[(int) type.bytesFor(elements)];
        rnd.nextBytes(data);
        return new GgufWriter.TensorData(name, type, shape, MemorySegment.ofArray(data));
    }

    /** The header length the GGUF spec gives for this metadata and these tensor infos, before padding. */
    static long specHeaderBytes(Map<String, MetadataValue> metadata, List<GgufWriter.TensorData> tensors) {
        long n = 4 + 4 + 8 + 8;
        for (var e : metadata.entrySet()) n += utf8(e.getKey()) + 4 + valueBytes(e.getValue());
        for (var t : tensors) n += utf8(t.name()) + 4 + 8L * t.shape().length + 4 + 8;
        return n;
    }

    private static long utf8(String s) { return 8 + s.getBytes(StandardCharsets.UTF_8).length; }

    private static long valueBytes(MetadataValue v) {
        return switch (v) {
            case Int i -> switch (i.type()) {
                case UINT8, INT8 -> 1;
                case UINT16, INT16 -> 2;
                case UINT32, INT32 -> 4;
                default -> 8;
            };
            case Float f -> f.type() == FLOAT32 ? 4 : 8;
            case Bool b -> 1;
            case Str s -> utf8(s.value());
            case Array a -> 4 + 8 + a.values().stream().mapToLong(GgufRoundTripTest::valueBytes).sum();
        };
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 8, 32, 64, 4096}) // 0: general.alignment left unset (default 32)
    void metadataAndTensorsRoundTripBitExact(int alignment) throws IOException {
        var metadata = everyValueType();
        if (alignment != 0) metadata.put("general.alignment", new Int(UINT32, alignment));
        var tensors = someTensors();
        var writer = new GgufWriter().putAll(metadata);
        tensors.forEach(writer::add);
        Path file = dir.resolve("all.gguf");
        writer.write(file);

        int effective = alignment == 0 ? 32 : alignment;
        try (GgufFile gguf = GgufFile.open(file)) {
            assertEquals(3, gguf.version());
            assertEquals(metadata, gguf.metadata());
            assertEquals(List.copyOf(metadata.keySet()), List.copyOf(gguf.metadata().keySet()), "key order");
            assertEquals(effective, gguf.alignment());
            long header = specHeaderBytes(metadata, tensors);
            assertEquals((header + effective - 1) / effective * effective, gguf.dataOffset());
            assertEquals(Files.size(file), gguf.fileSize());

            assertEquals(tensors.stream().map(GgufWriter.TensorData::name).toList(),
                    gguf.tensors().stream().map(GgufTensor::name).toList(), "tensor order");
            long expectedOffset = 0;
            for (var written : tensors) {
                GgufTensor t = gguf.tensor(written.name());
                assertEquals(written.type(), t.type());
                assertArrayEquals(written.shape(), t.shape());
                assertEquals(expectedOffset, t.offset(), written.name());
                assertEquals(0, t.offset() % effective);
                assertEquals(-1, written.data().mismatch(t.data()), () -> written.name() + " data differs");
                expectedOffset = (t.offset() + t.byteSize() + effective - 1) / effective * effective;
            }
        }
    }

    @Test
    void tensorDataIsASliceOfTheReadOnlyMappingNotACopy() throws IOException {
        var writer = new GgufWriter().put("general.alignment", new Int(UINT32, 64));
        var tensors = someTensors();
        tensors.forEach(writer::add);
        Path file = dir.resolve("mapped.gguf");
        writer.write(file);
        GgufFile gguf = GgufFile.open(file);
        GgufTensor first = gguf.tensors().iterator().next();
        for (GgufTensor t : gguf.tensors()) {
            MemorySegment data = t.data();
            assertTrue(data.isMapped(), t.name());
            assertTrue(data.isNative(), t.name());
            assertTrue(data.heapBase().isEmpty(), t.name());
            assertTrue(data.isReadOnly(), t.name());
            assertEquals(0, data.address() % 64, "mapping is page aligned, so data addresses follow the alignment");
            assertEquals(t.offset() - first.offset(), data.address() - first.data().address(), "one contiguous mapping");
        }
        gguf.close();
        assertFalse(first.data().scope().isAlive(), "closing the file unmaps the tensors");
        assertThrows(IllegalStateException.class, () -> first.data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
        gguf.close(); // closing twice is harmless
    }

    @Test
    void versionTwoFileReadsLikeVersionThree() throws IOException {
        // Versions 2 and 3 share the layout (64-bit counts and lengths); v3 only added big-endian variants.
        var metadata = everyValueType();
        var writer = new GgufWriter().putAll(metadata);
        someTensors().forEach(writer::add);
        Path v3 = dir.resolve("v3.gguf");
        writer.write(v3);
        byte[] bytes = Files.readAllBytes(v3);
        assertEquals(3, bytes[4]);
        bytes[4] = 2;
        Path v2 = dir.resolve("v2.gguf");
        Files.write(v2, bytes);
        try (GgufFile a = GgufFile.open(v2); GgufFile b = GgufFile.open(v3)) {
            assertEquals(2, a.version());
            assertEquals(b.metadata(), a.metadata());
            for (GgufTensor t : b.tensors()) assertEquals(-1, t.data().mismatch(a.tensor(t.name()).data()));
        }
    }

    @Test
    void handBuiltVersionTwoFile() {
        byte[] floats = GgufBytes.littleEndianFloats(1.5f, -2f, 0.25f, 8f);
        var b = GgufBytes.header(2, 1, 2)
                .key("general.architecture", GgufBytes.STRING).str("llama")
                .key("general.alignment", GgufBytes.U32).u32(16)
                .tensor("w", 0 /* F32 */, 0, 2, 2)
                .padTo(16).raw(toInts(floats));
        try (GgufFile f = b.parse()) {
            assertEquals(2, f.version());
            assertEquals("llama", f.getString("general.architecture"));
            assertEquals(16, f.alignment());
            assertEquals(f.fileSize() - 16, f.dataOffset());
            GgufTensor w = f.tensor("w");
            assertEquals(4, w.elementCount());
            assertEquals(2, w.rows());
            assertEquals(0.25f, w.data().get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 8));
        }
    }

    private static int[] toInts(byte[] bytes) {
        int[] out = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) out[i] = bytes[i] & 0xff;
        return out;
    }

    @Test
    void fileWithoutTensorsOrMetadata() {
        try (GgufFile f = GgufBytes.header(3, 0, 0).parse()) {
            assertTrue(f.metadata().isEmpty());
            assertTrue(f.tensors().isEmpty());
            assertEquals(32, f.dataOffset());
        }
    }

    /** Rewriting a reference model with our writer reproduces it byte for byte (same order, alignment and padding). */
    @ParameterizedTest
    @ValueSource(strings = {"models/stories260K.gguf", "models/llama-2-tiny-random.gguf"})
    void rewritingAReferenceModelReproducesTheFile(String name) throws IOException {
        Path model = TestData.shared(name);
        Path copy = dir.resolve("rewritten.gguf");
        try (GgufFile f = GgufFile.open(model)) {
            assertEquals("llama", f.getString("general.architecture"));
            assertEquals(f.getInt("llama.block_count") * 9 + 3, f.tensors().size());
            var writer = new GgufWriter().putAll(f.metadata());
            for (GgufTensor t : f.tensors()) writer.add(new GgufWriter.TensorData(t.name(), t.type(), t.shape(), t.data()));
            writer.write(copy);
        }
        assertEquals(-1, Files.mismatch(model, copy));
    }

    @Test
    void writerRejectsWhatTheReaderWouldRejectAndLeavesNoFileBehind() throws IOException {
        var rnd = new Random(1);
        List<GgufWriter> bad = List.of(
                new GgufWriter().put("u8", new Int(UINT8, 256)),
                new GgufWriter().put("i8", new Int(INT8, -129)),
                new GgufWriter().put("u16", new Int(UINT16, -1)),
                new GgufWriter().put("i16", new Int(INT16, 40000)),
                new GgufWriter().put("u32", new Int(UINT32, 1L << 32)),
                new GgufWriter().put("i32", new Int(INT32, 1L << 31)),
                new GgufWriter().put("", new Str("empty key")),
                new GgufWriter().put("mixed", new Array(INT32, List.of(new Int(INT32, 1), new Int(UINT32, 2)))),
                new GgufWriter().add(tensor(rnd, "t", GgmlType.F32, 4)).add(tensor(rnd, "t", GgmlType.F32, 4)),
                new GgufWriter().add(tensor(rnd, "", GgmlType.F32, 4)));
        for (GgufWriter w : bad) assertThrows(IllegalArgumentException.class, () -> w.write(dir.resolve("bad.gguf")));
        try (var files = Files.list(dir)) {
            assertEquals(List.of(), files.toList());
        }
        assertThrows(IllegalArgumentException.class, () -> new Int(FLOAT32, 1));
        assertThrows(IllegalArgumentException.class, () -> new Float(INT32, 1));
        assertThrows(IllegalArgumentException.class, () -> tensor(rnd, "q", GgmlType.Q8_0, 33));
    }

    @Test
    void writerRejectsInvalidAlignment() {
        for (MetadataValue bad : List.of(new Int(UINT32, 0), new Int(UINT32, 3), new Int(INT32, -32), new Str("32"))) {
            var w = new GgufWriter().put("general.alignment", bad);
            assertThrows(IllegalArgumentException.class, () -> w.write(dir.resolve("bad.gguf")), bad::describe);
        }
    }
}
