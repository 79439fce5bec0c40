package dev.forkpoint.format.gguf;

import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes GGUF version 3 files. Metadata keeps insertion order; tensor data is written in the order tensors were
 * added, each aligned to {@code general.alignment} (32 unless set). The file is written to a temporary sibling
 * and moved into place, so a reader never sees a half-written model.
 */
public final class GgufWriter {
    /** Tensor data to write: {@code data} must hold exactly the bytes {@code type} needs for {@code shape}. */
    public record TensorData(String name, GgmlType type, long[] shape, MemorySegment data) {
        public TensorData {
            long elements = 1;
            for (long d : shape) elements = Math.multiplyExact(elements, d);
            long expected = type.bytesFor(elements);
            if (data.byteSize() != expected) {
                throw new IllegalArgumentException("tensor " + name + ": " + data.byteSize() + " bytes given, " + expected + " needed");
            }
        }
    }

    private static final long CHUNK = 1 << 30;

    private final Map<String, MetadataValue> metadata = new LinkedHashMap<>();
    private final List<TensorData> tensors = new ArrayList<>();

    public GgufWriter put(String key, MetadataValue value) {
        metadata.put(key, value);
        return this;
    }

    public GgufWriter putAll(Map<String, MetadataValue> values) {
        metadata.putAll(values);
        return this;
    }

    public GgufWriter add(TensorData tensor) {
        tensors.add(tensor);
        return this;
    }

    /** A tensor's directory entry: name, type and shape in GGML order. */
    public record TensorEntry(String name, GgmlType type, long[] shape) {
        /** Bytes of this tensor's data. */
        public long bytes() {
            long n = 1;
            for (long d : shape) n = Math.multiplyExact(n, d);
            return type.bytesFor(n);
        }
    }

    /**
     * Where everything goes in a GGUF v3 file: the encoded header (metadata in order, then the tensor directory),
     * zero-padded to {@code dataStart}, and each tensor's absolute data offset. The file ends where the last
     * tensor's data ends.
     */
    public record Layout(ByteBuffer header, long dataStart, long[] dataOffsets, long fileSize) {}

    /** Encodes the header for {@code metadata} and {@code tensors} and places their data; validates both. */
    public static Layout layout(Map<String, MetadataValue> metadata, List<TensorEntry> tensors) {
        int alignment = GgufFile.DEFAULT_ALIGNMENT;
        MetadataValue align = metadata.get("general.alignment");
        if (align != null) {
            if (!(align instanceof MetadataValue.Int a) || a.value() <= 0 || a.value() > (1 << 30) || Long.bitCount(a.value()) != 1) {
                throw new IllegalArgumentException("general.alignment must be a positive power of two, found " + align.describe());
            }
            alignment = (int) a.value();
        }
        var names = new HashSet<String>();
        for (TensorEntry t : tensors) {
            if (t.name().isEmpty() || !names.add(t.name())) throw new IllegalArgumentException("tensor name '" + t.name() + "' is empty or repeated");
        }
        var header = new Buf();
        header.u32(GgufReader.MAGIC).u32(3).u64(tensors.size()).u64(metadata.size());
        metadata.forEach((k, v) -> {
            if (k.isEmpty()) throw new IllegalArgumentException("empty metadata key");
            header.str(k);
            header.u32(v.type().id());
            header.value(v);
        });
        long offset = 0;
        long[] relative = new long[tensors.size()];
        for (int i = 0; i < tensors.size(); i++) {
            TensorEntry t = tensors.get(i);
            header.str(t.name()).u32(t.shape().length);
            for (long d : t.shape()) header.u64(d);
            header.u32(t.type().id()).u64(offset);
            relative[i] = offset;
            offset = GgufReader.alignUp(offset + t.bytes(), alignment);
        }
        long dataStart = GgufReader.alignUp(header.size(), alignment);
        header.pad(dataStart);
        long[] absolute = new long[relative.length];
        long end = dataStart;
        for (int i = 0; i < relative.length; i++) {
            absolute[i] = dataStart + relative[i];
            end = absolute[i] + tensors.get(i).bytes();
        }
        return new Layout(header.bytes(), dataStart, absolute, end);
    }

    public void write(Path target) throws IOException {
        Layout layout = layout(metadata, tensors.stream().map(t -> new TensorEntry(t.name(), t.type(), t.shape())).toList());
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            writeFully(ch, layout.header());
            long position = layout.dataStart();
            for (int i = 0; i < tensors.size(); i++) {
                TensorData t = tensors.get(i);
                long at = layout.dataOffsets()[i];
                if (at > position) writeFully(ch, ByteBuffer.allocate((int) (at - position)));
                // in chunks: a ByteBuffer cannot view more than 2 GiB
                for (long done = 0; done < t.data().byteSize(); done += CHUNK) {
                    writeFully(ch, t.data().asSlice(done, Math.min(CHUNK, t.data().byteSize() - done)).asByteBuffer());
                }
                position = at + t.data().byteSize();
            }
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }

    /** A growable little-endian byte buffer for the header. */
    private static final class Buf {
        private ByteBuffer b = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);

        private void ensure(int n) {
            if (b.remaining() < n) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(b.capacity() * 2, b.position() + n)).order(ByteOrder.LITTLE_ENDIAN);
                b.flip();
                bigger.put(b);
                b = bigger;
            }
        }

        Buf u8(int v) { ensure(1); b.put((byte) v); return this; }
        Buf u16(int v) { ensure(2); b.putShort((short) v); return this; }
        Buf u32(int v) { ensure(4); b.putInt(v); return this; }
        Buf u64(long v) { ensure(8); b.putLong(v); return this; }

        Buf str(String s) {
            byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
            u64(bytes.length);
            ensure(bytes.length);
            b.put(bytes);
            return this;
        }

        void value(MetadataValue v) {
            switch (v) {
                case MetadataValue.Int i -> {
                    if (!fits(i)) throw new IllegalArgumentException("value " + i.value() + " does not fit a " + i.type());
                    switch (i.type()) {
                        case UINT8, INT8 -> u8((int) i.value());
                        case UINT16, INT16 -> u16((int) i.value());
                        case UINT32, INT32 -> u32((int) i.value());
                        default -> u64(i.value());
                    }
                }
                case MetadataValue.Float f -> {
                    if (f.type() == MetadataType.FLOAT32) u32(Float.floatToRawIntBits((float) f.value()));
                    else u64(Double.doubleToRawLongBits(f.value()));
                }
                case MetadataValue.Bool bo -> u8(bo.value() ? 1 : 0);
                case MetadataValue.Str s -> str(s.value());
                case MetadataValue.Array a -> {
                    u32(a.elementType().id());
                    u64(a.values().size());
                    for (MetadataValue e : a.values()) {
                        if (e.type() != a.elementType()) throw new IllegalArgumentException("array of " + a.elementType() + " holds a " + e.type());
                        value(e);
                    }
                }
            }
        }

        private static boolean fits(MetadataValue.Int i) {
            long v = i.value();
            return switch (i.type()) {
                case UINT8 -> v >= 0 && v <= 0xff;
                case INT8 -> v >= Byte.MIN_VALUE && v <= Byte.MAX_VALUE;
                case UINT16 -> v >= 0 && v <= 0xffff;
                case INT16 -> v >= Short.MIN_VALUE && v <= Short.MAX_VALUE;
                case UINT32 -> v >= 0 && v <= 0xffff_ffffL;
                case INT32 -> v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE;
                case UINT64, INT64 -> true;
                default -> false;
            };
        }

        long size() { return b.position(); }

        void pad(long to) { while (b.position() < to) u8(0); }

        ByteBuffer bytes() {
            ByteBuffer out = b.duplicate();
            out.flip();
            return out;
        }
    }
}
