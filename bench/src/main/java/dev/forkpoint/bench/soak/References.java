package dev.forkpoint.bench.soak;

import java.util.ArrayList;
import java.util.List;

/**
 * Greedy reference completions (temperature 0, fixed seed, {@value #MAX_TOKENS} tokens): one prompt on every API,
 * whole and streamed, recorded once at the start. Later the same requests must give the same text: mid-soak under
 * load, and after the server was killed and restarted. The streamed and whole texts of one API are also compared.
 */
final class References {
    static final long SEED = 42;
    static final int MAX_TOKENS = 24;
    static final String PROMPT = "Once upon a time, there was a little dog named";

    record Ref(Api api, boolean stream, String prompt, int maxTokens) {}

    private final List<Ref> refs = new ArrayList<>();
    private final String[] texts;

    References() {
        for (Api api : Api.values()) {
            refs.add(new Ref(api, false, PROMPT, MAX_TOKENS));
            refs.add(new Ref(api, true, PROMPT, MAX_TOKENS));
        }
        texts = new String[refs.size()];
    }

    int size() { return refs.size(); }

    Ref get(int i) { return refs.get(i); }

    synchronized String text(int i) { return texts[i]; }

    /** Sends every reference once and keeps its text; returns the problems (a reference that did not succeed). */
    List<String> record(Driver d) {
        List<String> problems = new ArrayList<>();
        for (int i = 0; i < refs.size(); i++) {
            RequestRecord r = d.reference(i, -1, "references");
            if (r.outcome() != Outcome.OK) {
                problems.add(label(i) + ": " + r.outcome().label + (r.detail() == null ? "" : " (" + r.detail() + ")"));
            } else {
                synchronized (this) {
                    texts[i] = d.lastText();
                }
            }
        }
        return problems;
    }

    /** APIs whose streamed reference text differs from the whole one. */
    synchronized List<String> streamedVersusWhole() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i + 1 < refs.size(); i += 2) {
            if (texts[i] != null && texts[i + 1] != null && !texts[i].equals(texts[i + 1])) {
                out.add(refs.get(i).api().label + ": whole '" + Classifier.abbreviate(texts[i]) + "' vs streamed '" + Classifier.abbreviate(texts[i + 1]) + "'");
            }
        }
        return out;
    }

    /** Sends every recorded reference again in {@code phase}; returns the ones that were not OK with the same text. */
    List<RequestRecord> check(Driver d, String phase) {
        List<RequestRecord> bad = new ArrayList<>();
        for (int i = 0; i < refs.size(); i++) {
            if (text(i) == null) continue;
            RequestRecord r = d.reference(i, -1, phase);
            if (r.outcome() != Outcome.OK) bad.add(r);
        }
        return bad;
    }

    String label(int i) {
        Ref r = refs.get(i);
        return r.api().label + (r.stream() ? " streamed" : " whole");
    }

    /** The recorded texts, for the summary. */
    synchronized List<String> texts() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < refs.size(); i++) out.add(label(i) + ": " + (texts[i] == null ? "(none)" : texts[i]));
        return out;
    }
}
