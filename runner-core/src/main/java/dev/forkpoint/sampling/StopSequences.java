package dev.forkpoint.sampling;

import java.util.List;

/**
 * Watches generated text for stop strings, across token boundaries. Text that might be the start of a stop string
 * is held back; a matched stop string and everything after it is never emitted.
 *
 * <p>Contract: the concatenation of everything {@link #accept} and {@link #flush} return equals the concatenation of
 * all accepted text cut just before the leftmost occurrence of any stop string, or all of it when none occurs,
 * however the text was split into pieces. Only text that could still begin a stop string is held back, so fewer than
 * the longest stop's length characters are held at any time. A complete stop string is reported (stopped() becomes
 * true) as soon as no other stop string that starts earlier can still complete; with stops "a" and "bac" and text
 * "ba", that waits for the next piece. Call {@link #flush} at the end of generation. Not thread-safe; one per
 * generation.
 */
public final class StopSequences {
    private final String[] stops;
    private final StringBuilder pending = new StringBuilder();
    private String matched;
    private String candidate; // set by leftmostMatch

    /**
     * @throws dev.forkpoint.InvalidInputException if a stop string is null or empty, or there are more than
     *                                             {@link SamplingOptions#MAX_STOP_STRINGS}
     */
    public StopSequences(List<String> stops) {
        SamplingOptions.validateStops(stops);
        this.stops = stops.toArray(String[]::new);
    }

    /** Adds newly generated text; returns the text that is safe to emit now. After a match, returns "". */
    public String accept(String text) {
        if (matched != null || text.isEmpty()) return "";
        pending.append(text);
        // Emitted text never holds the start of an occurrence, so occurrences are searched in pending alone.
        int at = leftmostMatch();
        int hold = holdFrom();
        if (at >= 0 && at <= hold) { // no stop that might still complete starts before this match
            matched = candidate;
            String out = pending.substring(0, at);
            pending.setLength(0);
            return out;
        }
        // Either no match, or a longer stop starting earlier may yet complete: hold from where it starts.
        String out = pending.substring(0, hold);
        pending.delete(0, hold);
        return out;
    }

    /** Index of the leftmost complete stop string in pending (first listed on a tie), setting candidate; or −1. */
    private int leftmostMatch() {
        int at = -1;
        for (String s : stops) {
            int i = pending.indexOf(s);
            if (i >= 0 && (at < 0 || i < at)) {
                at = i;
                candidate = s;
            }
        }
        return at;
    }

    private int holdFrom() {
        int n = pending.length();
        int longest = 0;
        for (String s : stops) longest = Math.max(longest, s.length());
        for (int j = Math.max(0, n - longest + 1); j < n; j++) {
            int len = n - j;
            for (String s : stops) {
                if (s.length() > len && startsWith(s, j, len)) return j;
            }
        }
        return n;
    }

    /** Whether pending[j, j+len) equals the first len characters of s. */
    private boolean startsWith(String s, int j, int len) {
        for (int k = 0; k < len; k++) if (pending.charAt(j + k) != s.charAt(k)) return false;
        return true;
    }

    /** True once a stop string has matched; the caller stops generating. */
    public boolean stopped() {
        return matched != null;
    }

    /**
     * The stop string that matched, or null while none has: one starting at the leftmost occurrence (when several
     * start there, the first listed among those complete when the match was decided).
     */
    public String matchedStop() {
        return matched;
    }

    /**
     * At the end of generation: the held-back text that turned out not to be a stop string. If it holds a complete
     * stop string (one that was waiting on a longer, earlier stop that never completed), only the text before it
     * is returned and {@link #stopped()} becomes true.
     */
    public String flush() {
        int at = matched == null ? leftmostMatch() : -1;
        if (at >= 0) matched = candidate;
        String out = at >= 0 ? pending.substring(0, at) : pending.toString();
        pending.setLength(0);
        return out;
    }
}
