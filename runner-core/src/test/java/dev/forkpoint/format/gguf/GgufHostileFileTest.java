package dev.forkpoint.format.gguf;

import dev.forkpoint.format.ModelFormatException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.forkpoint.format.gguf.GgufBytes.*;
import static org.junit.jupiter.api.Assertions.*;

/** Hand-built files that lie about sizes, counts, types and offsets: each is a ModelFormatException naming the field. */
class GgufHostileFileTest {
    static final int TYPE_F32 = 0, TYPE_Q8_0 = 8;

    /** One metadata entry {@code k} whose type and value bytes the caller appends. */
    static GgufBytes oneKey(int type) {
        return header(3, 0, 1).key("k", type);
    }

    /** One F32 tensor info with the given dims, offset 0, and enough data for 16 floats. */
    static GgufBytes oneTensor(int type, long offset, long... ne) {
        return header(3, 1, 0).tensor("t", type, offset, ne).padTo(32).zeros(64);
    }

    @Test
    void emptyFileAndWrongMagic() {
        new GgufBytes().rejectedAt("magic");
        var e = new GgufBytes().raw('G', 'G', 'M', 'L').zeros(40).rejectedAt("magic");
        assertTrue(e.getMessage().contains("not a GGUF file"));
        new GgufBytes().raw('F', 'U', 'G', 'G').u32(3).u64(0).u64(0).rejectedAt("magic");
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 4, 5, 0x7fffffff, -1})
    void unsupportedVersions(int version) {
        var e = header(version, 0, 0).rejectedAt("version");
        assertEquals(4, e.offset());
        if (version == 1) assertTrue(e.getMessage().contains("version 1"));
    }

    @Test
    void bigEndianFile() {
        // Big-endian GGUF keeps the magic bytes and stores every number big-endian: version 3 reads as 0x03000000.
        var b = new GgufBytes().raw('G', 'G', 'U', 'F').raw(0, 0, 0, 3).raw(0, 0, 0, 0, 0, 0, 0, 0).raw(0, 0, 0, 0, 0, 0, 0, 0);
        assertTrue(b.rejectedAt("version").getMessage().contains("big-endian"));
    }

    @ParameterizedTest
    @ValueSource(longs = {Long.MAX_VALUE, -1L, 1L << 32, 1L << 40})
    void hugeCounts(long count) {
        header(3, count, 0).rejectedAt("tensor_count");
        header(3, 0, count).rejectedAt("metadata_kv_count");
        oneKey(ARRAY).u32(U8).u64(count).rejectedAt("metadata k count");
        oneKey(ARRAY).u32(ARRAY).u64(1).u32(STRING).u64(count).rejectedAt("metadata k[0] count");
    }

    @Test
    void countsThatExceedTheRemainingBytes() {
        header(3, 2, 0).tensor("t", TYPE_F32, 0, 16).rejectedAt("tensor_count"); // 33 bytes left, 2 infos need 64
        header(3, 0, 3).key("a", U8).u8(1).key("b", U8).u8(2).rejectedAt("metadata_kv_count");
        oneKey(ARRAY).u32(U32).u64(3).u32(1).u32(2).rejectedAt("metadata k count");
        oneKey(ARRAY).u32(STRING).u64(3).str("ab").rejectedAt("metadata k count");
        oneKey(ARRAY).u32(STRING).u64(2).str("only one").rejectedAt("metadata k[1] length");
    }

    @ParameterizedTest
    @ValueSource(longs = {Long.MAX_VALUE, -1L, 1L << 31, 9})
    void hugeStringLengths(long length) {
        // 9 bytes claimed, 8 present: every string length is checked against what remains
        header(3, 0, 1).u64(length).raw('k', 'e', 'y', 0, 0, 0, 0, 0).rejectedAt("metadata key #0");
        oneKey(STRING).u64(length).zeros(8).rejectedAt("metadata k");
        oneKey(ARRAY).u32(STRING).u64(1).u64(length).zeros(8).rejectedAt("metadata k[0]");
        if (length > 9) header(3, 1, 0).u64(length).zeros(60).rejectedAt("tensor #0 name");
    }

    @Test
    void emptyKeyAndDuplicateKeys() {
        header(3, 0, 1).str("").u32(U8).u8(0).rejectedAt("metadata key #0");
        var e = header(3, 0, 2).key("dup", U8).u8(1).key("dup", STRING).str("again").rejectedAt("metadata dup");
        assertTrue(e.getMessage().contains("duplicate"));
        assertEquals(24 + 8 + 3 + 4 + 1, e.offset(), "points at the second key");
    }

    @ParameterizedTest
    @ValueSource(ints = {13, 100, -1, Integer.MIN_VALUE})
    void unknownMetadataTypes(int id) {
        oneKey(id).zeros(16).rejectedAt("metadata k type");
        oneKey(ARRAY).u32(id).u64(0).rejectedAt("metadata k element type");
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 0xff})
    void boolOtherThanZeroOrOne(int value) {
        oneKey(BOOL).u8(value).rejectedAt("metadata k");
        oneKey(ARRAY).u32(BOOL).u64(3).u8(1).u8(0).u8(value).rejectedAt("metadata k[2]");
    }

    @Test
    void arraysNestedBeyondTheLimit() {
        int limit = GgufReader.MAX_NESTING;
        try (GgufFile ok = nested(limit).parse()) {
            MetadataValue v = ok.metadata().get("k");
            for (int d = 0; d < limit; d++) v = ((MetadataValue.Array) v).values().isEmpty() ? null : ((MetadataValue.Array) v).values().get(0);
            assertNull(v, "the innermost array is empty");
        }
        var e = assertThrows(ModelFormatException.class, () -> nested(limit + 1).parse());
        assertTrue(e.field().startsWith("metadata k[0][0]"), e::getMessage);
        assertTrue(e.getMessage().contains("nested"), e::getMessage);
        // a deep chain far beyond the limit fails the same way, not with a StackOverflowError
        assertThrows(ModelFormatException.class, () -> nested(100_000).parse());
    }

    /** Key k holding {@code levels} arrays, each holding the next; the innermost is an empty u8 array. */
    static GgufBytes nested(int levels) {
        var b = oneKey(ARRAY);
        for (int i = 1; i < levels; i++) b.u32(ARRAY).u64(1);
        return b.u32(U8).u64(0);
    }

    @Test
    void alignmentMustBeAPositivePowerOfTwo() {
        oneAlignment(U32).u32(0).rejectedAt("metadata general.alignment");
        oneAlignment(U32).u32(3).rejectedAt("metadata general.alignment");
        oneAlignment(U32).u32(48).rejectedAt("metadata general.alignment");
        oneAlignment(I32).u32(-32).rejectedAt("metadata general.alignment");
        oneAlignment(U64).u64(1L << 40).rejectedAt("metadata general.alignment");
        oneAlignment(U32).u32(0x8000_0000).rejectedAt("metadata general.alignment");
        oneAlignment(F32).u32(Float.floatToIntBits(32f)).rejectedAt("metadata general.alignment");
        oneAlignment(STRING).str("32").rejectedAt("metadata general.alignment");
        oneAlignment(BOOL).u8(1).rejectedAt("metadata general.alignment");
        assertEquals(24 + 8 + 17 + 4, oneAlignment(U32).u32(3).rejectedAt("metadata general.alignment").offset(), "points at the value");
        try (GgufFile one = oneAlignment(U8).u8(1).parse()) {
            assertEquals(1, one.alignment());
        }
    }

    static GgufBytes oneAlignment(int type) {
        return header(3, 0, 1).key("general.alignment", type);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 5, 64, -1})
    void dimensionCountOutOfRange(int nDims) {
        header(3, 1, 0).str("t").u32(nDims).zeros(80).rejectedAt("tensor t n_dims");
    }

    @Test
    void zeroAndHugeDimensions() {
        oneTensor(TYPE_F32, 0, 0).rejectedAt("tensor t ne[0]");
        oneTensor(TYPE_F32, 0, 4, 0).rejectedAt("tensor t ne[1]");
        oneTensor(TYPE_F32, 0, -1).rejectedAt("tensor t ne[0]");
        oneTensor(TYPE_F32, 0, 16, 1L << 40).rejectedAt("tensor t ne[1]");
        long big = Integer.MAX_VALUE;
        oneTensor(TYPE_F32, 0, big, big, big).rejectedAt("tensor t shape"); // 2^93 elements
        oneTensor(TYPE_F32, 0, big, big, 2).rejectedAt("tensor t shape"); // 2^63 elements: just overflows
        // fits in a long as elements, but not as bytes
        oneTensor(TYPE_F32, 0, 1L << 30, 1L << 30, 1L << 2).rejectedAt("tensor t shape");
        // a plausible size that simply is not in the file
        oneTensor(TYPE_F32, 0, 1L << 20, 1L << 20).rejectedAt("tensor t data");
    }

    @ParameterizedTest
    @ValueSource(ints = {4, 5, 31, 32, 33, 1000, -1})
    void unknownTensorTypes(int id) {
        oneTensor(id, 0, 16).rejectedAt("tensor t type");
    }

    @Test
    void rowLengthMustBeAWholeNumberOfBlocks() {
        var e = header(3, 1, 0).tensor("t", TYPE_Q8_0, 0, 33, 2).padTo(32).zeros(200).rejectedAt("tensor t ne[0]");
        assertTrue(e.getMessage().contains("block size 32"), e::getMessage);
    }

    @Test
    void tensorOffsets() {
        oneTensor(TYPE_F32, 4, 16).rejectedAt("tensor t offset"); // not a multiple of 32
        oneTensor(TYPE_F32, -1, 16).rejectedAt("tensor t offset");
        oneTensor(TYPE_F32, Long.MIN_VALUE, 16).rejectedAt("tensor t offset");
        oneTensor(TYPE_F32, 1L << 40, 16).rejectedAt("tensor t offset"); // aligned, past the end
        oneTensor(TYPE_F32, Long.MAX_VALUE - 31, 16).rejectedAt("tensor t offset"); // aligned, would overflow
        oneTensor(TYPE_F32, 64, 16).rejectedAt("tensor t data"); // starts exactly at the end
        oneTensor(TYPE_F32, 32, 16).rejectedAt("tensor t data"); // starts inside, ends 32 bytes past the end
        try (GgufFile fits = oneTensor(TYPE_F32, 0, 16).parse()) {
            assertEquals(64, fits.tensor("t").byteSize());
        }
    }

    @Test
    void tensorsMustNotOverlapOrShareNames() {
        var overlap = header(3, 2, 0).tensor("a", TYPE_F32, 0, 16).tensor("b", TYPE_F32, 32, 16).padTo(32).zeros(128);
        assertTrue(overlap.rejectedAt("tensor b offset").getMessage().contains("overlaps tensor a"));
        header(3, 2, 0).tensor("a", TYPE_F32, 64, 16).tensor("b", TYPE_F32, 0, 32).padTo(32).zeros(128).rejectedAt("tensor a offset");
        var dup = header(3, 2, 0).tensor("a", TYPE_F32, 0, 16).tensor("a", TYPE_F32, 64, 16).padTo(32).zeros(128);
        assertTrue(dup.rejectedAt("tensor a").getMessage().contains("duplicate tensor name"));
        try (GgufFile ok = header(3, 2, 0).tensor("b", TYPE_F32, 64, 16).tensor("a", TYPE_F32, 0, 16).padTo(32).zeros(128).parse()) {
            assertEquals(2, ok.tensors().size(), "tensors in any order are fine when they do not overlap");
        }
    }

    @Test
    void longNamesAreShortenedInMessages() {
        String key = "k".repeat(100_000);
        var e = header(3, 0, 1).key(key, 99).rejectedAt("metadata " + "k".repeat(117) + "... type");
        assertTrue(e.getMessage().length() < 400, e::getMessage);
        header(3, 0, 1).key("a\nb\u0000", 99).rejectedAt("metadata a\\x0ab\\x00 type");
    }

    @Test
    void emptyTensorName() {
        header(3, 1, 0).tensor("", TYPE_F32, 0, 16).padTo(32).zeros(64).rejectedAt("tensor #0 name");
    }

    @Test
    void dataSectionMissing() {
        header(3, 1, 0).tensor("t", TYPE_F32, 0, 16).rejectedAt("tensor data");
    }

    @Test
    void hostileFileOnDiskNamesThePath(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("hostile.gguf");
        Files.write(file, oneKey(STRING).u64(-1L).bytes());
        var e = assertThrows(ModelFormatException.class, () -> GgufFile.open(file));
        assertEquals("metadata k", e.field());
        assertWellFormed(e, file);
        Path empty = dir.resolve("empty.gguf");
        Files.write(empty, new byte[0]);
        assertEquals("magic", assertThrows(ModelFormatException.class, () -> GgufFile.open(empty)).field());
    }
}
