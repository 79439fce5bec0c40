package dev.forkpoint.bench.probe;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.InvalidInputException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code forkpoint probe}: a load probe against any Ollama-compatible server (Forkpoint or Ollama), over HTTP only,
 * following the rollback runbook: it records the triple (server version, model digest, client OS and CPU), sizes the
 * prompts in the server's tokens ({@link ProbeCalibration}: two calibration requests measure the tokens per word of
 * this model; the sizes shrink, with a note, to fit the server's context), sends one cold request first and reports it apart, then for each concurrency level c sends {@code --samples} requests, c at a
 * time (c client threads, each sending its next request when its previous reply is done). Requests are "same system
 * prompt, new turn": a shared prefix and a distinct suffix, greedy (temperature 0, fixed seed), {@code num_predict}
 * tokens at most. Per level: TTFT, inter-token latency and per-stream tok/s as p50/p95/p99 ({@link Percentiles}),
 * aggregate tok/s and the prompt tokens reused from the server's cache; then the p95 TTFT ratio of the highest level
 * over the lowest, with a WARNING above the runbook's 2.8. Writes {@code probe.csv} (one row per sample),
 * {@code probe.json} (the summary and the triple) and {@code ttft.png} (TTFT per level) into {@code --out}.
 */
@Command(name = "probe", mixinStandardHelpOptions = true,
        description = "Load probe of an Ollama-compatible server (Forkpoint or Ollama) over HTTP: TTFT, inter-token latency, tok/s per concurrency level.")
public final class ProbeCommand implements Callable<Integer> {
    /** The runbook's alarm: p95 TTFT at the highest level above this many times the lowest level's. */
    static final double TTFT_RATIO_ALARM = 2.8;

    @Spec
    CommandSpec spec;

    @Option(names = "--url", defaultValue = "http://127.0.0.1:11434", description = "the server's root URL (default: ${DEFAULT-VALUE})")
    String url;

    @Option(names = "--model", required = true, description = "the model name as the server knows it (e.g. llama3.2, qwen3:0.6b)")
    String model;

    @Option(names = "--samples", defaultValue = "24", description = "requests per concurrency level, after the cold call (default: ${DEFAULT-VALUE}; the runbook asks for ≥ 24)")
    int samples;

    @Option(names = "--concurrency", defaultValue = "1,4", split = ",", description = "concurrent streams per level (default: ${DEFAULT-VALUE})")
    int[] concurrency;

    @Option(names = "--shared-prefix-tokens", defaultValue = "2000", description = "shared system prompt, ≈ the server's tokens (calibrated on its model; shrunk to fit its context; default: ${DEFAULT-VALUE})")
    int prefixTokens;

    @Option(names = "--prompt-tokens", defaultValue = "100", description = "distinct user turn per request, ≈ the server's tokens (default: ${DEFAULT-VALUE})")
    int promptTokens;

    @Option(names = "--max-tokens", defaultValue = "64", description = "num_predict per request (default: ${DEFAULT-VALUE})")
    int maxTokens;

    @Option(names = "--api", defaultValue = "chat", description = "chat (/api/chat: system + user message) or generate (/api/generate: one prompt) (default: ${DEFAULT-VALUE})")
    String api;

    @Option(names = "--seed", defaultValue = "42", description = "options.seed and the prompts' word choice (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--num-ctx", description = "options.num_ctx (default: the server's)")
    Integer numCtx;

    @Option(names = "--timeout", defaultValue = "600", description = "seconds to wait for one request (default: ${DEFAULT-VALUE})")
    int timeoutSeconds;

    @Option(names = "--out", description = "folder for probe.csv, probe.json and ttft.png (default: ./probe-<timestamp>)")
    Path out;

    @Override
    public Integer call() throws Exception {
        validate();
        PrintWriter stdout = spec.commandLine().getOut(), stderr = spec.commandLine().getErr();
        Path dir = out != null ? out : Path.of("probe-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        OllamaClient client = new OllamaClient(url, Duration.ofSeconds(timeoutSeconds));
        String path = api.equals("chat") ? "/api/chat" : "/api/generate";

        String version = client.version();
        String digest = client.modelDigest(model);
        ClientMachine machine = ClientMachine.current();
        stdout.printf(Locale.ROOT, "probe %s, model %s (digest %s), server version %s%nclient: %s%n", client.url(), model,
                digest == null ? "not reported" : digest, version, machine.describe());
        stdout.flush();

        ProbeCalibration calibration = calibrate(client, path);
        stdout.println(calibration.describe());
        ProbeCalibration.Sizing sizing = calibration.size(prefixTokens, promptTokens, maxTokens);
        if (sizing.note() != null) stdout.println(sizing.note());
        stdout.printf(Locale.ROOT, "%s, shared prefix ≈%d tokens (%d words), turn ≈%d tokens (%d words), num_predict %d, temperature 0, seed %d, %d samples per level%n",
                path, sizing.prefixTokens(), sizing.prefixWords(), sizing.turnTokens(), sizing.turnWords(), maxTokens, seed, samples);
        stdout.flush();

        var prompts = new ProbePrompts(newTag(), sizing.prefixWords(), sizing.turnWords(), seed);
        ServerReply coldReply = client.stream(path, body(prompts, 0, maxTokens), model);
        ProbeSample cold = ProbeSample.of(0, 0, coldReply);
        double coldLoadMillis = coldReply.loadDurationNanos() < 0 ? Double.NaN : coldReply.loadDurationNanos() / 1e6;
        stdout.printf(Locale.ROOT, "cold call: TTFT %.1f ms, total %.1f ms, prompt_eval_count %d%s%s%n", cold.ttftMillis(), cold.totalMillis(),
                cold.promptEvalCount(), cold.promptCacheCount() >= 0 ? ", prompt_cache_count " + cold.promptCacheCount() : "",
                Double.isNaN(coldLoadMillis) ? "" : String.format(Locale.ROOT, ", load_duration %.1f ms", coldLoadMillis));
        stdout.flush();

        var progress = new ProgressBar(stderr, ProgressBar.interactive(System.getenv()));
        List<ProbeLevel> levels = new ArrayList<>();
        int nextPrompt = 1;
        for (int c : concurrency) {
            levels.add(runLevel(client, path, prompts, c, nextPrompt, progress));
            nextPrompt += samples;
        }
        ObjectNode settings = settings(path);
        calibration.writeTo(settings, sizing, prefixTokens, promptTokens);
        var report = new ProbeReport(client.url(), model, version, digest, machine, settings, cold, coldLoadMillis, levels);
        report.print(stdout);
        report.write(dir);
        stdout.printf("wrote %s, %s, %s%n", dir.resolve(ProbeReport.CSV), dir.resolve(ProbeReport.JSON), dir.resolve(ProbeReport.PNG));
        stdout.flush();
        return 0;
    }

    private void validate() {
        if (samples < 1) throw new InvalidInputException("--samples must be ≥ 1, got " + samples);
        if (concurrency.length == 0) throw new InvalidInputException("--concurrency needs at least one level");
        for (int c : concurrency) if (c < 1) throw new InvalidInputException("--concurrency levels must be ≥ 1, got " + c);
        if (prefixTokens < 0) throw new InvalidInputException("--shared-prefix-tokens must be ≥ 0, got " + prefixTokens);
        if (promptTokens < 1) throw new InvalidInputException("--prompt-tokens must be ≥ 1, got " + promptTokens);
        if (maxTokens < 1) throw new InvalidInputException("--max-tokens must be ≥ 1, got " + maxTokens);
        if (timeoutSeconds < 1) throw new InvalidInputException("--timeout must be ≥ 1 second, got " + timeoutSeconds);
        if (numCtx != null && numCtx < 1) throw new InvalidInputException("--num-ctx must be ≥ 1, got " + numCtx);
        if (!api.equals("chat") && !api.equals("generate")) throw new InvalidInputException("--api must be chat or generate, got '" + api + "'");
    }

    private static String newTag() {
        return HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    }

    /** Calibration requests' prompt words (a one-word turn each): a small one, then one sized to about half the context. */
    static final int CALIBRATION_WORDS = 4, CALIBRATION_MAX_WORDS = 600;

    /**
     * Measures the server's tokens per prompt word on this model and the fixed tokens of every request
     * ({@link ProbeCalibration}) with two requests of fresh tags and one generated token each (the first loads the
     * model if the server had not), after reading the context requests must fit ({@code --num-ctx}, else the
     * server's: {@link OllamaClient#context}; 2048 assumed, and said, when it reports none). A context too small for
     * the second request leaves one point: then the rate includes the fixed part (an overestimate, so prompts come out
     * smaller, never too large).
     */
    private ProbeCalibration calibrate(OllamaClient client, String path) {
        ServerReply first = client.stream(path, body(ProbePrompts.calibration(newTag(), CALIBRATION_WORDS, seed), 0, 1), model);
        int w1 = CALIBRATION_WORDS + 1, t1 = promptSize(first, path);
        OllamaClient.ServerContext ctx = numCtx != null ? new OllamaClient.ServerContext(numCtx, "--num-ctx") : client.context(model);
        if (ctx == null) ctx = new OllamaClient.ServerContext(2048, "assumed: the server reports no context in /api/ps or /api/show");
        double loadMillis = first.loadDurationNanos() < 0 ? Double.NaN : first.loadDurationNanos() / 1e6;
        double rough = (double) t1 / w1;   // includes the fixed part: an overestimate
        int w2 = (int) Math.min(CALIBRATION_MAX_WORDS, (ctx.numCtx() / 2.0 - t1) / rough + w1);
        if (w2 < w1 + 8) {
            return new ProbeCalibration(rough, 0, new int[] {w1}, new int[] {t1}, ctx.numCtx(), ctx.source(), loadMillis);
        }
        ServerReply second = client.stream(path, body(ProbePrompts.calibration(newTag(), w2 - 1, seed), 0, 1), model);
        int t2 = promptSize(second, path);
        double rate = (double) (t2 - t1) / (w2 - w1);
        if (!(rate > 0)) rate = (double) t2 / w2;
        double overhead = Math.max(0, t1 - rate * w1);
        return new ProbeCalibration(rate, overhead, new int[] {w1, w2}, new int[] {t1, t2}, ctx.numCtx(), ctx.source(), loadMillis);
    }

    /** A reply's prompt size in the server's tokens: prompt_eval_count plus prompt_cache_count where it sends one. */
    private int promptSize(ServerReply reply, String path) {
        int evaluated = reply.promptEvalCount();
        if (evaluated < 0) {
            throw new ProbeException(path + " for model '" + model + "' reported no prompt_eval_count, so the prompts cannot be sized"
                    + " in the server's tokens; is this an Ollama-compatible server?");
        }
        Integer cached = reply.promptCacheCount();
        return evaluated + (cached == null ? 0 : cached);
    }

    /** The request for prompt {@code i}: streamed, greedy, a fixed seed, {@code num_predict}. */
    private ObjectNode body(ProbePrompts prompts, int i, int numPredict) {
        ObjectNode b = OllamaClient.JSON.createObjectNode().put("model", model).put("stream", true);
        if (api.equals("chat")) {
            ArrayNode messages = b.putArray("messages");
            messages.addObject().put("role", "system").put("content", prompts.prefix());
            messages.addObject().put("role", "user").put("content", prompts.suffix(i));
        } else {
            b.put("prompt", prompts.prefix() + "\n\n" + prompts.suffix(i));
        }
        ObjectNode o = b.putObject("options").put("num_predict", numPredict).put("temperature", 0).put("seed", seed);
        if (numCtx != null) o.put("num_ctx", numCtx);
        return b;
    }

    /** {@code streams} client threads take the level's samples between them, each sending its next when its reply is done. */
    private ProbeLevel runLevel(OllamaClient client, String path, ProbePrompts prompts, int streams, int firstPrompt, ProgressBar progress)
            throws InterruptedException {
        String label = "concurrency " + streams;
        progress.start(label, samples);
        AtomicInteger next = new AtomicInteger();
        AtomicReference<RuntimeException> failure = new AtomicReference<>();
        List<ProbeSample> done = Collections.synchronizedList(new ArrayList<>());
        long start = System.nanoTime();
        Thread[] clients = new Thread[Math.min(streams, samples)];
        for (int t = 0; t < clients.length; t++) {
            clients[t] = Thread.ofPlatform().name("probe-client-" + t).start(() -> {
                for (int i; failure.get() == null && (i = next.getAndIncrement()) < samples; ) {
                    try {
                        done.add(ProbeSample.of(streams, i, client.stream(path, body(prompts, firstPrompt + i, maxTokens), model)));
                        progress.step();
                    } catch (RuntimeException e) {
                        failure.compareAndSet(null, e);
                    }
                }
            });
        }
        for (Thread c : clients) c.join();
        long wall = System.nanoTime() - start;
        if (failure.get() != null) {
            progress.finish(label + ": failed");
            throw failure.get();
        }
        List<ProbeSample> ordered = new ArrayList<>(done);
        ordered.sort((a, b) -> Integer.compare(a.index(), b.index()));
        ProbeLevel level = new ProbeLevel(streams, List.copyOf(ordered), wall);
        Percentiles ttft = level.ttft();
        progress.finish(String.format(Locale.ROOT, "%s: %d samples in %.1f s, TTFT p50 %.1f ms p95 %.1f ms", label, samples, wall / 1e9, ttft.p50(), ttft.p95()));
        return level;
    }

    private ObjectNode settings(String path) {
        ObjectNode s = OllamaClient.JSON.createObjectNode();
        s.put("endpoint", path).put("samples_per_level", samples).put("num_predict", maxTokens).put("temperature", 0).put("seed", seed);
        if (numCtx != null) s.put("num_ctx", numCtx);
        ArrayNode levels = s.putArray("concurrency");
        Arrays.stream(concurrency).forEach(levels::add);
        return s;
    }
}
