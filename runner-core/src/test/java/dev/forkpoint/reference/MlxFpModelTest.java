package dev.forkpoint.reference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.hf.MlxModuleQuantization;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.format.safetensors.SafetensorsWriter;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.store.FakeOllamaStore;
import dev.forkpoint.store.ModelResolver;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpCodec;
import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.FpTensor;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.*;

/**
 * MLX folders in the mxfp4, nvfp4 and mxfp8 modes, end to end: a random F32 Llama (and Qwen3) converted to an MLX
 * folder, its matrices quantised here by MLX's rule ({@link FpCodec}, checked against MLX's own codes in
 * FpCodecTest), written as MLX writes them ({@code P.weight} U32, {@code P.scales} U8, no biases;
 * {@code quantization {"group_size", "bits", "mode"}} in config.json), loaded and run through {@code LoadedModel}.
 * The reference is the float64 transformer of the same model with every quantised matrix replaced by its
 * dequantised values (written as an F32 folder and converted to GGUF): the fp kernels multiply float activations by
 * exactly those values, so the logits must agree to float32 rounding, the F32 bound 1e-4 (relative L2), for 12
 * tokens (the decode kernels) and 40 (the prefill GEMM). A folder with per-module entries mixing modes (nvfp4,
 * affine, float) is checked the same way (its affine module's decode kernel rounds activations to int8: 5e-2 there,
 * and at 40 tokens too when the native kernels run, which round them at every token count).
 * {@code convert --to gguf} of each folder gives the dequantised twin's floats bit for bit. Broken folders are refused
 * naming file and tensor. The same folders as Ollama stores its {@code -mlx} models (tensor blobs {@code P.weight},
 * {@code P.weight.scale}, {@code P.weight.bias}, the type in the blob's {@code quant_type} metadata or per tensor
 * in {@code P.weight.quant_type}) give exactly the folder's logits and greedy tokens.
 */
class MlxFpModelTest {
    @TempDir static Path dir;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One tensor to write: dtype, row-major shape, little-endian bytes. */
    private record Entry(SafetensorsDtype dtype, long[] shape, byte[] data) {}

    private static Map<String, Entry> read(Path folder) throws IOException {
        Map<String, Entry> m = new LinkedHashMap<>();
        try (SafetensorsFile f = SafetensorsFile.open(folder.resolve("model.safetensors"))) {
            for (SafetensorsTensor t : f.tensors()) m.put(t.name(), new Entry(t.dtype(), t.shape(), t.data().toArray(ValueLayout.JAVA_BYTE)));
        }
        return m;
    }

    private static void write(Path folder, Path like, Map<String, Entry> tensors, Consumer<ObjectNode> config) throws IOException {
        Files.createDirectories(folder);
        try (var s = Files.list(like)) {
            for (Path p : s.toList()) {
                if (!p.getFileName().toString().endsWith(".safetensors") && !p.getFileName().toString().equals("config.json")) {
                    Files.copy(p, folder.resolve(p.getFileName()));
                }
            }
        }
        ObjectNode c = (ObjectNode) JSON.readTree(like.resolve("config.json").toFile());
        config.accept(c);
        JSON.writeValue(folder.resolve("config.json").toFile(), c);
        SafetensorsWriter w = new SafetensorsWriter().metadata("format", "mlx");
        for (var e : tensors.entrySet()) {
            w.tensor(e.getKey(), e.getValue().dtype(), e.getValue().shape(), MemorySegment.ofArray(e.getValue().data()));
        }
        w.write(folder.resolve("model.safetensors"));
    }

    private static float[] floats(byte[] b) {
        return MemorySegment.ofArray(b).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
    }

    private static byte[] bytes(float[] v) {
        byte[] b = new byte[v.length * 4];
        MemorySegment.copy(v, 0, MemorySegment.ofArray(b), ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, v.length);
        return b;
    }

    /** How one module is quantised: an fp format, or an affine one (F32 scales and biases). */
    private sealed interface Scheme permits Fp, Affine {}
    private record Fp(FpFormat format) implements Scheme {}
    private record Affine(AffineFormat format) implements Scheme {}

    /** A quantised folder and its dequantised F32 twin, from the F32 folder; modules → scheme (null: not quantised). */
    private static Path[] build(Path f32, String name, Scheme global, Map<String, Scheme> perModule) throws IOException {
        Map<String, Entry> source = read(f32), quantised = new LinkedHashMap<>(), dequantised = new LinkedHashMap<>();
        Arena arena = Arena.ofAuto();
        for (var e : source.entrySet()) {
            String n = e.getKey();
            Entry t = e.getValue();
            String module = n.endsWith(".weight") ? n.substring(0, n.length() - ".weight".length()) : null;
            Scheme s = module == null || t.shape().length != 2 ? null : perModule.getOrDefault(module, global);
            if (s == null) {
                quantised.put(n, t);
                dequantised.put(n, t);
                continue;
            }
            int rows = (int) t.shape()[0], cols = (int) t.shape()[1];
            float[] w = floats(t.data()), d = new float[w.length];
            switch (s) {
                case Fp(FpFormat f) -> {
                    FpCodec.FpArrays q = FpCodec.quantize(w, rows, cols, f);
                    quantised.put(n, new Entry(SafetensorsDtype.U32, new long[]{rows, cols * f.bits() / 32}, q.packedBytes()));
                    quantised.put(module + ".scales", new Entry(SafetensorsDtype.U8, new long[]{rows, cols / f.groupSize()}, q.scales()));
                    FpTensor qt = q.toTensor(n, arena);
                    for (int r = 0; r < rows; r++) FpCodec.dequantizeRow(qt, r, d, r * cols);
                }
                case Affine(AffineFormat f) -> {
                    AffineCodec.AffineArrays q = AffineCodec.quantize(w, rows, cols, f, GgmlType.F32);
                    quantised.put(n, new Entry(SafetensorsDtype.U32, new long[]{rows, cols * f.bits() / 32}, q.packedBytes()));
                    long[] gs = {rows, cols / f.groupSize()};
                    quantised.put(module + ".scales", new Entry(SafetensorsDtype.F32, gs, q.scaleBytes(GgmlType.F32)));
                    quantised.put(module + ".biases", new Entry(SafetensorsDtype.F32, gs, q.biasBytes(GgmlType.F32)));
                    AffineTensor qt = q.toTensor(n, GgmlType.F32, arena);
                    for (int r = 0; r < rows; r++) AffineCodec.dequantizeRow(qt, r, d, r * cols);
                }
            }
            dequantised.put(n, new Entry(SafetensorsDtype.F32, t.shape(), bytes(d)));
        }
        Path q = dir.resolve(name), dq = dir.resolve(name + "-dequantised");
        write(q, f32, quantised, c -> {
            ObjectNode quant = JSON.createObjectNode();
            if (global instanceof Fp(FpFormat f)) {
                quant.put("group_size", f.groupSize()).put("bits", f.bits()).put("mode", f.typeName());
            }
            for (var m : perModule.entrySet()) {
                switch (m.getValue()) {
                    case Fp(FpFormat f) -> quant.putObject(m.getKey()).put("group_size", f.groupSize()).put("bits", f.bits()).put("mode", f.typeName());
                    case Affine(AffineFormat f) -> quant.putObject(m.getKey()).put("group_size", f.groupSize()).put("bits", f.bits());   // no mode: affine, as in mlx-lm
                    case null -> quant.put(m.getKey(), false);
                }
            }
            c.set("quantization", quant);
            c.set("quantization_config", quant.deepCopy());
        });
        write(dq, f32, dequantised, c -> {});
        return new Path[]{q, dq};
    }

    private static Path f32Folder(RandomModels.Variant variant) throws IOException {
        Path out = dir.resolve(variant + "-f32");
        if (!Files.exists(out)) {
            Path gguf = RandomModels.write(dir, variant, GgmlType.F32, ArchitectureLogitsTest.SEED);
            ModelConverter.toMlx(gguf, out, MlxOptions.defaults().unquantised(), (a, b) -> {});
        }
        return out;
    }

    private static int[] tokens(int n) {
        int[] base = ArchitectureLogitsTest.sequence();
        int[] t = Arrays.copyOf(base, n);
        Random rnd = new Random(13);
        for (int i = base.length; i < n; i++) t[i] = rnd.nextInt(RandomModels.BYTE_TOKENS);
        return t;
    }

    /** Loads the quantised folder, compares its logits with the float64 reference of the dequantised twin, generates. */
    private static void checkAgainstReference(Path[] folders, String typeName, double decodeBound) throws IOException {
        Path gguf = dir.resolve(folders[1].getFileName() + ".gguf");
        ModelConverter.toGguf(folders[1], gguf, GgmlType.F32, (a, b) -> {});
        ReferenceTransformer reference;
        try (GgufFile file = GgufFile.open(gguf)) {
            reference = ReferenceTransformer.load(file);
        }
        // convert --to gguf dequantises the quantised folder itself: the same floats, bit for bit
        Path converted = dir.resolve(folders[0].getFileName() + ".gguf");
        ModelConverter.toGguf(folders[0], converted, GgmlType.F32, (a, b) -> {});
        try (GgufFile a = GgufFile.open(gguf); GgufFile b = GgufFile.open(converted)) {
            assertEquals(a.tensors().size(), b.tensors().size());
            for (var t : a.tensors()) {
                var u = b.tensors().stream().filter(x -> x.name().equals(t.name())).findFirst().orElseThrow();
                assertEquals(-1, t.data().mismatch(u.data()), t.name() + " converted from " + folders[0].getFileName());
            }
        }
        try (LoadedModel engine = LoadedModel.load(folders[0], 2, LoadProgress.NONE)) {
            assertTrue(engine.info().tensorTypes().containsKey(typeName), engine.info().tensorTypes().toString());
            for (int n : new int[]{12, 40}) {
                int[] t = tokens(n);
                double[] expected = reference.lastLogits(t);
                float[] actual = engine.logits(t);
                // 40 tokens: the float GEMM on the Java kernels; the native affine kernels round activations to int8
                // at every token count, so an affine module keeps its decode bound there
                boolean int8Activations = n <= 16 || !engine.kernels().equals("java");
                double error = ReferenceLogits.relativeL2(actual, expected), bound = int8Activations ? decodeBound : 1e-4;
                System.out.printf("MlxFpModelTest %-28s %2d tokens: error %.2e (bound %.0e)%n", folders[0].getFileName(), n, error, bound);
                assertTrue(error < bound, folders[0].getFileName() + ", " + n + " tokens: relative L2 error " + error + " ≥ " + bound);
                assertArrayEquals(ReferenceLogits.topIds(expected, 5), ReferenceLogits.topIds(actual, 5), "top-5 ids");
            }
            GenerationResult r = engine.generate(GenerationRequest.of("abc", SamplingOptions.greedy().withNumPredict(8)), s -> {});
            assertEquals(8, r.generatedIds().length);
        }
    }

    @ParameterizedTest
    @EnumSource(FpFormat.class)
    void fpFolderRunsLikeTheFloat64ReferenceOfItsDequantisedWeights(FpFormat f) throws IOException {
        for (RandomModels.Variant v : new RandomModels.Variant[]{RandomModels.Variant.LLAMA_TIED, RandomModels.Variant.QWEN3}) {
            checkAgainstReference(build(f32Folder(v), v + "-" + f.typeName(), new Fp(f), Map.of()), f.typeName(), 1e-4);
        }
    }

    @Test
    void perModuleEntriesMixModes() throws IOException {
        Map<String, Scheme> modules = new LinkedHashMap<>();
        modules.put("model.layers.0.mlp.down_proj", new Fp(FpFormat.NVFP4));
        modules.put("model.layers.1.self_attn.o_proj", new Affine(new AffineFormat(8, 64)));
        modules.put("model.layers.1.mlp.up_proj", null);   // "false": stays F32
        // 12 tokens decode, where the affine module's kernel rounds its activations to int8 (as every affine and Q8_0
        // kernel does): the bound of MlxArchitectureLogitsTest's 8-bit folders; 40 tokens all go through the float GEMM.
        checkAgainstReference(build(f32Folder(RandomModels.Variant.LLAMA), "mixed-mxfp8", new Fp(FpFormat.MXFP8), modules), "nvfp4", 5e-2);
    }

    /** The mxfp4 folder with {@code change} applied to its tensors and config, expected to fail naming {@code needles}. */
    private static void refused(String name, Consumer<Map<String, Entry>> tensors, Consumer<ObjectNode> config, String... needles) throws IOException {
        Path good = dir.resolve("LLAMA-mxfp4-errors");
        if (!Files.exists(good)) build(f32Folder(RandomModels.Variant.LLAMA), "LLAMA-mxfp4-errors", new Fp(FpFormat.MXFP4), Map.of());
        Map<String, Entry> t = read(good);
        tensors.accept(t);
        Path bad = dir.resolve("bad-" + name);
        write(bad, good, t, config);
        var e = assertThrows(ModelFormatException.class, () -> LoadedModel.load(bad, 1, LoadProgress.NONE).close(), name);
        System.out.println("MlxFpModelTest refused " + name + ": " + e.getMessage().replace(dir.toString(), "DIR"));
        for (String needle : needles) assertTrue(e.getMessage().contains(needle), name + ": \"" + needle + "\" not in: " + e.getMessage());
    }

    @Test
    void anInfiniteE8m0ScaleIsNamedWhenNoLogitIsFinite() throws IOException {
        Path good = dir.resolve("LLAMA-mxfp4-errors");
        if (!Files.exists(good)) build(f32Folder(RandomModels.Variant.LLAMA), "LLAMA-mxfp4-errors", new Fp(FpFormat.MXFP4), Map.of());
        Map<String, Entry> t = read(good);
        String scales = "model.layers.0.self_attn.v_proj.scales";
        byte[] b = t.get(scales).data();
        java.util.Arrays.fill(b, 0, b.length / 2, (byte) 0xFF);   // MLX reads e8m0 255 as +∞: these rows become ±∞ and NaN
        Path bad = dir.resolve("bad-infinite-scale");
        write(bad, good, t, c -> {});
        try (LoadedModel m = LoadedModel.load(bad, 1, LoadProgress.NONE)) {
            var e = assertThrows(ModelFormatException.class,
                    () -> m.generate(GenerationRequest.of("abc", SamplingOptions.greedy().withNumPredict(2)), s -> {}));
            assertTrue(e.getMessage().contains(scales) && e.getMessage().contains("element 0"), e.getMessage());
        }
        // the same in Ollama's store: its scales are P.weight.scale
        try (LoadedModel m = LoadedModel.load(ollama(bad, "infinite-scale", false, false, (n, w) -> {}), 1, LoadProgress.NONE)) {
            var e = assertThrows(ModelFormatException.class,
                    () -> m.generate(GenerationRequest.of("abc", SamplingOptions.greedy().withNumPredict(2)), s -> {}));
            assertTrue(e.getMessage().contains("model.layers.0.self_attn.v_proj.weight.scale") && e.getMessage().contains("element 0"), e.getMessage());
        }
    }

    @Test
    void brokenFpFoldersAreRefusedNamingFileAndTensor() throws IOException {
        String scales = "model.layers.0.mlp.gate_proj.scales";
        refused("scale-count", t -> {
            Entry s = t.get(scales);
            t.put(scales, new Entry(s.dtype(), new long[]{s.shape()[0], s.shape()[1] - 1}, Arrays.copyOf(s.data(), (int) (s.shape()[0] * (s.shape()[1] - 1)))));
        }, c -> {}, "model.safetensors", scales, "groups of 32");
        refused("mode", t -> {}, c -> ((ObjectNode) c.get("quantization")).put("mode", "mxfp6"),
                "config.json", "quantization.mode", "mxfp6", "nvfp4", "affine", ".weight");
        refused("group", t -> {}, c -> ((ObjectNode) c.get("quantization")).put("group_size", 64),
                "config.json", "quantization", "group size 32", ".weight", "model.safetensors");
        refused("module-mode", t -> {}, c -> ((ObjectNode) c.get("quantization")).putObject("model.layers.0.mlp.gate_proj").put("mode", "mxfp8"),
                "model.safetensors", scales);
        refused("biases", t -> {
            Entry s = t.get(scales);
            t.put("model.layers.0.mlp.gate_proj.biases", new Entry(SafetensorsDtype.F32, s.shape(), new byte[s.data().length * 4]));
        }, c -> {}, "model.safetensors", "model.layers.0.mlp.gate_proj.biases", "no biases");
        refused("scale-dtype", t -> {
            Entry s = t.get(scales);
            t.put(scales, new Entry(SafetensorsDtype.F32, s.shape(), new byte[s.data().length * 4]));
        }, c -> {}, "model.safetensors", scales, "U8");
        refused("codes-dtype", t -> {
            Entry w = t.get("model.layers.0.mlp.gate_proj.weight");
            t.put("model.layers.0.mlp.gate_proj.weight", new Entry(SafetensorsDtype.F32, w.shape(), w.data()));
        }, c -> {}, "model.safetensors", "model.layers.0.mlp.gate_proj.weight", "U32");
    }

    // ---- the same folders in Ollama's store ----------------------------------------------------------------------

    /** Ollama's quant_type for a module's quantisation (int4 / int8 for affine, as Ollama's create writes them). */
    private static String quantType(MlxModuleQuantization mq) {
        return switch (mq.mode()) {
            case AFFINE -> "int" + mq.bits();
            default -> mq.mode().configName();
        };
    }

    /**
     * The MLX folder as Ollama stores an {@code -mlx} model: a manifest, JSON blobs for the config (without its
     * {@code quantization}: Ollama's runner reads the blobs' metadata) and tokenizer files, and tensor blobs
     * {@code P.weight} (the codes), {@code P.weight.scale} and, when affine, {@code P.weight.bias}. {@code perTensor}
     * false: one blob per tensor, its type in {@code __metadata__.quant_type} / {@code group_size}; true: one blob per
     * layer mixing tensors, types in {@code P.weight.quant_type} / {@code P.weight.group_size} ({@code upper}: written
     * in upper case), with a blob-wide {@code quant_type} they must win over. {@code extra} sees each quantised
     * weight's name and blob writer. Returns the resolved model path.
     */
    private static Path ollama(Path folder, String tag, boolean perTensor, boolean upper, BiConsumer<String, SafetensorsWriter> extra)
            throws IOException {
        Map<String, Entry> tensors = read(folder);
        ObjectNode config = (ObjectNode) JSON.readTree(folder.resolve("config.json").toFile());
        JsonNode quantization = config.get("quantization");
        Map<String, SafetensorsWriter> blobs = new TreeMap<>();
        for (var e : tensors.entrySet()) {
            String n = e.getKey();
            if (n.endsWith(".scales") || n.endsWith(".biases")) continue;
            String blob = perTensor ? (n.startsWith("model.layers.") ? n.substring(0, n.indexOf('.', "model.layers.".length())) : "rest") : n;
            SafetensorsWriter w = blobs.computeIfAbsent(blob, b -> perTensor ? new SafetensorsWriter().metadata("quant_type", "int4")
                    : new SafetensorsWriter());
            w.tensor(n, e.getValue().dtype(), e.getValue().shape(), MemorySegment.ofArray(e.getValue().data()));
            String module = n.endsWith(".weight") ? n.substring(0, n.length() - ".weight".length()) : null;
            Entry scales = module == null ? null : tensors.get(module + ".scales");
            if (scales == null) continue;
            MlxModuleQuantization mq = MlxModuleQuantization.of(quantization, module, folder.resolve("config.json"));
            String type = upper ? quantType(mq).toUpperCase(java.util.Locale.ROOT) : quantType(mq);
            String prefix = perTensor ? n + "." : "";
            w.metadata(prefix + "quant_type", type).metadata(prefix + "group_size", Integer.toString(mq.groupSize()));
            w.tensor(n + ".scale", scales.dtype(), scales.shape(), MemorySegment.ofArray(scales.data()));
            Entry biases = tensors.get(module + ".biases");
            if (biases != null) w.tensor(n + ".bias", biases.dtype(), biases.shape(), MemorySegment.ofArray(biases.data()));
            extra.accept(n, w);
        }
        FakeOllamaStore store = FakeOllamaStore.create(dir.resolve("ollama-" + tag));
        ObjectNode manifest = JSON.createObjectNode().put("schemaVersion", 2);
        var layers = manifest.putArray("layers");
        Path scratch = Files.createDirectories(dir.resolve("ollama-scratch")).resolve("blob.safetensors");
        for (var b : blobs.entrySet()) {
            b.getValue().write(scratch);
            byte[] bytes = Files.readAllBytes(scratch);
            layers.addObject().put("mediaType", "application/vnd.ollama.image.tensor").put("digest", store.addBlob(bytes))
                    .put("size", bytes.length).put("name", b.getKey());
        }
        config.remove("quantization");
        config.remove("quantization_config");
        try (var files = Files.list(folder)) {
            for (Path p : files.sorted().toList()) {
                String name = p.getFileName().toString();
                if (name.contains(".safetensors")) continue;   // the codes are in the tensor blobs, no index
                byte[] bytes = name.equals("config.json") ? JSON.writeValueAsBytes(config) : Files.readAllBytes(p);
                layers.addObject().put("mediaType", "application/vnd.ollama.image.json").put("digest", store.addBlob(bytes))
                        .put("size", bytes.length).put("name", name);
            }
        }
        store.addManifest("registry.ollama.ai", "library", "random", tag, JSON.writeValueAsString(manifest));
        return new ModelResolver(store.root()).resolve("random:" + tag);
    }

    /** The Ollama-store model gives exactly the folder's logits (12 and 40 tokens) and greedy tokens. */
    private static void sameAsFolder(Path folder, Path ollama, String typeName) throws IOException {
        try (LoadedModel a = LoadedModel.load(folder, 2, LoadProgress.NONE); LoadedModel b = LoadedModel.load(ollama, 2, LoadProgress.NONE)) {
            assertEquals(a.info().tensorTypes(), b.info().tensorTypes());
            assertTrue(b.info().tensorTypes().containsKey(typeName), b.info().tensorTypes().toString());
            for (int n : new int[]{12, 40}) {
                int[] t = tokens(n);
                assertArrayEquals(a.logits(t), b.logits(t), ollama + ", " + n + " tokens");
            }
            var request = GenerationRequest.of("abc", SamplingOptions.greedy().withNumPredict(8));
            assertArrayEquals(a.generate(request, s -> {}).generatedIds(), b.generate(request, s -> {}).generatedIds(), ollama + ": greedy ids");
        }
    }

    @ParameterizedTest
    @EnumSource(FpFormat.class)
    void ollamaFpBlobsRunExactlyLikeTheFolder(FpFormat f) throws IOException {
        Path folder = build(f32Folder(RandomModels.Variant.QWEN3), "ollama-src-" + f.typeName(), new Fp(f), Map.of())[0];
        sameAsFolder(folder, ollama(folder, f.typeName(), false, false, (n, w) -> {}), f.typeName());
        sameAsFolder(folder, ollama(folder, f.typeName() + "-per-tensor", true, true, (n, w) -> {}), f.typeName());
    }

    @Test
    void ollamaBlobsMixingTypesPerTensorRunExactlyLikeTheFolder() throws IOException {
        Map<String, Scheme> modules = new LinkedHashMap<>();
        modules.put("model.layers.0.mlp.down_proj", new Fp(FpFormat.NVFP4));
        modules.put("model.layers.0.mlp.up_proj", new Fp(FpFormat.MXFP4));
        modules.put("model.layers.1.self_attn.o_proj", new Affine(new AffineFormat(8, 64)));
        modules.put("model.layers.1.self_attn.q_proj", new Affine(new AffineFormat(4, 64)));
        modules.put("model.layers.1.mlp.up_proj", null);   // stays F32
        Path folder = build(f32Folder(RandomModels.Variant.LLAMA), "ollama-src-mixed", new Fp(FpFormat.MXFP8), modules)[0];
        Path ollama = ollama(folder, "mixed", true, false, (n, w) -> {});
        sameAsFolder(folder, ollama, "nvfp4");
        try (LoadedModel m = LoadedModel.load(ollama, 1, LoadProgress.NONE)) {
            var types = m.info().tensorTypes();
            for (String t : new String[]{"nvfp4", "mxfp4", "mxfp8", "F32"}) assertTrue(types.containsKey(t), types.toString());
            assertTrue(types.keySet().stream().anyMatch(t -> t.startsWith("affine 8-bit")) && types.keySet().stream().anyMatch(t -> t.startsWith("affine 4-bit")),
                    types.toString());
        }
    }

    /** The nvfp4 folder in Ollama's store with {@code extra} applied to each quantised weight's blob, refused naming {@code needles}. */
    private static void ollamaRefused(String tag, BiConsumer<String, SafetensorsWriter> extra, String... needles) throws IOException {
        Path folder = dir.resolve("ollama-src-errors");
        if (!Files.exists(folder)) build(f32Folder(RandomModels.Variant.LLAMA), "ollama-src-errors", new Fp(FpFormat.NVFP4), Map.of());
        Path bad = ollama(folder, tag, false, false, extra);
        var e = assertThrows(ModelFormatException.class, () -> LoadedModel.load(bad, 1, LoadProgress.NONE).close(), tag);
        System.out.println("MlxFpModelTest refused " + tag + ": " + e.getMessage().replace(dir.toString(), "DIR"));
        for (String needle : needles) assertTrue(e.getMessage().contains(needle), tag + ": \"" + needle + "\" not in: " + e.getMessage());
    }

    @Test
    void brokenOllamaFpBlobsAreRefusedNamingTensorAndField() throws IOException {
        ollamaRefused("global-scale", (n, w) -> w.tensor(n + ".global_scale", SafetensorsDtype.F32, new long[]{1},
                MemorySegment.ofArray(bytes(new float[]{0.5f}))), ".weight.global_scale", "nvfp4", "no global scale", ".safetensors");
        ollamaRefused("bias", (n, w) -> w.tensor(n + ".bias", SafetensorsDtype.F32, new long[]{1, 1}, MemorySegment.ofArray(new byte[4])),
                ".weight.bias", "nvfp4", "no biases");
        ollamaRefused("group", (n, w) -> w.metadata("group_size", "32"), ".weight", "__metadata__.group_size", "32", "16");
        ollamaRefused("type", (n, w) -> w.metadata("quant_type", "q5_k"), ".weight", "__metadata__.quant_type", "q5_k", "int4", "int8",
                "mxfp4", "nvfp4", "mxfp8");
        ollamaRefused("label", (n, w) -> w.metadata("quant_type", "MXFP4"), ".weight.scale", "mxfp4", "groups of 32");
    }
}
