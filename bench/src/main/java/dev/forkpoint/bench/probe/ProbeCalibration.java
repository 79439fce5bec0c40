package dev.forkpoint.bench.probe;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Locale;

/**
 * How the probe's word-built prompts count in the server's tokens, measured on that server's model: two calibration
 * requests (fresh tags, so nothing cached matches them beyond the template's first tokens) of {@code words[0]} and
 * {@code words[1]} prompt words, whose prompt sizes the server reported ({@code prompt_eval_count}, plus
 * {@code prompt_cache_count} where it sends one). Their slope is the tokens per word; what is left at zero words is the
 * fixed part of every request (chat template, BOS, the session tag and request number). And the context the requests
 * must fit: {@code --num-ctx}, else what the server reports ({@link #numCtxSource()}).
 *
 * @param tokensPerWord  server tokens per prompt word (> 0)
 * @param overheadTokens tokens every request has whatever its words (≥ 0)
 * @param words          the calibration requests' word counts
 * @param tokens         their prompt sizes in the server's tokens
 * @param numCtx         the context every request must fit
 * @param numCtxSource   where numCtx came from ("--num-ctx", "/api/ps context_length", …)
 * @param loadMillis     the first calibration request's load_duration (the model's loading, if it was not loaded), or NaN
 */
record ProbeCalibration(double tokensPerWord, double overheadTokens, int[] words, int[] tokens, int numCtx, String numCtxSource,
                        double loadMillis) {

    /** The line the probe prints. */
    String describe() {
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "calibration: %.2f tokens per word + %.0f tokens per request (template, tags) on this model (",
                tokensPerWord, overheadTokens));
        for (int i = 0; i < words.length; i++) {
            if (i > 0) s.append(", ");
            s.append(words[i]).append(" words → ").append(tokens[i]).append(" tokens");
        }
        s.append(String.format(Locale.ROOT, "), num_ctx %d (%s)", numCtx, numCtxSource));
        if (!Double.isNaN(loadMillis)) s.append(String.format(Locale.ROOT, ", load_duration %.1f ms", loadMillis));
        return s.toString();
    }

    /** The words that make about {@code tokens} server tokens (at least one word for a positive count). */
    int wordsFor(int tokens) {
        if (tokens <= 0) return 0;
        return Math.max(1, (int) Math.round(tokens / tokensPerWord));
    }

    /** The prompt tokens a request of {@code words} words is expected to have. */
    double promptTokens(int words) {
        return overheadTokens + tokensPerWord * words;
    }

    /**
     * The prompt sizes the probe uses: the requested ones when a request of them plus {@code maxTokens} generated
     * fits num_ctx with a margin (5 % of the prompt and 8 tokens, for the word draws' different tokenizations);
     * else shrunk to fit — the shared prefix first, keeping the turn, or both in proportion when the turn alone takes
     * more than half of what fits — with {@link Sizing#note()} saying so. Throws {@link ProbeException} when not even
     * a one-word request fits.
     */
    Sizing size(int prefixTokens, int promptTokens, int maxTokens) {
        double available = (numCtx - maxTokens - overheadTokens - 8) / 1.05;
        if (available < 2 * tokensPerWord) {
            throw new ProbeException(String.format(Locale.ROOT, "num_ctx %d (%s) cannot hold a request: --max-tokens %d + %.0f tokens of template and tags"
                    + " + one word of prefix and turn (%.1f tokens each) exceed it; lower --max-tokens or raise --num-ctx",
                    numCtx, numCtxSource, maxTokens, overheadTokens, tokensPerWord));
        }
        if (prefixTokens + promptTokens <= available) {
            return new Sizing(prefixTokens, promptTokens, wordsFor(prefixTokens), wordsFor(promptTokens), null);
        }
        int prefix, turn;
        if (promptTokens <= available / 2) {
            turn = promptTokens;
            prefix = (int) Math.floor(available - promptTokens);
        } else {
            double scale = available / (prefixTokens + promptTokens);
            prefix = (int) Math.floor(prefixTokens * scale);
            turn = Math.max((int) Math.ceil(tokensPerWord), (int) Math.floor(promptTokens * scale));
        }
        int prefixWords = wordsFor(prefix), turnWords = wordsFor(turn);
        while (prefixWords > 0 && promptTokens(prefixWords + turnWords) * 1.05 + 8 + maxTokens > numCtx) prefixWords--;
        String note = String.format(Locale.ROOT, "note: --shared-prefix-tokens %d + --prompt-tokens %d + --max-tokens %d do not fit num_ctx %d (%s)"
                        + " with this model's %.2f tokens per word and %.0f tokens of template and tags; shrunk to a shared prefix of ≈%d tokens"
                        + " (%d words) and a turn of ≈%d tokens (%d words)",
                prefixTokens, promptTokens, maxTokens, numCtx, numCtxSource, tokensPerWord, overheadTokens,
                Math.round(prefixWords * tokensPerWord), prefixWords, Math.round(turnWords * tokensPerWord), turnWords);
        return new Sizing(Math.toIntExact(Math.round(prefixWords * tokensPerWord)), Math.toIntExact(Math.round(turnWords * tokensPerWord)),
                prefixWords, turnWords, note);
    }

    /**
     * The prompt sizes in use.
     *
     * @param prefixTokens the shared prefix in the server's tokens (≈)
     * @param turnTokens   each request's turn (≈)
     * @param prefixWords  the words that make the prefix
     * @param turnWords    the words that make a turn
     * @param note         why they differ from the requested sizes, or null when they do not
     */
    record Sizing(int prefixTokens, int turnTokens, int prefixWords, int turnWords, String note) {}

    /** The calibration and the sizes, for probe.json's settings. */
    void writeTo(ObjectNode settings, Sizing sizing, int requestedPrefix, int requestedTurn) {
        ObjectNode c = settings.putObject("calibration");
        c.put("tokens_per_word", tokensPerWord).put("overhead_tokens", overheadTokens).put("num_ctx", numCtx).put("num_ctx_source", numCtxSource);
        var requests = c.putArray("requests");
        for (int i = 0; i < words.length; i++) requests.addObject().put("words", words[i]).put("prompt_tokens", tokens[i]);
        if (!Double.isNaN(loadMillis)) c.put("load_duration_ms", loadMillis);
        settings.put("shared_prefix_tokens_requested", requestedPrefix).put("prompt_tokens_requested", requestedTurn)
                .put("shared_prefix_tokens", sizing.prefixTokens()).put("prompt_tokens", sizing.turnTokens())
                .put("shared_prefix_words", sizing.prefixWords()).put("prompt_words", sizing.turnWords());
        if (sizing.note() != null) settings.put("shrunk", sizing.note());
    }
}
