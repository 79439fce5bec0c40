package dev.forkpoint.format.gguf;

import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Parses a GGUF file (versions 2 and 3, little-endian) from a read-only memory mapping. Every count, length, offset
 * and size is checked against the bytes that remain before it is used, so a hostile file can neither make the reader
 * allocate more than a small multiple of its own size nor read outside the mapping; any defect is a
 * {@link dev.forkpoint.format.ModelFormatException} naming the file, the field and its offset. Beyond the layout it
 * enforces: non-empty unique keys and tensor names, bools of 0 or 1, arrays nested at most {@link #MAX_NESTING} deep,
 * a power-of-two {@code general.alignment}, 1..4 positive dimensions with rows of whole blocks, aligned tensor offsets,
 * and tensor data that lies inside the file without overlapping. Tensor data is never copied: tensors are slices.
 */
final class GgufReader {
    static final int MAGIC = 0x46554747; // "GGUF" little-endian
    static final int MAX_DIMS = 4;
    static final int MAX_NESTING = 8;

    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Path path;
    private final MemorySegment file;
    private final long size;
    private long pos;

    private GgufReader(Path path, MemorySegment file) {
        this.path = path;
        this.file = file;
        this.size = file.byteSize();
    }

    /** Maps {@code path} read-only and parses it; the returned file owns the mapping. */
    static GgufFile read(Path path) throws IOException {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            MemorySegment seg = size == 0 ? MemorySegment.NULL : ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return new GgufReader(path, seg).parse(arena);
        } catch (RuntimeException | IOException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Parses GGUF bytes already in memory (tests use this to try thousands of corrupted variants quickly);
     * {@code nameForMessages} names the source in errors. Tensors are slices of {@code bytes}.
     */
    static GgufFile parse(Path nameForMessages, MemorySegment bytes) {
        return new GgufReader(nameForMessages, bytes).parse(null);
    }

    private GgufFile parse(Arena arena) {
        int magic = u32("magic");
        if (magic != MAGIC) {
            throw fail("magic", 0, String.format("not a GGUF file (magic 0x%08x, expected 0x%08x \"GGUF\")", magic, MAGIC));
        }
        long versionAt = pos;
        int version = u32("version");
        if (version == 1) throw fail("version", versionAt, "GGUF version 1 is obsolete; convert the file with a current llama.cpp");
        if (Integer.reverseBytes(version) == 2 || Integer.reverseBytes(version) == 3) {
            throw fail("version", versionAt, "big-endian GGUF files are not supported");
        }
        if (version != 2 && version != 3) throw fail("version", versionAt, "unsupported GGUF version " + Integer.toUnsignedString(version) + " (supported: 2, 3)");

        long tensorCount = count("tensor_count", 8 + 4 + 8 + 4 + 8);
        long kvCount = count("metadata_kv_count", 8 + 4 + 1);

        Map<String, MetadataValue> metadata = new LinkedHashMap<>();
        long alignmentAt = -1;
        for (long i = 0; i < kvCount; i++) {
            long keyAt = pos;
            String key = string("metadata key #" + i);
            if (key.isEmpty()) throw fail("metadata key #" + i, keyAt, "empty key");
            long typeAt = pos;
            String field = "metadata " + shown(key);
            MetadataType type = metadataType(field + " type", typeAt);
            if (key.equals("general.alignment")) alignmentAt = pos;
            MetadataValue value = value(field, type, 0);
            if (metadata.put(key, value) != null) throw fail(field, keyAt, "duplicate key");
        }

        int alignment = GgufFile.DEFAULT_ALIGNMENT;
        MetadataValue align = metadata.get("general.alignment");
        if (align != null) {
            if (!(align instanceof MetadataValue.Int a) || a.value() <= 0 || a.value() > (1 << 30) || Long.bitCount(a.value()) != 1) {
                throw fail("metadata general.alignment", alignmentAt, "must be a positive power of two, found " + align.describe());
            }
            alignment = (int) a.value();
        }

        record Info(String name, long[] shape, GgmlType type, long offset, long bytes, long offsetAt) {}
        var infos = new ArrayList<Info>((int) Math.min(tensorCount, 1 << 16));
        var names = new HashSet<String>();
        for (long i = 0; i < tensorCount; i++) {
            long at = pos;
            String name = string("tensor #" + i + " name");
            if (name.isEmpty()) throw fail("tensor #" + i + " name", at, "empty name");
            String field = "tensor " + shown(name);
            if (!names.add(name)) throw fail(field, at, "duplicate tensor name");
            long dimsAt = pos;
            int nDims = u32(field + " n_dims");
            if (nDims < 1 || nDims > MAX_DIMS) throw fail(field + " n_dims", dimsAt, "must be 1.." + MAX_DIMS + ", found " + Integer.toUnsignedString(nDims));
            long[] shape = new long[nDims];
            long elements = 1;
            for (int d = 0; d < nDims; d++) {
                long dimAt = pos;
                shape[d] = u64(field + " ne[" + d + "]");
                if (shape[d] <= 0 || shape[d] > Integer.MAX_VALUE) {
                    throw fail(field + " ne[" + d + "]", dimAt, "dimension " + Long.toUnsignedString(shape[d]) + " is out of range");
                }
                try {
                    elements = Math.multiplyExact(elements, shape[d]);
                } catch (ArithmeticException e) {
                    throw fail(field + " shape", dimAt, "element count overflows");
                }
            }
            long typeAt = pos;
            int typeId = u32(field + " type");
            GgmlType type = GgmlType.byId(typeId);
            if (type == null) throw fail(field + " type", typeAt, "unknown tensor type id " + Integer.toUnsignedString(typeId));
            if (shape[0] % type.blockSize() != 0) {
                throw fail(field + " ne[0]", dimsAt + 4, "row length " + shape[0] + " is not a multiple of the " + type + " block size " + type.blockSize());
            }
            long offsetAt = pos;
            long offset = u64(field + " offset");
            if (offset < 0 || offset % alignment != 0) {
                throw fail(field + " offset", offsetAt, "offset " + Long.toUnsignedString(offset) + " is not a multiple of the alignment " + alignment);
            }
            long bytes;
            try {
                bytes = type.bytesFor(elements);
            } catch (ArithmeticException e) {
                throw fail(field + " shape", dimsAt, "byte size overflows");
            }
            infos.add(new Info(name, shape, type, offset, bytes, offsetAt));
        }

        long dataOffset = alignUp(pos, alignment);
        if (tensorCount > 0 && dataOffset > size) {
            throw fail("tensor data", pos, "file ends before the tensor data section (size " + size + ")");
        }
        long dataBytes = Math.max(0, size - dataOffset);
        for (Info info : infos) {
            if (info.offset > dataBytes) {
                throw fail("tensor " + shown(info.name) + " offset", info.offsetAt, "data offset " + info.offset
                        + " is past the end of the file (" + dataBytes + " data bytes)");
            }
            if (info.bytes > dataBytes - info.offset) {
                throw fail("tensor " + shown(info.name) + " data", dataOffset + info.offset, info.bytes + " bytes at data offset "
                        + info.offset + " run past the end of the file (" + dataBytes + " data bytes)");
            }
        }
        var byOffset = new ArrayList<>(infos);
        byOffset.sort(Comparator.comparingLong(Info::offset));
        for (int i = 1; i < byOffset.size(); i++) {
            Info prev = byOffset.get(i - 1), next = byOffset.get(i);
            if (prev.offset + prev.bytes > next.offset) {
                throw fail("tensor " + shown(next.name) + " offset", next.offsetAt, "data at offset " + next.offset
                        + " overlaps tensor " + shown(prev.name) + " (" + prev.bytes + " bytes at offset " + prev.offset + ")");
            }
        }
        Map<String, GgufTensor> tensors = new LinkedHashMap<>();
        for (Info info : infos) {
            MemorySegment data = file.asSlice(dataOffset + info.offset, info.bytes);
            tensors.put(info.name, new GgufTensor(info.name, info.type, info.shape, info.offset, data));
        }
        return new GgufFile(path, version, Collections.unmodifiableMap(metadata),
                Collections.unmodifiableMap(tensors), alignment, dataOffset, size, arena);
    }

    private MetadataValue value(String field, MetadataType type, int depth) {
        long at = pos;
        return switch (type) {
            case UINT8 -> new MetadataValue.Int(type, Byte.toUnsignedLong(u8(field)));
            case INT8 -> new MetadataValue.Int(type, u8(field));
            case UINT16 -> new MetadataValue.Int(type, Short.toUnsignedLong(u16(field)));
            case INT16 -> new MetadataValue.Int(type, u16(field));
            case UINT32 -> new MetadataValue.Int(type, Integer.toUnsignedLong(u32(field)));
            case INT32 -> new MetadataValue.Int(type, u32(field));
            case UINT64, INT64 -> new MetadataValue.Int(type, u64(field));
            case FLOAT32 -> new MetadataValue.Float(type, Float.intBitsToFloat(u32(field)));
            case FLOAT64 -> new MetadataValue.Float(type, Double.longBitsToDouble(u64(field)));
            case BOOL -> {
                byte b = u8(field);
                if (b != 0 && b != 1) throw fail(field, at, "bool must be 0 or 1, found " + b);
                yield new MetadataValue.Bool(b == 1);
            }
            case STRING -> new MetadataValue.Str(string(field));
            case ARRAY -> {
                if (depth >= MAX_NESTING) throw fail(field, at, "arrays nested deeper than " + MAX_NESTING);
                MetadataType elementType = metadataType(field + " element type", pos);
                long countAt = pos;
                long n = count(field + " count", elementType.minBytes());
                if (n > Integer.MAX_VALUE - 8) throw fail(field + " count", countAt, "array of " + n + " values is too large");
                var values = new ArrayList<MetadataValue>((int) Math.min(n, 1 << 16));
                for (long i = 0; i < n; i++) {
                    values.add(switch (elementType) {
                        // count() has checked that n fixed-size values fit, so only names of failures are built
                        case STRING -> new MetadataValue.Str(string(field, i));
                        case ARRAY -> value(field + "[" + i + "]", elementType, depth + 1);
                        default -> scalarElement(field, i, elementType);
                    });
                }
                yield new MetadataValue.Array(elementType, values);
            }
        };
    }

    private MetadataType metadataType(String field, long at) {
        int id = u32(field);
        MetadataType t = MetadataType.byId(id);
        if (t == null) throw fail(field, at, "unknown metadata value type " + Integer.toUnsignedString(id));
        return t;
    }

    /** Reads a uint64 count of items that take at least {@code minItemBytes} each; rejects counts the file cannot hold. */
    private long count(String field, int minItemBytes) {
        long at = pos;
        long n = u64(field);
        long remaining = size - pos;
        if (n < 0 || (minItemBytes > 0 && n > remaining / minItemBytes)) {
            throw fail(field, at, "count " + Long.toUnsignedString(n) + " cannot fit in the " + remaining + " bytes that remain");
        }
        return n;
    }

    /** A fixed-size element of an array whose count has been checked against the bytes that remain. */
    private MetadataValue scalarElement(String arrayField, long index, MetadataType type) {
        if (type == MetadataType.BOOL && Byte.toUnsignedInt(file.get(ValueLayout.JAVA_BYTE, pos)) > 1) {
            return value(arrayField + "[" + index + "]", type, 0); // reports the bad bool
        }
        return value(arrayField, type, 0);
    }

    private String string(String field) {
        return string(field, -1);
    }

    /** A length-prefixed UTF-8 string; {@code index >= 0} names it as element {@code index} of array {@code field}. */
    private String string(String field, long index) {
        long at = pos;
        if (size - pos < 8) need(indexed(field, index) + " length", 8);
        long len = u64(field);
        if (len < 0 || len > size - pos) {
            throw fail(indexed(field, index), at, "string length " + Long.toUnsignedString(len) + " exceeds the " + (size - pos) + " bytes that remain");
        }
        if (len > Integer.MAX_VALUE - 16) throw fail(indexed(field, index), at, "string length " + len + " is too large");
        byte[] bytes = file.asSlice(pos, len).toArray(ValueLayout.JAVA_BYTE);
        pos += len;
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private void need(String field, int bytes) {
        if (size - pos < bytes) {
            throw fail(field, pos, "file ends after " + size + " bytes, " + bytes + " more needed");
        }
    }

    private byte u8(String field) {
        need(field, 1);
        return file.get(ValueLayout.JAVA_BYTE, pos++);
    }

    private short u16(String field) {
        need(field, 2);
        short v = file.get(I16, pos);
        pos += 2;
        return v;
    }

    private int u32(String field) {
        need(field, 4);
        int v = file.get(I32, pos);
        pos += 4;
        return v;
    }

    private long u64(String field) {
        need(field, 8);
        long v = file.get(I64, pos);
        pos += 8;
        return v;
    }

    /**
     * A key or tensor name as errors show it: a corrupt length can turn megabytes of other bytes into a "name",
     * so long names are cut and control characters escaped.
     */
    private static String shown(String name) {
        String s = name.length() <= 120 ? name : name.substring(0, 117) + "...";
        if (s.chars().noneMatch(Character::isISOControl)) return s;
        var sb = new StringBuilder();
        s.chars().forEach(c -> sb.append(Character.isISOControl(c) ? String.format("\\x%02x", c) : String.valueOf((char) c)));
        return sb.toString();
    }

    private static String indexed(String field, long index) {
        return index < 0 ? field : field + "[" + index + "]";
    }

    static long alignUp(long v, int alignment) {
        return (v + alignment - 1) / alignment * alignment;
    }

    private ModelFormatException fail(String field, long at, String problem) {
        return new ModelFormatException(path, field, at, problem);
    }
}
