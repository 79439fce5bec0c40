package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.SchedulerOptions;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * How a {@link ForkpointServer} runs.
 *
 * @param host          the address to bind (loopback by default)
 * @param port          the port; 0 = an ephemeral one ({@link ForkpointServer#port()} tells which)
 * @param models        {@code --model} values (paths or Ollama names), loaded at startup and never unloaded; empty =
 *                      the local Ollama store's models, loaded on first request and unloaded after keep_alive (and the
 *                      built-in demo model when the store is empty)
 * @param parallel      sequences one model's scheduler evaluates together
 * @param queueLimit    requests waiting per model beyond the running ones; one more gets 503
 * @param apiKey        when non-null, every API route (all but {@code GET /}) needs {@code Authorization: Bearer KEY}
 *                      or {@code x-api-key: KEY}
 * @param threads       worker threads per loaded model
 * @param engine        KV cache options of every loaded model
 * @param keepAlive     how long a store model stays loaded after its last request when the request names none
 * @param maxBodyBytes  largest request body accepted (larger → 413)
 * @param env           environment variables (OLLAMA_MODELS, HOME, XDG_CACHE_HOME) used to find the store and the cache
 * @param guards        body timeouts, bodies per client, the Host and Origin allow-lists ({@link RequestGuards})
 * @param maxLoadedModels store models loaded at once ({@code --max-loaded-models}, {@code OLLAMA_MAX_LOADED_MODELS}): to
 *                      load one more, the idle model used least recently is unloaded first (none idle → 503); with
 *                      {@code --model}, at most this many may be given; 0 = no limit
 * @param stepMillis    the time bound of a scheduler step that has decoding streams ({@code --step-ms};
 *                      {@link dev.forkpoint.engine.SchedulerOptions#stepMillis()}: 0 automatic, −1 unbounded)
 */
public record ServerConfig(String host, int port, List<String> models, int parallel, int queueLimit, String apiKey,
                           int threads, EngineOptions engine, Duration keepAlive, long maxBodyBytes,
                           Map<String, String> env, RequestGuards guards, int maxLoadedModels, int stepMillis) {
    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final int DEFAULT_PORT = 11434;
    public static final Duration DEFAULT_KEEP_ALIVE = Duration.ofMinutes(5);
    public static final long DEFAULT_MAX_BODY_BYTES = 32L << 20;

    public ServerConfig {
        if (host == null || host.isBlank()) host = DEFAULT_HOST;
        if (port < 0 || port > 65535) throw new InvalidInputException("port must be in [0, 65535], got " + port);
        models = models == null ? List.of() : List.copyOf(models);
        if (parallel < 1) throw new InvalidInputException("parallel must be at least 1, got " + parallel);
        if (queueLimit < 0) throw new InvalidInputException("queue limit must be >= 0, got " + queueLimit);
        if (apiKey != null && apiKey.isBlank()) throw new InvalidInputException("api-key must not be blank");
        if (threads < 1) throw new InvalidInputException("threads must be at least 1, got " + threads);
        if (engine == null) engine = EngineOptions.defaults();
        if (keepAlive == null) keepAlive = DEFAULT_KEEP_ALIVE;
        if (maxBodyBytes < 1) throw new InvalidInputException("max body bytes must be at least 1, got " + maxBodyBytes);
        env = env == null ? Map.of() : Map.copyOf(env);
        if (guards == null) guards = RequestGuards.defaults();
        if (maxLoadedModels < 0) throw new InvalidInputException("max loaded models must be >= 0 (0 = no limit), got " + maxLoadedModels);
        if (maxLoadedModels > 0 && models.size() > maxLoadedModels) {
            throw new InvalidInputException(models.size() + " models are given with --model, but at most " + maxLoadedModels
                    + " may be loaded (--max-loaded-models / OLLAMA_MAX_LOADED_MODELS)");
        }
        if (stepMillis < SchedulerOptions.UNBOUNDED) {
            throw new InvalidInputException("--step-ms must be >= 0 (0: automatic) or -1 (no time bound), got " + stepMillis);
        }
    }

    /** A configuration with the automatic step bound. */
    public ServerConfig(String host, int port, List<String> models, int parallel, int queueLimit, String apiKey,
                        int threads, EngineOptions engine, Duration keepAlive, long maxBodyBytes, Map<String, String> env,
                        RequestGuards guards, int maxLoadedModels) {
        this(host, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, 0);
    }

    /** A configuration with no limit on loaded models. */
    public ServerConfig(String host, int port, List<String> models, int parallel, int queueLimit, String apiKey,
                        int threads, EngineOptions engine, Duration keepAlive, long maxBodyBytes, Map<String, String> env,
                        RequestGuards guards) {
        this(host, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, 0);
    }

    /** A configuration with the default {@link RequestGuards}. */
    public ServerConfig(String host, int port, List<String> models, int parallel, int queueLimit, String apiKey,
                        int threads, EngineOptions engine, Duration keepAlive, long maxBodyBytes, Map<String, String> env) {
        this(host, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, null);
    }

    /** Defaults: loopback, port 11434, the store's models, parallel 4, all processors, no API key. */
    public static ServerConfig defaults() {
        return new ServerConfig(DEFAULT_HOST, DEFAULT_PORT, List.of(), 4, 512, null,
                Runtime.getRuntime().availableProcessors(), EngineOptions.defaults(), DEFAULT_KEEP_ALIVE,
                DEFAULT_MAX_BODY_BYTES, System.getenv());
    }

    public ServerConfig withPort(int p) { return new ServerConfig(host, p, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withHost(String h) { return new ServerConfig(h, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withModels(List<String> m) { return new ServerConfig(host, port, m, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withModel(Path file) { return withModels(List.of(file.toString())); }

    public ServerConfig withParallel(int n) { return new ServerConfig(host, port, models, n, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withQueueLimit(int n) { return new ServerConfig(host, port, models, parallel, n, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withApiKey(String key) { return new ServerConfig(host, port, models, parallel, queueLimit, key, threads, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withThreads(int n) { return new ServerConfig(host, port, models, parallel, queueLimit, apiKey, n, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withEngine(EngineOptions e) { return new ServerConfig(host, port, models, parallel, queueLimit, apiKey, threads, e, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withKeepAlive(Duration d) { return new ServerConfig(host, port, models, parallel, queueLimit, apiKey, threads, engine, d, maxBodyBytes, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withMaxBodyBytes(long n) { return new ServerConfig(host, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, n, env, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withGuards(RequestGuards g) { return new ServerConfig(host, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, g, maxLoadedModels, stepMillis); }

    public ServerConfig withEnv(Map<String, String> e) { return new ServerConfig(host, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, e, guards, maxLoadedModels, stepMillis); }

    public ServerConfig withMaxLoadedModels(int n) { return new ServerConfig(host, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, n, stepMillis); }

    public ServerConfig withStepMillis(int ms) { return new ServerConfig(host, port, models, parallel, queueLimit, apiKey, threads, engine, keepAlive, maxBodyBytes, env, guards, maxLoadedModels, ms); }

    /** What each loaded model's scheduler runs with: parallel, the queue limit and the step bound. */
    public SchedulerOptions schedulerOptions() {
        return SchedulerOptions.defaults().withParallel(parallel).withQueueLimit(queueLimit).withStepMillis(stepMillis);
    }
}
