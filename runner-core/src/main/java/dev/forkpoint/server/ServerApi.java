package dev.forkpoint.server;

/**
 * One HTTP API (Ollama, the Ollama runner protocol, OpenAI, Anthropic): registers its routes and maps its JSON shapes;
 * everything else (auth, body limit, error statuses, model registry, streaming, metrics, request log) is the core's.
 * An API gets its routes through {@link ServerCore#routes(ErrorRenderer)} with its own error shape.
 */
public interface ServerApi {
    void register(ServerCore core);
}
