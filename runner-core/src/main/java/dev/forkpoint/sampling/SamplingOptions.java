package dev.forkpoint.sampling;

import dev.forkpoint.InvalidInputException;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Sampling options with Ollama's names and defaults: temperature 0.8 (0 = greedy), top_k 40, top_p 0.9, min_p 0,
 * repeat_penalty 1.0 over repeat_last_n 64, presence/frequency penalty 0, seed −1 (random), num_predict −1 (until
 * the context is full or generation ends), no stop strings.
 *
 * <p>Constructing a value does not check it; {@link #validate()} does, with messages that name the option by its
 * Ollama (snake_case) name and show the bad value. Ranges: temperature ≥ 0; top_k ≥ 0 (0 disables it); top_p and
 * min_p in [0, 1]; repeat_penalty ≥ 0; repeat_last_n ≥ −1 (−1 = whole history, 0 = no penalties); presence and
 * frequency penalty any finite number; num_predict ≥ −2 (−1 = no limit, −2 = until the context is full); any seed
 * (−1 = random); at most {@value #MAX_STOP_STRINGS} stop strings, none empty.
 *
 * <p>The stop list is copied (unmodifiable) on construction; {@code null} means no stop strings.
 */
public record SamplingOptions(double temperature, int topK, double topP, double minP, double repeatPenalty,
                              int repeatLastN, double presencePenalty, double frequencyPenalty, long seed,
                              int numPredict, List<String> stop) {

    /** The most stop strings one request may give (OpenAI allows 4; 16 leaves room for chat templates' own). */
    public static final int MAX_STOP_STRINGS = 16;

    /** The option names {@link #withOptions(Map)} understands (Ollama's). Other keys are left to the caller. */
    public static final Set<String> OPTION_NAMES = Set.of("temperature", "top_k", "top_p", "min_p", "repeat_penalty",
            "repeat_last_n", "presence_penalty", "frequency_penalty", "seed", "num_predict", "stop");

    public SamplingOptions {
        // Keeps nulls so that validate() can report them instead of failing here with a bare NPE.
        stop = stop == null ? List.of() : Collections.unmodifiableList(new ArrayList<>(stop));
    }

    public static SamplingOptions defaults() {
        return new SamplingOptions(0.8, 40, 0.9, 0.0, 1.0, 64, 0.0, 0.0, -1, -1, List.of());
    }

    public static SamplingOptions greedy() {
        return defaults().withTemperature(0);
    }

    /** Ollama-style options (e.g. a parsed JSON {@code "options"} object) over the defaults; validated. */
    public static SamplingOptions fromMap(Map<String, ?> options) {
        return defaults().withOptions(options);
    }

    /**
     * These options with the sampling keys of {@code options} applied, validated. Values are what a JSON parser
     * produces: numbers (any {@link Number}; integer options need integral values), for {@code stop} a string or a
     * list of strings; {@code null} keeps the current value. Keys not in {@link #OPTION_NAMES} (num_ctx, num_batch,
     * …) are ignored here: they belong to the caller.
     *
     * @throws InvalidInputException naming the option when a value has the wrong type or is out of range
     */
    public SamplingOptions withOptions(Map<String, ?> options) {
        SamplingOptions o = this;
        for (Map.Entry<String, ?> e : options.entrySet()) {
            String key = e.getKey();
            Object v = e.getValue();
            if (v == null || key == null) continue;
            o = switch (key) {
                case "temperature" -> o.withTemperature(asDouble(key, v));
                case "top_k" -> o.withTopK(asInt(key, v));
                case "top_p" -> o.withTopP(asDouble(key, v));
                case "min_p" -> o.withMinP(asDouble(key, v));
                case "repeat_penalty" -> o.withRepeatPenalty(asDouble(key, v));
                case "repeat_last_n" -> o.withRepeatLastN(asInt(key, v));
                case "presence_penalty" -> o.withPresencePenalty(asDouble(key, v));
                case "frequency_penalty" -> o.withFrequencyPenalty(asDouble(key, v));
                case "seed" -> o.withSeed(asLong(key, v));
                case "num_predict" -> o.withNumPredict(asInt(key, v));
                case "stop" -> o.withStop(asStrings(key, v));
                default -> o;
            };
        }
        return o.validate();
    }

    /**
     * Returns this if every option is in range.
     *
     * @throws InvalidInputException "option NAME must …, got VALUE" for the first bad option
     */
    public SamplingOptions validate() {
        if (!(Double.isFinite(temperature) && temperature >= 0))
            throw bad("temperature", "must be a finite number >= 0 (0 = greedy)", fmt(temperature));
        if (topK < 0) throw bad("top_k", "must be >= 0 (0 = disabled)", Integer.toString(topK));
        if (!(topP >= 0 && topP <= 1)) throw bad("top_p", "must be in [0, 1]", fmt(topP));
        if (!(minP >= 0 && minP <= 1)) throw bad("min_p", "must be in [0, 1]", fmt(minP));
        if (!(Double.isFinite(repeatPenalty) && repeatPenalty >= 0))
            throw bad("repeat_penalty", "must be a finite number >= 0 (1 = disabled)", fmt(repeatPenalty));
        if (repeatLastN < -1)
            throw bad("repeat_last_n", "must be >= -1 (-1 = whole context, 0 = disabled)", Integer.toString(repeatLastN));
        if (!Double.isFinite(presencePenalty)) throw bad("presence_penalty", "must be a finite number", fmt(presencePenalty));
        if (!Double.isFinite(frequencyPenalty)) throw bad("frequency_penalty", "must be a finite number", fmt(frequencyPenalty));
        if (numPredict < -2)
            throw bad("num_predict", "must be >= -2 (-1 = no limit, -2 = until the context is full)", Integer.toString(numPredict));
        validateStops(stop);
        return this;
    }

    /** Checks a stop list: at most {@value #MAX_STOP_STRINGS} entries, none null or empty. */
    static void validateStops(List<String> stops) {
        if (stops.size() > MAX_STOP_STRINGS)
            throw new InvalidInputException("option stop must hold at most " + MAX_STOP_STRINGS + " strings, got " + stops.size());
        for (int i = 0; i < stops.size(); i++) {
            String s = stops.get(i);
            if (s == null) throw new InvalidInputException("option stop must not contain null, got null at index " + i);
            if (s.isEmpty()) throw new InvalidInputException("option stop must not contain empty strings, got \"\" at index " + i);
        }
    }

    /** True when tokens are chosen by argmax (temperature 0). */
    public boolean isGreedy() {
        return temperature == 0;
    }

    public SamplingOptions withTemperature(double t) {
        return new SamplingOptions(t, topK, topP, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed, numPredict, stop);
    }

    public SamplingOptions withTopK(int k) {
        return new SamplingOptions(temperature, k, topP, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed, numPredict, stop);
    }

    public SamplingOptions withTopP(double p) {
        return new SamplingOptions(temperature, topK, p, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed, numPredict, stop);
    }

    public SamplingOptions withMinP(double p) {
        return new SamplingOptions(temperature, topK, topP, p, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed, numPredict, stop);
    }

    public SamplingOptions withRepeatPenalty(double penalty) {
        return new SamplingOptions(temperature, topK, topP, minP, penalty, repeatLastN, presencePenalty, frequencyPenalty, seed, numPredict, stop);
    }

    public SamplingOptions withRepeatLastN(int n) {
        return new SamplingOptions(temperature, topK, topP, minP, repeatPenalty, n, presencePenalty, frequencyPenalty, seed, numPredict, stop);
    }

    public SamplingOptions withPresencePenalty(double penalty) {
        return new SamplingOptions(temperature, topK, topP, minP, repeatPenalty, repeatLastN, penalty, frequencyPenalty, seed, numPredict, stop);
    }

    public SamplingOptions withFrequencyPenalty(double penalty) {
        return new SamplingOptions(temperature, topK, topP, minP, repeatPenalty, repeatLastN, presencePenalty, penalty, seed, numPredict, stop);
    }

    public SamplingOptions withSeed(long s) {
        return new SamplingOptions(temperature, topK, topP, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, s, numPredict, stop);
    }

    public SamplingOptions withNumPredict(int n) {
        return new SamplingOptions(temperature, topK, topP, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed, n, stop);
    }

    public SamplingOptions withStop(List<String> stops) {
        return new SamplingOptions(temperature, topK, topP, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed, numPredict, stops);
    }

    // ---- parsing helpers ----

    private static InvalidInputException bad(String option, String rule, String got) {
        return new InvalidInputException("option " + option + " " + rule + ", got " + got);
    }

    /** A double as a user would write it: "2" rather than "2.0", "1.5", "NaN", "1.0E300". */
    static String fmt(double d) {
        if (Double.isFinite(d) && d == Math.rint(d) && Math.abs(d) < 1e15) return Long.toString((long) d);
        return Double.toString(d);
    }

    private static String describe(Object v) {
        if (v instanceof CharSequence s) return "string \"" + s + "\"";
        if (v instanceof Boolean b) return "boolean " + b;
        if (v instanceof List<?>) return "a list";
        if (v instanceof Map<?, ?>) return "an object";
        return v.getClass().getSimpleName() + " " + v;
    }

    private static double asDouble(String key, Object v) {
        if (v instanceof Number n) return n.doubleValue();
        throw new InvalidInputException("option " + key + " must be a number, got " + describe(v));
    }

    private static long asLong(String key, Object v) {
        if (!(v instanceof Number n)) throw new InvalidInputException("option " + key + " must be an integer, got " + describe(v));
        BigDecimal d;
        try {
            d = switch (n) {
                case Integer i -> BigDecimal.valueOf(i);
                case Long l -> BigDecimal.valueOf(l);
                case Short s -> BigDecimal.valueOf(s);
                case Byte b -> BigDecimal.valueOf(b);
                case BigInteger bi -> new BigDecimal(bi);
                case BigDecimal bd -> bd;
                default -> new BigDecimal(n.doubleValue());
            };
        } catch (NumberFormatException e) { // NaN or infinite double
            throw new InvalidInputException("option " + key + " must be an integer, got " + n);
        }
        try {
            return d.longValueExact();
        } catch (ArithmeticException e) {
            throw new InvalidInputException("option " + key + " must be an integer"
                    + (d.stripTrailingZeros().scale() <= 0 ? " in the 64-bit range" : "") + ", got " + n);
        }
    }

    private static int asInt(String key, Object v) {
        long l = asLong(key, v);
        if (l < Integer.MIN_VALUE || l > Integer.MAX_VALUE)
            throw new InvalidInputException("option " + key + " must be an integer in the 32-bit range, got " + l);
        return (int) l;
    }

    private static List<String> asStrings(String key, Object v) {
        if (v instanceof CharSequence s) return List.of(s.toString());
        if (v instanceof List<?> list) {
            List<String> out = new ArrayList<>(list.size());
            for (int i = 0; i < list.size(); i++) {
                Object e = list.get(i);
                if (!(e instanceof CharSequence s))
                    throw new InvalidInputException("option " + key + " must be a string or a list of strings, got "
                            + (e == null ? "null" : describe(e)) + " at index " + i);
                out.add(s.toString());
            }
            return out;
        }
        throw new InvalidInputException("option " + key + " must be a string or a list of strings, got " + describe(v));
    }
}
