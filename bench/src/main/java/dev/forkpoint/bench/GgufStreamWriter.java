package dev.forkpoint.bench;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataType;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

/**
 * A streaming counterpart of {@link GgufWriter} for files too large to hold in memory: the header (metadata and
 * tensor directory) is written first, then tensor data arrives in pieces, from any thread, at positions inside each
 * tensor. The layout is GgufWriter's byte for byte: GGUF v3, metadata in the given order, tensors in the given order,
 * each aligned to {@code general.alignment} (32 unless set), zero padding. The file is written to a temporary sibling
 * and moved into place by {@link #commit}; closing without committing deletes it.
 */
final class GgufStreamWriter implements AutoCloseable {
    private static final int MAGIC = 0x46554747; // "GGUF" little-endian

    /** A tensor's directory entry; shape in GGML order. */
    record TensorInfo(String name, GgmlType type, long[] shape) {
        long bytes() {
            long n = 1;
            for (long d : shape) n = Math.multiplyExact(n, d);
            return type.bytesFor(n);
        }
    }

    private final Path target;
    private final Path tmp;
    private final FileChannel channel;
    private final long[] dataPositions;
    private final long[] sizes;
    private boolean committed;

    private GgufStreamWriter(Path target, Path tmp, FileChannel channel, long[] dataPositions, long[] sizes) {
        this.target = target;
        this.tmp = tmp;
        this.channel = channel;
        this.dataPositions = dataPositions;
        this.sizes = sizes;
    }

    /** Creates the temporary file and writes the header. */
    static GgufStreamWriter create(Path target, Map<String, MetadataValue> metadata, List<TensorInfo> tensors) throws IOException {
        int alignment = metadata.get("general.alignment") instanceof MetadataValue.Int a ? (int) a.value() : GgufFile.DEFAULT_ALIGNMENT;
        var header = new Encoder();
        header.u32(MAGIC).u32(3).u64(tensors.size()).u64(metadata.size());
        metadata.forEach((key, value) -> header.str(key).u32(value.type().id()).value(value));
        long[] relative = new long[tensors.size()];
        long[] sizes = new long[tensors.size()];
        long offset = 0;
        for (int i = 0; i < tensors.size(); i++) {
            TensorInfo t = tensors.get(i);
            header.str(t.name()).u32(t.shape().length);
            for (long d : t.shape()) header.u64(d);
            header.u32(t.type().id()).u64(offset);
            relative[i] = offset;
            sizes[i] = t.bytes();
            offset = alignUp(offset + sizes[i], alignment);
        }
        long dataStart = alignUp(header.size(), alignment);
        long[] positions = new long[tensors.size()];
        for (int i = 0; i < positions.length; i++) positions[i] = dataStart + relative[i];

        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
        try {
            byte[] bytes = header.bytes();
            ByteBuffer b = ByteBuffer.allocate((int) dataStart);
            b.put(bytes).position(0);
            writeFully(ch, b, 0);
            // The file ends where the last tensor's data ends (GgufWriter writes no trailing padding).
            if (!tensors.isEmpty()) {
                long end = positions[positions.length - 1] + sizes[sizes.length - 1];
                if (end > dataStart) writeFully(ch, ByteBuffer.allocate(1), end - 1);
            }
        } catch (IOException | RuntimeException e) {
            ch.close();
            Files.deleteIfExists(tmp);
            throw e;
        }
        return new GgufStreamWriter(target, tmp, ch, positions, sizes);
    }

    /** Writes {@code data} (all its remaining bytes) at {@code offset} inside tensor {@code tensor}. Thread-safe. */
    void write(int tensor, long offset, ByteBuffer data) throws IOException {
        if (offset < 0 || offset + data.remaining() > sizes[tensor]) {
            throw new IllegalArgumentException("bytes [" + offset + ", " + (offset + data.remaining()) + ") fall outside tensor "
                    + tensor + " of " + sizes[tensor] + " bytes");
        }
        writeFully(channel, data, dataPositions[tensor] + offset);
    }

    /** Finishes the file and moves it into place. */
    void commit() throws IOException {
        channel.close();
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        committed = true;
    }

    @Override
    public void close() throws IOException {
        if (committed) return;
        channel.close();
        Files.deleteIfExists(tmp);
    }

    private static void writeFully(FileChannel ch, ByteBuffer b, long position) throws IOException {
        long p = position;
        while (b.hasRemaining()) p += ch.write(b, p);
    }

    private static long alignUp(long v, long alignment) {
        return (v + alignment - 1) / alignment * alignment;
    }

    /** Little-endian encoding of the header's scalars, strings and metadata values. */
    private static final class Encoder {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream(1 << 16);
        private final ByteBuffer scratch = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);

        private Encoder put(int bytes) {
            out.write(scratch.array(), 0, bytes);
            scratch.clear();
            return this;
        }

        Encoder u8(int v) { scratch.put((byte) v); return put(1); }
        Encoder u16(int v) { scratch.putShort((short) v); return put(2); }
        Encoder u32(int v) { scratch.putInt(v); return put(4); }
        Encoder u64(long v) { scratch.putLong(v); return put(8); }

        Encoder str(String s) {
            byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
            u64(bytes.length);
            out.write(bytes, 0, bytes.length);
            return this;
        }

        Encoder value(MetadataValue v) {
            switch (v) {
                case MetadataValue.Int i -> {
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
                case MetadataValue.Bool b -> u8(b.value() ? 1 : 0);
                case MetadataValue.Str s -> str(s.value());
                case MetadataValue.Array a -> {
                    u32(a.elementType().id()).u64(a.values().size());
                    for (MetadataValue e : a.values()) {
                        if (e.type() != a.elementType()) throw new IllegalArgumentException("array of " + a.elementType() + " holds a " + e.type());
                        value(e);
                    }
                }
            }
            return this;
        }

        long size() { return out.size(); }

        byte[] bytes() { return out.toByteArray(); }
    }
}
