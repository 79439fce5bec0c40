package dev.forkpoint.model;

import dev.forkpoint.TestData;
import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.format.safetensors.SafetensorsWriter;
import dev.forkpoint.reference.LlamaCppQwen35Gguf;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one table of a hybrid's weights ({@link HybridWeights#expected}), which the loader loads by and the converter
 * checks folders against, held against files it was not written from: the tiny Qwen3.5 models as Hugging Face saved
 * them, and the GGUF files the test tree writes of them as llama.cpp lays out Qwen3.5 and Qwen3-Next
 * ({@link LlamaCppQwen35Gguf}). Every tensor of each file is in the table with a shape the table allows, and every
 * weight the table requires is there (or a layout's stand-in). A shape outside the table is refused by both readers.
 */
class HybridWeightsTableTest {
    @TempDir
    Path tmp;

    private static Path folder(String m) { return TestData.shared("models/qwen35-tiny-" + m); }

    /**
     * Checks the model at {@code path}, whose tensors are {@code names} as stored (Hugging Face's names when
     * {@code hf}, else GGUF's), against the table.
     */
    private static void check(Path path, List<String> names, boolean hf) throws Exception {
        try (ModelFiles files = ModelFiles.open(path)) {
            TensorNames spec = files.spec().tensorNames();
            Map<String, ExpectedWeight> table = new HashMap<>();
            for (ExpectedWeight w : HybridWeights.expected(files.config())) table.put(w.name(), w);
            List<String> gguf = new ArrayList<>();
            for (String n : names) {
                if (n.equals("rope_freqs.weight")) continue;
                String g = hf ? spec.toGguf(n).orElse(null) : n;
                assertTrue(g != null && table.containsKey(g), path.getFileName() + ": " + n + " (" + g + ") is not in the table");
                long[] shape = files.tensors().shape(g).orElseThrow();
                assertTrue(table.get(g).fits(shape), path.getFileName() + ": " + g + " " + Arrays.toString(shape) + ", table " + table.get(g).shapesString());
                gguf.add(g);
            }
            int required = 0;
            for (ExpectedWeight w : table.values()) {
                if (!w.required()) continue;
                required++;
                assertTrue(gguf.contains(w.name()) || w.instead().stream().anyMatch(gguf::contains), path.getFileName() + ": " + w.name() + " missing");
            }
            assertTrue(required > 10 * files.config().layers(), "required weights: " + required);
        }
    }

    private static List<String> safetensorsNames(Path folder) throws Exception {
        try (SafetensorsShards s = SafetensorsShards.open(folder)) {
            return s.tensors().stream().map(SafetensorsTensor::name).toList();
        }
    }

    private static List<String> ggufNames(Path file) throws Exception {
        try (GgufFile f = GgufFile.open(file)) {
            return f.tensors().stream().map(GgufTensor::name).toList();
        }
    }

    @Test
    void huggingFacesFoldersFitTheTable() throws Exception {
        for (String m : List.of("dense", "moe")) check(folder(m), safetensorsNames(folder(m)), true);
    }

    @Test
    void llamaCppsQwen35AndQwen3NextFilesFitTheTable() throws Exception {
        for (String m : List.of("dense", "moe")) {
            Path gguf = LlamaCppQwen35Gguf.write(folder(m), tmp.resolve(m + ".gguf"), GgmlType.F32);
            check(gguf, ggufNames(gguf), false);
        }
        Path next = LlamaCppQwen35Gguf.writeQwen3Next(folder("moe"), tmp.resolve("next.gguf"));
        check(next, ggufNames(next), false);
    }

    @Test
    void aConvolutionOfAnotherShapeIsRefusedByTheLoaderAndTheConverter() throws Exception {
        Path bad = tmp.resolve("bad-conv");
        Files.createDirectories(bad);
        for (String f : new String[]{"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
            Files.copy(folder("dense").resolve(f), bad.resolve(f));
        }
        String conv = null;
        try (SafetensorsShards src = SafetensorsShards.open(folder("dense"))) {
            var w = new SafetensorsWriter();
            for (SafetensorsTensor t : src.tensors()) {
                long[] shape = t.shape();
                if (conv == null && t.name().endsWith("linear_attn.conv1d.weight")) {   // [C, 1, K] as [1, C, K]: same values
                    conv = t.name();
                    assertEquals(1, shape[1]);
                    shape = new long[]{1, shape[0], shape[2]};
                }
                w.tensor(t.name(), t.dtype(), shape, t.data());
            }
            w.write(bad.resolve("model.safetensors"));
        }
        assertTrue(conv != null);
        var loader = assertThrows(ModelFormatException.class, () -> LoadedModel.load(bad, 1, LoadProgress.NONE).close());
        assertTrue(loader.getMessage().contains("ssm_conv1d.weight") && loader.getMessage().contains("expected"), loader.getMessage());
        Path out = tmp.resolve("out");
        var converter = assertThrows(ModelFormatException.class, () -> ModelConverter.toMlx(bad, out, MlxOptions.defaults(), (a, b) -> {}));
        assertTrue(converter.getMessage().contains(conv) && converter.getMessage().contains("config.json"), converter.getMessage());
        assertFalse(Files.exists(out.resolve("model.safetensors")));
    }
}
