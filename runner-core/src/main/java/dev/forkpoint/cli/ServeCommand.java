package dev.forkpoint.cli;

import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.SchedulerOptions;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.server.ForkpointServer;
import dev.forkpoint.server.GoDuration;
import dev.forkpoint.server.OllamaEnvironment;
import dev.forkpoint.server.RequestGuards;
import dev.forkpoint.server.ServerApi;
import dev.forkpoint.server.ServerConfig;
import dev.forkpoint.server.anthropic.AnthropicApi;
import dev.forkpoint.server.ollama.OllamaApi;
import dev.forkpoint.server.openai.OpenAiApi;
import dev.forkpoint.server.runner.RunnerApi;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint serve}: the HTTP server (Ollama, OpenAI and Anthropic APIs, the Ollama runner protocol, /metrics)
 * until interrupted.
 * Loopback by default; prints the address it listens on. One request log line per request on stderr. Ollama's server
 * variables are honoured ({@link OllamaEnvironment}); a flag given wins over its variable.
 */
@Command(name = "serve", mixinStandardHelpOptions = true, showDefaultValues = true, sortOptions = false,
        description = "Serve models over HTTP (Ollama, OpenAI and Anthropic APIs, Ollama runner protocol, Prometheus /metrics).")
final class ServeCommand implements Callable<Integer> {
    static final int DEFAULT_PARALLEL = 4, DEFAULT_QUEUE_LIMIT = 512;

    @ParentCommand
    Main main;

    @Option(names = {"-m", "--model"}, paramLabel = "MODEL",
            description = "A .gguf file, an MLX / Hugging Face model folder, an Ollama model name or a Hugging Face"
                    + " repository name (org/name, from the Hugging Face cache), loaded at startup (repeatable). Default: the local Ollama"
                    + " store's models, loaded on first use (the built-in demo model when the store is empty).")
    List<String> models = new ArrayList<>();

    @Spec
    CommandSpec spec;

    @Option(names = "--host", paramLabel = "ADDR", description = "Address to listen on (use 0.0.0.0 to accept remote clients); default: $OLLAMA_HOST's, else this.")
    String host = ServerConfig.DEFAULT_HOST;

    @Option(names = "--port", paramLabel = "N", description = "Port; 0 = any free port; default: $OLLAMA_HOST's, else this.")
    int port = ServerConfig.DEFAULT_PORT;

    @Option(names = "--num-ctx", paramLabel = "N",
            description = "Default context window in tokens of every API (Ollama's options.num_ctx 0 or absent; OpenAI and Anthropic"
                    + " requests), clamped to each model's trained context; the derived KV budget holds --parallel + 1 sequences of it."
                    + " 0 = $OLLAMA_CONTEXT_LENGTH, else Ollama's " + LoadedModel.OLLAMA_DEFAULT_NUM_CTX + ".")
    int numCtx = 0;

    @Option(names = "--parallel", paramLabel = "N", description = "Requests evaluated together per model; default: $OLLAMA_NUM_PARALLEL, else this.")
    int parallel = DEFAULT_PARALLEL;

    @Option(names = "--queue-limit", paramLabel = "N", description = "Requests waiting per model beyond the running ones; more get 503 with Retry-After; default: $OLLAMA_MAX_QUEUE, else this.")
    int queueLimit = DEFAULT_QUEUE_LIMIT;

    @Option(names = "--step-ms", paramLabel = "MS",
            description = "While streams decode, a scheduler step (their decode tokens plus prefill chunks of new prompts) takes about this long"
                    + " at most, which bounds their inter-token latency during a long prefill; 0 = four decode passes (at least "
                    + SchedulerOptions.MIN_AUTO_STEP_MILLIS + " ms), -1 = no time bound.")
    int stepMillis = 0;

    @Option(names = "--max-loaded-models", paramLabel = "N",
            description = "Store models loaded at once (the idle one used least recently is unloaded to load another); 0 = $OLLAMA_MAX_LOADED_MODELS, else no limit.")
    int maxLoadedModels = 0;

    @Option(names = "--api-key", paramLabel = "KEY", description = "Require this key (Authorization: Bearer KEY or x-api-key: KEY).")
    String apiKey;

    @Option(names = {"-t", "--threads"}, paramLabel = "N", description = "Worker threads per model; the default is the number of available processors.")
    int threads = Runtime.getRuntime().availableProcessors();

    @picocli.CommandLine.Mixin
    BackendOption backend = new BackendOption();

    @Option(names = "--kv-cache-bytes", paramLabel = "BYTES",
            description = "KV cache budget per model in bytes; 0 = room for --parallel + 1 sequences of the default num_ctx (committed only as used).")
    long kvCacheBytes = 0;

    @Option(names = "--checkpoint-bytes", paramLabel = "BYTES",
            description = "Budget per model for recurrent-state checkpoints of hybrid models (Qwen3.5); 0 = " + EngineOptions.DEFAULT_CHECKPOINTS + " states per sequence.")
    long checkpointBytes = 0;

    @Option(names = "--kv-type", paramLabel = "f32|f16|q8_0|q4_0",
            description = "Element type of cached keys and values (q8_0, q4_0: quantised, CPU backend); default: $OLLAMA_KV_CACHE_TYPE, else this.")
    String kvType = "f32";

    @Option(names = "--keep-alive", paramLabel = "DURATION",
            description = "How long a store model stays loaded after its last request: seconds or a duration (5m, 1h30m); negative = forever; default: $OLLAMA_KEEP_ALIVE, else this.")
    String keepAlive = "5m";

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
        ServerConfig config = config(env);
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

    /**
     * The server's configuration from the flags and Ollama's variables in {@code env} ({@link OllamaEnvironment}): a flag
     * given on the command line wins over its variable, a variable over the flag's default. Names the unsupported
     * OLLAMA_* variables that are set, once, on stderr; refuses bad values naming the flag or variable.
     */
    ServerConfig config(CliEnvironment env) {
        OllamaEnvironment ollama = OllamaEnvironment.from(env.env());
        String note = ollama.unsupportedNote();
        if (note != null) env.err().println(note);
        BackendChoice choice = backend.choice();
        backend.kernelChoice();   // refuses a bad --kernels now
        backend.check();   // refuses an impossible --backend before listening, not at each model's load
        String h = given("--host") || ollama.host() == null ? host : ollama.host().host();
        int p = given("--port") || ollama.host() == null ? port : ollama.host().port();
        int ctx = given("--num-ctx") || ollama.contextLength() == null ? numCtx : ollama.contextLength();
        int par = given("--parallel") || ollama.numParallel() == null || ollama.numParallel() == 0 ? parallel : ollama.numParallel();
        int queue = given("--queue-limit") || ollama.maxQueue() == null ? queueLimit : ollama.maxQueue();
        int maxLoaded = given("--max-loaded-models") || ollama.maxLoadedModels() == null ? maxLoadedModels : ollama.maxLoadedModels();
        KvElementType kv = given("--kv-type") || ollama.kvCacheType() == null ? EngineOptions.parseKvType(kvType) : ollama.kvCacheType();
        Duration keep = given("--keep-alive") || ollama.keepAlive() == null
                ? GoDuration.parse(keepAlive).orElseThrow(() -> new InvalidInputException(
                        "--keep-alive must be seconds or a duration such as 5m or 1h30m (negative = forever), got '" + keepAlive + "'"))
                : ollama.keepAlive();
        if (ctx < 0) throw new InvalidInputException("--num-ctx must be >= 0 (0 = $OLLAMA_CONTEXT_LENGTH, else Ollama's default), got " + ctx);
        if (maxLoaded < 0) throw new InvalidInputException("--max-loaded-models must be >= 0 (0 = no limit), got " + maxLoaded);
        EngineOptions engine = new EngineOptions(kvCacheBytes, kv, Math.max(2, par + 1), checkpointBytes, choice, ctx, backend.mlxLib, backend.kernelChoice());
        return new ServerConfig(h, p, models, par, queue, apiKey, threads, engine, keep, maxBodyBytes, env.env(),
                new RequestGuards(Duration.ofSeconds(bodyTimeoutSeconds), bodiesPerClient, allowedHosts, origins)
                        .withOriginsFrom(ollama.origins()), maxLoaded, stepMillis);
    }

    /** Whether the option was given on the command line (not just its default). */
    private boolean given(String option) {
        return spec.commandLine().getParseResult().hasMatchedOption(option);
    }
}
