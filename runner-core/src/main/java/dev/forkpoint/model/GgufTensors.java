package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.format.gguf.GgufFile;

import java.nio.file.Path;
import java.util.Optional;

/** The tensors of a GGUF file, under their own names. */
record GgufTensors(GgufFile file) implements ModelTensors {
    public Path path() { return file.path(); }

    public Optional<long[]> shape(String name) { return file.findTensor(name).map(t -> t.shape()); }

    public Weight weight(String name, Backend backend) { return backend.weight(file.tensor(name).source()); }

    public float[] floats(String name) {
        var t = file.tensor(name);
        long n = t.elementCount();
        if (n > Integer.MAX_VALUE) throw new dev.forkpoint.format.ModelFormatException(file.path(), "tensor " + name, "too large to read as floats");
        float[] out = new float[(int) n];
        dev.forkpoint.tensor.Quantization.dequantize(t.type(), t.data(), 0, out, 0, out.length);
        return out;
    }

    public int count() { return file.tensors().size(); }

    public Optional<String> firstNonFinite() {
        for (var t : file.tensors()) {
            long i = switch (t.type()) {
                case F32 -> NonFiniteScan.f32(t.data());
                case F16 -> NonFiniteScan.f16(t.data());
                case BF16 -> NonFiniteScan.bf16(t.data());
                default -> -1;
            };
            if (i >= 0) return Optional.of(t.name() + " (" + t.type() + "): element " + i);
        }
        return Optional.empty();
    }
}
