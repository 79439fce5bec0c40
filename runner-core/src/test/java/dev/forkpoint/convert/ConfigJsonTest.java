package dev.forkpoint.convert;

import dev.forkpoint.TestData;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.reference.HfNaming;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Llama 3 rope scaling recovered from rope_freqs; block-quantised GGUF sources dequantised into the folder. */
class ConfigJsonTest {
    @TempDir
    Path tmp;

    /** Factors computed here from Llama 3.1's published parameters (θ 500000, factor 8, low 1, high 4, 8192). */
    @Test
    void llama3ScalingIsRecoveredFromItsFactors() {
        int dims = 128;
        double theta = 500000;
        float[] f = new float[dims / 2];
        for (int i = 0; i < f.length; i++) {
            double wavelen = 2 * Math.PI / Math.pow(theta, -(2.0 * i) / dims);
            if (wavelen < 8192 / 4.0) f[i] = 1;
            else if (wavelen > 8192 / 1.0) f[i] = 8;
            else {
                double s = (8192 / wavelen - 1) / (4 - 1);
                f[i] = (float) (1 / ((1 - s) / 8 + s));
            }
        }
        var s = ConfigJson.fitLlama3(Path.of("m.gguf"), f, dims, theta);
        assertEquals(new ConfigJson.RopeScaling(8, 1, 4, 8192), s);
        f[3] = 1.5f;
        var e = assertThrows(ModelFormatException.class, () -> ConfigJson.fitLlama3(Path.of("m.gguf"), f, dims, theta));
        assertTrue(e.getMessage().contains("rope_freqs.weight") && e.getMessage().contains("m.gguf"), e.getMessage());
    }

    /** A Q8_0 GGUF's matrices become F16 floats equal to the Q8_0 blocks' values (decoded here) rounded to F16. */
    @Test
    void blockQuantisedSourcesAreDequantised() throws Exception {
        Path q8 = tmp.resolve("q8.gguf");
        ModelQuantizer.quantize(TestData.shared("models/stories260K.gguf"), q8, GgmlType.Q8_0);
        Path folder = tmp.resolve("mlx");
        ModelConverter.toMlx(q8, folder, MlxOptions.defaults().unquantised(), (a, b) -> {});
        var I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        try (GgufFile in = GgufFile.open(q8); SafetensorsShards st = SafetensorsShards.open(folder)) {
            GgufTensor t = in.tensor("blk.1.attn_v.weight");
            assertEquals(GgmlType.Q8_0, t.type());
            var hf = st.tensor(HfNaming.hf(t.name()));
            assertEquals(SafetensorsDtype.F16, hf.dtype());
            byte[] blocks = t.data().toArray(ValueLayout.JAVA_BYTE);
            for (int i = 0; i < t.elementCount(); i++) {
                int block = i / 32;
                float d = Float.float16ToFloat((short) ((blocks[block * 34] & 0xff) | (blocks[block * 34 + 1] << 8)));
                float expected = d * blocks[block * 34 + 2 + i % 32];
                assertEquals(Float.floatToFloat16(expected), hf.data().get(I16, 2L * i), "element " + i);
            }
            assertEquals(SafetensorsDtype.F32, st.tensor("model.norm.weight").dtype(), "F32 norms stay F32");
        }
    }
}
