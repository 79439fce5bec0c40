package dev.forkpoint.bench.probe;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.InvalidInputException;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The few Ollama API calls the probe makes, over plain HTTP/1.1 ({@code java.net.http}): {@code GET /api/version},
 * {@code POST /api/show}, {@code GET /api/tags} and streamed {@code POST /api/chat} or {@code /api/generate} (NDJSON).
 * Works against Ollama itself and against Forkpoint. Every failure becomes a {@link ProbeException} whose one-line
 * message names the URL (and the model where one is involved) and what the server said.
 */
final class OllamaClient {
    static final ObjectMapper JSON = new ObjectMapper();

    private final URI base;
    private final HttpClient http;
    private final Duration requestTimeout;

    /** {@code url} is the server's root, e.g. {@code http://127.0.0.1:11434}; anything else than http(s) is refused. */
    OllamaClient(String url, Duration requestTimeout) {
        this.base = parse(url);
        this.requestTimeout = requestTimeout;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
    }

    private static URI parse(String url) {
        try {
            URI u = new URI(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            if (!(scheme.equals("http") || scheme.equals("https")) || u.getHost() == null) {
                throw new InvalidInputException("--url must be an http:// or https:// URL with a host, got '" + url + "'");
            }
            return u;
        } catch (URISyntaxException e) {
            throw new InvalidInputException("--url is not a valid URL: '" + url + "' (" + e.getReason() + ")");
        }
    }

    String url() { return base.toString(); }

    /** {@code GET /api/version}'s {@code version}. */
    String version() {
        JsonNode v = getJson("/api/version", null);
        if (!v.hasNonNull("version")) throw new ProbeException(base + "/api/version answered without a \"version\" field: " + abbreviate(v.toString()));
        return v.get("version").asText();
    }

    /**
     * Checks that the server knows {@code model} ({@code POST /api/show}: 404 names it) and returns its digest: the
     * {@code digest} that {@code GET /api/tags} lists for it (Ollama's manifest digest, Forkpoint's file sha256), else
     * {@code model_info["general.file_sha256"]} of /api/show, else null.
     */
    String modelDigest(String model) {
        ObjectNode body = JSON.createObjectNode().put("model", model);
        JsonNode show = postJson("/api/show", body, model);
        JsonNode tags = getJson("/api/tags", model);
        for (JsonNode m : tags.path("models")) {
            if (sameModel(model, m.path("name").asText()) || sameModel(model, m.path("model").asText())) {
                String d = m.path("digest").asText("");
                if (!d.isEmpty()) return d;
            }
        }
        String sha = show.path("model_info").path("general.file_sha256").asText("");
        return sha.isEmpty() ? null : sha;
    }

    /** The context a server gives requests for a model, and where that was read. */
    record ServerContext(int numCtx, String source) {}

    /**
     * The context the server gives {@code model}'s requests (call it once the model is loaded): {@code GET /api/ps}'s
     * {@code context_length} for it (Forkpoint, recent Ollama), else {@code num_ctx} in {@code POST /api/show}'s
     * {@code parameters}, else the smaller of the model's trained context ({@code model_info["<arch>.context_length"]})
     * and Ollama's default 4096; null when the server says none of these.
     */
    ServerContext context(String model) {
        try {
            for (JsonNode m : getJson("/api/ps", model).path("models")) {
                if ((sameModel(model, m.path("name").asText()) || sameModel(model, m.path("model").asText()))
                        && m.path("context_length").asInt(0) > 0) {
                    return new ServerContext(m.get("context_length").asInt(), "/api/ps context_length");
                }
            }
        } catch (ProbeException e) {
            // a server without /api/ps: ask /api/show
        }
        JsonNode show = postJson("/api/show", JSON.createObjectNode().put("model", model), model);
        var numCtx = java.util.regex.Pattern.compile("(?m)^\\s*num_ctx\\s+(\\d+)").matcher(show.path("parameters").asText(""));
        if (numCtx.find()) return new ServerContext(Integer.parseInt(numCtx.group(1)), "/api/show parameters num_ctx");
        for (var it = show.path("model_info").fields(); it.hasNext(); ) {
            var e = it.next();
            if (e.getKey().endsWith(".context_length") && e.getValue().asInt(0) > 0) {
                int trained = e.getValue().asInt();
                return trained <= OLLAMA_DEFAULT_NUM_CTX ? new ServerContext(trained, "the model's trained context, /api/show " + e.getKey())
                        : new ServerContext(OLLAMA_DEFAULT_NUM_CTX, "Ollama's default; the model's trained context is " + trained);
            }
        }
        return null;
    }

    /** Ollama's default num_ctx. */
    static final int OLLAMA_DEFAULT_NUM_CTX = 4096;

    /** Ollama's name matching: case-insensitive, ":latest" implied; a file name also without ".gguf". */
    static boolean sameModel(String asked, String listed) {
        return canonical(asked).equals(canonical(listed));
    }

    private static String canonical(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        if (n.endsWith(":latest")) n = n.substring(0, n.length() - ":latest".length());
        if (n.endsWith(".gguf")) n = n.substring(0, n.length() - ".gguf".length());
        return n;
    }

    /**
     * Streams one completion ({@code path} is /api/chat or /api/generate, {@code body} has "stream": true) and times
     * it. A non-200 status or an {@code {"error": …}} line in the stream throws, naming the model.
     */
    ServerReply stream(String path, ObjectNode body, String model) {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(path)).timeout(requestTimeout)
                .header("Content-Type", "application/json").header("Accept", "application/x-ndjson")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
        long sent = System.nanoTime();
        HttpResponse<Stream<String>> response = send(request, HttpResponse.BodyHandlers.ofLines(), model);
        List<Long> chunks = new ArrayList<>();
        try (Stream<String> lines = response.body()) {
            if (response.statusCode() != 200) {
                throw httpError(request, response.statusCode(), lines.collect(Collectors.joining("\n")), model);
            }
            for (Iterator<String> it = lines.iterator(); it.hasNext(); ) {
                String line = it.next();
                long now = System.nanoTime();
                if (line.isBlank()) continue;
                JsonNode chunk = readJson(line, request);
                if (chunk.has("error")) {
                    throw new ProbeException(describe(request) + " for model '" + model + "' failed mid-stream: " + errorText(chunk));
                }
                String text = chunk.has("message") ? chunk.path("message").path("content").asText("") : chunk.path("response").asText("");
                if (chunk.path("done").asBoolean(false)) return new ServerReply(sent, toArray(chunks), now, chunk);
                if (!text.isEmpty()) chunks.add(now);
            }
        } catch (java.io.UncheckedIOException e) {
            throw new ProbeException(describe(request) + " for model '" + model + "': the connection broke mid-stream (" + e.getCause() + ")", e);
        }
        throw new ProbeException(describe(request) + " for model '" + model + "': the stream ended without a final \"done\": true chunk");
    }

    private JsonNode getJson(String path, String model) {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(path)).timeout(requestTimeout).GET().build();
        return json(request, model);
    }

    private JsonNode postJson(String path, ObjectNode body, String model) {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(path)).timeout(requestTimeout)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
        return json(request, model);
    }

    private JsonNode json(HttpRequest request, String model) {
        HttpResponse<String> r = send(request, HttpResponse.BodyHandlers.ofString(), model);
        if (r.statusCode() != 200) throw httpError(request, r.statusCode(), r.body(), model);
        return readJson(r.body(), request);
    }

    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler, String model) {
        try {
            return http.send(request, handler);
        } catch (HttpConnectTimeoutException e) {
            throw new ProbeException("cannot reach " + base + ": no connection within 10 s", e);
        } catch (HttpTimeoutException e) {
            throw new ProbeException(describe(request) + (model == null ? "" : " for model '" + model + "'")
                    + ": no answer within " + requestTimeout.toSeconds() + " s (--timeout)", e);
        } catch (ConnectException e) {
            Throwable why = e.getCause() != null ? e.getCause() : e;
            String reason = why.getMessage() != null ? why.getMessage() : "connection refused";
            throw new ProbeException("cannot reach " + base + " (" + reason + "); is the server running there?", e);
        } catch (IOException e) {
            throw new ProbeException(describe(request) + " failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ProbeException(describe(request) + " was interrupted", e);
        }
    }

    private ProbeException httpError(HttpRequest request, int status, String body, String model) {
        String said;
        try {
            JsonNode n = JSON.readTree(body);
            said = n != null && n.has("error") ? errorText(n) : abbreviate(body);
        } catch (JsonProcessingException e) {
            said = abbreviate(body);
        }
        String what = status == 404 && model != null ? "model '" + model + "' is not available on " + base + ": "
                : describe(request) + (model == null ? "" : " for model '" + model + "'") + ": ";
        return new ProbeException(what + "HTTP " + status + (said.isBlank() ? "" : ", server said: " + said));
    }

    private static String errorText(JsonNode n) {
        JsonNode e = n.get("error");
        return e.isTextual() ? e.asText() : e.has("message") ? e.get("message").asText() : e.toString();
    }

    private static JsonNode readJson(String text, HttpRequest request) {
        try {
            return JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new ProbeException(describe(request) + " answered with something that is not JSON: " + abbreviate(text)
                    + " (is this an Ollama-compatible server?)", e);
        }
    }

    private static String describe(HttpRequest request) {
        return request.method() + " " + request.uri();
    }

    private static String abbreviate(String s) {
        String one = s.strip().replaceAll("\\s+", " ");
        return one.length() <= 200 ? one : one.substring(0, 200) + "…";
    }

    private static long[] toArray(List<Long> list) {
        long[] a = new long[list.size()];
        for (int i = 0; i < a.length; i++) a[i] = list.get(i);
        return a;
    }
}
