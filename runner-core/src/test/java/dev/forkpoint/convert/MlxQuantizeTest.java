package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.reference.HfNaming;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * stories260K to MLX at 8 and 4 bits: the safetensors hold exactly the codes, scales and biases {@link AffineCodec}
 * gives for the source matrices (taken straight from the GGUF, q/k rows put in Hugging Face order here), every element
 * dequantises within the affine bound, and config.json's quantization block describes what was written (mlx-lm's
 * rule: FFN down, whose 172 inputs do not divide into groups, stays float).
 */
class MlxQuantizeTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path tmp;

    private static Path stories() { return TestData.shared("models/stories260K.gguf"); }

    /** The source matrix in HF row order, from the GGUF's F32 data. */
    private static float[] hfMatrix(GgufTensor t, String hfName) {
        int cols = t.rowLength(), rows = t.rows();
        float[] g = t.data().toArray(F32);
        int heads = hfName.contains("q_proj") ? 8 : hfName.contains("k_proj") ? 4 : 0;
        if (heads == 0) return g;
        float[] out = new float[g.length];
        for (int i = 0; i < rows; i++) System.arraycopy(g, i * cols, out, HfNaming.llamaHfRow(i, 8) * cols, cols);
        return out;
    }

    private static float scaleAt(SafetensorsTensor t, int i) {
        return t.dtype() == SafetensorsDtype.F16 ? Float.float16ToFloat(t.data().get(I16, 2L * i)) : t.data().get(F32, 4L * i);
    }

    @ParameterizedTest
    @CsvSource({"8, 64, F16", "4, 32, F16", "4, 64, F32", "8, 32, BF16"})
    void safetensorsHoldTheCodecsOutput(int bits, int groupSize, GgmlType scaleType) throws Exception {
        Path folder = tmp.resolve("mlx");
        MlxOptions o = MlxOptions.defaults().withFormat(bits, groupSize).withScaleType(scaleType);
        ModelConverter.toMlx(stories(), folder, o, (a, b) -> {});
        AffineFormat f = new AffineFormat(bits, groupSize);
        int checked = 0;
        try (GgufFile in = GgufFile.open(stories()); SafetensorsFile st = SafetensorsFile.open(folder.resolve("model.safetensors"))) {
            for (GgufTensor t : in.tensors()) {
                String hf = HfNaming.hf(t.name());
                String module = hf.substring(0, hf.lastIndexOf('.'));
                if (t.shape().length < 2) {
                    assertEquals(SafetensorsDtype.F32, st.tensor(hf).dtype(), hf + " norms stay F32");
                    continue;
                }
                if (t.rowLength() % groupSize != 0) {
                    assertTrue(st.find(module + ".scales").isEmpty(), hf);
                    assertEquals(SafetensorsDtype.F32, st.tensor(hf).dtype(), hf + " stays F32");
                    assertArrayEquals(t.data().toArray(ValueLayout.JAVA_BYTE), st.tensor(hf).data().toArray(ValueLayout.JAVA_BYTE));
                    continue;
                }
                float[] w = hfMatrix(t, hf);
                AffineCodec.AffineArrays expected = AffineCodec.quantize(w, t.rows(), t.rowLength(), f, scaleType);
                SafetensorsTensor codes = st.tensor(hf), scales = st.tensor(module + ".scales"), biases = st.tensor(module + ".biases");
                assertEquals(SafetensorsDtype.U32, codes.dtype());
                assertArrayEquals(new long[]{t.rows(), (long) t.rowLength() * bits / 32}, codes.shape(), hf);
                assertArrayEquals(new long[]{t.rows(), t.rowLength() / groupSize}, scales.shape(), hf);
                assertEquals(SafetensorsDtype.of(scaleType), scales.dtype());
                assertEquals(SafetensorsDtype.of(scaleType), biases.dtype());
                assertArrayEquals(expected.packedBytes(), codes.data().toArray(ValueLayout.JAVA_BYTE), hf + " codes");
                assertArrayEquals(expected.scaleBytes(scaleType), scales.data().toArray(ValueLayout.JAVA_BYTE), hf + " scales");
                assertArrayEquals(expected.biasBytes(scaleType), biases.data().toArray(ValueLayout.JAVA_BYTE), hf + " biases");
                if (scaleType != GgmlType.BF16) checkBound(w, t.rowLength(), f, codes, scales, biases, hf);
                checked++;
            }
        }
        assertEquals(2 + 5 * 6, checked, "embedding, output and six matrices per layer quantised");
    }

    /** Decodes the codes here (little-endian bit stream) and checks |w − (s·q + b)| ≤ s/2 + float rounding, per group. */
    private static void checkBound(float[] w, int cols, AffineFormat f, SafetensorsTensor codes, SafetensorsTensor scales,
                                   SafetensorsTensor biases, String name) {
        byte[] bytes = codes.data().toArray(ValueLayout.JAVA_BYTE);
        int bits = f.bits(), n = (1 << bits) - 1;
        for (int i = 0; i < w.length; i++) {
            long bit = (long) i * bits;
            int q = 0;
            for (int k = 0; k < bits; k++) q |= ((bytes[(int) ((bit + k) >>> 3)] >>> ((bit + k) & 7)) & 1) << k;
            int g = i / f.groupSize();
            float s = scaleAt(scales, g), b = scaleAt(biases, g);
            double err = Math.abs(w[i] - (s * q + b));
            double bound = s / 2 + Math.ulp(1f) * (Math.abs(b) + n * s) + 1e-7;
            assertTrue(err <= bound, () -> name + " element " + " error " + err + " > " + bound);
            assertTrue(q <= n);
        }
    }

    @Test
    void mixedConfigurationIsDescribedInConfigJson() throws Exception {
        Path folder = tmp.resolve("mixed");
        MlxOptions o = MlxOptions.defaults().withFormat(4, 32).withEmbeddingBits(8).withKeepOutput(true);
        ModelConverter.toMlx(stories(), folder, o, (a, b) -> {});
        JsonNode c = new ObjectMapper().readTree(folder.resolve("config.json").toFile());
        for (String key : new String[]{"quantization", "quantization_config"}) {
            JsonNode q = c.get(key);
            assertEquals(32, q.get("group_size").asInt(), key);
            assertEquals(4, q.get("bits").asInt(), key);
            assertEquals("affine", q.get("mode").asText(), key);
            assertEquals(8, q.get("model.embed_tokens").get("bits").asInt(), key);
            assertEquals(32, q.get("model.embed_tokens").get("group_size").asInt(), key);
            assertTrue(q.get("lm_head").isBoolean() && !q.get("lm_head").asBoolean(), key + ": lm_head false");
            assertFalse(q.get("model.layers.0.mlp.down_proj").asBoolean(true), key);
            assertTrue(q.get("model.layers.0.self_attn.q_proj") == null, key + ": default modules have no entry");
        }
        try (SafetensorsFile st = SafetensorsFile.open(folder.resolve("model.safetensors"))) {
            assertEquals(SafetensorsDtype.F32, st.tensor("lm_head.weight").dtype());
            assertTrue(st.find("lm_head.scales").isEmpty());
            assertArrayEquals(new long[]{512, 64 * 8 / 32}, st.tensor("model.embed_tokens.weight").shape(), "8-bit embeddings");
            assertArrayEquals(new long[]{64, 64 * 4 / 32}, st.tensor("model.layers.0.self_attn.q_proj.weight").shape(), "4-bit layers");
        }
    }

    @Test
    void quantisedFolderConvertsBackToGgufWithinTheBound() throws Exception {
        Path folder = tmp.resolve("q8");
        ModelConverter.toMlx(stories(), folder, MlxOptions.defaults().withFormat(8, 32).withScaleType(GgmlType.F32), (a, b) -> {});
        Path back = tmp.resolve("back.gguf");
        ModelConverter.toGguf(folder, back, GgmlType.F32, (a, b) -> {});
        try (GgufFile in = GgufFile.open(stories()); GgufFile out = GgufFile.open(back)) {
            for (GgufTensor t : in.tensors()) {
                float[] a = t.data().toArray(F32), b = out.tensor(t.name()).data().toArray(F32);
                float max = 0;
                for (float x : a) max = Math.max(max, Math.abs(x));
                for (int i = 0; i < a.length; i++) {
                    // 8 bits: a group's step is at most its range / 255 ≤ 2·max / 255
                    assertTrue(Math.abs(a[i] - b[i]) <= max / 255 + 1e-6, t.name() + " element " + i);
                }
            }
        }
    }
}
