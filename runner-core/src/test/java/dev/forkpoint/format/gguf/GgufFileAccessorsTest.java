package dev.forkpoint.format.gguf;

import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.MetadataValue.Int;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static dev.forkpoint.format.gguf.MetadataType.*;
import static org.junit.jupiter.api.Assertions.*;

/** The typed metadata accessors: right values for right types, and a ModelFormatException naming the key otherwise. */
class GgufFileAccessorsTest {
    @TempDir static Path dir;
    static GgufFile f;

    @BeforeAll
    static void write() throws IOException {
        Path file = dir.resolve("accessors.gguf");
        new GgufWriter()
                .put("s", MetadataValue.of("text"))
                .put("u32", MetadataValue.ofU32(4_000_000_000L))
                .put("i32", MetadataValue.ofI32(-5))
                .put("u8", new Int(UINT8, 200))
                .put("i64", new Int(INT64, 1L << 40))
                .put("f32", MetadataValue.ofF32(0.125))
                .put("f64", new MetadataValue.Float(FLOAT64, 1e-300))
                .put("yes", MetadataValue.ofBool(true))
                .put("no", MetadataValue.ofBool(false))
                .put("strs", MetadataValue.ofStrings(List.of("a", "b")))
                .put("f32s", MetadataValue.ofF32s(new float[] {1.5f, -2f}))
                .put("i32s", MetadataValue.ofI32s(new int[] {3, -4}))
                .put("u32s", new MetadataValue.Array(UINT32, List.of(new Int(UINT32, 7), new Int(UINT32, 0xFFFF_FFFFL))))
                .put("empty", new MetadataValue.Array(STRING, List.of()))
                .write(file);
        f = GgufFile.open(file);
    }

    @AfterAll
    static void close() { f.close(); }

    @Test
    void valuesOfTheRightType() {
        assertEquals("text", f.getString("s"));
        assertEquals(4_000_000_000L, f.getLong("u32"));
        assertEquals(-5, f.getInt("i32"));
        assertEquals(200, f.getInt("u8"));
        assertEquals(1L << 40, f.getLong("i64"));
        assertEquals(0.125, f.getDouble("f32"));
        assertEquals(1e-300, f.getDouble("f64"));
        assertEquals(-5.0, f.getDouble("i32"), "integers are numbers");
        assertTrue(f.getBool("yes"));
        assertFalse(f.getBool("no"));
        assertArrayEquals(new String[] {"a", "b"}, f.getStringArray("strs"));
        assertArrayEquals(new float[] {1.5f, -2f}, f.getFloatArray("f32s"));
        assertArrayEquals(new float[] {3f, -4f}, f.getFloatArray("i32s"), "integer arrays read as floats");
        assertArrayEquals(new int[] {3, -4}, f.getIntArray("i32s"));
        assertEquals(0, f.getStringArray("empty").length);
        assertEquals(0, f.getIntArray("empty").length, "an empty array has no element of the wrong type");
        assertEquals(2, f.getArray("strs").values().size());
        assertTrue(f.has("s"));
        assertEquals(MetadataValue.of("text"), f.find("s").orElseThrow());
    }

    @Test
    void fallbacksApplyOnlyToMissingKeys() {
        assertEquals("dflt", f.getString("nope", "dflt"));
        assertEquals(9, f.getInt("nope", 9));
        assertEquals(9L, f.getLong("nope", 9L));
        assertEquals(2.5, f.getDouble("nope", 2.5));
        assertTrue(f.getBool("nope", true));
        assertEquals("text", f.getString("s", "dflt"));
        assertEquals(-5, f.getInt("i32", 9));
        assertFalse(f.getBool("no", true));
        assertTrue(f.find("nope").isEmpty());
        rejects("metadata s", "expected an integer", () -> f.getInt("s", 1));
        rejects("metadata u32", "expected a string", () -> f.getString("u32", "x"));
        rejects("metadata s", "expected a boolean", () -> f.getBool("s", false));
        rejects("metadata s", "expected a number", () -> f.getDouble("s", 1.0));
    }

    @Test
    void missingKeys() {
        rejects("metadata nope", "missing", () -> f.getString("nope"));
        rejects("metadata nope", "missing", () -> f.getInt("nope"));
        rejects("metadata nope", "missing", () -> f.getLong("nope"));
        rejects("metadata nope", "missing", () -> f.getDouble("nope"));
        rejects("metadata nope", "missing", () -> f.getBool("nope"));
        rejects("metadata nope", "missing", () -> f.getArray("nope"));
        rejects("metadata nope", "missing", () -> f.getStringArray("nope"));
        rejects("metadata nope", "missing", () -> f.getFloatArray("nope"));
        rejects("metadata nope", "missing", () -> f.getIntArray("nope"));
        rejects("tensor nope", "missing", () -> f.tensor("nope"));
        assertTrue(f.findTensor("nope").isEmpty());
    }

    @Test
    void wrongTypes() {
        rejects("metadata u32", "expected a string, found a uint32", () -> f.getString("u32"));
        rejects("metadata s", "expected an integer, found a string", () -> f.getLong("s"));
        rejects("metadata f32", "expected an integer, found a float32", () -> f.getInt("f32"));
        rejects("metadata strs", "expected a number, found an array", () -> f.getDouble("strs"));
        rejects("metadata f64", "expected a boolean", () -> f.getBool("f64"));
        rejects("metadata s", "expected an array", () -> f.getArray("s"));
        rejects("metadata s", "expected an array", () -> f.getStringArray("s"));
        rejects("metadata strs[0]", "expected an integer, found a string", () -> f.getIntArray("strs"));
        rejects("metadata strs[0]", "expected a number, found a string", () -> f.getFloatArray("strs"));
        rejects("metadata i32s[0]", "expected a string, found an int32", () -> f.getStringArray("i32s"));
    }

    @Test
    void integersOutOfIntRange() {
        rejects("metadata u32", "out of range", () -> f.getInt("u32"));
        rejects("metadata i64", "out of range", () -> f.getInt("i64"));
        rejects("metadata u32s[1]", "out of range", () -> f.getIntArray("u32s"));
    }

    private static void rejects(String field, String problem, Executable call) {
        var e = assertThrows(ModelFormatException.class, call);
        assertEquals(field, e.field(), e::getMessage);
        assertTrue(e.getMessage().startsWith(f.path() + ": " + field + ": "), e::getMessage);
        assertTrue(e.getMessage().contains(problem), e::getMessage);
    }
}
