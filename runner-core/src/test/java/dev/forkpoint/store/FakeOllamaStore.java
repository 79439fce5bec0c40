package dev.forkpoint.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** An Ollama model store in a temporary directory, laid out as Ollama writes it: manifests/… and blobs/sha256-…. */
public final class FakeOllamaStore {
    public static final String CONFIG_MEDIA_TYPE = "application/vnd.docker.container.image.v1+json";
    public static final String TEMPLATE_MEDIA_TYPE = "application/vnd.ollama.image.template";

    private final Path root;

    private FakeOllamaStore(Path root) {
        this.root = root;
    }

    public static FakeOllamaStore create(Path root) throws IOException {
        Files.createDirectories(root.resolve("blobs"));
        Files.createDirectories(root.resolve("manifests"));
        return new FakeOllamaStore(root);
    }

    public Path root() { return root; }

    /** Stores {@code content} as a blob; returns its digest "sha256:<hex>". */
    public String addBlob(byte[] content) throws IOException {
        String hex = sha256(content);
        Files.write(root.resolve("blobs").resolve("sha256-" + hex), content);
        return "sha256:" + hex;
    }

    public Path blob(String digest) { return root.resolve("blobs").resolve(digest.replace(':', '-')); }

    /** A GGUF model under the default registry, with config and template layers beside it as Ollama has them. */
    public Path addModel(String namespace, String name, String tag, byte[] gguf) throws IOException {
        return addModel("registry.ollama.ai", namespace, name, tag, gguf);
    }

    public Path addModel(String host, String namespace, String name, String tag, byte[] gguf) throws IOException {
        String model = addBlob(gguf);
        byte[] config = "{\"model_format\":\"gguf\",\"model_family\":\"llama\"}".getBytes();
        String configDigest = addBlob(config);
        byte[] template = "{{ .Prompt }}".getBytes();
        String templateDigest = addBlob(template);
        addManifest(host, namespace, name, tag, """
                {"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
                 "config":{"mediaType":"%s","digest":"%s","size":%d},
                 "layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"%s","size":%d},
                           {"mediaType":"%s","digest":"%s","size":%d}]}
                """.formatted(CONFIG_MEDIA_TYPE, configDigest, config.length, model, gguf.length,
                TEMPLATE_MEDIA_TYPE, templateDigest, template.length));
        return blob(model);
    }

    /** Writes a manifest file as given. */
    public Path addManifest(String host, String namespace, String name, String tag, String json) throws IOException {
        Path file = root.resolve("manifests").resolve(host).resolve(namespace).resolve(name).resolve(tag);
        Files.createDirectories(file.getParent());
        Files.writeString(file, json);
        return file;
    }

    public static String sha256(byte[] content) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
