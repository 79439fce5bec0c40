package dev.forkpoint.format.gguf;

import dev.forkpoint.format.ModelFormatException;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Builds GGUF bytes field by field, little-endian, so tests can write files the writer would refuse to make. */
final class GgufBytes {
    static final Path NAME = Path.of("hand-built.gguf");
    // Value type ids from the GGUF spec, spelled out so the tests do not depend on MetadataType.
    static final int U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9,
            U64 = 10, I64 = 11, F64 = 12;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    /** Magic "GGUF", then version, tensor count and metadata count. */
    static GgufBytes header(int version, long tensorCount, long kvCount) {
        return new GgufBytes().raw('G', 'G', 'U', 'F').u32(version).u64(tensorCount).u64(kvCount);
    }

    GgufBytes raw(int... bytes) {
        for (int b : bytes) out.write(b);
        return this;
    }

    GgufBytes u8(int v) { return raw(v & 0xff); }
    GgufBytes u16(int v) { return le(2, v); }
    GgufBytes u32(int v) { return le(4, v); }
    GgufBytes u64(long v) { return le(8, v); }

    private GgufBytes le(int n, long v) {
        for (int i = 0; i < n; i++) out.write((int) (v >>> (8 * i)) & 0xff);
        return this;
    }

    GgufBytes str(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        u64(b.length);
        out.writeBytes(b);
        return this;
    }

    /** A metadata key and the value type id that follows it. */
    GgufBytes key(String key, int type) { return str(key).u32(type); }

    /** One tensor info: name, n_dims, ne[], type id, offset. */
    GgufBytes tensor(String name, int type, long offset, long... ne) {
        str(name).u32(ne.length);
        for (long d : ne) u64(d);
        return u32(type).u64(offset);
    }

    GgufBytes padTo(int alignment) {
        while (out.size() % alignment != 0) out.write(0);
        return this;
    }

    GgufBytes zeros(int n) {
        out.writeBytes(new byte[n]);
        return this;
    }

    int size() { return out.size(); }

    byte[] bytes() { return out.toByteArray(); }

    GgufFile parse() { return GgufReader.parse(NAME, MemorySegment.ofArray(bytes())); }

    /** Asserts that parsing fails with a ModelFormatException about {@code field}; returns it for further checks. */
    ModelFormatException rejectedAt(String field) {
        var e = assertThrows(ModelFormatException.class, this::parse);
        assertTrue(e.field().equals(field), () -> "expected field '" + field + "', got: " + e.getMessage());
        assertWellFormed(e, NAME);
        return e;
    }

    /** The message names the file, the field and the offset, and the offset lies inside the file or at its end. */
    static void assertWellFormed(ModelFormatException e, Path file) {
        String m = e.getMessage();
        assertTrue(m.startsWith(file + ": "), () -> "message does not name the file: " + m);
        assertTrue(!e.field().isEmpty() && m.contains(e.field()), () -> "message does not name the field: " + m);
        assertTrue(e.offset() >= 0 && m.contains(" at offset " + e.offset()), () -> "message does not name an offset: " + m);
    }

    static byte[] littleEndianFloats(float... values) {
        ByteBuffer b = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putFloat(v);
        return b.array();
    }
}
