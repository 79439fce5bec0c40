package dev.forkpoint.bench.probe;

import java.util.SplittableRandom;

/**
 * The probe's prompts: "same system prompt, new turn". A shared prefix of {@code prefixWords} common English words,
 * opened by a per-run tag so that nothing a previous run left in the server's cache can match it (the first request
 * is cold for the prefix cache), and per sample a distinct suffix of {@code suffixWords} words opened by the sample's
 * number. Sizes are in words; {@link ProbeCalibration} measures what a word costs in the server's tokens (about one in
 * the 32k–150k vocabularies of current models, several in a 512-token one). Calibration prompts open with another
 * word ({@code opening}), so the probe's own prompts share no more than the template's first tokens with them.
 * Deterministic for a given opening, run tag and seed.
 */
record ProbePrompts(String opening, String runTag, int prefixWords, int suffixWords, long seed) {
    /** The probe's prompts: the prefix opens with "Session". */
    ProbePrompts(String runTag, int prefixWords, int suffixWords, long seed) {
        this("Session", runTag, prefixWords, suffixWords, seed);
    }

    /** A calibration request's prompt of {@code words} words and a one-word turn, opening with "Calibration". */
    static ProbePrompts calibration(String runTag, int words, long seed) {
        return new ProbePrompts("Calibration", runTag, words, 1, seed);
    }

    private static final String[] WORDS = ("the a and to of in it is was that he she they we you his her their with for on "
            + "at by from as but not all one two three little big old new good small long great high day time year way "
            + "man woman child children boy girl friend family mother father dog cat bird tree house home school town "
            + "road river water sun moon sky rain snow light night morning garden park book story game ball box door "
            + "window table bed room food bread apple cake milk tea happy sad kind brave quiet loud warm cold bright "
            + "dark green blue red yellow white black soft hard fast slow early late always often never again together "
            + "went saw said came made took found gave told asked looked wanted liked played walked ran jumped helped "
            + "laughed smiled thought knew felt heard called opened closed began learned built drew wrote sang read "
            + "before after when while because then so if very too also only just still even every each many some").split(" ");

    /** The shared system prompt. */
    String prefix() {
        return opening + " " + runTag + ". " + words(prefixWords, new SplittableRandom(seed));
    }

    /** The user turn of sample {@code i} (0 = the cold call; every sample's differs from the others'). */
    String suffix(int i) {
        return "Request " + i + ": " + words(suffixWords, new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * (i + 1))));
    }

    private static String words(int n, SplittableRandom random) {
        StringBuilder sb = new StringBuilder(n * 6);
        for (int i = 0; i < n; i++) {
            if (i > 0) sb.append(i % 12 == 0 ? ". " : " ");
            sb.append(WORDS[random.nextInt(WORDS.length)]);
        }
        return sb.append('.').toString();
    }
}
