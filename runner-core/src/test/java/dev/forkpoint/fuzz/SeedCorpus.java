package dev.forkpoint.fuzz;

import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataType;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsWriter;
import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Writes the generated part of the committed seed corpus (valid files made by the project's own writers, which the
 * fuzzer then mutates) into {@code src/test/resources}, in Jazzer's layout {@code <package>/<Class>Inputs/<method>/}.
 * Hand-written seeds (JSON bodies, texts) sit beside them and are not touched. Run from {@code runner-core}:
 * {@code java -cp target/test-classes:target/classes:<test classpath> dev.forkpoint.fuzz.SeedCorpus}.
 */
public final class SeedCorpus {
    static final Path ROOT = Path.of("src/test/resources/dev/forkpoint");

    private SeedCorpus() {}

    public static void main(String[] args) throws IOException {
        Path tiny = TinyLlama.ggufFile();
        put("format/gguf/GgufFuzzTestInputs/parse", "tiny-llama.gguf", Files.readAllBytes(tiny));
        put("format/gguf/GgufFuzzTestInputs/parse", "every-type.gguf", everyType());

        Path shards = Files.createTempDirectory("seed-shards-");
        try (Arena arena = Arena.ofConfined()) {
            new SafetensorsWriter().metadata("format", "mlx")
                    .tensor("a", SafetensorsDtype.of(GgmlType.F32), new long[]{2, 2}, arena.allocate(16))
                    .tensor("b", SafetensorsDtype.of(GgmlType.BF16), new long[]{3}, arena.allocate(6))
                    .write(shards.resolve("one.safetensors"));
            new SafetensorsWriter().tensor("c", SafetensorsDtype.of(GgmlType.F16), new long[]{1, 4}, arena.allocate(8))
                    .tensor("empty", SafetensorsDtype.of(GgmlType.F32), new long[]{0, 3}, arena.allocate(0))
                    .write(shards.resolve("two.safetensors"));
        }
        put("format/safetensors/SafetensorsFuzzTestInputs/parse", "two-tensors.safetensors", Files.readAllBytes(shards.resolve("one.safetensors")));
        put("format/safetensors/SafetensorsFuzzTestInputs/parse", "empty-tensor.safetensors", Files.readAllBytes(shards.resolve("two.safetensors")));

        Path hf = TinyLlama.hfFolderCopy();
        put("engine/ModelLoadFuzzTestInputs/hfConfig", "tiny-llama-config.json", Files.readAllBytes(hf.resolve("config.json")));
        put("tokenizer/TokenizerFuzzTestInputs/tokenizerJson", "tiny-byte-level.json", Files.readAllBytes(hf.resolve("tokenizer.json")));
        put("tokenizer/TokenizerFuzzTestInputs/tokenizerConfig", "tiny-tokenizer-config.json", Files.readAllBytes(hf.resolve("tokenizer_config.json")));
        Path stories = Path.of("../../shared/models/stories260K.gguf");
        if (Files.isRegularFile(stories)) {
            Path out = Files.createTempDirectory("seed-stories-").resolve("mlx");
            ModelConverter.toMlx(stories, out, MlxOptions.defaults().unquantised(), (a, b) -> {});
            put("tokenizer/TokenizerFuzzTestInputs/tokenizerJson", "stories260K-sentencepiece.json", Files.readAllBytes(out.resolve("tokenizer.json")));
            put("engine/ModelLoadFuzzTestInputs/hfConfig", "stories260K-config.json", Files.readAllBytes(out.resolve("config.json")));
        }
        for (String t : List.of("llama2", "llama3", "llama3_1", "qwen2_5")) {
            try (InputStream in = SeedCorpus.class.getResourceAsStream("/chat/" + t + ".jinja")) {
                byte[] source = in.readAllBytes();
                byte[] seed = new byte[source.length + 2];   // the two flags are read from the end
                System.arraycopy(source, 0, seed, 0, source.length);
                seed[source.length] = 1;
                seed[source.length + 1] = 1;
                put("chat/ChatTemplateFuzzTestInputs/template", t + ".jinja", seed);
            }
        }
        var rnd = new SplittableRandom(12);
        for (String target : List.of("chat/ChatTemplateFuzzTestInputs/messages", "sampling/SamplerFuzzTestInputs/sample",
                "sampling/SamplerFuzzTestInputs/stops", "engine/ModelLoadFuzzTestInputs/ggufModel", "engine/GenerationFuzzTestInputs/request",
                "tokenizer/TokenizerFuzzTestInputs/encodeDecode")) {
            for (int i = 0; i < 3; i++) {
                byte[] b = new byte[64 << i];
                rnd.nextBytes(b);
                put(target, "random-" + b.length, b);
            }
        }
    }

    /** A GGUF file with one metadata value of every type and a quantised tensor. */
    static byte[] everyType() throws IOException {
        var w = new GgufWriter();
        w.put("u8", new MetadataValue.Int(MetadataType.UINT8, 200));
        w.put("i8", new MetadataValue.Int(MetadataType.INT8, -5));
        w.put("u16", new MetadataValue.Int(MetadataType.UINT16, 60000));
        w.put("i16", new MetadataValue.Int(MetadataType.INT16, -300));
        w.put("u32", MetadataValue.ofU32(7));
        w.put("i32", MetadataValue.ofI32(-7));
        w.put("u64", new MetadataValue.Int(MetadataType.UINT64, 1L << 40));
        w.put("i64", new MetadataValue.Int(MetadataType.INT64, -(1L << 40)));
        w.put("f32", MetadataValue.ofF32(0.5));
        w.put("f64", new MetadataValue.Float(MetadataType.FLOAT64, 1e-300));
        w.put("bool", MetadataValue.ofBool(true));
        w.put("string", MetadataValue.of("héllo"));
        w.put("strings", MetadataValue.ofStrings(List.of("a", "", "c")));
        w.put("nested", new MetadataValue.Array(MetadataType.ARRAY, List.of(MetadataValue.ofI32s(new int[]{1, 2}))));
        w.put("general.alignment", MetadataValue.ofU32(64));
        w.add(new GgufWriter.TensorData("q", GgmlType.Q8_0, new long[]{32, 2}, MemorySegment.ofArray(new byte[68])));
        w.add(new GgufWriter.TensorData("f", GgmlType.F16, new long[]{3}, MemorySegment.ofArray(new byte[6])));
        Path f = Files.createTempFile("seed-", ".gguf");
        w.write(f);
        byte[] bytes = Files.readAllBytes(f);
        Files.delete(f);
        return bytes;
    }

    static void put(String dir, String name, byte[] bytes) throws IOException {
        Path d = ROOT.resolve(dir);
        Files.createDirectories(d);
        Files.write(d.resolve(name), bytes);
    }

    static void put(String dir, String name, String text) throws IOException {
        put(dir, name, text.getBytes(StandardCharsets.UTF_8));
    }

}
