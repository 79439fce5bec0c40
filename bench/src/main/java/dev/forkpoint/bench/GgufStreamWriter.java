package dev.forkpoint.bench;

import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
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
    /** A tensor's directory entry; shape in GGML order. */
    record TensorInfo(String name, GgmlType type, long[] shape) {
        long bytes() {
            return new GgufWriter.TensorEntry(name, type, shape).bytes();
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

    /** Creates the temporary file and writes the header (encoded by {@link GgufWriter#layout}). */
    static GgufStreamWriter create(Path target, Map<String, MetadataValue> metadata, List<TensorInfo> tensors) throws IOException {
        GgufWriter.Layout layout = GgufWriter.layout(metadata,
                tensors.stream().map(t -> new GgufWriter.TensorEntry(t.name(), t.type(), t.shape())).toList());
        long[] positions = layout.dataOffsets();
        long[] sizes = tensors.stream().mapToLong(TensorInfo::bytes).toArray();
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
        try {
            writeFully(ch, layout.header(), 0);
            // The file ends where the last tensor's data ends (GgufWriter writes no trailing padding).
            if (layout.fileSize() > layout.dataStart()) writeFully(ch, ByteBuffer.allocate(1), layout.fileSize() - 1);
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
}
