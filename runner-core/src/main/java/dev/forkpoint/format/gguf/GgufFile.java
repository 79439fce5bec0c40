package dev.forkpoint.format.gguf;

import dev.forkpoint.format.ModelFormatException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * An opened GGUF file: its metadata and tensor directory, with tensor data memory-mapped in place.
 * Closing it unmaps the file; tensors must not be used afterwards.
 */
public final class GgufFile implements AutoCloseable {
    public static final int DEFAULT_ALIGNMENT = 32;

    private final Path path;
    private final int version;
    private final Map<String, MetadataValue> metadata;
    private final Map<String, GgufTensor> tensors;
    private final int alignment;
    private final long dataOffset;
    private final long fileSize;
    private final Arena arena; // owns the mapping; null when the bytes belong to someone else

    GgufFile(Path path, int version, Map<String, MetadataValue> metadata, Map<String, GgufTensor> tensors,
             int alignment, long dataOffset, long fileSize, Arena arena) {
        this.path = path;
        this.version = version;
        this.metadata = metadata;
        this.tensors = tensors;
        this.alignment = alignment;
        this.dataOffset = dataOffset;
        this.fileSize = fileSize;
        this.arena = arena;
    }

    /** Opens and validates {@code path}; throws {@link ModelFormatException} for any defect. */
    public static GgufFile open(Path path) throws IOException {
        return GgufReader.read(path);
    }

    /**
     * What {@code reader} makes of the file at {@code path}, opened and validated; the file is closed again when
     * {@code reader} fails, else it belongs to what it made.
     */
    public static <T> T open(Path path, Function<GgufFile, T> reader) throws IOException {
        GgufFile f = open(path);
        try {
            return reader.apply(f);
        } catch (RuntimeException | Error e) {
            f.close();
            throw e;
        }
    }

    public Path path() { return path; }
    public int version() { return version; }
    public int alignment() { return alignment; }
    /** Absolute file offset where tensor data begins. */
    public long dataOffset() { return dataOffset; }
    public long fileSize() { return fileSize; }
    public Map<String, MetadataValue> metadata() { return metadata; }
    public Collection<GgufTensor> tensors() { return tensors.values(); }

    public Optional<GgufTensor> findTensor(String name) { return Optional.ofNullable(tensors.get(name)); }

    public GgufTensor tensor(String name) {
        GgufTensor t = tensors.get(name);
        if (t == null) throw new ModelFormatException(path, "tensor " + name, "missing");
        return t;
    }

    public boolean has(String key) { return metadata.containsKey(key); }

    public Optional<MetadataValue> find(String key) { return Optional.ofNullable(metadata.get(key)); }

    public String getString(String key) {
        MetadataValue v = require(key);
        if (v instanceof MetadataValue.Str s) return s.value();
        throw wrongType(key, "a string", v);
    }

    public String getString(String key, String fallback) { return has(key) ? getString(key) : fallback; }

    public long getLong(String key) {
        MetadataValue v = require(key);
        if (v instanceof MetadataValue.Int i) return i.value();
        throw wrongType(key, "an integer", v);
    }

    public long getLong(String key, long fallback) { return has(key) ? getLong(key) : fallback; }

    /** An integer value that must fit an int. */
    public int getInt(String key) {
        long v = getLong(key);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new ModelFormatException(path, "metadata " + key, "value " + v + " is out of range");
        }
        return (int) v;
    }

    public int getInt(String key, int fallback) { return has(key) ? getInt(key) : fallback; }

    /** A float value; integers are accepted too. */
    public double getDouble(String key) {
        return switch (require(key)) {
            case MetadataValue.Float f -> f.value();
            case MetadataValue.Int i -> i.value();
            case MetadataValue v -> throw wrongType(key, "a number", v);
        };
    }

    public double getDouble(String key, double fallback) { return has(key) ? getDouble(key) : fallback; }

    /** A boolean value; integers are accepted too (non-zero is true). */
    public boolean getBool(String key) {
        return switch (require(key)) {
            case MetadataValue.Bool b -> b.value();
            case MetadataValue.Int i -> i.value() != 0;
            case MetadataValue v -> throw wrongType(key, "a boolean", v);
        };
    }

    public boolean getBool(String key, boolean fallback) { return has(key) ? getBool(key) : fallback; }

    public MetadataValue.Array getArray(String key) {
        MetadataValue v = require(key);
        if (v instanceof MetadataValue.Array a) return a;
        throw wrongType(key, "an array", v);
    }

    public String[] getStringArray(String key) {
        MetadataValue.Array a = getArray(key);
        String[] out = new String[a.values().size()];
        for (int i = 0; i < out.length; i++) {
            if (!(a.values().get(i) instanceof MetadataValue.Str s)) throw wrongType(key + "[" + i + "]", "a string", a.values().get(i));
            out[i] = s.value();
        }
        return out;
    }

    public float[] getFloatArray(String key) {
        MetadataValue.Array a = getArray(key);
        float[] out = new float[a.values().size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = switch (a.values().get(i)) {
                case MetadataValue.Float f -> (float) f.value();
                case MetadataValue.Int n -> n.value();
                case MetadataValue v -> throw wrongType(key + "[" + i + "]", "a number", v);
            };
        }
        return out;
    }

    public int[] getIntArray(String key) {
        MetadataValue.Array a = getArray(key);
        int[] out = new int[a.values().size()];
        for (int i = 0; i < out.length; i++) {
            if (!(a.values().get(i) instanceof MetadataValue.Int n)) throw wrongType(key + "[" + i + "]", "an integer", a.values().get(i));
            if (n.value() < Integer.MIN_VALUE || n.value() > Integer.MAX_VALUE) {
                throw new ModelFormatException(path, "metadata " + key + "[" + i + "]", "value " + n.value() + " is out of range");
            }
            out[i] = (int) n.value();
        }
        return out;
    }

    private MetadataValue require(String key) {
        MetadataValue v = metadata.get(key);
        if (v == null) throw new ModelFormatException(path, "metadata " + key, "missing");
        return v;
    }

    private ModelFormatException wrongType(String key, String expected, MetadataValue found) {
        String type = found.type().name().toLowerCase();
        String article = type.startsWith("a") || type.startsWith("i") ? "an " : "a ";
        return new ModelFormatException(path, "metadata " + key, "expected " + expected + ", found " + article + type
                + " (" + found.describe() + ")");
    }

    @Override
    public void close() {
        if (arena != null && arena.scope().isAlive()) arena.close();
    }
}
