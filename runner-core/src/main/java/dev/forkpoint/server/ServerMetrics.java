package dev.forkpoint.server;

import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.SchedulerStats;
import dev.forkpoint.kvcache.CacheStats;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.Supplier;

/**
 * The server's Prometheus metrics, in a registry of its own (several servers in one JVM do not mix):
 * <ul>
 *   <li>{@code forkpoint_http_requests_total{endpoint,method,status}} — requests by route template and status
 *   <li>{@code forkpoint_time_to_first_token_seconds{model}}, {@code forkpoint_inter_token_latency_seconds{model}} — histograms
 *   <li>{@code forkpoint_prompt_tokens_evaluated_total{model}}, {@code forkpoint_prompt_tokens_reused_total{model}}
 *       (prefix-cache hits), {@code forkpoint_generated_tokens_total{model}}, {@code forkpoint_generations_cancelled_total{model}}
 *   <li>gauges per loaded model: {@code forkpoint_kv_pages_used}, {@code forkpoint_kv_pages_free},
 *       {@code forkpoint_queue_depth} (waiting requests), {@code forkpoint_running_sequences}
 * </ul>
 */
public final class ServerMetrics {
    private static final double[] LATENCY_BUCKETS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Counter requests, evaluated, reused, generated, cancelled;
    private final Histogram ttft, itl;

    ServerMetrics(Supplier<Iterable<ServedModel>> loaded) {
        requests = Counter.builder().name("forkpoint_http_requests_total").help("HTTP requests by endpoint and status")
                .labelNames("endpoint", "method", "status").register(registry);
        ttft = Histogram.builder().name("forkpoint_time_to_first_token_seconds")
                .help("Time from submission to the first generated text").classicOnly().classicUpperBounds(LATENCY_BUCKETS)
                .labelNames("model").register(registry);
        itl = Histogram.builder().name("forkpoint_inter_token_latency_seconds")
                .help("Time between generated text pieces").classicOnly().classicUpperBounds(LATENCY_BUCKETS)
                .labelNames("model").register(registry);
        evaluated = Counter.builder().name("forkpoint_prompt_tokens_evaluated_total")
                .help("Prompt tokens evaluated (not reused from the prefix cache)").labelNames("model").register(registry);
        reused = Counter.builder().name("forkpoint_prompt_tokens_reused_total")
                .help("Prompt tokens reused from the prefix cache").labelNames("model").register(registry);
        generated = Counter.builder().name("forkpoint_generated_tokens_total")
                .help("Tokens generated").labelNames("model").register(registry);
        cancelled = Counter.builder().name("forkpoint_generations_cancelled_total")
                .help("Generations cancelled because the client went away").labelNames("model").register(registry);
        GaugeWithCallback.builder().name("forkpoint_kv_pages_used").help("KV cache pages in use (running or cached)")
                .labelNames("model").callback(cb -> {
                    for (ServedModel m : loaded.get()) cb.call(m.model().cacheStats().usedPages(), m.name());
                }).register(registry);
        GaugeWithCallback.builder().name("forkpoint_kv_pages_free").help("KV cache pages free")
                .labelNames("model").callback(cb -> {
                    for (ServedModel m : loaded.get()) {
                        CacheStats s = m.model().cacheStats();
                        cb.call(s.freePages(), m.name());
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("forkpoint_queue_depth").help("Requests waiting for a sequence slot")
                .labelNames("model").callback(cb -> {
                    for (ServedModel m : loaded.get()) cb.call(m.scheduler().stats().queued(), m.name());
                }).register(registry);
        GaugeWithCallback.builder().name("forkpoint_running_sequences").help("Sequences being prefilled or decoded")
                .labelNames("model").callback(cb -> {
                    for (ServedModel m : loaded.get()) {
                        SchedulerStats s = m.scheduler().stats();
                        cb.call(s.running(), m.name());
                    }
                }).register(registry);
    }

    void request(String endpoint, String method, int status) {
        requests.labelValues(endpoint, method, Integer.toString(status)).inc();
    }

    void timeToFirstToken(String model, long nanos) { ttft.labelValues(model).observe(nanos / 1e9); }

    void interTokenLatency(String model, long nanos) { itl.labelValues(model).observe(nanos / 1e9); }

    void completed(String model, GenerationResult r) {
        evaluated.labelValues(model).inc(r.evaluatedPromptTokens());
        reused.labelValues(model).inc(r.cachedTokens());
        generated.labelValues(model).inc(r.generatedIds().length);
    }

    void cancelled(String model) { cancelled.labelValues(model).inc(); }

    /** The Prometheus text exposition (format 0.0.4). */
    public String scrape() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            PrometheusTextFormatWriter.create().write(out, registry.scrape());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The content type of {@link #scrape()}. */
    public static String contentType() { return PrometheusTextFormatWriter.CONTENT_TYPE; }
}
