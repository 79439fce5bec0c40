package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.TestData;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.hf.MlxModuleQuantization;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Qwen3.5 tiny hybrids (dense and MoE, F32 Hugging Face folders) to MLX at 8 and 4 bits, checked value by value
 * against the source: every quantised module dequantises ({@link AffineCodec#dequantizeRow}, independent of the
 * kernels) within the affine bound of the source floats, the fused experts are split into mlx-lm's switch_mlp gate
 * and up halves, every float tensor is copied bit for bit, and config.json is the source's plus the quantization
 * block (router at 8 bits, modules whose inputs do not divide into groups {@code false}). Models the converter
 * cannot handle are refused naming model_type.
 */
class HybridMlxConvertTest {
    @TempDir
    Path tmp;

    private static final ObjectMapper JSON = new ObjectMapper();

    static Path source(String m) { return TestData.shared("models/qwen35-tiny-" + m); }

    /** The source tensor and the rows of it an output tensor holds ([start, start + count) of each expert's rows). */
    private record Origin(SafetensorsTensor tensor, int half) {}

    @ParameterizedTest
    @CsvSource({"dense, 8", "dense, 4", "moe, 8", "moe, 4"})
    void everyTensorIsCopiedOrQuantisedWithinTheBound(String m, int bits) throws Exception {
        Path out = tmp.resolve(m + "-" + bits);
        ModelConverter.Report report = ModelConverter.toMlx(source(m), out, MlxOptions.defaults().withFormat(bits, 64), (a, b) -> {});
        assertTrue(report.quantised() > 0, report.summary());
        JsonNode config = JSON.readTree(out.resolve("config.json").toFile());
        JsonNode q = config.get("quantization");
        assertEquals(64, q.get("group_size").asInt());
        assertEquals(bits, q.get("bits").asInt());
        assertEquals("affine", q.get("mode").asText());

        // config.json: the source's, unchanged but for the quantization block
        ObjectNode stripped = ((ObjectNode) config).deepCopy();
        stripped.remove("quantization");
        stripped.remove("quantization_config");
        assertEquals(JSON.readTree(source(m).resolve("config.json").toFile()), stripped, "config.json otherwise unchanged");
        for (String f : new String[]{"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
            assertArrayEquals(Files.readAllBytes(source(m).resolve(f)), Files.readAllBytes(out.resolve(f)), f);
        }

        try (SafetensorsShards src = SafetensorsShards.open(source(m)); SafetensorsShards dst = SafetensorsShards.open(out)) {
            // which output tensor comes from which source tensor
            Map<String, Origin> expected = new TreeMap<>();
            for (SafetensorsTensor t : src.tensors()) {
                String n = t.name();
                if (n.endsWith(".mlp.experts.gate_up_proj")) {
                    String p = n.substring(0, n.length() - "experts.gate_up_proj".length()) + "switch_mlp.";
                    expected.put(p + "gate_proj.weight", new Origin(t, 0));
                    expected.put(p + "up_proj.weight", new Origin(t, 1));
                } else if (n.endsWith(".mlp.experts.down_proj")) {
                    expected.put(n.substring(0, n.length() - "experts.down_proj".length()) + "switch_mlp.down_proj.weight", new Origin(t, -1));
                } else {
                    expected.put(n, new Origin(t, -1));
                }
            }
            Set<String> written = new HashSet<>();
            for (SafetensorsTensor t : dst.tensors()) {
                if (!t.name().endsWith(".scales") && !t.name().endsWith(".biases")) written.add(t.name());
            }
            assertEquals(expected.keySet(), written, "the output holds exactly the source's tensors (experts as switch_mlp)");

            int quantised = 0, copied = 0;
            Path configFile = out.resolve("config.json");
            for (var e : expected.entrySet()) {
                String name = e.getKey();
                SafetensorsTensor w = dst.tensor(name);
                float[][] rows = sourceRows(e.getValue());
                String module = name.substring(0, name.lastIndexOf('.'));
                var scales = dst.find(module + ".scales");
                if (scales.isEmpty()) {
                    assertEquals(e.getValue().tensor.dtype(), w.dtype(), name);
                    assertArrayEquals(expectedShape(e.getValue()), w.shape(), name);
                    if (e.getValue().half < 0) {
                        assertArrayEquals(e.getValue().tensor.data().toArray(ValueLayout.JAVA_BYTE), w.data().toArray(ValueLayout.JAVA_BYTE),
                                name + " copied bit for bit");
                    } else {
                        float[] got = w.data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
                        for (int r = 0; r < rows.length; r++) {
                            for (int c = 0; c < rows[r].length; c++) {
                                assertEquals(Float.floatToRawIntBits(rows[r][c]), Float.floatToRawIntBits(got[r * rows[r].length + c]), name);
                            }
                        }
                    }
                    boolean linear = name.endsWith(".weight") && w.shape().length >= 2 && !name.contains("conv1d");
                    if (linear) {
                        long cols = w.shape()[w.shape().length - 1];
                        assertTrue(cols % 64 != 0 || name.endsWith("shared_expert_gate.weight"), name + " should have been quantised");
                        assertFalse(q.get(module).asBoolean(true), name + ": config.json says false");
                    }
                    copied++;
                    continue;
                }
                // quantised: as config.json describes it, shapes as mlx-lm lays them out, values within the bound
                AffineFormat f = (AffineFormat) MlxModuleQuantization.of(q, module, configFile).format(configFile, w.file(), name);
                int expectBits = name.endsWith(".mlp.gate.weight") ? 8 : bits;
                assertEquals(expectBits, f.bits(), name + " bits");
                assertEquals(64, f.groupSize(), name + " group size");
                long[] s = expectedShape(e.getValue());
                int cols = Math.toIntExact(s[s.length - 1]);
                long[] packed = s.clone(), groups = s.clone();
                packed[s.length - 1] = (long) cols * f.bits() / 32;
                groups[s.length - 1] = cols / 64;
                assertEquals(SafetensorsDtype.U32, w.dtype(), name);
                assertArrayEquals(packed, w.shape(), name + " codes shape");
                SafetensorsTensor sc = scales.get(), bi = dst.tensor(module + ".biases");
                assertArrayEquals(groups, sc.shape(), name + " scales shape");
                assertArrayEquals(groups, bi.shape(), name + " biases shape");
                AffineTensor a = new AffineTensor(name, rows.length, cols, f, w.data(), sc.dtype().ggmlType(), sc.data(), bi.data());
                float[] deq = new float[cols];
                int levels = (1 << f.bits()) - 1;
                for (int r = 0; r < rows.length; r++) {
                    AffineCodec.dequantizeRow(a, r, deq, 0);
                    for (int c = 0; c < cols; c++) {
                        float sg = a.scale(r, c / 64), bg = a.bias(r, c / 64);
                        double bound = Math.abs(sg) / 2 + Math.ulp(1f) * (Math.abs(bg) + levels * Math.abs(sg)) + 1e-7;
                        double err = Math.abs(rows[r][c] - deq[c]);
                        int rr = r, cc = c;
                        assertTrue(err <= bound, () -> name + " [" + rr + ", " + cc + "]: error " + err + " > " + bound);
                    }
                }
                quantised++;
            }
            assertEquals(report.quantised(), quantised, "report's count");
            assertTrue(copied > 0);
            if (m.equals("moe")) {
                String r = "model.language_model.layers.0.mlp.gate";
                assertEquals(8, q.get(r).get("bits").asInt(), "router: 8 bits, as mlx-lm");
                assertEquals(8, q.get("language_model.model.layers.0.mlp.gate").get("bits").asInt(), "also under mlx-lm's path");
                assertTrue(dst.find("model.language_model.layers.0.mlp.switch_mlp.gate_proj.scales").isPresent(), "stacked experts quantised");
            }
            assertTrue(dst.find("model.language_model.embed_tokens.scales").isPresent(), "embedding quantised");
        }
    }

    /** Rows of the source tensor an output tensor holds, as floats (all leading axes flattened). */
    private static float[][] sourceRows(Origin o) {
        SafetensorsTensor t = o.tensor;
        long[] s = t.shape();
        int cols = Math.toIntExact(s[s.length - 1]);
        int all = Math.toIntExact(t.elementCount() / cols);
        GgmlType type = t.dtype().ggmlType();
        long rowBytes = (long) cols * t.dtype().bytes();
        if (o.half < 0) {
            float[][] out = new float[all][cols];
            for (int r = 0; r < all; r++) Quantization.dequantize(type, t.data(), r * rowBytes, out[r], 0, cols);
            return out;
        }
        int experts = Math.toIntExact(s[0]), inter = Math.toIntExact(s[1] / 2);
        float[][] out = new float[experts * inter][cols];
        for (int e = 0; e < experts; e++) {
            for (int i = 0; i < inter; i++) {
                long src = (long) e * 2 * inter + (long) o.half * inter + i;
                Quantization.dequantize(type, t.data(), src * rowBytes, out[e * inter + i], 0, cols);
            }
        }
        return out;
    }

    private static long[] expectedShape(Origin o) {
        long[] s = o.tensor.shape().clone();
        if (o.half >= 0) s[1] /= 2;
        return s;
    }

    @Test
    void splitExpertsHoldTheGateAndUpRowsInOrder() throws Exception {
        Path out = tmp.resolve("moe-f32");
        ModelConverter.toMlx(source("moe"), out, MlxOptions.defaults().unquantised(), (a, b) -> {});
        try (SafetensorsShards src = SafetensorsShards.open(source("moe")); SafetensorsShards dst = SafetensorsShards.open(out)) {
            String p = "model.language_model.layers.2.mlp.";
            float[] fused = src.tensor(p + "experts.gate_up_proj").data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
            float[] gate = dst.tensor(p + "switch_mlp.gate_proj.weight").data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
            float[] up = dst.tensor(p + "switch_mlp.up_proj.weight").data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
            int e = 4, i = 32, h = 64;
            assertArrayEquals(new long[]{e, i, h}, dst.tensor(p + "switch_mlp.gate_proj.weight").shape());
            for (int x = 0; x < e; x++) {
                for (int r = 0; r < i; r++) {
                    for (int c = 0; c < h; c++) {
                        assertEquals(fused[(x * 2 * i + r) * h + c], gate[(x * i + r) * h + c], "gate");
                        assertEquals(fused[(x * 2 * i + i + r) * h + c], up[(x * i + r) * h + c], "up");
                    }
                }
            }
            assertTrue(JSON.readTree(out.resolve("config.json").toFile()).get("quantization") == null, "unquantised: no block");
        }
    }

    @Test
    void visionAndMtpTensorsAreDropped() throws Exception {
        // a copy of the dense model with a vision tensor and an mtp tensor added
        Path folder = tmp.resolve("with-vision");
        Files.createDirectories(folder);
        for (String f : new String[]{"config.json", "tokenizer.json", "tokenizer_config.json"}) {
            Files.copy(source("dense").resolve(f), folder.resolve(f));
        }
        try (SafetensorsShards src = SafetensorsShards.open(source("dense"))) {
            var w = new dev.forkpoint.format.safetensors.SafetensorsWriter();
            for (SafetensorsTensor t : src.tensors()) w.tensor(t.name(), t.dtype(), t.shape(), t.data());
            var extra = java.lang.foreign.MemorySegment.ofArray(new float[2 * 3 * 16 * 16 * 4]);
            w.tensor("model.visual.patch_embed.proj.weight", SafetensorsDtype.F32, new long[]{2, 3, 16, 16, 4}, extra);
            w.tensor("mtp.fc.weight", SafetensorsDtype.F32, new long[]{8, 16}, java.lang.foreign.MemorySegment.ofArray(new float[128]));
            w.write(folder.resolve("model.safetensors"));
        }
        Path out = tmp.resolve("out");
        ModelConverter.toMlx(folder, out, MlxOptions.defaults().withFormat(8, 64), (a, b) -> {});
        try (SafetensorsShards dst = SafetensorsShards.open(out)) {
            for (Iterator<SafetensorsTensor> it = dst.tensors().iterator(); it.hasNext(); ) {
                String n = it.next().name();
                assertFalse(n.startsWith("model.visual.") || n.startsWith("mtp."), n);
            }
        }
    }

    private Path editedConfig(String m, java.util.function.Consumer<ObjectNode> edit) throws Exception {
        Path folder = tmp.resolve("edited-" + m);
        Files.createDirectories(folder);
        try (var s = Files.list(source(m))) {
            for (Path p : (Iterable<Path>) s::iterator) Files.copy(p, folder.resolve(p.getFileName()));
        }
        ObjectNode c = (ObjectNode) JSON.readTree(folder.resolve("config.json").toFile());
        edit.accept(c);
        JSON.writeValue(folder.resolve("config.json").toFile(), c);
        return folder;
    }

    @Test
    void aModelTypeItCannotConvertIsRefusedNamingIt() throws Exception {
        Path folder = editedConfig("dense", c -> c.put("model_type", "qwen3_next"));
        Path out = tmp.resolve("refused");
        var e = assertThrows(ModelFormatException.class, () -> ModelConverter.toMlx(folder, out, MlxOptions.defaults(), (a, b) -> {}));
        assertTrue(e.getMessage().contains("config.json") && e.getMessage().contains("model_type") && e.getMessage().contains("'qwen3_next'")
                && e.getMessage().contains("qwen3_5_moe"), e.getMessage());
        assertFalse(Files.exists(out), "nothing written");
    }

    @Test
    void hybridsToGgufAreRefusedNamingModelType() {
        Path out = tmp.resolve("out.gguf");
        var e = assertThrows(ModelFormatException.class, () -> ModelConverter.toGguf(source("moe"), out, GgmlType.F16, (a, b) -> {}));
        assertTrue(e.getMessage().contains("model_type") && e.getMessage().contains("qwen3_5_moe") && e.getMessage().contains("MLX only"),
                e.getMessage());
        assertFalse(Files.exists(out));
    }

    @Test
    void aMissingTextConfigFieldIsNamed() throws Exception {
        Path folder = editedConfig("moe", c -> ((ObjectNode) c.get("text_config")).remove("linear_num_key_heads"));
        var e = assertThrows(ModelFormatException.class, () -> ModelConverter.toMlx(folder, tmp.resolve("o"), MlxOptions.defaults(), (a, b) -> {}));
        assertTrue(e.getMessage().contains("config.json") && e.getMessage().contains("text_config.linear_num_key_heads"), e.getMessage());
    }

    @Test
    void aShapeThatContradictsConfigJsonIsNamed() throws Exception {
        Path folder = editedConfig("moe", c -> ((ObjectNode) c.get("text_config")).put("moe_intermediate_size", 16));
        var e = assertThrows(ModelFormatException.class, () -> ModelConverter.toMlx(folder, tmp.resolve("o"), MlxOptions.defaults(), (a, b) -> {}));
        assertTrue(e.getMessage().contains("model.safetensors") && e.getMessage().contains("experts.") && e.getMessage().contains("config.json"),
                e.getMessage());
    }
}
