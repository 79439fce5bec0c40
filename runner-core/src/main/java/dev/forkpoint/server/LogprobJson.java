package dev.forkpoint.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.engine.TokenLogprob;

import java.util.List;

/**
 * The log-probability shapes of the APIs, from the engine's {@link TokenLogprob} entries, and the range check of their
 * request fields. The values are the engine's (see {@link TokenLogprob} for the distribution).
 */
public final class LogprobJson {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private LogprobJson() {}

    /** {@code value} in [0, max], else a 400 naming {@code field} and the value. */
    public static int checkTop(String field, int value, int max) {
        if (value < 0 || value > max) throw new BadFieldException(field, field + " must be between 0 and " + max + ", got " + value);
        return value;
    }

    /**
     * Ollama's {@code logprobs} array: {@code [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]};
     * {@code bytes} is left out when the token has none, {@code top_logprobs} when none were asked for (Go's omitempty).
     */
    public static ArrayNode ollama(List<TokenLogprob> entries) {
        ArrayNode out = F.arrayNode();
        for (TokenLogprob e : entries) {
            ObjectNode o = ollamaEntry(e);
            if (!e.top().isEmpty()) {
                ArrayNode top = o.putArray("top_logprobs");
                for (TokenLogprob t : e.top()) top.add(ollamaEntry(t));
            }
            out.add(o);
        }
        return out;
    }

    private static ObjectNode ollamaEntry(TokenLogprob e) {
        ObjectNode o = F.objectNode();
        o.put("token", e.token());
        o.put("logprob", e.logprob());
        if (e.bytes().length > 0) o.set("bytes", bytes(e.bytes()));
        return o;
    }

    /**
     * The Ollama runner protocol's {@code Logprobs} array (Ollama's {@code llm.Logprob}):
     * {@code [{token, logprob, top_logprobs: [{token, logprob}]}]}, {@code top_logprobs} left out when empty.
     */
    public static ArrayNode runner(List<TokenLogprob> entries) {
        ArrayNode out = F.arrayNode();
        for (TokenLogprob e : entries) {
            ObjectNode o = out.addObject();
            o.put("token", e.token());
            o.put("logprob", e.logprob());
            if (!e.top().isEmpty()) {
                ArrayNode top = o.putArray("top_logprobs");
                for (TokenLogprob t : e.top()) top.addObject().put("token", t.token()).put("logprob", t.logprob());
            }
        }
        return out;
    }

    /**
     * OpenAI chat's {@code logprobs} object: {@code {content: [{token, logprob, bytes, top_logprobs: [{token, logprob,
     * bytes}]}], refusal: null}}; {@code bytes} is null for a token with none; {@code top_logprobs} always present.
     */
    public static ObjectNode openAiChat(List<TokenLogprob> entries) {
        ObjectNode o = F.objectNode();
        ArrayNode content = o.putArray("content");
        for (TokenLogprob e : entries) {
            ObjectNode c = openAiEntry(e);
            ArrayNode top = c.putArray("top_logprobs");
            for (TokenLogprob t : e.top()) top.add(openAiEntry(t));
            content.add(c);
        }
        o.putNull("refusal");
        return o;
    }

    private static ObjectNode openAiEntry(TokenLogprob e) {
        ObjectNode o = F.objectNode();
        o.put("token", e.token());
        o.put("logprob", e.logprob());
        if (e.bytes().length > 0) o.set("bytes", bytes(e.bytes()));
        else o.putNull("bytes");
        return o;
    }

    /**
     * OpenAI completions' {@code logprobs} object: {@code {tokens, token_logprobs, top_logprobs: [{token: logprob}],
     * text_offset}}. {@code text_offset} is where each token's bytes start in the completion's text, in UTF-16 chars
     * (the chars the bytes before it decode to); {@code offset[0]} is where these entries start and is advanced past
     * them (a stream passes the same array to each chunk). Alternatives whose text equals an earlier one's keep the
     * earlier (more likely) value, a map having one key per text.
     */
    public static ObjectNode openAiCompletion(List<TokenLogprob> entries, int[] offset) {
        ObjectNode o = F.objectNode();
        ArrayNode tokens = o.putArray("tokens"), lps = o.putArray("token_logprobs"), top = o.putArray("top_logprobs"),
                offsets = o.putArray("text_offset");
        for (TokenLogprob e : entries) {
            tokens.add(e.token());
            lps.add(e.logprob());
            ObjectNode m = top.addObject();
            for (TokenLogprob t : e.top()) if (!m.has(t.token())) m.put(t.token(), t.logprob());
            offsets.add(offset[0]);
            for (byte b : e.bytes()) {   // one char per UTF-8 lead byte, two for a 4-byte sequence (a surrogate pair)
                if ((b & 0xC0) != 0x80) offset[0] += (b & 0xFF) >= 0xF0 ? 2 : 1;
            }
        }
        return o;
    }

    private static ArrayNode bytes(byte[] b) {
        ArrayNode a = F.arrayNode(b.length);
        for (byte x : b) a.add(x & 0xFF);
        return a;
    }
}
