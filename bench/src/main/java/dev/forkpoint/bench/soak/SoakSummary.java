package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.bench.probe.Percentiles;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;

/**
 * The soak's summary: resident memory (first, last, max, growth after the warm-up, slope), heap after full GC
 * (slope), threads, open files, KV pages, queue depth, {@code /api/version} latency, the requests by kind and class,
 * latency percentiles of the well-formed requests, the fault matrix, the cancellation probe, the stall storm, the chaos
 * step, the demo-model crash rounds, what the server logged — and the invariants, each PASS, FAIL or SKIP. Written as
 * {@code summary.txt} (also printed) and {@code summary.json}.
 */
final class SoakSummary {
    private final String text;
    private final ObjectNode json;
    private final List<Invariant> invariants;

    private SoakSummary(String text, ObjectNode json, List<Invariant> invariants) {
        this.text = text;
        this.json = json;
        this.invariants = invariants;
    }

    String text() { return text; }

    ObjectNode json() { return json; }

    List<Invariant> invariants() { return invariants; }

    boolean failed() { return invariants.stream().anyMatch(Invariant::failed); }

    void write(Path dir) throws IOException {
        Files.writeString(dir.resolve("summary.txt"), text);
        Api.JSON.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("summary.json").toFile(), json);
    }

    static String duration(Duration d) {
        long ms = d.toMillis();
        if (ms % 60_000 == 0 && ms >= 60_000) return (ms / 60_000) + " min";
        return ms % 1000 == 0 ? (ms / 1000) + " s" : String.format(Locale.ROOT, "%.1f s", ms / 1e3);
    }

    /** What the run gathered; {@link #build()} computes the figures and the invariants. */
    static final class Builder {
        final SoakSettings s;
        final ServerLaunch launch;
        List<String> referenceProblems = List.of();
        List<String> streamedVersusWhole = List.of();
        List<String> referenceTexts = List.of();
        List<FaultMatrix.Row> matrix;
        List<CancelProbe.Result> cancel = List.of();
        StallStorm.Result storm;
        double soakStart = Double.NaN, soakEnd = Double.NaN;
        int soakEndEpoch = -1;
        boolean drained;
        PromText idleMetrics;
        ChaosResult chaos;
        Integer stopStatus;
        long stopMs = -1;
        DemoModelCrash.Result demo;
        String demoError;
        List<RequestRecord> records = List.of();
        List<Sampler.Sample> samples = List.of();
        List<Watchdog.Probe> probes = List.of();
        List<String> wedges = List.of();
        int unplannedRestarts;
        List<ServerProcess> processes = List.of();
        Set<Fault> quarantined = Set.of();
        List<Events.Event> events = List.of();

        Builder(SoakSettings s, ServerLaunch launch) {
            this.s = s;
            this.launch = launch;
        }

        SoakSummary build() {
            StringBuilder t = new StringBuilder();
            ObjectNode j = Api.JSON.createObjectNode();
            List<Invariant> inv = new ArrayList<>();

            line(t, "forkpoint bench soak — summary");
            line(t, "server: %s serve %s (JVM flags of ./forkpoint); %s", launch.java(), String.join(" ", launch.serveArgs()), launch.how());
            line(t, "soak: %d streams for %s, seed %d, think time ≤ %d ms, fault rate %.2f, disconnect rate %.2f, reference rate %.2f, max tokens %d",
                    s.streams(), duration(s.soak()), s.seed(), s.thinkMs(), s.faultRate(), s.disconnectRate(), s.referenceRate(), s.maxTokens());
            line(t, "deadline %s (hang), version deadline %s, stall hold %s, samples every %s, heap after GC every %s (jcmd GC.run + GC.heap_info)",
                    duration(s.deadline()), duration(s.versionDeadline()), duration(s.stall()), duration(s.sampleEvery()), duration(s.heapEvery()));
            ObjectNode settings = j.putObject("settings");
            settings.put("model", s.model().toString()).put("streams", s.streams()).put("soak_seconds", s.soak().toMillis() / 1e3)
                    .put("seed", s.seed()).put("parallel", s.parallel()).put("api_key", s.apiKey() != null).put("server", launch.how())
                    .put("serve_args", String.join(" ", launch.serveArgs())).put("fault_rate", s.faultRate())
                    .put("disconnect_rate", s.disconnectRate()).put("reference_rate", s.referenceRate())
                    .put("faults", String.join(",", s.faults().stream().map(f -> f.label).toList()))
                    .put("deadline_s", s.deadline().toMillis() / 1e3).put("rss_growth_limit_mib", s.rssGrowthLimitMib());

            memory(t, j, inv);
            responsiveness(t, j, inv);
            requests(t, j, inv);
            matrix(t, j, inv);
            cancel(t, j, inv);
            storm(t, j, inv);
            chaos(t, j, inv);
            demo(t, j, inv);
            logs(t, j);
            timeline(t, j);

            line(t, "");
            line(t, "checks:");
            ArrayNode checks = j.putArray("checks");
            for (Invariant i : inv) {
                line(t, "  %-4s %s — %s", i.status(), i.name(), i.detail());
                checks.addObject().put("name", i.name()).put("status", i.status().name()).put("detail", i.detail());
            }
            long failed = inv.stream().filter(Invariant::failed).count();
            line(t, "result: %s (%d of %d checks failed)", failed == 0 ? "PASS" : "FAIL", failed, inv.size());
            j.put("result", failed == 0 ? "PASS" : "FAIL");
            return new SoakSummary(t.toString(), j, List.copyOf(inv));
        }

        // ---- memory, threads, files, KV ----

        private void memory(StringBuilder t, ObjectNode j, List<Invariant> inv) {
            List<Sampler.Sample> soak = samples.stream().filter(x -> x.phase().equals("soak") && x.epoch() == soakEndEpoch && x.rssKib() > 0).toList();
            ObjectNode m = j.putObject("memory");
            line(t, "");
            if (soak.isEmpty()) {
                line(t, "memory: no samples of the soak phase");
                inv.add(Invariant.skip("rss-growth", "no samples of the soak phase"));
            } else {
                double warmAt = soakStart + s.warmupFraction() * (soakEnd - soakStart);
                List<Sampler.Sample> warm = soak.stream().filter(x -> x.t() >= warmAt).toList();
                if (warm.size() < 2) warm = soak.subList(Math.max(0, soak.size() - 2), soak.size());
                Sampler.Sample first = soak.getFirst(), last = soak.getLast(), w0 = warm.getFirst();
                double max = soak.stream().mapToLong(Sampler.Sample::rssKib).max().orElse(0) / 1024.0;
                double growth = (last.rssKib() - w0.rssKib()) / 1024.0;
                double slope = slopePerMinute(warm, x -> x.rssKib() / 1024.0);
                line(t, "RSS (soak phase, pid %d, %d samples): first %.1f MiB, last %.1f MiB, max %.1f MiB; after the warm-up (t ≥ %.0f s) %.1f → %.1f MiB: "
                        + "growth %+.1f MiB (limit %.0f), slope %+.2f MiB/min", last.pid(), soak.size(), first.rssKib() / 1024.0, last.rssKib() / 1024.0, max,
                        w0.t(), w0.rssKib() / 1024.0, last.rssKib() / 1024.0, growth, s.rssGrowthLimitMib(), slope);
                m.put("rss_first_mib", first.rssKib() / 1024.0).put("rss_last_mib", last.rssKib() / 1024.0).put("rss_max_mib", max)
                        .put("rss_warm_mib", w0.rssKib() / 1024.0).put("rss_growth_after_warmup_mib", growth).put("rss_slope_mib_per_min", slope)
                        .put("warmup_end_s", w0.t());
                inv.add(Invariant.check("rss-growth", growth <= s.rssGrowthLimitMib(), String.format(Locale.ROOT,
                        "RSS %+.1f MiB from %.0f s to the end of the soak (limit %+.0f MiB; slope %+.2f MiB/min)", growth, w0.t(), s.rssGrowthLimitMib(), slope)));

                List<Sampler.Sample> heap = soak.stream().filter(x -> x.heapKib() >= 0).toList();
                if (!heap.isEmpty()) {
                    double hSlope = slopePerMinute(heap, x -> x.heapKib() / 1024.0);
                    double hMax = heap.stream().mapToLong(Sampler.Sample::heapKib).max().orElse(0) / 1024.0;
                    double committedMax = heap.stream().mapToLong(Sampler.Sample::heapCommittedKib).max().orElse(0) / 1024.0;
                    line(t, "heap after full GC (%d measurements): first %.1f MiB, last %.1f MiB, max %.1f MiB, slope %+.3f MiB/min; heap committed: "
                            + "last %.1f MiB, max %.1f MiB", heap.size(), heap.getFirst().heapKib() / 1024.0, heap.getLast().heapKib() / 1024.0, hMax, hSlope,
                            heap.getLast().heapCommittedKib() / 1024.0, committedMax);
                    m.put("heap_first_mib", heap.getFirst().heapKib() / 1024.0).put("heap_last_mib", heap.getLast().heapKib() / 1024.0)
                            .put("heap_max_mib", hMax).put("heap_slope_mib_per_min", hSlope).put("heap_measurements", heap.size())
                            .put("heap_committed_last_mib", heap.getLast().heapCommittedKib() / 1024.0).put("heap_committed_max_mib", committedMax);
                } else {
                    line(t, "heap after full GC: not measured during the soak");
                }
                line(t, "threads: first %d, max %d, last %d; open files: first %d, max %d, last %d", first.threads(),
                        soak.stream().mapToInt(Sampler.Sample::threads).max().orElse(0), last.threads(), first.fds(),
                        soak.stream().mapToInt(Sampler.Sample::fds).max().orElse(0), last.fds());
                m.put("threads_first", first.threads()).put("threads_max", soak.stream().mapToInt(Sampler.Sample::threads).max().orElse(0))
                        .put("threads_last", last.threads()).put("fds_first", first.fds()).put("fds_max", soak.stream().mapToInt(Sampler.Sample::fds).max().orElse(0))
                        .put("fds_last", last.fds());
                double kvMax = soak.stream().mapToDouble(Sampler.Sample::kvUsed).filter(d -> !Double.isNaN(d)).max().orElse(Double.NaN);
                double kvFreeMin = soak.stream().mapToDouble(Sampler.Sample::kvFree).filter(d -> !Double.isNaN(d)).min().orElse(Double.NaN);
                double qMax = soak.stream().mapToDouble(Sampler.Sample::queue).filter(d -> !Double.isNaN(d)).max().orElse(Double.NaN);
                double rMax = soak.stream().mapToDouble(Sampler.Sample::running).filter(d -> !Double.isNaN(d)).max().orElse(Double.NaN);
                line(t, "KV pages used: max %s (free: min %s); queue depth max %s; running sequences max %s", n(kvMax), n(kvFreeMin), n(qMax), n(rMax));
                m.put("kv_pages_used_max", kvMax).put("kv_pages_free_min", kvFreeMin).put("queue_depth_max", qMax).put("running_max", rMax);
            }
            List<Sampler.Sample> all = samples.stream().filter(x -> x.rssKib() > 0).toList();
            int step = Math.max(1, (all.size() + 39) / 40);
            StringBuilder series = new StringBuilder();
            ArrayNode js = m.putArray("rss_series");
            for (int i = 0; i < all.size(); i++) {
                Sampler.Sample x = all.get(i);
                js.addObject().put("t_s", Math.round(x.t() * 10) / 10.0).put("phase", x.phase()).put("pid", x.pid()).put("rss_mib", Math.round(x.rssKib() / 102.4) / 10.0);
                if (i % step == 0 || i == all.size() - 1) series.append(String.format(Locale.ROOT, " %.0fs:%.0f", x.t(), x.rssKib() / 1024.0));
            }
            line(t, "RSS series, MiB at run time (all phases, every %d. of %d samples; samples.csv has all):%s", step, all.size(), series);
            if (idleMetrics != null || !Double.isNaN(soakEnd)) {
                line(t, "after the soak: idle (running 0, queue 0) within 20 s: %s; KV pages used when idle: %s", drained ? "yes" : "NO",
                        idleMetrics == null ? "?" : n(idleMetrics.get(PromText.KV_USED)));
                inv.add(Invariant.check("drains-after-load", drained, drained ? "running sequences and queue back to 0 after the soak"
                        : "the server still had running or queued sequences 20 s after the soak's streams stopped"));
            }
        }

        // ---- responsiveness ----

        private void responsiveness(StringBuilder t, ObjectNode j, List<Invariant> inv) {
            double[] ms = probes.stream().filter(Watchdog.Probe::ok).mapToDouble(Watchdog.Probe::ms).toArray();
            long fails = probes.stream().filter(p -> !p.ok()).count();
            Percentiles p = Percentiles.of(ms);
            line(t, "GET /api/version every second: %d probes, p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms; %d without an answer within %s",
                    probes.size(), p.p50(), p.p95(), p.p99(), p.max(), fails, duration(s.versionDeadline()));
            j.set("version_latency_ms", percentiles(p).put("failures", fails).put("probes", probes.size()));
            List<String> when = probes.stream().filter(x -> !x.ok()).limit(5).map(x -> String.format(Locale.ROOT, "%.0f s (%s)", x.t(), x.phase())).toList();
            inv.add(Invariant.check("responsive", fails == 0, fails == 0 ? String.format(Locale.ROOT, "every GET /api/version answered (max %.0f ms)", p.max())
                    : fails + " GET /api/version without an answer within " + duration(s.versionDeadline()) + ", first at " + String.join(", ", when)));
            boolean died = events.stream().anyMatch(e -> e.kind().equals("died"));
            String why = (died ? "the server died outside the planned kill; " : "") + (wedges.isEmpty() ? "" : wedges.size() + " wedge(s): "
                    + String.join("; ", wedges.stream().limit(3).toList()) + "; ") + unplannedRestarts + " unplanned restart(s)";
            inv.add(Invariant.check("server-stays-up", !died && wedges.isEmpty() && unplannedRestarts == 0,
                    !died && wedges.isEmpty() && unplannedRestarts == 0 ? "no death, no wedge, no unplanned restart" : why));
        }

        // ---- requests ----

        private void requests(StringBuilder t, ObjectNode j, List<Invariant> inv) {
            List<RequestRecord> clean = records.stream().filter(r -> !r.disrupted()).toList();
            long disrupted = records.size() - clean.size();
            Map<String, Map<Outcome, Long>> table = new TreeMap<>();
            for (RequestRecord r : clean) {
                String key = r.kind() == RequestRecord.Kind.FAULT ? "fault " + r.fault().label : r.kind().label;
                table.computeIfAbsent(key, k -> new EnumMap<>(Outcome.class)).merge(r.outcome(), 1L, Long::sum);
            }
            line(t, "");
            line(t, "requests: %d in all (%d while the server was being killed or restarted, not counted below)", records.size(), disrupted);
            StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "  %-26s %7s", "kind", "total"));
            for (Outcome o : Outcome.values()) head.append(String.format(Locale.ROOT, " %9s", shortLabel(o)));
            line(t, "%s", head);
            ObjectNode jt = j.putObject("requests_by_kind");
            for (var e : table.entrySet()) {
                long total = e.getValue().values().stream().mapToLong(Long::longValue).sum();
                StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "  %-26s %7d", e.getKey(), total));
                ObjectNode jr = jt.putObject(e.getKey());
                jr.put("total", total);
                for (Outcome o : Outcome.values()) {
                    long c = e.getValue().getOrDefault(o, 0L);
                    row.append(String.format(Locale.ROOT, " %9s", c == 0 ? "." : Long.toString(c)));
                    if (c > 0) jr.put(o.label, c);
                }
                line(t, "%s", row);
            }
            ObjectNode jo = j.putObject("requests_by_outcome");
            for (Outcome o : Outcome.values()) jo.put(o.label, clean.stream().filter(r -> r.outcome() == o).count());
            j.put("requests_total", records.size()).put("requests_disrupted", disrupted);

            // latency of OK well-formed requests
            line(t, "latency of OK well-formed requests (ms): total p50 / p95 / p99, time to the status line p50 / p95 / p99");
            ArrayNode jl = j.putArray("latency_ms");
            for (Api api : Api.values()) {
                for (boolean streamed : new boolean[] {false, true}) {
                    List<RequestRecord> ok = clean.stream().filter(r -> r.kind() == RequestRecord.Kind.NORMAL && r.api() == api && r.streamed() == streamed
                            && r.outcome() == Outcome.OK).toList();
                    if (ok.isEmpty()) continue;
                    Percentiles total = Percentiles.of(ok.stream().mapToDouble(RequestRecord::ms).toArray());
                    Percentiles ttfb = Percentiles.of(ok.stream().mapToDouble(RequestRecord::ttfbMs).toArray());
                    line(t, "  %-19s %-8s n=%-6d %8.1f / %8.1f / %8.1f    %8.1f / %8.1f / %8.1f", api.label, streamed ? "streamed" : "whole", ok.size(),
                            total.p50(), total.p95(), total.p99(), ttfb.p50(), ttfb.p95(), ttfb.p99());
                    ObjectNode x = jl.addObject().put("api", api.label).put("streamed", streamed).put("count", ok.size());
                    x.set("total", percentiles(total));
                    x.set("ttfb", percentiles(ttfb));
                }
            }

            List<RequestRecord> faults = clean.stream().filter(r -> r.kind() == RequestRecord.Kind.FAULT).toList();
            inv.add(count("no-5xx-for-client-faults", faults, r -> r.outcome() == Outcome.SERVER_ERROR, "fault request(s) got a 5xx",
                    "no fault request got a 5xx (" + faults.size() + " sent)"));
            inv.add(count("client-faults-refused", faults, r -> r.outcome() == Outcome.ACCEPTED_FAULT || r.outcome() == Outcome.BAD_ERROR_SHAPE
                            || (r.outcome() == Outcome.RESET && r.fault().apiLevel) || r.outcome() == Outcome.MALFORMED,
                    "fault request(s) accepted, refused without the API's JSON error, or answered by a dropped connection",
                    "every fault that must be refused was refused in the API's shape"));
            inv.add(count("no-hangs", clean, r -> r.outcome() == Outcome.HANG, "request(s) without a complete answer within their deadline",
                    "every request was answered within its deadline"));
            List<RequestRecord> wellFormed = clean.stream().filter(r -> r.kind() == RequestRecord.Kind.NORMAL || r.kind() == RequestRecord.Kind.REFERENCE
                    || r.kind() == RequestRecord.Kind.DISCONNECT).toList();
            inv.add(count("well-formed-requests-succeed", wellFormed, r -> switch (r.outcome()) {
                case OK, DISCONNECTED, BUSY, HANG, MISMATCH -> false;
                default -> true;
            }, "well-formed request(s) failed (other than hangs and greedy mismatches, counted apart)", "every well-formed request succeeded ("
                    + wellFormed.size() + ")"));

            List<RequestRecord> mism = clean.stream().filter(r -> r.outcome() == Outcome.MISMATCH && !r.phase().equals("after-restart")).toList();
            List<String> greedyProblems = new ArrayList<>(referenceProblems);
            greedyProblems.addAll(streamedVersusWhole.stream().map(x -> "streamed and whole differ: " + x).toList());
            if (!mism.isEmpty()) greedyProblems.add(mism.size() + " reference request(s) under load gave other text, e.g. " + mism.getFirst().api().label
                    + (mism.getFirst().streamed() ? " streamed" : " whole") + ": " + mism.getFirst().detail());
            inv.add(Invariant.check("greedy-output-stable", greedyProblems.isEmpty(), greedyProblems.isEmpty()
                    ? "references recorded on every API, streamed = whole, and " + clean.stream().filter(r -> r.kind() == RequestRecord.Kind.REFERENCE
                    && r.outcome() == Outcome.OK).count() + " reference requests gave the same text"
                    : String.join("; ", greedyProblems)));
            ArrayNode rt = j.putArray("reference_texts");
            referenceTexts.forEach(rt::add);
        }

        private Invariant count(String name, List<RequestRecord> rs, Predicate<RequestRecord> bad, String failText, String passText) {
            List<RequestRecord> b = rs.stream().filter(bad).toList();
            if (b.isEmpty()) return Invariant.check(name, true, passText);
            Map<String, Long> by = new LinkedHashMap<>();
            for (RequestRecord r : b) {
                String k = (r.kind() == RequestRecord.Kind.FAULT ? r.fault().label + "/" + r.variant() : r.kind().label) + " → " + r.outcome().label;
                by.merge(k, 1L, Long::sum);
            }
            List<String> top = by.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(8)
                    .map(e -> e.getKey() + " ×" + e.getValue()).toList();
            RequestRecord ex = b.getFirst();
            return Invariant.check(name, false, b.size() + " " + failText + ": " + String.join(", ", top) + "; e.g. " + ex.phase() + " "
                    + (ex.api() == null ? "" : ex.api().label + " ") + ex.outcome().label + (ex.detail() == null ? "" : " (" + ex.detail() + ")"));
        }

        // ---- matrix, cancel, storm ----

        private void matrix(StringBuilder t, ObjectNode j, List<Invariant> inv) {
            if (matrix == null) {
                inv.add(Invariant.skip("fault-matrix", "--no-matrix"));
                return;
            }
            List<FaultMatrix.Row> wrong = matrix.stream().filter(r -> !FaultMatrix.correct(r)).toList();
            line(t, "");
            line(t, "fault matrix (faults.csv): %d of %d handled as a correct server does%s", matrix.size() - wrong.size(), matrix.size(),
                    wrong.isEmpty() ? "" : "; not:");
            ArrayNode jm = j.putArray("fault_matrix");
            for (FaultMatrix.Row r : matrix) {
                jm.addObject().put("fault", r.fault().label).put("variant", r.variant()).put("api", r.api().label).put("streamed", r.stream())
                        .put("status", r.status()).put("outcome", r.outcome().label).put("ms", r.ms()).put("healthy_after", r.healthyAfter())
                        .put("correct", FaultMatrix.correct(r)).put("detail", r.detail());
            }
            for (FaultMatrix.Row r : wrong) {
                line(t, "  %-20s %-17s %-19s %s → %s%s%s", r.fault().label, r.variant(), r.api().label, r.stream() ? "streamed" : "whole", r.outcome().label,
                        r.detail() == null ? "" : " (" + r.detail() + ")", r.healthyAfter() ? "" : "; THE SERVER WAS WEDGED AFTER IT (restarted)");
            }
            if (!quarantined.isEmpty()) {
                line(t, "  left out of the soak's mix (wedged the server): %s", String.join(", ", quarantined.stream().map(f -> f.label).sorted().toList()));
            }
            Map<String, Long> byFault = new TreeMap<>();
            for (FaultMatrix.Row r : wrong) byFault.merge(r.fault().label, 1L, Long::sum);
            inv.add(Invariant.check("fault-matrix", wrong.isEmpty(), wrong.isEmpty() ? "every fault, alone, got what a correct server answers"
                    : wrong.size() + " of " + matrix.size() + " rows wrong: " + byFault.entrySet().stream().map(e -> e.getKey() + " ×" + e.getValue()).toList()));
        }

        private void cancel(StringBuilder t, ObjectNode j, List<Invariant> inv) {
            line(t, "");
            ArrayNode jc = j.putArray("cancel_probe");
            for (CancelProbe.Result r : cancel) {
                line(t, "cancellation probe, %s: %s — %s", r.stream() ? "streamed" : "whole", r.verdict(), r.detail());
                jc.addObject().put("streamed", r.stream()).put("verdict", r.verdict()).put("drop_to_idle_ms", r.dropToIdleMs())
                        .put("cancelled_delta", r.cancelledDelta()).put("generated_delta", r.generatedDelta()).put("detail", r.detail());
                String name = "disconnect-cancels-" + (r.stream() ? "streamed" : "whole");
                inv.add(r.verdict().equals("inconclusive") ? Invariant.skip(name, r.detail()) : Invariant.check(name, r.passed(), r.detail()));
            }
        }

        private void storm(StringBuilder t, ObjectNode j, List<Invariant> inv) {
            if (storm == null) {
                inv.add(Invariant.skip("stall-storm", "--stall-storm 0"));
                return;
            }
            line(t, "stall storm: %d of %d stalled bodies held %.0f s; GET /api/version %d probes, %d failed, slowest %.0f ms; a one-token generation: %s "
                            + "(%.0f ms); the server answered %d and hung up on %d of them", storm.opened(), storm.connections(), storm.holdSeconds(),
                    storm.versionProbes(), storm.versionFails(), storm.versionMaxMs(), storm.generate().label, storm.generateMs(), storm.answeredByServer(),
                    storm.closedByServer());
            j.putObject("stall_storm").put("connections", storm.connections()).put("opened", storm.opened()).put("hold_s", storm.holdSeconds())
                    .put("version_probes", storm.versionProbes()).put("version_fails", storm.versionFails()).put("version_max_ms", storm.versionMaxMs())
                    .put("generate", storm.generate().label).put("answered_by_server", storm.answeredByServer()).put("closed_by_server", storm.closedByServer());
            inv.add(Invariant.check("stall-storm", storm.passed(), storm.passed()
                    ? "the server kept answering with " + storm.opened() + " stalled bodies open" : storm.detail()));
        }

        // ---- chaos ----

        private void chaos(StringBuilder t, ObjectNode j, List<Invariant> inv) {
            line(t, "");
            if (chaos == null) {
                line(t, "chaos step: not reached");
                inv.add(Invariant.check("chaos-restart", false, "the chaos step was not reached"));
                return;
            }
            List<RequestRecord> after = records.stream().filter(r -> r.phase().equals("after-restart") && !r.disrupted()
                    && (r.kind() == RequestRecord.Kind.NORMAL || r.kind() == RequestRecord.Kind.REFERENCE)).toList();
            long afterBad = after.stream().filter(r -> r.outcome() != Outcome.OK).count();
            long killedResets = records.stream().filter(r -> r.phase().equals("kill") && r.disrupted()).count();
            line(t, "chaos step: kill -9 with %d client requests in flight (%s sequences running); %d requests cut off; restart: %s; greedy references after it: %s; "
                            + "well-formed requests after it: %d, %d not OK", chaos.inFlightAtKill(), n(chaos.runningAtKill()), killedResets,
                    chaos.restarted() ? "listening after " + chaos.restartMs() + " ms" : "FAILED (" + chaos.restartError() + ")",
                    chaos.referenceFailures().isEmpty() ? "all identical" : chaos.referenceFailures().size() + " differ or failed", after.size(), afterBad);
            line(t, "disk: model file unchanged: %s; sandbox (HOME, XDG_CACHE_HOME, TMPDIR/java.io.tmpdir, OLLAMA_MODELS) after the kill: %s; at the end: %s",
                    chaos.modelUnchanged() ? "yes" : "NO", chaos.diskAfterKill(), chaos.diskAtEnd() == null ? "?" : chaos.diskAtEnd());
            ObjectNode jc = j.putObject("chaos");
            jc.put("in_flight_at_kill", chaos.inFlightAtKill()).put("running_at_kill", chaos.runningAtKill()).put("cut_off", killedResets)
                    .put("restarted", chaos.restarted()).put("restart_ms", chaos.restartMs()).put("restart_error", chaos.restartError())
                    .put("reference_failures", chaos.referenceFailures().size()).put("after_restart_requests", after.size())
                    .put("after_restart_not_ok", afterBad).put("model_unchanged", chaos.modelUnchanged())
                    .put("disk_after_kill", chaos.diskAfterKill().toString()).put("disk_at_end", String.valueOf(chaos.diskAtEnd()));
            inv.add(Invariant.check("chaos-kill-in-flight", chaos.inFlightAtKill() > 0 || killedResets > 0, chaos.inFlightAtKill()
                    + " client requests in flight at the kill, " + killedResets + " cut off by it"));
            inv.add(Invariant.check("chaos-restart", chaos.restarted(), chaos.restarted() ? "listening " + chaos.restartMs() + " ms after the JVM started"
                    : "did not start: " + chaos.restartError()));
            inv.add(Invariant.check("chaos-greedy-same", chaos.restarted() && chaos.referenceFailures().isEmpty(), !chaos.restarted() ? "no server"
                    : chaos.referenceFailures().isEmpty() ? "all " + referenceTexts.size() + " greedy references identical to the ones before the kill"
                    : chaos.referenceFailures().stream().limit(3).map(r -> r.api().label + (r.streamed() ? " streamed" : " whole") + ": " + r.outcome().label
                    + (r.detail() == null ? "" : " (" + r.detail() + ")")).toList().toString()));
            inv.add(Invariant.check("chaos-next-requests-ok", chaos.restarted() && afterBad == 0 && !after.isEmpty(),
                    after.size() + " well-formed requests after the restart, " + afterBad + " not OK"));
            boolean diskOk = chaos.modelUnchanged();
            List<String> notes = new ArrayList<>();
            if (!chaos.diskAfterKill().empty()) notes.add("the server left files: " + chaos.diskAfterKill());
            inv.add(Invariant.check("chaos-disk-intact", diskOk, (diskOk ? "model file unchanged (size, time, SHA-256)" : "the model file changed")
                    + (notes.isEmpty() ? "; nothing written into HOME, the cache, the temp folder or the store" : "; " + String.join("; ", notes))));
            if (stopStatus != null) {
                line(t, "graceful stop (SIGTERM): exit status %d after %d ms", stopStatus, stopMs);
                inv.add(Invariant.check("graceful-stop", stopStatus >= 0 && stopMs < 15_000, "SIGTERM: exit status " + stopStatus + " after " + stopMs + " ms"));
            }
        }

        private void demo(StringBuilder t, ObjectNode j, List<Invariant> inv) {
            if (demoError != null) {
                line(t, "demo-model crash rounds: failed to run: %s", demoError);
                inv.add(Invariant.check("demo-model-crash-safe", false, "could not run: " + demoError));
                return;
            }
            if (demo == null) {
                inv.add(Invariant.skip("demo-model-crash-safe", "--demo-crashes 0"));
                return;
            }
            long mid = demo.rounds().stream().filter(DemoModelCrash.Round::killedMidWrite).count();
            line(t, "demo-model crash rounds: %d rounds, %d killed mid-write; model file after each: %s; then served: %s, same greedy text after kill -9 + "
                            + "restart: %s, not rewritten: %s; leftovers in the cache: %s", demo.rounds().size(), mid,
                    demo.rounds().stream().map(DemoModelCrash.Round::finalFile).toList(), demo.firstServeOk() ? "yes" : "NO",
                    demo.sameTextAfterRestart() ? "yes" : "NO", demo.notRewritten() ? "yes" : "NO", demo.leftovers().isEmpty() ? "none" : demo.leftovers());
            ObjectNode jd = j.putObject("demo_model");
            jd.put("rounds", demo.rounds().size()).put("killed_mid_write", mid).put("reference_sha256", demo.referenceSha256())
                    .put("served", demo.firstServeOk()).put("same_text_after_restart", demo.sameTextAfterRestart()).put("not_rewritten", demo.notRewritten());
            ArrayNode left = jd.putArray("leftovers");
            demo.leftovers().forEach(left::add);
            ArrayNode pr = jd.putArray("problems");
            demo.problems().forEach(pr::add);
            inv.add(Invariant.check("demo-model-crash-safe", demo.passed(), demo.passed() ? mid + " of " + demo.rounds().size()
                    + " kills landed mid-write; the model file was never partial under its final name, then served the same greedy text across a kill -9"
                    + (demo.leftovers().isEmpty() ? "" : "; " + demo.leftovers().size() + " temporary file(s) left in the cache")
                    : String.join("; ", demo.problems())));
        }

        // ---- logs and timeline ----

        private void logs(StringBuilder t, ObjectNode j) {
            line(t, "");
            ArrayNode jl = j.putArray("server_logs");
            for (ServerProcess p : processes) {
                LogPump l = p.log();
                line(t, "server log %s (pid %d): %d lines%s; request lines by status %s", p.logFile().getFileName(), p.pid(), l.lines(),
                        l.droppedLines() > 0 ? " (" + l.droppedLines() + " past the " + (ServerProcess.LOG_CAP_BYTES >> 20) + " MiB cap not written)" : "",
                        new TreeMap<>(l.statuses()));
                ObjectNode x = jl.addObject().put("file", p.logFile().getFileName().toString()).put("pid", p.pid()).put("lines", l.lines())
                        .put("dropped", l.droppedLines());
                x.putPOJO("statuses", new TreeMap<>(l.statuses()));
                ArrayNode top = x.putArray("top_messages");
                for (var e : l.topMessages(6)) {
                    if (e.getValue() >= 50 || e.getKey().contains("error") || e.getKey().contains("Exception")) {
                        line(t, "    ×%-9d %s", e.getValue(), e.getKey());
                    }
                    top.addObject().put("count", e.getValue()).put("text", e.getKey());
                }
            }
        }

        private void timeline(StringBuilder t, ObjectNode j) {
            line(t, "");
            line(t, "events:");
            ArrayNode je = j.putArray("events");
            for (Events.Event e : events) {
                line(t, "  %7.1f s  %-14s %s", e.t(), e.kind(), e.detail());
                je.addObject().put("t_s", e.t()).put("kind", e.kind()).put("detail", e.detail());
            }
        }

        private static String shortLabel(Outcome o) {
            return switch (o) {
                case CLIENT_ERROR -> "4xx";
                case BAD_ERROR_SHAPE -> "4xx-shape";
                case ACCEPTED_FAULT -> "accepted";
                case SERVER_ERROR -> "5xx";
                case DISCONNECTED -> "dropped";
                default -> o.label;
            };
        }

        private static ObjectNode percentiles(Percentiles p) {
            return Api.JSON.createObjectNode().put("count", p.count()).put("p50", p.p50()).put("p95", p.p95()).put("p99", p.p99()).put("max", p.max());
        }

        private static String n(double d) { return Double.isNaN(d) ? "?" : Long.toString(Math.round(d)); }

        private static double slopePerMinute(List<Sampler.Sample> xs, ToDoubleFunction<Sampler.Sample> y) {
            int n = xs.size();
            if (n < 2) return 0;
            double mx = 0, my = 0;
            for (Sampler.Sample x : xs) {
                mx += x.t();
                my += y.applyAsDouble(x);
            }
            mx /= n;
            my /= n;
            double sxy = 0, sxx = 0;
            for (Sampler.Sample x : xs) {
                sxy += (x.t() - mx) * (y.applyAsDouble(x) - my);
                sxx += (x.t() - mx) * (x.t() - mx);
            }
            return sxx == 0 ? 0 : sxy / sxx * 60;
        }

        private static void line(StringBuilder t, String format, Object... args) {
            t.append(String.format(Locale.ROOT, format, args)).append('\n');
        }
    }
}
