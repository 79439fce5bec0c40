package dev.forkpoint.bench.soak;

import java.util.HashMap;
import java.util.Map;

/**
 * A Prometheus text exposition read into {@code name → sum over all label sets}, plus the sum of
 * {@code forkpoint_http_requests_total} over 5xx statuses. Enough for the gauges and counters the soak samples.
 */
record PromText(Map<String, Double> sums, double server5xx) {
    static final String KV_USED = "forkpoint_kv_pages_used";
    static final String KV_FREE = "forkpoint_kv_pages_free";
    static final String QUEUE = "forkpoint_queue_depth";
    static final String RUNNING = "forkpoint_running_sequences";
    static final String CANCELLED = "forkpoint_generations_cancelled_total";
    static final String GENERATED = "forkpoint_generated_tokens_total";
    static final String REQUESTS = "forkpoint_http_requests_total";

    static PromText parse(String text) {
        Map<String, Double> sums = new HashMap<>();
        double fivexx = 0;
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) continue;
            int brace = line.indexOf('{');
            int space = brace >= 0 ? line.indexOf(' ', line.lastIndexOf('}')) : line.indexOf(' ');
            if (space < 0) continue;
            String name = brace >= 0 ? line.substring(0, brace) : line.substring(0, space);
            double v;
            try {
                v = Double.parseDouble(line.substring(space + 1).trim().split("\\s+")[0]);
            } catch (NumberFormatException e) {
                continue;
            }
            sums.merge(name, v, Double::sum);
            if (name.equals(REQUESTS) && brace >= 0 && line.substring(brace).matches(".*status=\"5\\d\\d\".*")) fivexx += v;
        }
        return new PromText(Map.copyOf(sums), fivexx);
    }

    /** The sum for {@code name}, or NaN when the server did not report it (no model loaded yet). */
    double get(String name) { return sums.getOrDefault(name, Double.NaN); }
}
