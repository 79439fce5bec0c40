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
 * (Prometheus text). Guarantees for every route, whatever the API, in this order: the Host and Origin are checked
 * ({@link RequestGuards}: 403), the API key is checked when configured (401) before any byte of the body is read, the
 * body's size, time and per-client limits are enforced (413, 408, 429), every exception becomes a status via
 * {@link ApiError#of} rendered in the API's shape (never a stack trace; errors Jetty itself raises, such as a malformed
 * request line, are JSON too), a client that disconnects has its generation cancelled, and each request is counted and
 * logged as one line (names from the client are escaped: no log forging). Requests run on virtual threads, so clients
 * that stall cannot use up the server's threads. The server keeps serving after any request's failure.
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
    private final RequestBody.Reader bodies;
    private final boolean loopback;
    private Javalin app;

    private ForkpointServer(ServerConfig config) {
        this.config = config;
        this.apiKey = config.apiKey() == null ? null : config.apiKey().getBytes(StandardCharsets.UTF_8);
        this.bodies = new RequestBody.Reader(config.maxBodyBytes(), config.guards());
        this.loopback = isLoopback(config.host());
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
            cfg.useVirtualThreads = true;
            cfg.jetty.modifyServer(server -> server.setErrorHandler(new JsonErrorHandler()));
        });
        for (Map.Entry<String, List<Route>> e : routes.entrySet()) {
            String[] mp = e.getKey().split(" ", 2);
            HandlerType method = HandlerType.valueOf(mp[0]);
            String path = mp[1];
            List<Route> list = List.copyOf(e.getValue());
            app.addHttpHandler(method, path, ctx -> dispatch(ctx, method, path, list));
        }
        app.options("/*", this::preflight);
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
            // Dispatch as soon as the headers are in: a request refused before its body is read (API key, Host) is
            // answered at once, not when a body that may never come arrives. Stalled bodies then wait in
            // RequestBody's limits, on virtual threads.
            for (var f : c.getConnectionFactories()) {
                if (f instanceof org.eclipse.jetty.server.HttpConnectionFactory h) h.getHttpConfiguration().setDelayDispatchUntilContent(false);
            }
        }
        LOG.log(System.Logger.Level.DEBUG, "listening on " + address());
    }

    private void dispatch(Context ctx, HandlerType method, String path, List<Route> list) {
        long t0 = System.nanoTime();
        ctx.attribute("forkpoint.handled", Boolean.TRUE);
        ctx.attribute(RequestBody.READER, bodies);
        Route route = fallback(list);
        String outcome = null;
        try {
            checkHostAndOrigin(ctx);
            boolean anyOpen = list.stream().anyMatch(Route::open);
            if (!anyOpen) checkKey(ctx);   // before the body is read to choose the route
            route = choose(ctx, list);
            if (!route.open() && anyOpen) checkKey(ctx);
            route.handler().handle(ctx);
        } catch (ClientGoneException e) {
            outcome = "client disconnected";
        } catch (Exception e) {
            ApiError err = ApiError.of(e);
            outcome = err.message();
            if (!ctx.res().isCommitted()) {
                ctx.res().reset();
                corsHeaders(ctx);
                // a body left unread (refused before reading it) or broken: the connection cannot carry another request
                if (ctx.attribute(RequestBody.CLOSE) != null || !RequestBody.consumed(ctx)) ctx.header("Connection", "close");
                ctx.status(err.status());
                if (err.retryAfterSeconds() > 0) ctx.header("Retry-After", Integer.toString(err.retryAfterSeconds()));
                if (err.status() != 499 && method != HandlerType.HEAD) route.errors().render(ctx, err);
            }
        } finally {
            int status = ctx.res().getStatus();
            metrics.request(path, method.name(), status);
            if (LOG.isLoggable(System.Logger.Level.INFO)) {
                LOG.log(System.Logger.Level.INFO, String.format(Locale.ROOT, "%s %s %d %.1f ms%s", method, dev.forkpoint.LogText.escape(ctx.path()), status,
                        (System.nanoTime() - t0) / 1e6, outcome == null ? "" : " (" + dev.forkpoint.LogText.escape(outcome) + ")"));
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

    /**
     * 403 for a Host this loopback server does not answer to, or an Origin it does not serve; CORS headers for the
     * origins it does. Preflight requests ({@code OPTIONS}) are answered by {@link #preflight}.
     */
    private void checkHostAndOrigin(Context ctx) {
        String host = ctx.header("Host");
        if (!config.guards().allowsHost(host, loopback)) {
            throw new ForbiddenException("Host '" + dev.forkpoint.LogText.escape(host) + "' is not served: this server listens on " + config.host()
                    + " and answers only to this machine's names (add the name with --allowed-hosts if it is yours)");
        }
        String origin = ctx.header("Origin");
        if (!config.guards().allowsOrigin(origin)) {
            throw new ForbiddenException("Origin '" + dev.forkpoint.LogText.escape(origin) + "' is not allowed (add it to OLLAMA_ORIGINS or --origins)");
        }
        corsHeaders(ctx);
    }

    private void corsHeaders(Context ctx) {
        String origin = ctx.header("Origin");
        if (origin == null || !config.guards().allowsOrigin(origin)) return;
        ctx.header("Access-Control-Allow-Origin", origin);
        ctx.header("Vary", "Origin");
    }

    /** CORS preflight: 204 with the allowed methods and headers for an allowed origin (and Host), else 403. */
    private void preflight(Context ctx) {
        try {
            checkHostAndOrigin(ctx);
        } catch (ForbiddenException e) {
            ctx.status(403).contentType("application/json").result(Json.write(Map.of("error", e.getMessage())));
            metrics.request("preflight", "OPTIONS", 403);
            return;
        }
        ctx.header("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
        String asked = ctx.header("Access-Control-Request-Headers");
        ctx.header("Access-Control-Allow-Headers", asked != null ? asked
                : "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, x-api-key, anthropic-version");
        ctx.header("Access-Control-Max-Age", "86400");
        ctx.status(204);
        metrics.request("preflight", "OPTIONS", 204);
    }

    private static boolean isLoopback(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        if (h.equalsIgnoreCase("localhost")) return true;
        try {
            return java.net.InetAddress.ofLiteral(h).isLoopbackAddress();
        } catch (IllegalArgumentException e) {
            try {
                for (java.net.InetAddress a : java.net.InetAddress.getAllByName(h)) if (!a.isLoopbackAddress()) return false;
                return true;
            } catch (java.net.UnknownHostException u) {
                return false;
            }
        }
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

    /**
     * Unloads every model, then stops listening: the generations in flight end first (cancelled: streams end, their
     * committed tokens go to the cache, which is then released), so that stopping Jetty waits for no handler.
     */
    @Override
    public void close() {
        try {
            models.close();
        } finally {
            if (app != null) app.stop();
        }
    }
}
