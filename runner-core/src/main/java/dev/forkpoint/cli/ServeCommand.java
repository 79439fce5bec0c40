package dev.forkpoint.cli;

import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.choice.Backends;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.server.ForkpointServer;
import dev.forkpoint.server.RequestGuards;
import dev.forkpoint.server.ServerApi;
import dev.forkpoint.server.ServerConfig;
import dev.forkpoint.server.anthropic.AnthropicApi;
import dev.forkpoint.server.ollama.OllamaApi;
import dev.forkpoint.server.openai.OpenAiApi;
import dev.forkpoint.server.runner.RunnerApi;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint serve}: the HTTP server (Ollama, OpenAI and Anthropic APIs, the Ollama runner protocol, /metrics)
 * until interrupted.
 * Loopback by default; prints the address it listens on. One request log line per request on stderr.
 */
@Command(name = "serve", mixinStandardHelpOptions = true, showDefaultValues = true, sortOptions = false,
        description = "Serve models over HTTP (Ollama, OpenAI and Anthropic APIs, Ollama runner protocol, Prometheus /metrics).")
final class ServeCommand implements Callable<Integer> {
    @ParentCommand
    Main main;

    @Option(names = {"-m", "--model"}, paramLabel = "MODEL",
            description = "A .gguf file, an MLX / Hugging Face model folder, an Ollama model name or a Hugging Face"
                    + " repository name (org/name, from the Hugging Face cache), loaded at startup (repeatable). Default: the local Ollama"
                    + " store's models, loaded on first use (the built-in demo model when the store is empty).")
    List<String> models = new ArrayList<>();

    @Option(names = "--host", paramLabel = "ADDR", description = "Address to listen on (use 0.0.0.0 to accept remote clients).")
    String host = ServerConfig.DEFAULT_HOST;

    @Option(names = "--port", paramLabel = "N", description = "Port; 0 = any free port.")
    int port = ServerConfig.DEFAULT_PORT;

    @Option(names = "--parallel", paramLabel = "N", description = "Requests evaluated together per model.")
    int parallel = 4;

    @Option(names = "--queue-limit", paramLabel = "N", description = "Requests waiting per model beyond the running ones; more get 503 with Retry-After.")
    int queueLimit = 512;

    @Option(names = "--api-key", paramLabel = "KEY", description = "Require this key (Authorization: Bearer KEY or x-api-key: KEY).")
    String apiKey;

    @Option(names = {"-t", "--threads"}, paramLabel = "N", description = "Worker threads per model; the default is the number of available processors.")
    int threads = Runtime.getRuntime().availableProcessors();

    @Option(names = "--backend", paramLabel = "cpu|mlx|auto",
            description = "Compute backend: cpu; mlx (Apple Silicon, MLX-C; not in this version); auto = mlx on macOS arm64 when MLX-C loads, else cpu.")
    String backend = "auto";

    @Option(names = "--kv-cache-bytes", paramLabel = "BYTES",
            description = "KV cache budget per model in bytes; 0 = room for --parallel + 1 sequences of the default num_ctx (committed only as used).")
    long kvCacheBytes = 0;

    @Option(names = "--checkpoint-bytes", paramLabel = "BYTES",
            description = "Budget per model for recurrent-state checkpoints of hybrid models (Qwen3.5); 0 = " + EngineOptions.DEFAULT_CHECKPOINTS + " states per sequence.")
    long checkpointBytes = 0;

    @Option(names = "--kv-type", paramLabel = "f32|f16", description = "Element type of cached keys and values.")
    String kvType = "f32";

    @Option(names = "--keep-alive", paramLabel = "SECONDS", description = "Seconds a store model stays loaded after its last request; negative = forever.")
    long keepAliveSeconds = ServerConfig.DEFAULT_KEEP_ALIVE.toSeconds();

    @Option(names = "--max-body-bytes", paramLabel = "BYTES", description = "Largest request body accepted.")
    long maxBodyBytes = ServerConfig.DEFAULT_MAX_BODY_BYTES;

    @Option(names = "--body-timeout", paramLabel = "SECONDS",
            description = "A request body that makes no progress for this long is refused (408); the whole body must arrive within six times it.")
    long bodyTimeoutSeconds = RequestGuards.DEFAULT_BODY_TIMEOUT.toSeconds();

    @Option(names = "--bodies-per-client", paramLabel = "N", description = "Request bodies read at once from one client address; more get 429.")
    int bodiesPerClient = RequestGuards.DEFAULT_BODIES_PER_CLIENT;

    @Option(names = "--origins", paramLabel = "LIST", split = ",",
            description = "Browser origins allowed besides this machine's (comma-separated, * as wildcard), added to $OLLAMA_ORIGINS.")
    List<String> origins = new ArrayList<>();

    @Option(names = "--allowed-hosts", paramLabel = "LIST", split = ",",
            description = "Host names a loopback server answers to besides this machine's (comma-separated, *.suffix allowed), e.g. a local proxy's name.")
    List<String> allowedHosts = new ArrayList<>();

    /** The APIs `serve` installs. */
    static List<ServerApi> apis() {
        return List.of(new OllamaApi(), new RunnerApi(), new OpenAiApi(), new AnthropicApi());
    }

    @Override
    public Integer call() throws InterruptedException {
        CliEnvironment env = main.environment();
        CliLogging.enableInfo("dev.forkpoint.server");
        BackendChoice choice = BackendChoice.parse(backend);
        Backends.select(choice);   // refuses --backend mlx before listening, not at each model's load
        ServerConfig config = new ServerConfig(host, port, models, parallel, queueLimit, apiKey, threads,
                new EngineOptions(kvCacheBytes, EngineOptions.parseKvType(kvType), Math.max(2, parallel + 1), checkpointBytes, choice), Duration.ofSeconds(keepAliveSeconds),
                maxBodyBytes, env.env(), new RequestGuards(Duration.ofSeconds(bodyTimeoutSeconds), bodiesPerClient, allowedHosts, origins)
                        .withOriginsFrom(env.env().get("OLLAMA_ORIGINS")));
        if (models.isEmpty()) env.err().println("note: no --model given; serving the models of the local Ollama store (loaded on first use)");
        ForkpointServer server = ForkpointServer.start(config, apis());
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().unstarted(() -> {
            server.close();
            stopped.countDown();
        }));
        env.out().println("forkpoint: listening on " + server.address());
        env.out().flush();
        stopped.await();
        return ExitCodes.OK;
    }
}
