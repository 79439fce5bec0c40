package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The client faults the soak injects. Each says what a correct server does with it ({@link Expect}), whether its error
 * must be a JSON body in the API's shape (API-level faults) or may be any 4xx, or a closed connection (HTTP-level
 * faults, which the HTTP layer may reject before any API sees them), whether it is tried on every API in the fault
 * matrix or on one, and how many variants it has.
 */
enum Fault {
    HUGE_MAX_TOKENS("huge-max-tokens", Expect.EITHER, true, true, 1, "num_predict / max_tokens = 2147483647 (streamed; dropped after 4 KiB)"),
    ZERO_MAX_TOKENS("zero-max-tokens", Expect.EITHER, true, true, 2, "num_predict / max_tokens = 0"),
    NEGATIVE_MAX_TOKENS("negative-max-tokens", Expect.EITHER, true, true, 1, "num_predict / max_tokens = -1 (streamed; dropped after 4 KiB)"),
    HUGE_NUM_CTX("huge-num-ctx", Expect.EITHER, true, true, 1, "options.num_ctx = 2147483647 (Ollama only)"),
    BAD_JSON("bad-json", Expect.REFUSE, true, true, 7, "truncated JSON, trailing garbage, not JSON, invalid UTF-8, a top-level array, 100k-deep nesting, NUL bytes"),
    WRONG_TYPES("wrong-types", Expect.REFUSE, true, true, 5, "max tokens \"many\", stream \"sometimes\", temperature \"hot\", model [1, 2], prompt/messages of the wrong type"),
    EMPTY_BODY("empty-body", Expect.REFUSE, true, true, 1, "Content-Length: 0"),
    UNKNOWN_MODEL("unknown-model", Expect.REFUSE, true, true, 1, "a model the server does not have"),
    WRONG_API_KEY("wrong-api-key", Expect.REFUSE, true, true, 1, "a wrong key in the API's header (only when the server has one)"),
    MISSING_API_KEY("missing-api-key", Expect.REFUSE, true, true, 1, "no key (only when the server has one)"),
    OVERSIZED_BODY("oversized-body", Expect.REFUSE, false, false, 2, "max body + 1 KiB, declared or chunked"),
    TRUNCATED_BODY("truncated-body", Expect.REFUSE, false, false, 1, "half of the declared Content-Length, then the client half-closes"),
    MALFORMED_CHUNKED("malformed-chunked", Expect.REFUSE, false, false, 3, "bad chunk size, a chunk longer than its data, no CRLF after a chunk"),
    STALLED_BODY("stalled-body", Expect.REFUSE, false, false, 1, "16 bytes of a declared body, then nothing (held for --stall-seconds)"),
    STALLED_READER("stalled-reader", Expect.ANY, false, false, 1, "a streamed request whose reply is never read (2 KiB receive buffer), closed after --stall-seconds"),
    BAD_HOST("bad-host", Expect.REFUSE, false, false, 2, "Host: attacker.example (a DNS-rebinding page's request)"),
    MISSING_HOST("missing-host", Expect.REFUSE, false, false, 1, "an HTTP/1.1 request without Host");

    /** What a correct server does. */
    enum Expect {
        /** Refuses it with a 4xx (an HTTP-level fault may also close the connection). */
        REFUSE,
        /** Serves it (2xx, or a stream the client drops) or refuses it (4xx); never 5xx, never a hang. */
        EITHER,
        /** Anything but a 5xx or a hang. */
        ANY
    }

    /** Settings the faults need: the server's body limit and how long a stalled client holds on. */
    record Settings(long maxBodyBytes, Duration stallHold) {}

    /** A fault ready to send. */
    record Injection(Fault fault, String variant, boolean stream, RawRequest request, ReadPlan read, Duration deadline) {}

    final String label;
    final Expect expect;
    /** A 4xx must be a JSON error in the API's shape. */
    final boolean apiLevel;
    /** The fault matrix tries it on every API (else on one). */
    final boolean perApi;
    final int variants;
    final String description;

    Fault(String label, Expect expect, boolean apiLevel, boolean perApi, int variants, String description) {
        this.label = label;
        this.expect = expect;
        this.apiLevel = apiLevel;
        this.perApi = perApi;
        this.variants = variants;
        this.description = description;
    }

    /** Whether the fault makes sense against {@code api} on a server with ({@code keyed}) or without an API key. */
    boolean applies(Api api, boolean keyed) {
        return switch (this) {
            case HUGE_NUM_CTX -> api.ollama();
            case WRONG_API_KEY, MISSING_API_KEY -> keyed;
            default -> true;
        };
    }

    /** Holds the connection for the stall time (so the soak weighs it less). */
    boolean slow() { return this == STALLED_BODY || this == STALLED_READER; }

    static Fault byLabel(String label) {
        for (Fault f : values()) if (f.label.equals(label.trim().toLowerCase(Locale.ROOT))) return f;
        throw new IllegalArgumentException("unknown fault '" + label + "'; known: "
                + String.join(", ", Arrays.stream(values()).map(f -> f.label).toList()));
    }

    private static volatile byte[] oversized;

    /** Builds variant {@code variant} (0 ≤ variant < {@link #variants}) of this fault against {@code api}. */
    Injection build(Api api, int variant, Random rng, Traffic t, Settings s, Duration deadline) {
        boolean stream = rng.nextBoolean();
        ObjectNode body = api.body(t.model(), "Once upon a time there was", 8, stream, 0.0, 1);
        List<String> headers = t.headers(api);
        return switch (this) {
            case HUGE_MAX_TOKENS, NEGATIVE_MAX_TOKENS -> {
                body = api.body(t.model(), "Once upon a time there was", 8, true, 0.0, 1);
                api.setMaxTokens(body, IntNode.valueOf(this == HUGE_MAX_TOKENS ? Integer.MAX_VALUE : -1));
                yield new Injection(this, "stream", true, t.post(api, body), new ReadPlan.DropAfterBytes(4096), deadline);
            }
            case ZERO_MAX_TOKENS -> {
                body = api.body(t.model(), "Once upon a time there was", 8, variant == 1, 0.0, 1);
                api.setMaxTokens(body, IntNode.valueOf(0));
                yield new Injection(this, variant == 1 ? "stream" : "whole", variant == 1, t.post(api, body), ReadPlan.WHOLE, deadline);
            }
            case HUGE_NUM_CTX -> {
                body = api.body(t.model(), "Once upon a time there was", 8, true, 0.0, 1);
                ((ObjectNode) body.get("options")).put("num_ctx", Integer.MAX_VALUE);
                yield new Injection(this, "stream", true, t.post(api, body), new ReadPlan.DropAfterBytes(4096), deadline);
            }
            case BAD_JSON -> {
                String good = body.toString();
                byte[] bad = switch (variant) {
                    case 0 -> utf8(good.substring(0, good.length() / 2));
                    case 1 -> utf8(good + " }}] trailing");
                    case 2 -> utf8("hello, this is not JSON");
                    case 3 -> concat(utf8("{\"model\":\"" + t.model() + "\",\"prompt\":\"a"), new byte[] {(byte) 0xff, (byte) 0xfe, (byte) 0xc3}, utf8("\"}"));
                    case 4 -> utf8("[1, 2, 3]");
                    case 5 -> utf8("{\"model\":" + "[".repeat(100_000) + "]".repeat(100_000) + "}");
                    default -> concat(utf8("{\"model\":\"" + t.model() + "\",\0\0"), new byte[64], utf8("}"));
                };
                String[] names = {"truncated", "trailing-garbage", "not-json", "invalid-utf8", "top-level-array", "deep-nesting", "nul-bytes"};
                yield new Injection(this, names[variant], stream, t.post(api, bad), ReadPlan.WHOLE, deadline);
            }
            case WRONG_TYPES -> {
                String name;
                switch (variant) {
                    case 0 -> { api.setMaxTokens(body, TextNode.valueOf("many")); name = "max-tokens-string"; }
                    case 1 -> { body.put("stream", "sometimes"); name = "stream-string"; }
                    case 2 -> {
                        if (api.ollama()) ((ObjectNode) body.get("options")).put("temperature", "hot");
                        else body.put("temperature", "hot");
                        name = "temperature-string";
                    }
                    case 3 -> { body.putArray("model").add(1).add(2); name = "model-array"; }
                    default -> {
                        if (api.promptField()) body.putObject("prompt").put("text", "hi");
                        else body.put("messages", "hello");
                        name = api.promptField() ? "prompt-object" : "messages-string";
                    }
                }
                yield new Injection(this, name, stream, t.post(api, body), ReadPlan.WHOLE, deadline);
            }
            case EMPTY_BODY -> new Injection(this, "empty", false, t.post(api, new byte[0]), ReadPlan.WHOLE, deadline);
            case UNKNOWN_MODEL -> {
                body.put("model", "no-such-model-" + Integer.toHexString(rng.nextInt()));
                yield new Injection(this, "unknown", stream, t.post(api, body), ReadPlan.WHOLE, deadline);
            }
            case WRONG_API_KEY -> {
                List<String> h = new ArrayList<>(headers.subList(0, 3));
                h.addAll(api.authHeaders("wrong-" + Integer.toHexString(rng.nextInt())));
                yield new Injection(this, "wrong", stream, new RawRequest("POST", api.path, h, BodyPlan.json(body.toString())), ReadPlan.WHOLE, deadline);
            }
            case MISSING_API_KEY -> new Injection(this, "missing", stream,
                    new RawRequest("POST", api.path, headers.subList(0, 3), BodyPlan.json(body.toString())), ReadPlan.WHOLE, deadline);
            case OVERSIZED_BODY -> {
                byte[] big = oversizedBody(t.model(), s.maxBodyBytes());
                BodyPlan plan = variant == 0 ? new BodyPlan.Whole(big) : new BodyPlan.Chunked(big, 64 << 10);
                yield new Injection(this, variant == 0 ? "declared" : "chunked", false, new RawRequest("POST", api.path, headers, plan), ReadPlan.WHOLE, deadline);
            }
            case TRUNCATED_BODY -> {
                byte[] whole = utf8(body.toString());
                yield new Injection(this, "half", stream, new RawRequest("POST", api.path, headers,
                        new BodyPlan.Truncated(Arrays.copyOf(whole, whole.length / 2), whole.length)), ReadPlan.WHOLE, deadline);
            }
            case MALFORMED_CHUNKED -> {
                List<String> h = new ArrayList<>(headers);
                h.add("Transfer-Encoding: chunked");
                String json = body.toString();
                byte[] raw = switch (variant) {
                    case 0 -> utf8("zz\r\n" + json + "\r\n0\r\n\r\n");
                    case 1 -> utf8(Integer.toHexString(json.length() + 4096) + "\r\n" + json);
                    default -> utf8(Integer.toHexString(json.length()) + "\r\n" + json + "XX0\r\n\r\n");
                };
                String[] names = {"bad-size", "short-chunk", "no-crlf"};
                // variant 1 ends mid-chunk: half-close so that the server sees the end of the stream
                BodyPlan plan = new BodyPlan.Raw(raw, variant == 1);
                yield new Injection(this, names[variant], stream, new RawRequest("POST", api.path, h, plan), ReadPlan.WHOLE, deadline);
            }
            case STALLED_BODY -> {
                byte[] whole = utf8(body.toString());
                yield new Injection(this, "16-bytes", stream, new RawRequest("POST", api.path, headers,
                        new BodyPlan.Stalled(Arrays.copyOf(whole, 16), whole.length)), ReadPlan.WHOLE,
                        // the server answers once its body timeout runs out after the 16 bytes, which may be as long as
                        // the client holds the body: the answer is due within the usual deadline after that
                        s.stallHold().plus(deadline));
            }
            case STALLED_READER -> {
                body = api.body(t.model(), "Once upon a time there was", 400, true, 0.8, rng.nextLong());
                yield new Injection(this, "never-read", true, t.post(api, body), new ReadPlan.Ignore(s.stallHold()), s.stallHold().plusSeconds(5));
            }
            case BAD_HOST -> {
                List<String> h = new ArrayList<>(headers);
                h.set(0, variant == 0 ? "Host: attacker.example" : "Host: attacker.example:" + t.http().port());
                body = api.body(t.model(), "Once upon a time there was", 4, false, 0.0, 1);
                yield new Injection(this, variant == 0 ? "no-port" : "with-port", false, new RawRequest("POST", api.path, h, BodyPlan.json(body.toString())), ReadPlan.WHOLE, deadline);
            }
            case MISSING_HOST -> {
                body = api.body(t.model(), "Once upon a time there was", 4, false, 0.0, 1);
                yield new Injection(this, "none", false, new RawRequest("POST", api.path, headers.subList(1, headers.size()),
                        BodyPlan.json(body.toString())), ReadPlan.WHOLE, deadline);
            }
        };
    }

    /** A valid request whose prompt makes it 1 KiB longer than the server's limit (built once, shared). */
    private static byte[] oversizedBody(String model, long maxBodyBytes) {
        byte[] b = oversized;
        long want = maxBodyBytes + 1024;
        if (b != null && b.length == want) return b;
        if (want > Integer.MAX_VALUE - 64) throw new IllegalArgumentException("the body limit is too large to exceed: " + maxBodyBytes);
        byte[] head = utf8("{\"model\":\"" + model + "\",\"stream\":false,\"prompt\":\"");
        byte[] tail = utf8("\"}");
        ByteArrayOutputStream out = new ByteArrayOutputStream((int) want);
        out.writeBytes(head);
        byte[] words = utf8("once upon a time ");
        long fill = want - head.length - tail.length;
        for (long i = 0; i < fill; i++) out.write(words[(int) (i % words.length)]);
        out.writeBytes(tail);
        oversized = b = out.toByteArray();
        return b;
    }

    private static byte[] utf8(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) out.writeBytes(p);
        return out.toByteArray();
    }
}
