package dev.forkpoint.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.hf.HfConfig;
import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.tokenizer.Tokenizer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A Hugging Face / mlx-community model folder: {@code config.json}, {@code model.safetensors} (or shards with
 * {@code model.safetensors.index.json}), the tokenizer files ({@code tokenizer.json}, {@code tokenizer_config.json},
 * {@code generation_config.json}) and the chat template ({@code tokenizer_config.json}'s {@code chat_template} or a
 * {@code chat_template.jinja} file). An Ollama safetensors model (a manifest of tensor blobs and named JSON blobs) is
 * opened as such a folder assembled from links to its blobs.
 */
final class SafetensorsModelFiles implements ModelFiles {
    private static final Pattern DIGEST = Pattern.compile("sha256:([0-9a-f]{64})");

    private final Path path;
    private final Path folder;
    private final Path linkFolder;   // the folder of links to an Ollama model's blobs, removed on close; or null
    private final SafetensorsShards shards;
    private final Architecture.Spec spec;
    private final ModelConfig config;
    private final SafetensorsTensors tensors;
    private final Tokenizer tokenizer;
    private final String chatTemplate;
    private final Pooling pooling;
    private final String displayName;

    private SafetensorsModelFiles(Path path, Path folder, Path linkFolder, SafetensorsShards shards, String displayName) throws IOException {
        this.path = path;
        this.folder = folder;
        this.linkFolder = linkFolder;
        this.shards = shards;
        this.displayName = displayName;
        HfConfig hf = HfConfig.read(folder.resolve(HfConfig.FILE));
        this.spec = Architectures.named(hf.modelType(), hf.file(), "model_type");
        this.config = ModelConfig.fromHf(hf, spec);
        this.tensors = new SafetensorsTensors(path, shards, hf.quantization(), hf.file(), spec.tensorNames());
        this.tokenizer = Tokenizer.fromPath(folder);
        this.chatTemplate = chatTemplate(folder);
        this.pooling = Pooling.fromFolder(folder);
    }

    static SafetensorsModelFiles open(Path folder) throws IOException {
        return open(folder, folder, null, defaultName(folder));
    }

    private static SafetensorsModelFiles open(Path path, Path folder, Path linkFolder, String name) throws IOException {
        if (!Files.isRegularFile(folder.resolve(HfConfig.FILE))) {
            throw new ModelFormatException(path, HfConfig.FILE, "missing: a model folder needs config.json, safetensors weights and tokenizer files");
        }
        Path configFile = folder.resolve(HfConfig.FILE);
        Architectures.named(HfConfig.modelType(configFile), configFile, "model_type");   // an unknown type is named first
        SafetensorsShards shards = SafetensorsShards.open(folder);
        try {
            return new SafetensorsModelFiles(path, folder, linkFolder, shards, name);
        } catch (IOException | RuntimeException | Error e) {
            shards.close();
            throw e;
        }
    }

    /** "ORG/NAME" for a Hugging Face cache snapshot (…/models--ORG--NAME/snapshots/REV), else the folder's name. */
    private static String defaultName(Path folder) {
        Path real = folder.toAbsolutePath().normalize();
        Path parent = real.getParent(), repo = parent == null ? null : parent.getParent();
        if (parent != null && repo != null && parent.getFileName().toString().equals("snapshots")
                && repo.getFileName().toString().startsWith("models--")) {
            return repo.getFileName().toString().substring("models--".length()).replace("--", "/");
        }
        return real.getFileName() == null ? real.toString() : real.getFileName().toString();
    }

    /**
     * Opens an Ollama manifest whose layers are safetensors tensor blobs ({@code application/vnd.ollama.image.tensor})
     * and named JSON blobs ({@code application/vnd.ollama.image.json}: config.json, tokenizer.json, …). The store is
     * the manifest's {@code manifests/<host>/<namespace>/<model>/<tag>} root.
     */
    static SafetensorsModelFiles openOllamaManifest(Path manifest) throws IOException {
        JsonNode root = dev.forkpoint.format.JsonFile.read(manifest, "manifest");
        JsonNode layers = root == null ? null : root.get("layers");
        if (layers == null || !layers.isArray()) throw new ModelFormatException(manifest, "layers", "missing: not an Ollama manifest");
        Path store = manifest.toAbsolutePath().normalize();
        for (int i = 0; i < 5 && store != null; i++) store = store.getParent();
        if (store == null) throw new ModelFormatException(manifest, "manifest", "is not inside an Ollama store (manifests/<host>/<namespace>/<model>/<tag>)");
        Path links = Files.createTempDirectory("forkpoint-ollama-");
        try {
            int tensorsSeen = 0;
            for (JsonNode layer : layers) {
                String mediaType = layer.path("mediaType").asText("");
                boolean tensor = mediaType.startsWith("application/vnd.ollama.image.tensor");
                boolean json = mediaType.startsWith("application/vnd.ollama.image.json");
                if (!tensor && !json) continue;
                String digest = layer.path("digest").asText("");
                var m = DIGEST.matcher(digest);
                if (!m.matches()) throw new ModelFormatException(manifest, "layers[].digest", "'" + digest + "' is not sha256:<64 hex digits>");
                Path blob = store.resolve("blobs").resolve("sha256-" + m.group(1));
                String name = layer.path("name").asText("");
                if (!Files.isRegularFile(blob)) {
                    throw new ModelFormatException(manifest, "layer " + (name.isEmpty() ? digest : name), "blob " + blob + " is missing from the store");
                }
                String link;
                if (tensor) {
                    link = String.format("tensor-%05d.safetensors", tensorsSeen++);
                } else {
                    if (name.isEmpty() || name.contains("/") || name.contains("\\") || name.startsWith(".")) {
                        throw new ModelFormatException(manifest, "layer " + digest + " name", "a JSON layer needs a plain file name, found '" + name + "'");
                    }
                    link = name;
                }
                Files.createSymbolicLink(links.resolve(link), blob);
            }
            if (tensorsSeen == 0) throw new ModelFormatException(manifest, "layers", "no application/vnd.ollama.image.tensor layer");
            Path rel = store.resolve("manifests").relativize(manifest.toAbsolutePath().normalize());
            String name = rel.getNameCount() == 4 ? rel.getName(2) + ":" + rel.getName(3) : manifest.getFileName().toString();
            return open(manifest, links, links, name);
        } catch (IOException | RuntimeException | Error e) {
            deleteLinks(links);
            throw e;
        }
    }

    private static String chatTemplate(Path folder) throws IOException {
        Path jinja = folder.resolve("chat_template.jinja");
        if (Files.isRegularFile(jinja)) return Files.readString(jinja);
        for (String file : List.of("tokenizer_config.json", "chat_template.json")) {
            var node = HfConfig.optionalJson(folder.resolve(file)).map(n -> n.get("chat_template")).orElse(null);
            if (node == null || node.isNull()) continue;
            if (node.isTextual()) return node.asText();
            if (node.isArray()) {   // [{"name": "default", "template": …}, {"name": "tool_use", …}]
                JsonNode first = null;
                for (JsonNode t : node) {
                    if (first == null) first = t;
                    if (t.path("name").asText("").equals("default")) return t.path("template").asText(null);
                }
                if (first != null) return first.path("template").asText(null);
            }
            throw new ModelFormatException(folder.resolve(file), "chat_template", "must be a string or a list of {name, template}");
        }
        return null;
    }

    public Path path() { return path; }

    public List<Path> contentFiles() {
        List<Path> files = new ArrayList<>();
        files.add(folder.resolve(HfConfig.FILE));
        for (SafetensorsFile f : shards.files()) files.add(f.path());
        return files;
    }

    public String displayName() { return displayName; }
    public Architecture.Spec spec() { return spec; }
    public ModelConfig config() { return config; }
    public ModelTensors tensors() { return tensors; }
    public Tokenizer tokenizer() { return tokenizer; }
    public Pooling pooling() { return pooling; }
    public String chatTemplate() { return chatTemplate; }
    public Map<String, Integer> tensorTypes() { return tensors.types(); }
    public long parameterCount() { return tensors.parameterCount(); }

    public void close() {
        shards.close();
        if (linkFolder != null) deleteLinks(linkFolder);
    }

    private static void deleteLinks(Path links) {
        try (Stream<Path> s = Files.walk(links)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a temporary folder of links; nothing to lose
        }
    }
}
