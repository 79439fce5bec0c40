package dev.forkpoint.bench.soak;

/**
 * One request of the run and what became of it.
 *
 * @param t          seconds since the run began, when it was sent
 * @param ms         until it ended (answer complete, dropped, timed out, reset)
 * @param ttfbMs     until the status line (-1 if none came)
 * @param stream     the client stream that sent it (-1 for the harness's own probes)
 * @param phase      the run's phase (matrix, soak, kill …)
 * @param kind       why it was sent
 * @param api        the endpoint
 * @param streamed   whether the reply was asked to stream
 * @param fault      the injected fault, or null
 * @param variant    the fault's variant (or "")
 * @param status     the HTTP status (-1 if none)
 * @param outcome    its class
 * @param bodyBytes  reply body bytes received
 * @param disrupted  the server was killed or restarted while it was in flight (planned or not)
 * @param detail     a few words on the outcome (null for a plain OK)
 */
record RequestRecord(double t, double ms, double ttfbMs, int stream, String phase, Kind kind, Api api, boolean streamed, Fault fault,
                     String variant, int status, Outcome outcome, long bodyBytes, boolean disrupted, String detail) {
    enum Kind {
        /** A well-formed request read to the end. */
        NORMAL("normal"),
        /** A well-formed request whose client goes away mid-answer. */
        DISCONNECT("disconnect"),
        /** An injected client fault. */
        FAULT("fault"),
        /** A greedy reference request, compared with the text recorded at the start. */
        REFERENCE("reference"),
        /** The watchdog's one-token generation. */
        HEARTBEAT("heartbeat"),
        /** The cancellation probe's dropped request. */
        CANCEL_PROBE("cancel-probe");

        final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    static final String CSV_HEADER = "t_s,ms,ttfb_ms,stream,phase,kind,api,streamed,fault,variant,status,outcome,body_bytes,disrupted,detail";

    String csv() {
        return String.format(java.util.Locale.ROOT, "%.3f,%.1f,%.1f,%d,%s,%s,%s,%s,%s,%s,%d,%s,%d,%s,%s", t, ms, ttfbMs, stream, phase, kind.label,
                api == null ? "" : api.label, streamed, fault == null ? "" : fault.label, variant, status, outcome.label, bodyBytes, disrupted,
                detail == null ? "" : "\"" + detail.replace("\"", "'").replace("\n", " ") + "\"");
    }
}
