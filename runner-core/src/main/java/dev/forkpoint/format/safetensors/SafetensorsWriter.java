package dev.forkpoint.format.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes one safetensors file: tensors are declared first (name, dtype, shape, and the bytes or a writer of them),
 * then {@link #write(Path)} lays them out in declaration order, the header padded with spaces to a multiple of 8
 * bytes, and streams the data. The file appears under its name only when complete (written to a temporary file in the
 * same folder, then moved).
 */
public final class SafetensorsWriter {
    /** Writes exactly the tensor's byte size to {@code out}. */
    @FunctionalInterface
    public interface DataWriter {
        void writeTo(OutputStream out) throws IOException;
    }

    private record Entry(String name, SafetensorsDtype dtype, long[] shape, long bytes, DataWriter data) {}

    private final Map<String, String> metadata = new LinkedHashMap<>();
    private final List<Entry> entries = new ArrayList<>();

    public SafetensorsWriter metadata(String key, String value) {
        metadata.put(key, value);
        return this;
    }

    /** Declares a tensor whose bytes are in {@code data} (exactly elements × dtype bytes). */
    public SafetensorsWriter tensor(String name, SafetensorsDtype dtype, long[] shape, MemorySegment data) {
        return tensor(name, dtype, shape, out -> {
            byte[] buf = new byte[1 << 16];
            for (long at = 0; at < data.byteSize(); at += buf.length) {
                int n = (int) Math.min(buf.length, data.byteSize() - at);
                MemorySegment.copy(data, ValueLayout.JAVA_BYTE, at, buf, 0, n);
                out.write(buf, 0, n);
            }
        }, data.byteSize());
    }

    /** Declares a tensor whose {@code bytes} bytes {@code data} writes when the file is written. */
    public SafetensorsWriter tensor(String name, SafetensorsDtype dtype, long[] shape, DataWriter data, long bytes) {
        long elements = 1;
        for (long d : shape) elements = Math.multiplyExact(elements, d);
        if (elements * dtype.bytes() != bytes) {
            throw new IllegalArgumentException("tensor " + name + ": " + dtype + " " + java.util.Arrays.toString(shape) + " needs "
                    + elements * dtype.bytes() + " bytes, given " + bytes);
        }
        if (name.equals("__metadata__") || entries.stream().anyMatch(e -> e.name.equals(name))) {
            throw new IllegalArgumentException("duplicate or reserved tensor name " + name);
        }
        entries.add(new Entry(name, dtype, shape.clone(), bytes, data));
        return this;
    }

    /** Total bytes of the declared tensors' data. */
    public long dataBytes() {
        return entries.stream().mapToLong(Entry::bytes).sum();
    }

    public void write(Path file) throws IOException {
        ObjectMapper json = new ObjectMapper();
        ObjectNode header = json.createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode m = header.putObject("__metadata__");
            metadata.forEach(m::put);
        }
        long at = 0;
        for (Entry e : entries) {
            ObjectNode t = header.putObject(e.name);
            t.put("dtype", e.dtype.name());
            var shape = t.putArray("shape");
            for (long d : e.shape) shape.add(d);
            t.putArray("data_offsets").add(at).add(at + e.bytes);
            at += e.bytes;
        }
        byte[] text = json.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
        int padded = (text.length + 7) & ~7;
        Path tmp = file.resolveSibling(file.getFileName() + ".partial");
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(tmp), 1 << 20)) {
            byte[] len = new byte[8];
            for (int i = 0; i < 8; i++) len[i] = (byte) ((long) padded >>> (8 * i));
            out.write(len);
            out.write(text);
            for (int i = text.length; i < padded; i++) out.write(' ');
            for (Entry e : entries) {
                var counting = new CountingStream(out);
                e.data.writeTo(counting);
                if (counting.count != e.bytes) {
                    throw new IOException("tensor " + e.name + ": wrote " + counting.count + " bytes, declared " + e.bytes);
                }
            }
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static final class CountingStream extends OutputStream {
        private final OutputStream out;
        long count;

        CountingStream(OutputStream out) { this.out = out; }

        @Override public void write(int b) throws IOException { out.write(b); count++; }

        @Override public void write(byte[] b, int off, int len) throws IOException { out.write(b, off, len); count += len; }
    }
}
