package dev.forkpoint.bench.soak;

/**
 * Puts every response into one {@link Outcome}. A pure function of what was sent (the API, streamed or not, the
 * fault if any) and what came back, so that the rules are tested without a server:
 * <ul>
 *   <li>no complete answer by the deadline → HANG; refused, reset, or closed early by the server → RESET (a 5xx status
 *       line before the reset → SERVER_ERROR)
 *   <li>the client dropped the connection on purpose → DISCONNECTED, unless an error status had already arrived
 *   <li>5xx → SERVER_ERROR (503 with Retry-After → BUSY)
 *   <li>4xx → CLIENT_ERROR; to an API-level fault, BAD_ERROR_SHAPE when the body is not the API's JSON error
 *   <li>2xx to a fault a correct server refuses → ACCEPTED_FAULT; else the reply is parsed: not the API's format or a
 *       stream without its end → MALFORMED; an error inside the 200 → SERVER_ERROR when it is an internal error, else
 *       CLIENT_ERROR; otherwise OK
 * </ul>
 */
final class Classifier {
    private Classifier() {}

    static Verdict classify(Api api, boolean stream, Fault fault, RawResponse r) {
        switch (r.ending()) {
            case TIMEOUT -> {
                return new Verdict(Outcome.HANG, r.detail() + (r.status() > 0 ? " (status " + r.status() + ")" : ""), null);
            }
            case RESET -> {
                if (r.status() >= 500) return new Verdict(Outcome.SERVER_ERROR, "HTTP " + r.status() + ", then " + r.detail(), null);
                return new Verdict(Outcome.RESET, r.detail(), null);
            }
            case DROPPED -> {
                if (r.status() >= 400) return byStatus(api, stream, fault, r);
                return new Verdict(Outcome.DISCONNECTED, r.detail(), null);
            }
            case COMPLETE -> {
                return byStatus(api, stream, fault, r);
            }
        }
        throw new AssertionError(r.ending());
    }

    private static Verdict byStatus(Api api, boolean stream, Fault fault, RawResponse r) {
        int s = r.status();
        if (s >= 500) {
            if (s == 503 && r.header("retry-after") != null) return new Verdict(Outcome.BUSY, "HTTP 503, Retry-After " + r.header("retry-after"), null);
            return new Verdict(Outcome.SERVER_ERROR, "HTTP " + s + ": " + abbreviate(r.bodyText()), null);
        }
        if (s >= 400) {
            if (fault != null && fault.apiLevel && !api.isErrorShape(r.body())) {
                return new Verdict(Outcome.BAD_ERROR_SHAPE, "HTTP " + s + " without the API's JSON error: " + abbreviate(r.bodyText()), null);
            }
            return new Verdict(Outcome.CLIENT_ERROR, "HTTP " + s + ": " + abbreviate(r.bodyText()), null);
        }
        if (s >= 200 && s < 300) {
            if (fault != null && fault.expect == Fault.Expect.REFUSE) {
                return new Verdict(Outcome.ACCEPTED_FAULT, "HTTP " + s + " to " + fault.label, null);
            }
            if (r.ending() == RawResponse.Ending.DROPPED) return new Verdict(Outcome.DISCONNECTED, r.detail(), null);
            Api.Reply reply = api.parse(r.body(), stream);
            if (reply == null) return new Verdict(Outcome.MALFORMED, "HTTP " + s + " body is not " + api.label + "'s reply: " + abbreviate(r.bodyText()), null);
            if (reply.error() != null) {
                boolean internal = reply.error().toLowerCase(java.util.Locale.ROOT).contains("internal error");
                return new Verdict(internal ? Outcome.SERVER_ERROR : Outcome.CLIENT_ERROR, "error inside the 200: " + abbreviate(reply.error()), reply.text());
            }
            if (!reply.finished()) return new Verdict(Outcome.MALFORMED, "the reply ended without the API's final event", reply.text());
            return new Verdict(Outcome.OK, null, reply.text());
        }
        return new Verdict(Outcome.MALFORMED, "unexpected HTTP " + s, null);
    }

    static String abbreviate(String s) {
        String one = s.strip().replaceAll("\\s+", " ");
        return one.length() <= 160 ? one : one.substring(0, 160) + "…";
    }
}
