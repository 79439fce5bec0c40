package dev.forkpoint.bench.soak;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * Every enabled fault, every variant, on every API it applies to (HTTP-level faults on one API, in turn), one at a
 * time on an otherwise idle server, each followed by a one-token greedy generation: if that does not answer within
 * the deadline, the fault wedged the server, which is then restarted, and the fault is put in quarantine (its other
 * variants are skipped here and the soak's mix leaves it out, so that the soak measures the rest) unless told to keep
 * it. Rows go to {@code faults.csv}.
 */
final class FaultMatrix {
    record Row(Fault fault, String variant, Api api, boolean stream, int status, Outcome outcome, double ms, boolean healthyAfter, String detail) {}

    private FaultMatrix() {}

    static List<Row> run(Driver d, List<Fault> faults, boolean keyed, Duration deadline, Events events, ActionMix mix, boolean quarantine,
                         long seed, Path csv) throws IOException {
        List<Row> rows = new ArrayList<>();
        Random rng = new Random(seed ^ 0x5eedfa17L);
        int turn = 0;
        for (Fault f : faults) {
            List<Api> apis = new ArrayList<>();
            for (Api a : Api.values()) if (f.applies(a, keyed)) apis.add(a);
            if (apis.isEmpty()) continue;
            if (!f.perApi) apis = List.of(apis.get(turn++ % apis.size()));
            boolean wedged = false;
            for (Api api : apis) {
                for (int v = 0; v < f.variants && !wedged; v++) {
                    Fault.Injection in = f.build(api, v, rng, d.holder().traffic(), d.faultSettings(), deadline);
                    RequestRecord r = d.inject(in, api, -1, "matrix", deadline);
                    int epoch = d.holder().epoch();
                    RequestRecord hb = d.heartbeat("matrix", deadline);
                    boolean healthy = hb.outcome() == Outcome.OK;
                    rows.add(new Row(f, in.variant(), api, in.stream(), r.status(), r.outcome(), r.ms(), healthy, r.detail()));
                    if (!healthy) {
                        wedged = true;
                        boolean dead = !d.holder().current().alive();
                        events.add(dead ? "died" : "wedged", f.label + "/" + in.variant() + " on " + api.label + ": "
                                + (dead ? "the server process exited (status " + d.holder().current().exitStatus() + ")"
                                : "the next one-token generation got " + hb.outcome().label + " (" + hb.detail() + ")"));
                        if (quarantine) mix.quarantine(f);
                        d.holder().recover(epoch, f.label + " wedged the server");
                    }
                }
                if (wedged) break;
            }
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
            w.println("fault,variant,api,streamed,status,outcome,ms,healthy_after,detail");
            for (Row r : rows) {
                w.println(String.format(Locale.ROOT, "%s,%s,%s,%s,%d,%s,%.1f,%s,%s", r.fault().label, r.variant(), r.api().label, r.stream(), r.status(),
                        r.outcome().label, r.ms(), r.healthyAfter(), r.detail() == null ? "" : "\"" + r.detail().replace("\"", "'") + "\""));
            }
        }
        return rows;
    }

    /** Whether the row shows what a correct server does with the fault. */
    static boolean correct(Row r) {
        if (!r.healthyAfter()) return false;
        return switch (r.outcome()) {
            case OK, CLIENT_ERROR, DISCONNECTED, BUSY -> r.fault().expect != Fault.Expect.REFUSE || r.outcome() == Outcome.CLIENT_ERROR;
            case RESET -> !r.fault().apiLevel;
            default -> false;
        };
    }
}
