package dev.forkpoint.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.InvalidInputException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Turns what a user gives as {@code --model} into something {@link dev.forkpoint.model.ModelFiles#open} opens:
 * <ul>
 *   <li>a path: a GGUF file, a Hugging Face / mlx-community folder (config.json + safetensors), or a Hugging Face
 *       cache repository folder {@code models--ORG--NAME} (its {@code refs/main} snapshot, else its newest);</li>
 *   <li>an Ollama model name looked up in Ollama's store ({@code $OLLAMA_MODELS}, default {@code ~/.ollama/models}):
 *       {@code manifests/<host>/<namespace>/<model>/<tag>} is a JSON manifest; a GGUF model's layer of media type
 *       {@value #MODEL_MEDIA_TYPE} names the blob ({@code blobs/sha256-<hex>}), which is returned; a safetensors
 *       model (layers of {@value #TENSOR_MEDIA_TYPE}) resolves to the manifest itself;</li>
 *   <li>otherwise a Hugging Face repository name {@code ORG/NAME} found in the Hugging Face cache
 *       ({@code $HF_HUB_CACHE}, else {@code $HF_HOME/hub}, else {@code ~/.cache/huggingface/hub}).</li>
 * </ul>
 *
 * <p>Every failure is an {@link InvalidInputException} that says what was looked for and where.
 */
public final class ModelResolver {
    public static final String MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model";
    public static final String TENSOR_MEDIA_TYPE = "application/vnd.ollama.image.tensor";

    private static final Pattern DIGEST = Pattern.compile("sha256:([0-9a-f]{64})");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path store;
    private final Path huggingFaceCache;   // or null

    public ModelResolver(Path store) {
        this(store, null);
    }

    public ModelResolver(Path store, Path huggingFaceCache) {
        this.store = store;
        this.huggingFaceCache = huggingFaceCache;
    }

    /** The resolver for {@code $OLLAMA_MODELS}, or {@code <home>/.ollama/models} when that is unset. */
    public static ModelResolver fromEnvironment(Map<String, String> env) {
        String configured = env.get("OLLAMA_MODELS");
        String home = env.getOrDefault("HOME", System.getProperty("user.home"));
        Path store = configured != null && !configured.isBlank() ? Path.of(configured) : Path.of(home, ".ollama", "models");
        Path hf;
        if (env.get("HF_HUB_CACHE") != null && !env.get("HF_HUB_CACHE").isBlank()) hf = Path.of(env.get("HF_HUB_CACHE"));
        else if (env.get("HF_HOME") != null && !env.get("HF_HOME").isBlank()) hf = Path.of(env.get("HF_HOME"), "hub");
        else hf = Path.of(home, ".cache", "huggingface", "hub");
        return new ModelResolver(store, hf);
    }

    public Path store() { return store; }

    /**
     * The GGUF file {@code model} stands for. A string that ends in {@code .gguf}, contains a path separator that
     * makes it a path ({@code ./}, {@code /}, {@code ~}), or names an existing file is a path; anything else is an
     * Ollama model name.
     */
    public Path resolve(String model) {
        if (model == null || model.isBlank()) throw new InvalidInputException("the model name is empty");
        if (looksLikePath(model)) return existingModel(expandHome(model));
        Optional<Path> cached = huggingFaceSnapshot(model);
        OllamaName name;
        try {
            name = OllamaName.parse(model);
        } catch (InvalidInputException e) {
            if (cached.isPresent()) return cached.get();
            throw e;
        }
        if (cached.isPresent() && manifest(name).isEmpty()) return cached.get();
        return resolveName(name);
    }

    /** The snapshot folder of Hugging Face repository {@code ORG/NAME} in the cache, when it is there. */
    private Optional<Path> huggingFaceSnapshot(String repo) {
        if (huggingFaceCache == null || !repo.matches("[A-Za-z0-9][\\w.-]*/[A-Za-z0-9][\\w.-]*")) return Optional.empty();
        Path dir = huggingFaceCache.resolve("models--" + repo.replace("/", "--"));
        return Files.isDirectory(dir) ? Optional.of(snapshotOf(dir)) : Optional.empty();
    }

    /**
     * The snapshot of a Hugging Face cache repository folder: the revision {@code refs/main} names, else the most
     * recently modified snapshot.
     */
    static Path snapshotOf(Path repoDir) {
        Path snapshots = repoDir.resolve("snapshots");
        try {
            Path ref = repoDir.resolve("refs").resolve("main");
            if (Files.isRegularFile(ref)) {
                String rev = Files.readString(ref).trim();
                Path snap = snapshots.resolve(rev);
                if (rev.matches("[0-9a-f]{7,64}") && Files.isDirectory(snap)) return snap;
            }
            if (Files.isDirectory(snapshots)) {
                try (Stream<Path> s = Files.list(snapshots)) {
                    Optional<Path> newest = s.filter(Files::isDirectory).max(java.util.Comparator.comparing(p -> {
                        try {
                            return Files.getLastModifiedTime(p);
                        } catch (IOException e) {
                            return java.nio.file.attribute.FileTime.fromMillis(0);
                        }
                    }));
                    if (newest.isPresent()) return newest.get();
                }
            }
        } catch (IOException e) {
            throw new InvalidInputException("cannot read the Hugging Face cache folder " + repoDir + ": " + e.getMessage(), e);
        }
        throw new InvalidInputException("the Hugging Face cache folder " + repoDir + " has no snapshot (snapshots/<revision>);"
                + " download the model again");
    }

    /** The blob of the GGUF layer of {@code name}'s manifest. */
    public Path resolveName(OllamaName name) {
        Path manifest = manifest(name).orElseThrow(() -> notInStore(name));
        JsonNode root;
        try {
            root = JSON.readTree(manifest.toFile());
        } catch (com.fasterxml.jackson.core.JacksonException e) {
            throw new InvalidInputException("the Ollama manifest " + manifest + " of " + name + " is not valid JSON: "
                    + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw new InvalidInputException("cannot read the Ollama manifest " + manifest + " of " + name + ": " + e, e);
        }
        JsonNode layers = root == null ? null : root.get("layers");
        if (layers == null || !layers.isArray()) {
            throw new InvalidInputException("the Ollama manifest " + manifest + " of " + name + " has no \"layers\" array");
        }
        boolean tensors = false;
        for (JsonNode layer : layers) {
            String mediaType = layer.path("mediaType").asText("");
            if (mediaType.equals(TENSOR_MEDIA_TYPE)) tensors = true;
            if (!mediaType.equals(MODEL_MEDIA_TYPE)) continue;
            String digest = layer.path("digest").asText("");
            var m = DIGEST.matcher(digest);
            if (!m.matches()) {
                throw new InvalidInputException("the Ollama manifest " + manifest + " of " + name
                        + " has a model layer with digest '" + digest + "' (expected sha256:<64 hex digits>)");
            }
            Path blob = store.resolve("blobs").resolve("sha256-" + m.group(1));
            if (!Files.isRegularFile(blob)) {
                throw new InvalidInputException("the model file of " + name + " is missing from the Ollama store (" + blob
                        + "); pull it again with 'ollama pull " + name + "'");
            }
            long size = layer.path("size").asLong(-1);
            try {
                if (size >= 0 && Files.size(blob) != size) {
                    throw new InvalidInputException("the model file of " + name + " (" + blob + ") has " + Files.size(blob)
                            + " bytes but its manifest says " + size + "; pull it again with 'ollama pull " + name + "'");
                }
            } catch (IOException e) {
                throw new InvalidInputException("cannot read " + blob + ": " + e.getMessage(), e);
            }
            return blob;
        }
        if (tensors) return manifest;   // a safetensors (MLX engine) model: ModelFiles opens the manifest
        throw new InvalidInputException("the Ollama manifest " + manifest + " of " + name + " has no layer of type "
                + MODEL_MEDIA_TYPE);
    }

    /** The models in the store, as display names ("qwen3:0.6b"), sorted; empty when the store is absent. */
    public List<String> available() {
        Path manifests = store.resolve("manifests");
        if (!Files.isDirectory(manifests)) return List.of();
        List<String> names = new ArrayList<>();
        try (Stream<Path> files = Files.find(manifests, 4, (p, a) -> a.isRegularFile())) {
            files.forEach(p -> {
                Path rel = manifests.relativize(p);
                if (rel.getNameCount() != 4) return;
                try {
                    names.add(new OllamaName(rel.getName(0).toString(), rel.getName(1).toString(),
                            rel.getName(2).toString(), rel.getName(3).toString()).displayName());
                } catch (InvalidInputException ignored) {
                    // not a manifest Ollama could have written
                }
            });
        } catch (IOException e) {
            return List.of();
        }
        names.sort(null);
        return names;
    }

    /** The manifest file of {@code name} (matched case-insensitively as Ollama does), when it is in the store. */
    public Optional<Path> manifest(OllamaName name) {
        Path dir = store.resolve("manifests");
        Path exact = dir.resolve(name.host()).resolve(name.namespace()).resolve(name.model()).resolve(name.tag());
        if (Files.isRegularFile(exact)) return Optional.of(exact);
        // Ollama treats names case-insensitively; the store keeps the case they were pulled with.
        String wanted = name.displayName().toLowerCase(Locale.ROOT);
        for (String candidate : available()) {
            if (candidate.toLowerCase(Locale.ROOT).equals(wanted)) {
                OllamaName n = OllamaName.parse(candidate);
                return Optional.of(dir.resolve(n.host()).resolve(n.namespace()).resolve(n.model()).resolve(n.tag()));
            }
        }
        return Optional.empty();
    }

    private InvalidInputException notInStore(OllamaName name) {
        List<String> models = available();
        if (!Files.isDirectory(store)) {
            return new InvalidInputException("model '" + name + "' not found: there is no Ollama store at " + store
                    + " (set OLLAMA_MODELS, or give --model a .gguf file)");
        }
        if (models.isEmpty()) {
            return new InvalidInputException("model '" + name + "' not found: the Ollama store at " + store
                    + " has no models (pull one with 'ollama pull " + name + "', or give --model a .gguf file)");
        }
        return new InvalidInputException("model '" + name + "' not found in the Ollama store at " + store
                + "; available: " + String.join(", ", models));
    }

    /** Whether {@code model} is taken as a path (rather than a model name) by {@link #resolve}. */
    public static boolean looksLikePath(String model) {
        return model.toLowerCase(Locale.ROOT).endsWith(".gguf") || model.startsWith("/") || model.startsWith("./")
                || model.startsWith("../") || model.startsWith("~") || model.contains("\\")
                || isFile(model);
    }

    private static boolean isFile(String model) {
        try {
            Path p = Path.of(model);
            return Files.isRegularFile(p) || Files.isRegularFile(p.resolve("config.json"));
        } catch (InvalidPathException e) {
            return false;
        }
    }

    private static Path expandHome(String model) {
        if (model.equals("~") || model.startsWith("~/")) {
            return Path.of(System.getProperty("user.home") + model.substring(1));
        }
        try {
            return Path.of(model);
        } catch (InvalidPathException e) {
            throw new InvalidInputException("'" + model + "' is not a valid file path: " + e.getReason());
        }
    }

    private static Path existingModel(Path path) {
        if (Files.isDirectory(path)) {
            if (Files.isRegularFile(path.resolve("config.json"))) return path;
            if (path.getFileName() != null && path.getFileName().toString().startsWith("models--") && Files.isDirectory(path.resolve("snapshots"))) {
                return snapshotOf(path);
            }
            throw new InvalidInputException("model folder " + path + " has no config.json: give a .gguf file, or a Hugging Face / MLX"
                    + " model folder (config.json, *.safetensors, tokenizer.json)");
        }
        if (!Files.exists(path)) throw new InvalidInputException("model file " + path + " does not exist");
        if (!Files.isReadable(path)) throw new InvalidInputException("model file " + path + " is not readable");
        return path;
    }
}
