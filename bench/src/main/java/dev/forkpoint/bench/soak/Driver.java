package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Duration;
import java.util.Random;

/**
 * Sends requests to the current server, classifies what comes back ({@link Classifier}), compares greedy reference
 * texts, and records every request ({@link Recorder}). Shared by all client streams and probes.
 */
final class Driver {
    private final ServerHolder holder;
    private final Recorder recorder;
    private final Events events;
    private final References references;
    private final Fault.Settings faultSettings;
    private final Duration deadline;
    private final ThreadLocal<String> lastText = new ThreadLocal<>();

    Driver(ServerHolder holder, Recorder recorder, Events events, References references, Fault.Settings faultSettings, Duration deadline) {
        this.holder = holder;
        this.recorder = recorder;
        this.events = events;
        this.references = references;
        this.faultSettings = faultSettings;
        this.deadline = deadline;
    }

    ServerHolder holder() { return holder; }

    Duration deadline() { return deadline; }

    Fault.Settings faultSettings() { return faultSettings; }

    /** Performs {@code a} for client stream {@code stream} in {@code phase}. */
    RequestRecord perform(Action a, int stream, String phase, Random rng) {
        Traffic t = holder.traffic();
        return switch (a) {
            case Action.Complete c -> send(stream, phase, RequestRecord.Kind.NORMAL, c.api(), c.stream(), null, "",
                    t.post(c.api(), c.api().body(t.model(), c.prompt(), c.maxTokens(), c.stream(), c.temperature(), c.seed())), ReadPlan.WHOLE, deadline, null);
            case Action.Disconnect d -> send(stream, phase, RequestRecord.Kind.DISCONNECT, d.api(), d.stream(), null, "",
                    t.post(d.api(), d.api().body(t.model(), d.prompt(), d.maxTokens(), d.stream(), d.temperature(), d.seed())), d.drop(), deadline, null);
            case Action.Inject i -> inject(i.fault().build(i.api(), i.variant(), rng, t, faultSettings, deadline), i.api(), stream, phase, deadline);
            case Action.Reference r -> reference(r.index(), stream, phase);
        };
    }

    /** Sends a built fault; {@code deadline} replaces the injection's own unless the fault holds on longer. */
    RequestRecord inject(Fault.Injection in, Api api, int stream, String phase, Duration deadline) {
        Duration d = in.fault().slow() ? in.deadline() : deadline;
        return send(stream, phase, RequestRecord.Kind.FAULT, api, in.stream(), in.fault(), in.variant(), in.request(), in.read(), d, null);
    }

    /** Reference request {@code index}, compared with its recorded text. */
    RequestRecord reference(int index, int stream, String phase) {
        References.Ref ref = references.get(index);
        Traffic t = holder.traffic();
        ObjectNode body = ref.api().body(t.model(), ref.prompt(), ref.maxTokens(), ref.stream(), 0.0, References.SEED);
        return send(stream, phase, RequestRecord.Kind.REFERENCE, ref.api(), ref.stream(), null, "ref" + index, t.post(ref.api(), body),
                ReadPlan.WHOLE, deadline, references.text(index));
    }

    /** A one-token greedy generation (the watchdog's and the fault matrix's liveness check). */
    RequestRecord heartbeat(String phase, Duration within) {
        Traffic t = holder.traffic();
        ObjectNode body = Api.OLLAMA_GENERATE.body(t.model(), "Hello", 1, false, 0.0, 1);
        return send(-1, phase, RequestRecord.Kind.HEARTBEAT, Api.OLLAMA_GENERATE, false, null, "", t.post(Api.OLLAMA_GENERATE, body),
                ReadPlan.WHOLE, within, null);
    }

    /**
     * Sends one request and records it. {@code expectedText}: for reference requests, the text an OK reply must have
     * (else MISMATCH).
     */
    RequestRecord send(int stream, String phase, RequestRecord.Kind kind, Api api, boolean streamed, Fault fault, String variant,
                       RawRequest request, ReadPlan read, Duration within, String expectedText) {
        int epoch0 = holder.epoch();
        RawHttp http = holder.traffic().http();
        double t = events.now();
        RawResponse r = http.exchange(request, read, within);
        Verdict v = Classifier.classify(api, streamed, fault, r);
        Outcome outcome = v.outcome();
        String detail = v.detail();
        if (expectedText != null && outcome == Outcome.OK && !expectedText.equals(v.text())) {
            outcome = Outcome.MISMATCH;
            detail = "greedy text differs from the reference: expected '" + Classifier.abbreviate(expectedText) + "', got '"
                    + Classifier.abbreviate(String.valueOf(v.text())) + "'";
        }
        boolean disrupted = holder.epoch() != epoch0 || holder.expectDown();
        RequestRecord rec = new RequestRecord(t, r.totalNanos() / 1e6, r.ttfbNanos() < 0 ? -1 : r.ttfbNanos() / 1e6, stream, phase, kind, api,
                streamed, fault, variant, r.status(), outcome, r.bodyBytes(), disrupted, detail);
        recorder.add(rec);
        lastText.set(v.text());
        return rec;
    }

    /** The reply text of this thread's last request (for the reference recording), or null. */
    String lastText() { return lastText.get(); }

    /** GET path with the key; the body as JSON, or null on any failure. */
    JsonNode getJson(String path, Duration within) {
        RawResponse r = holder.traffic().http().exchange(holder.traffic().get(path), ReadPlan.WHOLE, within);
        if (r.ending() != RawResponse.Ending.COMPLETE || r.status() != 200) return null;
        try {
            return Api.JSON.readTree(r.body());
        } catch (java.io.IOException e) {
            return null;
        }
    }

    /** GET /metrics, or null. */
    PromText metrics(Duration within) {
        RawResponse r = holder.traffic().http().exchange(holder.traffic().get("/metrics"), ReadPlan.WHOLE, within);
        if (r.ending() != RawResponse.Ending.COMPLETE || r.status() != 200) return null;
        return PromText.parse(r.bodyText());
    }
}
