package dev.forkpoint.sampling;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.fuzz.FuzzInvariant;

import java.util.ArrayList;
import java.util.List;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * The sampler's inputs: fuzzed options (any doubles, ints and stop lists, as a user may send them), fuzzed logits
 * (NaN and infinities included: a broken model produces them) and a history of ids; and stop strings over fuzzed
 * text pieces. Options are valid or refused with a typed error; a draw is an id of the vocabulary whose logit is not
 * NaN; the stop-sequence output is exactly the text cut before the leftmost stop, however it was split.
 */
class SamplerFuzzTest {
    @FuzzTest
    void sample(FuzzedDataProvider data) throws Exception {
        int vocab = data.consumeInt(1, 600);
        SamplingOptions options = new SamplingOptions(doubleOf(data), data.consumeInt(-2, 700), doubleOf(data), doubleOf(data),
                doubleOf(data), data.consumeInt(-3, 80), doubleOf(data), doubleOf(data), data.consumeLong(), data.consumeInt(-3, 10),
                List.of());
        var refused = FuzzInvariant.typedErrorOrValid(options::validate);
        if (refused != null) return;
        Sampler sampler = new Sampler(options, vocab);
        int[] history = new int[data.consumeInt(0, 100)];
        for (int i = 0; i < history.length; i++) history[i] = data.consumeInt(0, vocab - 1);
        for (int round = 0; round < 3 && data.remainingBytes() > 0; round++) {
            float[] logits = new float[vocab];
            boolean special = data.consumeBoolean();
            for (int i = 0; i < vocab; i++) logits[i] = special ? data.consumeFloat() : data.consumeRegularFloat(-30, 30);
            float[] given = logits.clone();
            final int historyLength = data.consumeInt(0, history.length);
            int[] id = new int[1];
            var error = FuzzInvariant.typedErrorOrValid(() -> id[0] = sampler.sample(logits, history, historyLength));
            if (error != null) {
                check(allUnusable(logits), "refused logits that hold a usable value after the penalties: " + error.getMessage());
                continue;
            }
            check(id[0] >= 0 && id[0] < vocab, "sampled id " + id[0] + " outside the vocabulary of " + vocab);
            check(!Float.isNaN(given[id[0]]), "sampled id " + id[0] + " whose logit is NaN");
        }
    }

    @FuzzTest
    void stops(FuzzedDataProvider data) throws Exception {
        List<String> stops = new ArrayList<>();
        for (int i = data.consumeInt(0, 5); i > 0; i--) stops.add(data.consumeBoolean() ? data.consumeString(4) : abc(data, 4));
        List<String> pieces = new ArrayList<>();
        for (int i = data.consumeInt(0, 12); i > 0; i--) pieces.add(data.consumeBoolean() ? data.consumeString(6) : abc(data, 6));
        StopSequences[] s = new StopSequences[1];
        if (FuzzInvariant.typedErrorOrValid(() -> s[0] = new StopSequences(stops)) != null) {
            check(stops.stream().anyMatch(String::isEmpty) || stops.size() > SamplingOptions.MAX_STOP_STRINGS, "refused valid stops " + stops);
            return;
        }
        StringBuilder out = new StringBuilder();
        for (String p : pieces) {
            out.append(s[0].accept(p));
            if (s[0].stopped()) break;
        }
        out.append(s[0].flush());
        String all = String.join("", pieces);
        int cut = -1;
        for (String stop : stops) {
            int at = all.indexOf(stop);
            if (at >= 0 && (cut < 0 || at < cut)) cut = at;
        }
        String expected = cut < 0 ? all : all.substring(0, cut);
        check(out.toString().equals(expected), "stops " + stops + " over " + pieces + ": emitted \"" + out + "\", expected \"" + expected + "\"");
        check(s[0].stopped() == (cut >= 0), "stopped() is " + s[0].stopped() + " but the leftmost stop is at " + cut);
        if (cut >= 0) check(all.startsWith(s[0].matchedStop(), cut), "matched stop \"" + s[0].matchedStop() + "\" is not at " + cut);
    }

    /** No logit is a number above −∞ (all NaN or −∞). */
    static boolean allUnusable(float[] logits) {
        for (float l : logits) if (!Float.isNaN(l) && l != Float.NEGATIVE_INFINITY) return false;
        return true;
    }

    /** A double that is often one of the interesting values. */
    static double doubleOf(FuzzedDataProvider data) {
        return switch (data.consumeInt(0, 3)) {
            case 0 -> data.consumeDouble();
            case 1 -> data.consumeRegularDouble(0, 1);
            case 2 -> data.consumeRegularDouble(-3, 3);
            default -> data.pickValue(new double[]{0, 1, -1, 0.5, Double.NaN, Double.POSITIVE_INFINITY, 1e-300, 2});
        };
    }

    /** A short string over a, b, c: stops and pieces that overlap often. */
    static String abc(FuzzedDataProvider data, int max) {
        StringBuilder b = new StringBuilder();
        for (int i = data.consumeInt(0, max); i > 0; i--) b.append((char) ('a' + data.consumeInt(0, 2)));
        return b.toString();
    }
}
