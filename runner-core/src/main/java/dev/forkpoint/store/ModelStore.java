package dev.forkpoint.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Writes the local Ollama store as Ollama lays it out, so that Ollama reads what Forkpoint wrote: content-addressed
 * blobs {@code blobs/sha256-<hex>} and JSON manifests {@code manifests/<host>/<namespace>/<model>/<tag>}
 * (schemaVersion 2, a config blob of media type {@value #CONFIG_MEDIA_TYPE}, layers for the GGUF, TEMPLATE, SYSTEM and
 * the params JSON). Every file is written to a temporary file beside it and renamed into place, so a reader sees the
 * old file or the new one; a create that fails removes the blobs it added that no manifest references.
 * All changes are serialised on this store.
 */
public final class ModelStore {
    public static final String MANIFEST_MEDIA_TYPE = "application/vnd.docker.distribution.manifest.v2+json";
    public static final String CONFIG_MEDIA_TYPE = "application/vnd.docker.container.image.v1+json";
    public static final String TEMPLATE_MEDIA_TYPE = "application/vnd.ollama.image.template";
    public static final String SYSTEM_MEDIA_TYPE = "application/vnd.ollama.image.system";
    public static final String PARAMS_MEDIA_TYPE = "application/vnd.ollama.image.params";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Object LOCK = new Object();   // one writer at a time, whichever store object

    private final Path root;
    private final ModelResolver resolver;

    public ModelStore(Path root) {
        this.root = root;
        this.resolver = new ModelResolver(root);
    }

    public Path root() { return root; }

    /**
     * What a created model is made of.
     *
     * @param from       a GGUF path on this machine or a model in the store (null when {@code fromBlob} is given)
     * @param fromBlob   the digest ("sha256:<hex>") of an uploaded GGUF blob, or null
     * @param template   TEMPLATE, or null to keep the base's
     * @param system     SYSTEM, or null to keep the base's
     * @param parameters typed parameters ({@link ModelParams}); merged over the base model's
     */
    public record Spec(String from, String fromBlob, String template, String system, Map<String, Object> parameters) {}

    /** A layer of a manifest. */
    public record Layer(String mediaType, String digest, long size) {}

    /** Creates (or replaces) model {@code name}; {@code progress} gets Ollama's status lines. */
    public void create(String name, Spec spec, Consumer<String> progress) {
        OllamaName target = OllamaName.parse(name);
        synchronized (LOCK) {
            List<Path> added = new ArrayList<>();
            try {
                List<Layer> layers = new ArrayList<>();
                Map<String, Object> params = new TreeMap<>();
                Path ggufBlob;
                if (spec.fromBlob() != null) {
                    String d = spec.fromBlob();
                    if (!d.matches("sha256:[0-9a-f]{64}")) throw new InvalidInputException("files: '" + d + "' is not a sha256:<64 hex> digest");
                    ggufBlob = blob(d);
                    if (!Files.isRegularFile(ggufBlob)) throw new InvalidInputException("files: blob " + d + " is not in the store; upload it with POST /api/blobs/" + d);
                    requireGguf(ggufBlob, "files");
                    progress.accept("using existing layer " + d);
                    layers.add(new Layer(ModelResolver.MODEL_MEDIA_TYPE, d, Files.size(ggufBlob)));
                } else if (spec.from() == null || spec.from().isBlank()) {
                    throw new InvalidInputException("from: a FROM model or GGUF file is required");
                } else if (isPath(spec.from())) {
                    Path file = Path.of(spec.from().startsWith("~/") ? System.getProperty("user.home") + spec.from().substring(1) : spec.from());
                    if (Files.isDirectory(file)) {
                        throw new InvalidInputException("from: " + file + " is a folder; Forkpoint creates models from a GGUF file"
                                + " (convert a safetensors folder with 'forkpoint convert … --to gguf' first)");
                    }
                    if (!Files.isRegularFile(file)) throw new InvalidInputException("from: the file " + file + " does not exist");
                    requireGguf(file, "from");
                    progress.accept("copying file " + file);
                    String d = writeBlob(file, added);
                    progress.accept((added.isEmpty() ? "using existing layer " : "creating new layer ") + d);
                    layers.add(new Layer(ModelResolver.MODEL_MEDIA_TYPE, d, Files.size(file)));
                } else {
                    OllamaName base;
                    try {
                        base = OllamaName.parse(spec.from());
                    } catch (InvalidInputException e) {
                        throw new InvalidInputException("from: " + e.getMessage());
                    }
                    Path manifest = resolver.manifest(base).orElseThrow(() -> new InvalidInputException(
                            "from: model '" + spec.from() + "' is neither a file on this machine nor a model in the store at " + root));
                    for (Layer l : layers(manifest)) {
                        if (l.mediaType().equals(PARAMS_MEDIA_TYPE)) {
                            params.putAll(ModelParams.read(JSON.readTree(blob(l.digest()).toFile())));
                            continue;
                        }
                        if (l.mediaType().equals(TEMPLATE_MEDIA_TYPE) && spec.template() != null) continue;
                        if (l.mediaType().equals(SYSTEM_MEDIA_TYPE) && spec.system() != null) continue;
                        if (!Files.isRegularFile(blob(l.digest()))) throw new InvalidInputException("from: blob " + l.digest() + " of " + base + " is missing");
                        progress.accept("using existing layer " + l.digest());
                        layers.add(l);
                    }
                }
                if (spec.template() != null) layers.add(textLayer(TEMPLATE_MEDIA_TYPE, spec.template().getBytes(StandardCharsets.UTF_8), added, progress));
                if (spec.system() != null) layers.add(textLayer(SYSTEM_MEDIA_TYPE, spec.system().getBytes(StandardCharsets.UTF_8), added, progress));
                if (spec.parameters() != null) params.putAll(spec.parameters());
                if (!params.isEmpty()) layers.add(textLayer(PARAMS_MEDIA_TYPE, ModelParams.toJson(params), added, progress));
                Layer model = layers.stream().filter(l -> l.mediaType().equals(ModelResolver.MODEL_MEDIA_TYPE)).findFirst()
                        .orElseThrow(() -> new InvalidInputException("from: the base model has no GGUF layer (safetensors models cannot be derived)"));
                Layer config = textLayer(CONFIG_MEDIA_TYPE, config(blob(model.digest()), layers), added, progress);
                progress.accept("writing manifest");
                ObjectNode m = JSON.createObjectNode();
                m.put("schemaVersion", 2);
                m.put("mediaType", MANIFEST_MEDIA_TYPE);
                m.set("config", layerJson(config));
                ArrayNode a = m.putArray("layers");
                for (Layer l : layers) a.add(layerJson(l));
                Path manifestFile = manifestPath(target);
                Set<String> replaced = Files.isRegularFile(manifestFile) ? digests(manifestFile) : Set.of();
                writeAtomically(manifestFile, JSON.writeValueAsBytes(m));
                pruneUnreferenced(replaced);   // the replaced model's blobs that nothing uses any more
            } catch (IOException | RuntimeException e) {
                for (Path p : added) {
                    try {
                        if (!referenced().contains(p.getFileName().toString().replace('-', ':'))) Files.deleteIfExists(p);
                    } catch (IOException ignored) {
                        // left for a later prune
                    }
                }
                if (e instanceof IOException io) throw new UncheckedIOException("cannot write the Ollama store at " + root + ": " + io.getMessage(), io);
                throw (RuntimeException) e;
            }
        }
    }

    /** Copies {@code source}'s manifest to {@code destination} (the blobs are shared). */
    public void copy(String source, String destination) {
        OllamaName from = OllamaName.parse(source);
        OllamaName to;
        try {
            to = OllamaName.parse(destination);
        } catch (InvalidInputException e) {
            throw new InvalidInputException("destination: " + e.getMessage());
        }
        synchronized (LOCK) {
            Path manifest = resolver.manifest(from).orElseThrow(() -> new ModelMissingException("model '" + source + "' not found"));
            try {
                writeAtomically(manifestPath(to), Files.readAllBytes(manifest));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot copy " + source + " to " + destination + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Deletes {@code name}'s manifest, then the blobs of its layers (and config) that no other manifest references;
     * returns the canonical name deleted.
     */
    public String delete(String name) {
        OllamaName n = OllamaName.parse(name);
        synchronized (LOCK) {
            Path manifest = resolver.manifest(n).orElseThrow(() -> new ModelMissingException("model '" + name + "' not found"));
            try {
                Set<String> digests = digests(manifest);
                String canonical = manifestName(manifest);
                Files.delete(manifest);
                for (Path dir = manifest.getParent(); !dir.equals(root.resolve("manifests")); dir = dir.getParent()) {
                    try (Stream<Path> s = Files.list(dir)) {
                        if (s.findAny().isPresent()) break;
                    }
                    Files.delete(dir);
                }
                pruneUnreferenced(digests);
                return canonical;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot delete " + name + " from " + root + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Stores an uploaded blob ({@code POST /api/blobs/<digest>}): written to a temporary file, hashed, renamed into
     * place only when the content's sha256 is {@code digest}.
     */
    public void putBlob(String digest, InputStream content) {
        if (!digest.matches("sha256:[0-9a-f]{64}")) throw new InvalidInputException("digest: '" + digest + "' is not sha256:<64 hex digits>");
        try {
            Path blobs = Files.createDirectories(root.resolve("blobs"));
            Path tmp = Files.createTempFile(blobs, "sha256-", "-partial");
            try {
                String got;
                try (OutputStream out = Files.newOutputStream(tmp); DigestOutputStream d = new DigestOutputStream(out, sha256())) {
                    content.transferTo(d);
                    got = "sha256:" + HexFormat.of().formatHex(d.getMessageDigest().digest());
                }
                if (!got.equals(digest)) throw new InvalidInputException("digest: the content's digest is " + got + ", not " + digest);
                move(tmp, blob(digest));
            } finally {
                Files.deleteIfExists(tmp);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write blob " + digest + ": " + e.getMessage(), e);
        }
    }

    public boolean hasBlob(String digest) {
        return digest.matches("sha256:[0-9a-f]{64}") && Files.isRegularFile(blob(digest));
    }

    /** The layers of a manifest file. */
    public static List<Layer> layers(Path manifest) throws IOException {
        List<Layer> out = new ArrayList<>();
        for (JsonNode l : JSON.readTree(manifest.toFile()).path("layers")) {
            out.add(new Layer(l.path("mediaType").asText(), l.path("digest").asText(), l.path("size").asLong()));
        }
        return out;
    }

    /** A model's params, SYSTEM and TEMPLATE layers (empty / null when it has none). */
    public record Extras(Map<String, Object> parameters, String system, String template) {
        public static final Extras NONE = new Extras(Map.of(), null, null);
    }

    /** The extras of {@code name} in the store at {@code root}; NONE when it has none or cannot be read. */
    public static Extras extras(Path root, OllamaName name) {
        Optional<Path> manifest = new ModelResolver(root).manifest(name);
        if (manifest.isEmpty()) return Extras.NONE;
        Map<String, Object> params = Map.of();
        String system = null, template = null;
        try {
            for (Layer l : layers(manifest.get())) {
                Path b = root.resolve("blobs").resolve(l.digest().replace(':', '-'));
                if (!l.digest().matches("sha256:[0-9a-f]{64}") || !Files.isRegularFile(b)) continue;
                switch (l.mediaType()) {
                    case PARAMS_MEDIA_TYPE -> params = ModelParams.read(JSON.readTree(b.toFile()));
                    case SYSTEM_MEDIA_TYPE -> system = Files.readString(b);
                    case TEMPLATE_MEDIA_TYPE -> template = Files.readString(b);
                    default -> { }
                }
            }
        } catch (IOException | RuntimeException e) {
            return Extras.NONE;
        }
        return new Extras(params, system, template);
    }

    // ---- internals ----

    private static boolean isPath(String from) {
        if (ModelResolver.looksLikePath(from)) return true;
        try {
            return Files.exists(Path.of(from));
        } catch (java.nio.file.InvalidPathException e) {
            return false;
        }
    }

    /** The digests a manifest names (config and layers); empty when it cannot be read. */
    private static Set<String> digests(Path manifest) {
        Set<String> digests = new HashSet<>();
        try {
            JsonNode m = JSON.readTree(manifest.toFile());
            digests.add(m.path("config").path("digest").asText());
            for (JsonNode l : m.path("layers")) digests.add(l.path("digest").asText());
        } catch (IOException ignored) {
            // a broken manifest: its blobs are left alone
        }
        return digests;
    }

    /** Removes the blobs among {@code digests} that no manifest references. */
    private void pruneUnreferenced(Set<String> digests) throws IOException {
        if (digests.isEmpty()) return;
        Set<String> used = referenced();
        for (String d : digests) {
            if (d.matches("sha256:[0-9a-f]{64}") && !used.contains(d)) Files.deleteIfExists(blob(d));
        }
    }

    private Path blob(String digest) { return root.resolve("blobs").resolve(digest.replace(':', '-')); }

    private Path manifestPath(OllamaName n) {
        return root.resolve("manifests").resolve(n.host()).resolve(n.namespace()).resolve(n.model()).resolve(n.tag());
    }

    private String manifestName(Path manifest) {
        Path rel = root.resolve("manifests").relativize(manifest);
        return new OllamaName(rel.getName(0).toString(), rel.getName(1).toString(), rel.getName(2).toString(), rel.getName(3).toString()).displayName();
    }

    /** Every digest a manifest in the store references (config and layers). */
    private Set<String> referenced() throws IOException {
        Set<String> used = new HashSet<>();
        Path manifests = root.resolve("manifests");
        if (!Files.isDirectory(manifests)) return used;
        List<Path> files;
        try (Stream<Path> s = Files.find(manifests, 8, (p, a) -> a.isRegularFile())) {
            files = s.toList();
        }
        for (Path f : files) {
            try {
                JsonNode m = JSON.readTree(f.toFile());
                used.add(m.path("config").path("digest").asText());
                for (JsonNode l : m.path("layers")) used.add(l.path("digest").asText());
            } catch (IOException ignored) {
                // not a manifest
            }
        }
        return used;
    }

    private static void requireGguf(Path file, String field) throws IOException {
        byte[] magic = new byte[4];
        try (InputStream in = Files.newInputStream(file)) {
            if (in.readNBytes(magic, 0, 4) != 4 || !new String(magic, StandardCharsets.ISO_8859_1).equals("GGUF")) {
                throw new InvalidInputException(field + ": " + file.getFileName() + " is not a GGUF file (no GGUF magic)");
            }
        }
    }

    /** Copies {@code file} into blobs/ (hashing as it goes); returns its digest; records the blob in added when new. */
    private String writeBlob(Path file, List<Path> added) throws IOException {
        Path blobs = Files.createDirectories(root.resolve("blobs"));
        Path tmp = Files.createTempFile(blobs, "sha256-", "-partial");
        try {
            String digest;
            try (InputStream in = Files.newInputStream(file); OutputStream out = Files.newOutputStream(tmp);
                 DigestOutputStream d = new DigestOutputStream(out, sha256())) {
                in.transferTo(d);
                digest = "sha256:" + HexFormat.of().formatHex(d.getMessageDigest().digest());
            }
            Path target = blob(digest);
            if (!Files.isRegularFile(target)) {
                move(tmp, target);
                added.add(target);
            }
            return digest;
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private Layer textLayer(String mediaType, byte[] content, List<Path> added, Consumer<String> progress) throws IOException {
        String digest = "sha256:" + HexFormat.of().formatHex(sha256().digest(content));
        Path target = blob(digest);
        if (!Files.isRegularFile(target)) {
            writeAtomically(target, content);
            added.add(target);
            if (!mediaType.equals(CONFIG_MEDIA_TYPE)) progress.accept("creating new layer " + digest);
        } else if (!mediaType.equals(CONFIG_MEDIA_TYPE)) {
            progress.accept("using existing layer " + digest);
        }
        return new Layer(mediaType, digest, content.length);
    }

    /** The config blob: Ollama's ConfigV2 fields read from the GGUF, rootfs listing the layers. */
    private static byte[] config(Path gguf, List<Layer> layers) throws IOException {
        Map<String, Object> c = new LinkedHashMap<>();
        String arch = "", fileType = "";
        long params = 0;
        try (GgufFile f = GgufFile.open(gguf)) {
            arch = f.getString("general.architecture", "");
            if (f.has("general.file_type")) fileType = fileTypeName(f.getInt("general.file_type"));
            for (GgufTensor t : f.tensors()) params += t.elementCount();
        } catch (RuntimeException e) {
            // a GGUF Forkpoint cannot read fully still gets a config
        }
        c.put("model_format", "gguf");
        c.put("model_family", arch);
        c.put("model_families", arch.isEmpty() ? null : List.of(arch));
        c.put("model_type", humanCount(params));
        c.put("file_type", fileType);
        c.put("architecture", "amd64");
        c.put("os", "linux");
        Map<String, Object> rootfs = new LinkedHashMap<>();
        rootfs.put("type", "layers");
        rootfs.put("diff_ids", layers.stream().map(Layer::digest).toList());
        c.put("rootfs", rootfs);
        return JSON.writeValueAsBytes(c);
    }

    static String humanCount(long n) {
        if (n >= 1_000_000_000L) return String.format(java.util.Locale.ROOT, "%.1fB", n / 1e9);
        if (n >= 1_000_000L) return String.format(java.util.Locale.ROOT, "%.2fM", n / 1e6);
        if (n >= 1_000L) return String.format(java.util.Locale.ROOT, "%.2fK", n / 1e3);
        return Long.toString(n);
    }

    private static String fileTypeName(int t) {
        return switch (t) {
            case 0 -> "F32"; case 1 -> "F16"; case 2 -> "Q4_0"; case 3 -> "Q4_1"; case 7 -> "Q8_0"; case 8 -> "Q5_0";
            case 9 -> "Q5_1"; case 10 -> "Q2_K"; case 11 -> "Q3_K_S"; case 12 -> "Q3_K_M"; case 13 -> "Q3_K_L";
            case 14 -> "Q4_K_S"; case 15 -> "Q4_K_M"; case 16 -> "Q5_K_S"; case 17 -> "Q5_K_M"; case 18 -> "Q6_K";
            case 32 -> "BF16";
            default -> "unknown";
        };
    }

    private static ObjectNode layerJson(Layer l) {
        ObjectNode o = JSON.createObjectNode();
        o.put("mediaType", l.mediaType());
        o.put("digest", l.digest());
        o.put("size", l.size());
        return o;
    }

    private static void writeAtomically(Path target, byte[] content) throws IOException {
        Files.createDirectories(target.getParent());
        Path tmp = Files.createTempFile(target.getParent(), "." + target.getFileName(), ".tmp");
        try {
            Files.write(tmp, content);
            move(tmp, target);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static void move(Path tmp, Path target) throws IOException {
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** The model named is not in the store (a 404). */
    public static final class ModelMissingException extends RuntimeException {
        public ModelMissingException(String message) { super(message); }
    }
}
