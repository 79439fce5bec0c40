package dev.forkpoint.convert;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.TestData;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Quantizing stories260K (dim 64, FFN 172): matrices whose rows divide into blocks change type, the rest stay F32.
 * Converted values are checked with decoders written here from the block formats' definitions, against error
 * bounds those definitions imply.
 */
class ModelQuantizerTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path tmp;

    private static Path stories() { return TestData.shared("models/stories260K.gguf"); }

    private ModelQuantizer.Report quantize(GgmlType target) throws IOException {
        return ModelQuantizer.quantize(stories(), tmp.resolve("out.gguf"), target);
    }

    /** Every tensor's floats, in the file's order. */
    private static float[] floats(GgufTensor t) {
        float[] out = new float[(int) t.elementCount()];
        MemorySegment.copy(t.data(), F32, 0, out, 0, out.length);
        return out;
    }

    @Test
    void f16KeepsMetadataOrderAndNorms() throws IOException {
        var report = quantize(GgmlType.F16);
        try (GgufFile in = GgufFile.open(stories()); GgufFile out = GgufFile.open(tmp.resolve("out.gguf"))) {
            assertEquals(1, out.getLong("general.file_type"));
            List<String> inKeys = new ArrayList<>(in.metadata().keySet());
            if (!inKeys.contains("general.file_type")) inKeys.add("general.file_type");
            assertEquals(inKeys, new ArrayList<>(out.metadata().keySet()), "all keys copied in order");
            in.metadata().forEach((k, v) -> {
                if (!k.equals("general.file_type")) assertEquals(v, out.metadata().get(k), k);
            });
            assertEquals(in.tensors().stream().map(GgufTensor::name).toList(), out.tensors().stream().map(GgufTensor::name).toList());
            int matrices = 0;
            for (GgufTensor src : in.tensors()) {
                GgufTensor dst = out.tensor(src.name());
                assertArrayEquals(src.shape(), dst.shape(), src.name());
                float[] x = floats(src);
                if (src.shape().length == 1) {
                    assertEquals(GgmlType.F32, dst.type(), src.name());
                    assertArrayEquals(x, floats(dst), src.name());
                    continue;
                }
                matrices++;
                assertEquals(GgmlType.F16, dst.type(), src.name());
                for (int i = 0; i < x.length; i++) {
                    float y = Float.float16ToFloat(dst.data().getAtIndex(I16, i));
                    // binary16 has an 11-bit significand: relative error ≤ 2^-11 for normal values, 2^-25 absolute below.
                    assertTrue(Math.abs(x[i] - y) <= Math.abs(x[i]) * 0x1p-11 + 0x1p-25, src.name() + "[" + i + "]");
                }
            }
            assertEquals(matrices, report.converted());
            assertTrue(report.keptMatrices().isEmpty());
            assertTrue(report.summary().contains("F16"));
        }
    }

    @Test
    void q8_0ConvertsDivisibleMatricesWithinHalfAStep() throws IOException {
        var report = quantize(GgmlType.Q8_0);
        try (GgufFile in = GgufFile.open(stories()); GgufFile out = GgufFile.open(tmp.resolve("out.gguf"))) {
            assertEquals(7, out.getLong("general.file_type"));
            assertEquals(2, out.getLong("general.quantization_version"));
            List<String> kept = report.keptMatrices().stream().map(ModelQuantizer.Kept::name).toList();
            for (GgufTensor src : in.tensors()) {
                GgufTensor dst = out.tensor(src.name());
                boolean divisible = src.shape().length >= 2 && src.rowLength() % 32 == 0;
                if (!divisible) {
                    assertEquals(GgmlType.F32, dst.type(), src.name());
                    assertArrayEquals(floats(src), floats(dst));
                    if (src.shape().length >= 2) assertTrue(kept.contains(src.name()), src.name());
                    continue;
                }
                assertEquals(GgmlType.Q8_0, dst.type(), src.name());
                float[] x = floats(src);
                for (int b = 0; b < x.length / 32; b++) {
                    long at = b * 34L;
                    float d = Float.float16ToFloat(dst.data().get(I16, at));
                    float amax = 0;
                    for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]));
                    // A step is amax/127; rounding to the nearest step errs by at most half of one. Storing the step
                    // as f16 moves level q by q times the step's rounding error, at most 127 times it.
                    double exactStep = amax / 127.0;
                    double bound = exactStep / 2 + 127 * Math.abs(exactStep - d) + 1e-7;
                    assertEquals(exactStep, d, exactStep * 0x1p-10 + 0x1p-24, src.name() + " block " + b + " scale");
                    for (int j = 0; j < 32; j++) {
                        float y = d * dst.data().get(ValueLayout.JAVA_BYTE, at + 2 + j);
                        assertTrue(Math.abs(x[b * 32 + j] - y) <= bound, src.name() + " block " + b + " element " + j
                                + ": " + x[b * 32 + j] + " became " + y + ", bound " + bound);
                    }
                }
            }
            assertTrue(kept.contains("blk.0.ffn_down.weight"), kept.toString());
            assertEquals(5, kept.size(), "one ffn_down (rows of 172) per layer: " + kept);
            assertTrue(report.summary().contains("blk.4.ffn_down.weight"), report.summary());
        }
    }

    @Test
    void q4_0StaysWithinOneStep() throws IOException {
        quantize(GgmlType.Q4_0);
        try (GgufFile in = GgufFile.open(stories()); GgufFile out = GgufFile.open(tmp.resolve("out.gguf"))) {
            assertEquals(2, out.getLong("general.file_type"));
            GgufTensor src = in.tensor("blk.0.attn_q.weight");
            GgufTensor dst = out.tensor("blk.0.attn_q.weight");
            assertEquals(GgmlType.Q4_0, dst.type());
            float[] x = floats(src);
            for (int b = 0; b < x.length / 32; b++) {
                long at = b * 18L;
                float d = Float.float16ToFloat(dst.data().get(I16, at));
                float amax = 0;
                for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]));
                for (int j = 0; j < 16; j++) {
                    int packed = dst.data().get(ValueLayout.JAVA_BYTE, at + 2 + j) & 0xFF;
                    float lo = d * ((packed & 0xF) - 8);
                    float hi = d * ((packed >> 4) - 8);
                    // 16 levels over [-amax, amax]: a step is amax/8; the extreme opposite the signed maximum clips by one step
                    assertTrue(Math.abs(x[b * 32 + j] - lo) <= amax / 8 * 1.01f + 1e-7f, "block " + b + " element " + j);
                    assertTrue(Math.abs(x[b * 32 + 16 + j] - hi) <= amax / 8 * 1.01f + 1e-7f, "block " + b + " element " + (16 + j));
                }
            }
        }
    }

    @Test
    void blockQuantizedToQ4_KKeepsEverythingWhenRowsAreTooShort() throws IOException {
        // K-quant blocks hold 256 values; no stories260K row is that long, so nothing can change.
        List<Integer> seen = new ArrayList<>();
        var report = ModelQuantizer.quantize(stories(), tmp.resolve("out.gguf"), GgmlType.Q4_K, (done, total) -> {
            assertEquals(48, total);
            seen.add(done);
        });
        assertEquals(java.util.stream.IntStream.rangeClosed(1, 48).boxed().toList(), seen, "progress once per tensor");
        assertEquals(0, report.converted());
        try (GgufFile in = GgufFile.open(stories()); GgufFile out = GgufFile.open(tmp.resolve("out.gguf"))) {
            assertEquals(14, out.getLong("general.file_type"));
            for (GgufTensor t : in.tensors()) {
                assertEquals(GgmlType.F32, out.tensor(t.name()).type());
                assertArrayEquals(floats(t), floats(out.tensor(t.name())));
            }
        }
    }

    @Test
    void requantizingTheSameTypeCopiesBytes() throws IOException {
        quantize(GgmlType.F16);
        Path once = tmp.resolve("out.gguf");
        Path twice = tmp.resolve("twice.gguf");
        ModelQuantizer.quantize(once, twice, GgmlType.F16);
        assertArrayEquals(Files.readAllBytes(once), Files.readAllBytes(twice));
        // and F16 → F32 widens exactly
        ModelQuantizer.quantize(once, tmp.resolve("wide.gguf"), GgmlType.F32);
        try (GgufFile half = GgufFile.open(once); GgufFile wide = GgufFile.open(tmp.resolve("wide.gguf"))) {
            assertEquals(0, wide.getLong("general.file_type"));
            GgufTensor h = half.tensor("output.weight");
            float[] w = floats(wide.tensor("output.weight"));
            for (int i = 0; i < w.length; i++) assertEquals(Float.float16ToFloat(h.data().getAtIndex(I16, i)), w[i]);
        }
    }

    @Test
    void refusesWhatItCannotDo() throws IOException {
        assertThrows(InvalidInputException.class, () -> ModelQuantizer.parseTarget("q3_k"));
        assertEquals(GgmlType.Q8_0, ModelQuantizer.parseTarget("Q8_0"));
        assertThrows(InvalidInputException.class, () -> ModelQuantizer.quantize(stories(), tmp.resolve("x.gguf"), GgmlType.Q5_K));
        assertThrows(InvalidInputException.class, () -> ModelQuantizer.quantize(stories(), stories(), GgmlType.F16));
        assertThrows(InvalidInputException.class, () -> ModelQuantizer.quantize(stories(), tmp.resolve("no/such/dir/x.gguf"), GgmlType.F16));
        Path cut = tmp.resolve("cut.gguf");
        Files.write(cut, Arrays.copyOf(Files.readAllBytes(stories()), 5000));
        var e = assertThrows(ModelFormatException.class, () -> ModelQuantizer.quantize(cut, tmp.resolve("y.gguf"), GgmlType.F16));
        assertTrue(e.getMessage().contains(cut.toString()));
        try (var listing = Files.list(tmp)) {
            assertEquals(List.of(cut), listing.toList(), "nothing written, no scratch file left");
        }
    }

    @Test
    void fileTypesAreLlamaCppFtypes() {
        assertEquals(0, ModelQuantizer.fileType(GgmlType.F32));
        assertEquals(1, ModelQuantizer.fileType(GgmlType.F16));
        assertEquals(2, ModelQuantizer.fileType(GgmlType.Q4_0));
        assertEquals(7, ModelQuantizer.fileType(GgmlType.Q8_0));
        assertEquals(14, ModelQuantizer.fileType(GgmlType.Q4_K));
        assertEquals(18, ModelQuantizer.fileType(GgmlType.Q6_K));
        assertTrue(MetadataValue.ofU32(7) instanceof MetadataValue.Int);
    }
}
