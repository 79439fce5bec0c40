package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.TestData;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsWriter;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Broken model folders are refused with a {@link ModelFormatException} that names the file and what is wrong (the
 * tensor, where one is at fault), and nothing is left behind at the output.
 */
class ConvertErrorsTest {
    @TempDir
    Path tmp;
    Path folder;

    @BeforeEach
    void validFolder() throws Exception {
        folder = tmp.resolve("model");
        ModelConverter.toMlx(TestData.shared("models/stories260K.gguf"), folder, MlxOptions.defaults().unquantised(), (a, b) -> {});
    }

    private ModelFormatException refused() {
        Path out = tmp.resolve("out.gguf");
        var e = assertThrows(ModelFormatException.class, () -> ModelConverter.toGguf(folder, out, GgmlType.F16, (a, b) -> {}));
        assertFalse(Files.exists(out), "no output");
        try (Stream<Path> s = Files.list(tmp)) {
            assertTrue(s.noneMatch(p -> p.getFileName().toString().contains("scratch") || p.getFileName().toString().endsWith(".tmp")));
        } catch (java.io.IOException io) {
            throw new AssertionError(io);
        }
        return e;
    }

    private void editConfig(java.util.function.Consumer<ObjectNode> edit) throws Exception {
        var json = new ObjectMapper();
        ObjectNode c = (ObjectNode) json.readTree(folder.resolve("config.json").toFile());
        edit.accept(c);
        json.writeValue(folder.resolve("config.json").toFile(), c);
    }

    @Test
    void missingConfigJson() throws Exception {
        Files.delete(folder.resolve("config.json"));
        var e = refused();
        assertTrue(e.getMessage().contains("config.json") && e.getMessage().contains("missing"), e.getMessage());
    }

    @Test
    void unknownModelType() throws Exception {
        editConfig(c -> c.put("model_type", "mamba"));
        var e = refused();
        assertTrue(e.getMessage().contains("config.json") && e.getMessage().contains("model_type")
                && e.getMessage().contains("'mamba'") && e.getMessage().contains("qwen3"), e.getMessage());
    }

    @Test
    void corruptSafetensorsHeader() throws Exception {
        Path st = folder.resolve("model.safetensors");
        byte[] bytes = Files.readAllBytes(st);
        bytes[9] = '#';   // inside the JSON header
        Files.write(st, bytes);
        var e = refused();
        assertTrue(e.getMessage().contains("model.safetensors") && e.getMessage().contains("JSON"), e.getMessage());
    }

    @Test
    void missingShard() throws Exception {
        String index = Files.readString(folder.resolve("model.safetensors.index.json"));
        Files.writeString(folder.resolve("model.safetensors.index.json"),
                index.replace("\"model.layers.3.mlp.up_proj.weight\" : \"model.safetensors\"", "\"model.layers.3.mlp.up_proj.weight\" : \"model-00002-of-00002.safetensors\""));
        var e = refused();
        assertTrue(e.getMessage().contains("model-00002-of-00002.safetensors") && e.getMessage().contains("missing"), e.getMessage());
    }

    @Test
    void tensorShapeDisagreesWithConfig() throws Exception {
        editConfig(c -> c.put("intermediate_size", 128));
        var e = refused();
        assertTrue(e.getMessage().contains("model.safetensors") && e.getMessage().contains("mlp.")
                && e.getMessage().contains("[128, 64]") && e.getMessage().contains("config.json"), e.getMessage());
    }

    @Test
    void missingTensor() throws Exception {
        Path st = folder.resolve("model.safetensors");
        Files.delete(folder.resolve("model.safetensors.index.json"));
        var w = new SafetensorsWriter();
        try (var f = dev.forkpoint.format.safetensors.SafetensorsFile.open(st)) {
            for (var t : f.tensors()) {
                if (!t.name().equals("model.layers.1.self_attn.v_proj.weight")) w.tensor(t.name(), t.dtype(), t.shape(), MemorySegment.ofArray(t.data().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
            }
        }
        w.write(st);
        var e = refused();
        assertTrue(e.getMessage().contains("model.layers.1.self_attn.v_proj.weight") && e.getMessage().contains("missing"), e.getMessage());
    }

    @Test
    void quantisedShapesMustAgreeWithTheQuantizationBlock() throws Exception {
        Path q = tmp.resolve("q");
        ModelConverter.toMlx(TestData.shared("models/stories260K.gguf"), q, MlxOptions.defaults().withFormat(4, 32), (a, b) -> {});
        folder = q;
        editConfig(c -> ((ObjectNode) c.get("quantization")).put("bits", 8));
        var e = refused();
        assertTrue(e.getMessage().contains("model.safetensors") && e.getMessage().contains("tensor model."), e.getMessage());
    }

    @Test
    void outputFolderMustBeNewOrEmpty() throws Exception {
        var e = assertThrows(InvalidInputException.class, () -> ModelConverter.toMlx(TestData.shared("models/stories260K.gguf"), folder,
                MlxOptions.defaults(), (a, b) -> {}));
        assertTrue(e.getMessage().contains("not empty"), e.getMessage());
    }

    @Test
    void unknownDtypeIsRefused() {
        var e = assertThrows(InvalidInputException.class, () -> MlxOptions.parseDtype("--scale-dtype", "int8"));
        assertTrue(e.getMessage().contains("--scale-dtype") && e.getMessage().contains("int8"));
        assertTrue(SafetensorsDtype.of(GgmlType.F16) == SafetensorsDtype.F16);
    }
}
