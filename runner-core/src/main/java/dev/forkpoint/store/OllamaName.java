package dev.forkpoint.store;

import dev.forkpoint.InvalidInputException;

import java.util.regex.Pattern;

/**
 * An Ollama model name, {@code [host/][namespace/]model[:tag]}, with Ollama's defaults filled in: host
 * {@value #DEFAULT_HOST}, namespace {@value #DEFAULT_NAMESPACE}, tag {@value #DEFAULT_TAG}. Every part is checked so
 * that a name can never point outside the store ("..", slashes in a part, and empty parts are refused).
 */
public record OllamaName(String host, String namespace, String model, String tag) {
    public static final String DEFAULT_HOST = "registry.ollama.ai";
    public static final String DEFAULT_NAMESPACE = "library";
    public static final String DEFAULT_TAG = "latest";

    private static final Pattern PART = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.\\-]{0,79}");
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.\\-]{0,253}(:[0-9]{1,5})?");
    private static final Pattern TAG = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.\\-]{0,127}");

    public OllamaName {
        check(host, HOST, "host");
        check(namespace, PART, "namespace");
        check(model, PART, "model");
        check(tag, TAG, "tag");
    }

    /** Parses {@code qwen3:0.6b}, {@code llama3.2}, {@code ns/name:tag} or {@code host/ns/name:tag}. */
    public static OllamaName parse(String name) {
        String rest = name;
        int at = rest.indexOf('@');                 // a pinned digest ("name@sha256:…") is not used for lookup
        if (at >= 0) rest = rest.substring(0, at);
        String tag = DEFAULT_TAG;
        int colon = rest.lastIndexOf(':');
        if (colon > rest.lastIndexOf('/')) {
            tag = rest.substring(colon + 1);
            rest = rest.substring(0, colon);
        }
        String[] parts = rest.split("/", -1);
        try {
            return switch (parts.length) {
                case 1 -> new OllamaName(DEFAULT_HOST, DEFAULT_NAMESPACE, parts[0], tag);
                case 2 -> new OllamaName(DEFAULT_HOST, parts[0], parts[1], tag);
                case 3 -> new OllamaName(parts[0], parts[1], parts[2], tag);
                default -> throw new InvalidInputException("too many '/'");
            };
        } catch (InvalidInputException e) {
            throw new InvalidInputException("'" + name + "' is neither a .gguf file nor an Ollama model name"
                    + " ([host/][namespace/]name[:tag]): " + e.getMessage());
        }
    }

    /** The shortest name that parses back to this one: "qwen3:0.6b", "user/model:tag", "host/ns/model:tag". */
    public String displayName() {
        if (!host.equals(DEFAULT_HOST)) return host + "/" + namespace + "/" + model + ":" + tag;
        if (!namespace.equals(DEFAULT_NAMESPACE)) return namespace + "/" + model + ":" + tag;
        return model + ":" + tag;
    }

    @Override
    public String toString() { return displayName(); }

    private static void check(String value, Pattern pattern, String what) {
        if (value == null || value.isEmpty()) throw new InvalidInputException("the " + what + " is empty");
        if (!pattern.matcher(value).matches() || value.contains("..")) {
            throw new InvalidInputException("the " + what + " '" + value + "' has characters a model name cannot have");
        }
    }
}
