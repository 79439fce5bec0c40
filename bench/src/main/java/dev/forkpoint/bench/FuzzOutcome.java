package dev.forkpoint.bench;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one fuzzing run of one target came to, read from its libFuzzer log and folders: executions, corpus entries it
 * added, findings it saved (crash, timeout and out-of-memory inputs), and whether the run itself ended normally.
 *
 * @param executions inputs run: libFuzzer's {@code Done N runs}, else its last {@code #N} status line, else 0
 * @param completed  the fuzzer exited 0 after its time was up (a finding or an error makes it exit otherwise)
 */
record FuzzOutcome(String target, long executions, int newCorpus, int findings, double seconds, boolean completed, String note) {
    private static final Pattern DONE = Pattern.compile("(?m)^Done (\\d+) runs in");
    private static final Pattern STATUS = Pattern.compile("(?m)^#(\\d+)\\s");
    private static final Pattern EXCEPTION = Pattern.compile("(?m)^== Java Exception: (.*)$");

    /** Executions from a libFuzzer log. */
    static long executions(String log) {
        Matcher done = DONE.matcher(log);
        long n = -1;
        while (done.find()) n = Long.parseLong(done.group(1));
        if (n >= 0) return n;
        Matcher status = STATUS.matcher(log);
        while (status.find()) n = Math.max(n, Long.parseLong(status.group(1)));
        return Math.max(n, 0);
    }

    /** The first Java exception a log reports (the finding's headline), or null. */
    static String firstException(String log) {
        Matcher m = EXCEPTION.matcher(log);
        return m.find() ? m.group(1).trim() : null;
    }

    /** Whether this run counts as a failure: a finding, or a run that did not end normally. */
    boolean failed() {
        return findings > 0 || !completed;
    }
}
