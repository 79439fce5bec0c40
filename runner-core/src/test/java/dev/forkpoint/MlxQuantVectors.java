package dev.forkpoint;

import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.FpTensor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;

/**
 * {@code ../shared/reference/mlx-quant-vectors.safetensors}: MLX 0.31.2's own quantisation of a seeded F32 matrix
 * {@code w} [64, 256] and activations {@code x} [3, 256] (see ../shared/README.md), copied onto the heap. For each fp
 * mode: {@code <mode>.weight} (U32 codes), {@code <mode>.scales} (U8), {@code <mode>.dequantized} (MLX's
 * dequantize) and {@code <mode>.x_matmul_wT} (MLX's quantized_matmul, transpose=true). Skips the test when absent.
 */
public final class MlxQuantVectors {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Map<String, byte[]> bytes = new HashMap<>();
    private final Map<String, long[]> shapes = new HashMap<>();

    private MlxQuantVectors() {}

    public static MlxQuantVectors load() {
        MlxQuantVectors v = new MlxQuantVectors();
        try (SafetensorsFile f = SafetensorsFile.open(TestData.shared("reference/mlx-quant-vectors.safetensors"))) {
            for (SafetensorsTensor t : f.tensors()) {
                v.bytes.put(t.name(), t.data().toArray(ValueLayout.JAVA_BYTE));
                v.shapes.put(t.name(), t.shape());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return v;
    }

    /** The tensor's bytes as stored (little-endian). */
    public byte[] bytes(String name) {
        byte[] b = bytes.get(name);
        if (b == null) throw new IllegalArgumentException("no tensor " + name + " in the MLX vectors");
        return b.clone();
    }

    public long[] shape(String name) {
        return shapes.get(name).clone();
    }

    /** An F32 tensor's values. */
    public float[] floats(String name) {
        return MemorySegment.ofArray(bytes(name)).toArray(F32);
    }

    /** The MLX name of a format's tensors ("mxfp4", "nvfp4", "mxfp8"). */
    public static String prefix(FpFormat f) {
        return f.typeName();
    }

    /** The mode's weight and scales as an {@link FpTensor} (rows and cols from {@code w}). */
    public FpTensor tensor(FpFormat f, Arena arena) {
        long[] w = shape("w");
        return new FpTensor(prefix(f) + ".weight", (int) w[0], (int) w[1], f, copy(bytes(prefix(f) + ".weight"), arena),
                copy(bytes(prefix(f) + ".scales"), arena));
    }

    private static MemorySegment copy(byte[] b, Arena arena) {
        MemorySegment s = arena.allocate(b.length, 8);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, s, 0, b.length);
        return s;
    }
}
