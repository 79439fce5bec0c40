package dev.forkpoint.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.Json;
import dev.forkpoint.server.OllamaOptions;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * OpenAI's sampling fields as engine options, with OpenAI's defaults and ranges: temperature 1 in [0, 2] (0 = greedy),
 * top_p 1 in [0, 1], no top_k (OpenAI has none), presence/frequency penalty 0 in [-2, 2], seed (random when absent),
 * stop as a string or up to 4 strings. Everything else the engine uses keeps its default. A store model's parameters
 * (its Modelfile's PARAMETER lines) lie between OpenAI's defaults and the request's fields, as in Ollama. A field out of range is a
 * 400 naming it; a field Forkpoint cannot honour ({@code n} > 1, {@code logit_bias}) is refused rather than ignored.
 * Log-probabilities: chat's {@code logprobs: true} with {@code top_logprobs} 0–20 (top_logprobs needs logprobs),
 * completions' {@code logprobs} 0–5.
 */
final class OpenAiOptions {
    static final int MAX_STOPS = 4;

    private OpenAiOptions() {}

    /** Chat's log-probability fields as the engine's top_logprobs (−1 = none). */
    static int topLogprobs(OpenAiRequests.Chat r) {
        if (!Boolean.TRUE.equals(r.logprobs())) {
            if (r.topLogprobs() != null) {
                throw new BadFieldException("top_logprobs", "top_logprobs (" + r.topLogprobs() + ") requires logprobs: true");
            }
            return dev.forkpoint.engine.GenerationRequest.LOGPROBS_OFF;
        }
        return r.topLogprobs() == null ? 0 : dev.forkpoint.server.LogprobJson.checkTop("top_logprobs", r.topLogprobs(), 20);
    }

    /**
     * The thinking mode of a chat request, as Ollama's OpenAI layer reads it: {@code reasoning.effort} when
     * {@code reasoning} is given, else {@code reasoning_effort}. "" or absent = the model's default, "none" = off;
     * "minimal" → low, "low" / "medium" / "high" / "max" as they are, "xhigh" / "ultra" → max (all mean on; the level
     * reaches the template as {@code reasoning_effort}); anything else is a 400 naming the field.
     */
    static dev.forkpoint.chat.ThinkMode think(OpenAiRequests.Chat r) {
        JsonNode effort;
        String field;
        if (r.reasoning() != null && !r.reasoning().isNull()) {
            if (!r.reasoning().isObject()) {
                throw new BadFieldException("reasoning", "reasoning must be an object {\"effort\": …}, got " + Json.describe(r.reasoning()));
            }
            effort = r.reasoning().get("effort");
            field = "reasoning.effort";
        } else {
            effort = r.reasoningEffort();
            field = "reasoning_effort";
        }
        if (effort == null || effort.isNull()) return dev.forkpoint.chat.ThinkMode.DEFAULT;
        if (!effort.isTextual()) throw new BadFieldException(field, field + " must be a string, got " + Json.describe(effort));
        return switch (effort.asText()) {
            case "" -> dev.forkpoint.chat.ThinkMode.DEFAULT;
            case "none" -> dev.forkpoint.chat.ThinkMode.OFF;
            case "minimal" -> dev.forkpoint.chat.ThinkMode.level("low");
            case "low", "medium", "high", "max" -> dev.forkpoint.chat.ThinkMode.level(effort.asText());
            case "xhigh", "ultra" -> dev.forkpoint.chat.ThinkMode.level("max");
            default -> throw new BadFieldException(field, field + " must be \"none\", \"minimal\", \"low\", \"medium\", \"high\", "
                    + "\"xhigh\", \"ultra\" or \"max\", got " + Json.describe(effort));
        };
    }

    /** The field that {@link #think} read (for errors that name it). */
    static String thinkField(OpenAiRequests.Chat r) {
        return r.reasoning() != null && !r.reasoning().isNull() ? "reasoning.effort" : "reasoning_effort";
    }

    /** Completions' {@code logprobs: N} (0–5, null = none) as the engine's top_logprobs. */
    static int topLogprobs(OpenAiRequests.Completion r) {
        if (r.logprobCount() == null) return dev.forkpoint.engine.GenerationRequest.LOGPROBS_OFF;
        return dev.forkpoint.server.LogprobJson.checkTop("logprobs", r.logprobCount(), 5);
    }

    /**
     * The engine options for {@code r} on a model with {@code modelParams} (a store model's params layer; empty for
     * none), layered as Ollama layers them: OpenAI's defaults (temperature 1, top_p 1, no top_k, and
     * {@code defaultMaxTokens} when ≥ 1), under the model's parameters (num_ctx and num_batch included), under the
     * request's own fields. {@code maxTokens}: the request's, or null.
     */
    static OllamaOptions options(OpenAiRequests.Sampling r, Integer maxTokens, String maxTokensField, int defaultMaxTokens,
                                 Map<String, Object> modelParams) {
        if (r.n() != null && r.n() != 1) {
            throw new BadFieldException("n", "n must be 1 (Forkpoint generates one choice per request), got " + r.n());
        }
        if (r.logitBias() != null && !r.logitBias().isNull() && !r.logitBias().isEmpty()) {
            throw new BadFieldException("logit_bias", "logit_bias is not supported; remove 'logit_bias'");
        }
        Map<String, Object> defaults = new HashMap<>(Map.of("temperature", 1.0, "top_p", 1.0, "top_k", 0));
        if (defaultMaxTokens >= 1) defaults.put("num_predict", defaultMaxTokens);
        if (modelParams != null) defaults.putAll(modelParams);
        OllamaOptions base = OllamaOptions.parse(defaults);
        SamplingOptions o = base.sampling();
        if (r.temperature() != null) o = o.withTemperature(range("temperature", r.temperature(), 0, 2));
        if (r.topP() != null) o = o.withTopP(range("top_p", r.topP(), 0, 1));
        if (r.presencePenalty() != null) o = o.withPresencePenalty(range("presence_penalty", r.presencePenalty(), -2, 2));
        if (r.frequencyPenalty() != null) o = o.withFrequencyPenalty(range("frequency_penalty", r.frequencyPenalty(), -2, 2));
        if (r.seed() != null) o = o.withSeed(r.seed());
        if (maxTokens != null) {
            if (maxTokens < 1) throw new BadFieldException(maxTokensField, maxTokensField + " must be at least 1, got " + maxTokens);
            o = o.withNumPredict(maxTokens);
        }
        if (r.stop() != null && !r.stop().isNull()) o = o.withStop(stops(r.stop()));
        return new OllamaOptions(o.validate(), base.numCtx(), base.numBatch());
    }

    /** {@code stop}: null, a string, or an array of up to {@value #MAX_STOPS} non-empty strings. */
    static List<String> stops(JsonNode stop) {
        if (stop == null || stop.isNull()) return List.of();
        if (stop.isTextual()) {
            if (stop.asText().isEmpty()) throw new BadFieldException("stop", "stop must not be an empty string");
            return List.of(stop.asText());
        }
        if (!stop.isArray()) throw new BadFieldException("stop", "stop must be a string or an array of strings, got " + Json.describe(stop));
        if (stop.size() > MAX_STOPS) throw new BadFieldException("stop", "stop holds at most " + MAX_STOPS + " strings, got " + stop.size());
        List<String> out = new ArrayList<>();
        for (int i = 0; i < stop.size(); i++) {
            JsonNode s = stop.get(i);
            if (!s.isTextual() || s.asText().isEmpty()) {
                throw new BadFieldException("stop[" + i + "]", "stop[" + i + "] must be a non-empty string, got " + Json.describe(s));
            }
            out.add(s.asText());
        }
        return out;
    }

    private static double range(String field, double v, double lo, double hi) {
        if (!(v >= lo && v <= hi)) throw new BadFieldException(field, field + " must be in [" + fmt(lo) + ", " + fmt(hi) + "], got " + fmt(v));
        return v;
    }

    private static String fmt(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }
}
