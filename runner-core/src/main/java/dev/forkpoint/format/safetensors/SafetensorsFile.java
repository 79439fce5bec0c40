package dev.forkpoint.format.safetensors;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.format.ModelFormatException;

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
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An opened safetensors file, memory-mapped read-only: an 8-byte little-endian header length, a JSON header
 * ({@code name → {dtype, shape, data_offsets: [begin, end]}} and an optional {@code __metadata__} of strings), then
 * the data. Everything is checked before use: the header fits the file, every dtype is known, shapes are
 * non-negative, {@code end − begin} equals the shape's size, offsets lie inside the data and tensors do not overlap.
 * Any defect is a {@link ModelFormatException} naming the file and the tensor. Tensors are slices, never copies;
 * closing the file unmaps them.
 */
public final class SafetensorsFile implements AutoCloseable {
    /** Headers larger than this are refused (the format's own limit is 100 MB). */
    static final long MAX_HEADER_BYTES = 100L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path path;
    private final Map<String, SafetensorsTensor> tensors;
    private final Map<String, String> metadata;
    private final Arena arena;

    private SafetensorsFile(Path path, Map<String, SafetensorsTensor> tensors, Map<String, String> metadata, Arena arena) {
        this.path = path;
        this.tensors = tensors;
        this.metadata = metadata;
        this.arena = arena;
    }

    /** Maps and validates {@code path}. */
    public static SafetensorsFile open(Path path) throws IOException {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            MemorySegment bytes = size == 0 ? MemorySegment.NULL : ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return parse(path, bytes, arena);
        } catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** Parses bytes already in memory ({@code path} names them in errors); the result does not own them. */
    static SafetensorsFile parse(Path path, MemorySegment bytes, Arena owner) {
        long size = bytes.byteSize();
        if (size < 8) throw new ModelFormatException(path, "header length", 0, "file is " + size + " bytes, too short for a safetensors header");
        long headerLength = bytes.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
        if (headerLength < 2 || headerLength > MAX_HEADER_BYTES || headerLength > size - 8) {
            throw new ModelFormatException(path, "header length", 0, "value " + Long.toUnsignedString(headerLength)
                    + " does not fit the file (" + size + " bytes) or exceeds " + MAX_HEADER_BYTES + " bytes; not a safetensors file?");
        }
        byte[] header = bytes.asSlice(8, headerLength).toArray(ValueLayout.JAVA_BYTE);
        JsonNode root;
        try {
            root = JSON.readTree(new String(header, StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw new ModelFormatException(path, "header", 8, "not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) throw new ModelFormatException(path, "header", 8, "must be a JSON object");
        long dataStart = 8 + headerLength;
        long dataSize = size - dataStart;
        Map<String, SafetensorsTensor> tensors = new LinkedHashMap<>();
        Map<String, String> metadata = new LinkedHashMap<>();
        List<long[]> extents = new ArrayList<>();
        for (var e : root.properties()) {
            String name = e.getKey();
            JsonNode v = e.getValue();
            if (name.equals("__metadata__")) {
                if (!v.isObject()) throw new ModelFormatException(path, "__metadata__", "must be an object of strings");
                for (var m : v.properties()) {
                    if (!m.getValue().isTextual()) throw new ModelFormatException(path, "__metadata__." + m.getKey(), "must be a string, found " + m.getValue());
                    metadata.put(m.getKey(), m.getValue().asText());
                }
                continue;
            }
            SafetensorsTensor t = tensor(path, name, v, bytes, dataStart, dataSize);
            tensors.put(name, t);
            extents.add(new long[]{t.data().address() - bytes.address() - dataStart, t.data().byteSize(), tensors.size() - 1});
        }
        checkOverlaps(path, extents, new ArrayList<>(tensors.keySet()));
        return new SafetensorsFile(path, tensors, metadata, owner);
    }

    private static SafetensorsTensor tensor(Path path, String name, JsonNode v, MemorySegment bytes, long dataStart, long dataSize) {
        String field = "tensor " + name;
        if (!v.isObject()) throw new ModelFormatException(path, field, "entry must be an object with dtype, shape and data_offsets");
        JsonNode dtypeNode = v.get("dtype"), shapeNode = v.get("shape"), offsetsNode = v.get("data_offsets");
        if (dtypeNode == null || !dtypeNode.isTextual()) throw new ModelFormatException(path, field, "missing or non-string dtype");
        SafetensorsDtype dtype = SafetensorsDtype.byName(dtypeNode.asText());
        if (dtype == null) throw new ModelFormatException(path, field, "unknown dtype \"" + dtypeNode.asText() + "\"");
        if (shapeNode == null || !shapeNode.isArray()) throw new ModelFormatException(path, field, "missing shape array");
        long[] shape = new long[shapeNode.size()];
        long elements = 1;
        for (int i = 0; i < shape.length; i++) {
            JsonNode d = shapeNode.get(i);
            if (!d.isIntegralNumber() || !d.canConvertToLong() || d.asLong() < 0) {
                throw new ModelFormatException(path, field, "shape " + shapeNode + " has an invalid dimension " + d);
            }
            shape[i] = d.asLong();
            try {
                elements = Math.multiplyExact(elements, shape[i]);
            } catch (ArithmeticException overflow) {
                throw new ModelFormatException(path, field, "shape " + shapeNode + " is too large");
            }
        }
        if (offsetsNode == null || !offsetsNode.isArray() || offsetsNode.size() != 2
                || !offsetsNode.get(0).canConvertToLong() || !offsetsNode.get(1).canConvertToLong()
                || !offsetsNode.get(0).isIntegralNumber() || !offsetsNode.get(1).isIntegralNumber()) {
            throw new ModelFormatException(path, field, "data_offsets must be two integers, found " + offsetsNode);
        }
        long begin = offsetsNode.get(0).asLong(), end = offsetsNode.get(1).asLong();
        if (begin < 0 || end < begin || end > dataSize) {
            throw new ModelFormatException(path, field, dataStart + Math.max(begin, 0), "data_offsets [" + begin + ", " + end
                    + "] lie outside the data section (" + dataSize + " bytes)");
        }
        long expected;
        try {
            expected = Math.multiplyExact(elements, dtype.bytes());
        } catch (ArithmeticException overflow) {
            throw new ModelFormatException(path, field, "shape " + shapeNode + " is too large");
        }
        if (end - begin != expected) {
            throw new ModelFormatException(path, field, dataStart + begin, "data_offsets hold " + (end - begin) + " bytes but "
                    + dtype + " " + shapeNode + " needs " + expected);
        }
        return new SafetensorsTensor(path, name, dtype, shape, bytes.asSlice(dataStart + begin, end - begin));
    }

    private static void checkOverlaps(Path path, List<long[]> extents, List<String> names) {
        extents.sort(Comparator.comparingLong(x -> x[0]));
        for (int i = 1; i < extents.size(); i++) {
            long[] prev = extents.get(i - 1), cur = extents.get(i);
            if (cur[1] > 0 && prev[1] > 0 && prev[0] + prev[1] > cur[0]) {
                throw new ModelFormatException(path, "tensor " + names.get((int) cur[2]),
                        "data overlaps tensor " + names.get((int) prev[2]));
            }
        }
    }

    public Path path() { return path; }

    /** The header's {@code __metadata__} (for MLX files typically {"format": "mlx"}). */
    public Map<String, String> metadata() { return metadata; }

    public Collection<SafetensorsTensor> tensors() { return tensors.values(); }

    public Optional<SafetensorsTensor> find(String name) { return Optional.ofNullable(tensors.get(name)); }

    public SafetensorsTensor tensor(String name) {
        SafetensorsTensor t = tensors.get(name);
        if (t == null) throw new ModelFormatException(path, "tensor " + name, "missing");
        return t;
    }

    /** Checks that {@code t} has a dtype Forkpoint can load. */
    public static SafetensorsTensor requireReadable(SafetensorsTensor t) {
        if (!t.dtype().readable()) {
            throw new ModelFormatException(t.file(), "tensor " + t.name(), "dtype " + t.dtype() + " is not supported; supported dtypes: "
                    + SafetensorsDtype.readableNames());
        }
        return t;
    }

    @Override
    public void close() {
        if (arena != null && arena.scope().isAlive()) arena.close();
    }
}
