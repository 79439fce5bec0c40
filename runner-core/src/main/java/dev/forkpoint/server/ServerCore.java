package dev.forkpoint.server;

/**
 * What an API package gets from the server: its routes, the models, the metrics and the configuration.
 */
public interface ServerCore {
    /** Routes whose errors are rendered by {@code errors}. */
    ApiRoutes routes(ErrorRenderer errors);

    ModelRegistry models();

    ServerMetrics metrics();

    ServerConfig config();

    /** Forkpoint's version, e.g. "0.1.0-SNAPSHOT". */
    String version();
}
