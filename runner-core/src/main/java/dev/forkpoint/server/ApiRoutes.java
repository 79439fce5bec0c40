package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.http.Handler;
import io.javalin.http.HandlerType;

import java.util.function.Predicate;

/**
 * The routes of one API, all rendering errors with its {@link ErrorRenderer}. Every handler runs inside the core's
 * wrapper: API-key check (unless registered public), body size limit, exception → {@link ApiError} → status (+
 * Retry-After) → the API's error body, request counting and one log line per request. A handler just reads the request
 * ({@link Json#read}), does its work and writes the response, throwing for errors.
 *
 * <p>Two APIs may register the same method and path when at least one of them claims requests by body shape
 * ({@link #post(String, Predicate, Handler)}): claims are tried in registration order, then the route registered
 * without a claim takes the rest. (The Ollama runner protocol and OpenAI share {@code POST /v1/completions}: the
 * runner claims bodies with a CamelCase {@code "Prompt"} key.)
 */
public final class ApiRoutes {
    private final ForkpointServer server;
    private final ErrorRenderer errors;

    ApiRoutes(ForkpointServer server, ErrorRenderer errors) {
        this.server = server;
        this.errors = errors;
    }

    public ApiRoutes get(String path, Handler handler) { return add(HandlerType.GET, path, null, false, handler); }

    public ApiRoutes head(String path, Handler handler) { return add(HandlerType.HEAD, path, null, false, handler); }

    public ApiRoutes post(String path, Handler handler) { return add(HandlerType.POST, path, null, false, handler); }

    public ApiRoutes delete(String path, Handler handler) { return add(HandlerType.DELETE, path, null, false, handler); }

    /** A POST route taking only requests whose JSON body {@code claims} accepts (the body is parsed once, shared). */
    public ApiRoutes post(String path, Predicate<JsonNode> claims, Handler handler) {
        return add(HandlerType.POST, path, claims, false, handler);
    }

    /** A route that needs no API key (health checks). */
    public ApiRoutes open(HandlerType method, String path, Handler handler) { return add(method, path, null, true, handler); }

    private ApiRoutes add(HandlerType method, String path, Predicate<JsonNode> claims, boolean open, Handler handler) {
        server.addRoute(method, path, new ForkpointServer.Route(claims, open, errors, handler));
        return this;
    }
}
