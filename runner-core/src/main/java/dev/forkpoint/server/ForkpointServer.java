package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.Handler;
import io.javalin.http.HandlerType;
import io.javalin.json.JavalinJackson;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.ServerConnector;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The HTTP server: binds {@link ServerConfig#host()}:{@link ServerConfig#port()} (0 = ephemeral; {@link #port()} says
 * which), serves the {@link ModelRegistry}'s models through the registered {@link ServerApi}s, and {@code GET /metrics}
 * (Prometheus text). Guarantees for every route, whatever the API: the API key is checked when configured (401), the
 * body limit is enforced (413), every exception becomes a status via {@link ApiError#of} rendered in the API's shape
 * (never a stack trace), a client that disconnects has its generation cancelled, and each request is counted and logged
 * as one line. The server keeps serving after any request's failure.
 */
public final class ForkpointServer implements ServerCore, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ForkpointServer.class.getName());
    static final long IDLE_TIMEOUT_MS = 10 * 60 * 1000;

    record Route(Predicate<JsonNode> claims, boolean open, ErrorRenderer errors, Handler handler) {}

    private final ServerConfig config;
    private final ServerMetrics metrics;
    private final ModelRegistry models;
    private final Map<String, List<Route>> routes = new LinkedHashMap<>();   // "METHOD path" → routes
    private final byte[] apiKey;
    private Javalin app;

    private ForkpointServer(ServerConfig config) {
        this.config = config;
        this.apiKey = config.apiKey() == null ? null : config.apiKey().getBytes(StandardCharsets.UTF_8);
        ModelRegistry[] holder = new ModelRegistry[1];
        this.metrics = new ServerMetrics(() -> holder[0] == null ? List.of() : holder[0].loaded());
        this.models = new ModelRegistry(config, metrics);
        holder[0] = models;
    }

    /**
     * Loads the pinned models (if any), registers {@code apis} and {@code GET /metrics}, and starts listening. A model
     * that cannot be loaded or a port that cannot be bound throws, with nothing left running.
     */
    public static ForkpointServer start(ServerConfig config, List<? extends ServerApi> apis) {
        ForkpointServer s = new ForkpointServer(config);
        try {
            for (ServerApi api : apis) api.register(s);
            s.routes(PLAIN_ERRORS).get("/metrics", ctx -> {
                ctx.contentType(ServerMetrics.contentType());
                ctx.result(s.metrics.scrape());
            });
            s.listen();
            return s;
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
    }

    /** Errors as plain text (for routes that belong to no API, such as /metrics). */
    public static final ErrorRenderer PLAIN_ERRORS = (ctx, e) -> ctx.contentType("text/plain; charset=utf-8").result(e.message() + "\n");

    @Override
    public ApiRoutes routes(ErrorRenderer errors) {
        if (app != null) throw new IllegalStateException("routes are registered before the server starts");
        return new ApiRoutes(this, errors);
    }

    @Override
    public ModelRegistry models() { return models; }

    @Override
    public ServerMetrics metrics() { return metrics; }

    @Override
    public ServerConfig config() { return config; }

    @Override
    public String version() {
        String v = ForkpointServer.class.getPackage().getImplementationVersion();
        return v != null ? v : "0.1.0-SNAPSHOT";
    }

    /** The bound port. */
    public int port() { return app.port(); }

    /** {@code http://host:port} as clients reach it. */
    public String address() {
        String h = config.host().contains(":") ? "[" + config.host() + "]" : config.host();
        return "http://" + h + ":" + port();
    }

    void addRoute(HandlerType method, String path, Route route) {
        List<Route> list = routes.computeIfAbsent(method + " " + path, k -> new ArrayList<>());
        if (route.claims() == null && list.stream().anyMatch(r -> r.claims() == null)) {
            throw new IllegalStateException(method + " " + path + " is registered twice without a body claim");
        }
        list.add(route);
    }

    private void listen() {
        app = Javalin.create(cfg -> {
            cfg.showJavalinBanner = false;
            cfg.startupWatcherEnabled = false;
            cfg.http.maxRequestSize = config.maxBodyBytes();
            cfg.http.disableCompression();
            cfg.router.ignoreTrailingSlashes = true;
            cfg.jsonMapper(new JavalinJackson(Json.MAPPER, false));
            cfg.jetty.defaultHost = config.host();
            cfg.jetty.defaultPort = config.port();
        });
        for (Map.Entry<String, List<Route>> e : routes.entrySet()) {
            String[] mp = e.getKey().split(" ", 2);
            HandlerType method = HandlerType.valueOf(mp[0]);
            String path = mp[1];
            List<Route> list = List.copyOf(e.getValue());
            app.addHttpHandler(method, path, ctx -> dispatch(ctx, method, path, list));
        }
        app.error(404, ctx -> {
            if (ctx.attribute("forkpoint.handled") != null) return;
            ctx.contentType("application/json").result(Json.write(Map.of("error",
                    "no route for " + ctx.method() + " " + ctx.path())));
            metrics.request("unmatched", ctx.method().name(), 404);
        });
        try {
            app.start();
        } catch (RuntimeException e) {
            throw new dev.forkpoint.InvalidInputException("cannot listen on " + config.host() + ":" + config.port() + ": "
                    + (e.getCause() != null ? e.getCause().getMessage() : e.getMessage()), e);
        }
        for (Connector c : app.jettyServer().server().getConnectors()) {
            if (c instanceof ServerConnector sc) sc.setIdleTimeout(IDLE_TIMEOUT_MS);
        }
        LOG.log(System.Logger.Level.DEBUG, "listening on " + address());
    }

    private void dispatch(Context ctx, HandlerType method, String path, List<Route> list) {
        long t0 = System.nanoTime();
        ctx.attribute("forkpoint.handled", Boolean.TRUE);
        ctx.attribute(RequestBody.LIMIT, config.maxBodyBytes());
        Route route = fallback(list);
        String outcome = null;
        try {
            route = choose(ctx, list);
            if (!route.open()) checkKey(ctx);
            route.handler().handle(ctx);
        } catch (ClientGoneException e) {
            outcome = "client disconnected";
        } catch (Exception e) {
            ApiError err = ApiError.of(e);
            outcome = err.message();
            if (!ctx.res().isCommitted()) {
                ctx.res().reset();
                ctx.status(err.status());
                if (err.retryAfterSeconds() > 0) ctx.header("Retry-After", Integer.toString(err.retryAfterSeconds()));
                if (err.status() != 499 && method != HandlerType.HEAD) route.errors().render(ctx, err);
            }
        } finally {
            int status = ctx.res().getStatus();
            metrics.request(path, method.name(), status);
            if (LOG.isLoggable(System.Logger.Level.INFO)) {
                LOG.log(System.Logger.Level.INFO, String.format(Locale.ROOT, "%s %s %d %.1f ms%s", method, ctx.path(), status,
                        (System.nanoTime() - t0) / 1e6, outcome == null ? "" : " (" + outcome + ")"));
            }
        }
    }

    private static Route fallback(List<Route> list) {
        for (Route r : list) if (r.claims() == null) return r;
        return list.getFirst();
    }

    private static Route choose(Context ctx, List<Route> list) {
        if (list.size() == 1) return list.getFirst();
        JsonNode tree = RequestBody.treeOrNull(ctx);
        if (tree != null) {
            for (Route r : list) if (r.claims() != null && r.claims().test(tree)) return r;
        }
        return fallback(list);
    }

    private void checkKey(Context ctx) {
        if (apiKey == null) return;
        String given = ctx.header("x-api-key");
        String auth = ctx.header("Authorization");
        if (given == null && auth != null) {
            if (!auth.regionMatches(true, 0, "Bearer ", 0, 7)) throw new UnauthorizedException("Authorization must be 'Bearer <api key>'");
            given = auth.substring(7).trim();
        }
        if (given == null) throw new UnauthorizedException("missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'");
        if (!MessageDigest.isEqual(apiKey, given.getBytes(StandardCharsets.UTF_8))) throw new UnauthorizedException("invalid API key");
    }

    /** Stops listening and unloads every model. */
    @Override
    public void close() {
        try {
            if (app != null) app.stop();
        } finally {
            models.close();
        }
    }
}
