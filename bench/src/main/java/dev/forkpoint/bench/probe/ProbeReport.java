package dev.forkpoint.bench.probe;

import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.StringJoiner;

/**
 * What a probe found, as a console table, {@value #CSV} (one row per steady-state sample; the cold call is in the
 * JSON only), {@value #JSON} (the triple, the cold call, per level the percentiles, and the TTFT ratio) and
 * {@value #PNG}. Every figure in the JSON can be recomputed from the CSV with {@link Percentiles}.
 */
record ProbeReport(String url, String model, String serverVersion, String modelDigest, ClientMachine client,
                   ObjectNode settings, ProbeSample cold, double coldLoadMillis, List<ProbeLevel> levels) {
    static final String CSV = "probe.csv";
    static final String JSON = "probe.json";
    static final String PNG = "ttft.png";
    static final String CSV_HEADER = "concurrency,sample,ttft_ms,total_ms,decode_ms,eval_count,stream_tok_s,prompt_eval_count,"
            + "prompt_cache_count,prompt_tokens,reused_tokens,eval_duration_ms,done_reason,itl_ms";

    /** The cold call's prompt size: what a sample's prompt is taken to be when the server does not report reuse. */
    int coldPromptTokens() { return cold.promptTokens(Math.max(0, cold.promptEvalCount())); }

    /** The lowest and the highest concurrency level, when there are two different ones. */
    ProbeLevel lowest() { return levels.stream().min(Comparator.comparingInt(ProbeLevel::concurrency)).orElseThrow(); }

    ProbeLevel highest() { return levels.stream().max(Comparator.comparingInt(ProbeLevel::concurrency)).orElseThrow(); }

    /** p95 TTFT of the highest level over the lowest's; NaN with a single level. */
    double ttftP95Ratio() {
        return lowest().concurrency() == highest().concurrency() ? Double.NaN : highest().ttft().p95() / lowest().ttft().p95();
    }

    void print(PrintWriter out) {
        out.printf(Locale.ROOT, "%-11s %7s  %-24s %-24s %-24s %12s  %s%n", "concurrency", "samples", "TTFT ms p50/p95/p99",
                "ITL ms p50/p95/p99", "stream tok/s p50/p95/p99", "aggregate", "prompt tokens reused");
        for (ProbeLevel l : levels) {
            long prompt = l.promptTokens(coldPromptTokens()), reused = l.reusedTokens(coldPromptTokens());
            out.printf(Locale.ROOT, "%-11d %7d  %-24s %-24s %-24s %8.2f tok/s  %d of %d (%.1f %%)%s%n", l.concurrency(), l.samples().size(),
                    triple(l.ttft(), 1), triple(l.interTokenLatency(), 1), triple(l.streamTokensPerSecond(), 2), l.aggregateTokensPerSecond(),
                    reused, prompt, prompt == 0 ? 0.0 : 100.0 * reused / prompt, l.reuseReported() ? "" : " (estimated)");
        }
        if (levels.stream().anyMatch(l -> !l.reuseReported())) {
            out.printf(Locale.ROOT, "(estimated: the server sends no prompt_cache_count; reused = the cold call's %d prompt tokens − prompt_eval_count)%n",
                    coldPromptTokens());
        }
        double ratio = ttftP95Ratio();
        if (!Double.isNaN(ratio)) {
            out.printf(Locale.ROOT, "p95 TTFT ratio, concurrency %d vs %d: %.2f (runbook alarm above %.1f)%n",
                    highest().concurrency(), lowest().concurrency(), ratio, ProbeCommand.TTFT_RATIO_ALARM);
            if (ratio > ProbeCommand.TTFT_RATIO_ALARM) {
                out.printf(Locale.ROOT, "WARNING: p95 TTFT at concurrency %d is %.2f× that at concurrency %d, above the runbook's %.1f× alarm%n",
                        highest().concurrency(), ratio, lowest().concurrency(), ProbeCommand.TTFT_RATIO_ALARM);
            }
        }
        out.println("percentiles: " + Percentiles.METHOD);
    }

    private static String triple(Percentiles p, int decimals) {
        String f = "%." + decimals + "f";
        return String.format(Locale.ROOT, f + " / " + f + " / " + f, p.p50(), p.p95(), p.p99());
    }

    /** Writes the CSV, the JSON and the chart into {@code dir} (created when missing). */
    void write(Path dir) throws IOException {
        Files.createDirectories(dir);
        try (Writer w = Files.newBufferedWriter(dir.resolve(CSV), StandardCharsets.UTF_8)) {
            w.write(CSV_HEADER + "\n");
            for (ProbeLevel l : levels) for (ProbeSample s : l.samples()) w.write(csvRow(s) + "\n");
        }
        OllamaClient.JSON.writer().with(SerializationFeature.INDENT_OUTPUT).writeValue(dir.resolve(JSON).toFile(), json());
        TtftChart.write(dir.resolve(PNG), levels, model + " at " + url);
    }

    private String csvRow(ProbeSample s) {
        StringJoiner itl = new StringJoiner(" ");
        for (double d : s.itlMillis()) itl.add(num(d));
        return String.join(",", Integer.toString(s.concurrency()), Integer.toString(s.index()), num(s.ttftMillis()), num(s.totalMillis()),
                num(s.decodeMillis()), Integer.toString(s.evalCount()), num(s.streamTokensPerSecond()), Integer.toString(s.promptEvalCount()),
                s.promptCacheCount() >= 0 ? Integer.toString(s.promptCacheCount()) : "", Integer.toString(s.promptTokens(coldPromptTokens())),
                Integer.toString(s.reusedTokens(coldPromptTokens())), num(s.evalDurationMillis()), s.doneReason(), itl.toString());
    }

    /** Plain decimal with 4 places (no exponent), empty for NaN. */
    private static String num(double v) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.4f", v);
    }

    ObjectNode json() {
        ObjectNode root = OllamaClient.JSON.createObjectNode();
        root.put("created_at", Instant.now().toString()).put("url", url).put("model", model);
        ObjectNode triple = root.putObject("triple");
        triple.put("server_version", serverVersion);
        if (modelDigest == null) triple.putNull("model_digest"); else triple.put("model_digest", modelDigest);
        ObjectNode c = triple.putObject("client");
        c.put("os_name", client.osName()).put("os_version", client.osVersion()).put("arch", client.arch())
                .put("cpu_model", client.cpuModel()).put("cores", client.cores());
        root.set("settings", settings);
        root.put("percentile_method", Percentiles.METHOD);
        ObjectNode coldNode = root.putObject("cold");
        number(coldNode, "ttft_ms", cold.ttftMillis());   // NaN when the reply carried no text
        coldNode.put("total_ms", cold.totalMillis()).put("eval_count", cold.evalCount()).put("prompt_eval_count", cold.promptEvalCount());
        if (cold.promptCacheCount() >= 0) coldNode.put("prompt_cache_count", cold.promptCacheCount()); else coldNode.putNull("prompt_cache_count");
        if (!Double.isNaN(coldLoadMillis)) coldNode.put("load_duration_ms", coldLoadMillis);
        var array = root.putArray("levels");
        for (ProbeLevel l : levels) {
            ObjectNode n = array.addObject();
            n.put("concurrency", l.concurrency()).put("samples", l.samples().size()).put("wall_s", l.wallNanos() / 1e9);
            n.set("ttft_ms", percentiles(l.ttft()));
            n.set("itl_ms", percentiles(l.interTokenLatency()));
            n.set("stream_tok_s", percentiles(l.streamTokensPerSecond()));
            number(n, "aggregate_tok_s", l.aggregateTokensPerSecond());
            n.put("generated_tokens", l.samples().stream().mapToLong(ProbeSample::evalCount).sum());
            ObjectNode cache = n.putObject("cache");
            cache.put("prompt_tokens", l.promptTokens(coldPromptTokens())).put("evaluated_tokens", l.evaluatedTokens())
                    .put("reused_tokens", l.reusedTokens(coldPromptTokens()))
                    .put("source", l.reuseReported() ? "prompt_cache_count" : "estimated: cold call's prompt_eval_count - prompt_eval_count");
        }
        double ratio = ttftP95Ratio();
        if (!Double.isNaN(ratio)) {
            ObjectNode r = root.putObject("ttft_p95_ratio");
            number(r, "ratio", ratio);
            r.put("high_concurrency", highest().concurrency()).put("low_concurrency", lowest().concurrency())
                    .put("alarm_above", ProbeCommand.TTFT_RATIO_ALARM).put("warning", ratio > ProbeCommand.TTFT_RATIO_ALARM);
        }
        return root;
    }

    private static ObjectNode percentiles(Percentiles p) {
        ObjectNode n = OllamaClient.JSON.createObjectNode();
        n.put("count", p.count());
        number(n, "min", p.min());
        number(n, "p50", p.p50());
        number(n, "p95", p.p95());
        number(n, "p99", p.p99());
        number(n, "max", p.max());
        number(n, "mean", p.mean());
        return n;
    }

    /** JSON has no NaN: an undefined figure is null. */
    private static void number(ObjectNode n, String field, double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) n.putNull(field); else n.put(field, v);
    }
}
