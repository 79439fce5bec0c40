package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * What the server refuses before a request reaches an API: stalled bodies, too many bodies in flight from one client,
 * and requests from a Host or Origin it does not serve.
 *
 * <ul>
 *   <li><b>Bodies</b>: a body that makes no progress for {@code bodyTimeout}, or is not complete within
 *       {@link #bodyDeadline()}, is answered 408 and its connection closed; at most {@code bodiesPerClient} bodies are
 *       read at once per remote address (429 beyond), so stalled uploads cannot occupy the server.</li>
 *   <li><b>Host</b> (DNS rebinding): while the server listens on a loopback address, the Host header must name this
 *       machine: a loopback, private, link-local or unspecified IP, {@code localhost} or a name under
 *       {@code .localhost}, {@code .local}, {@code .internal}, the machine's host name, or one of
 *       {@code allowedHosts} (exact, or {@code *.suffix}); otherwise 403. A server bound to another address
 *       was exposed on purpose and serves any Host, as Ollama does.</li>
 *   <li><b>Origin</b> (cross-site requests from browsers): a request that carries an {@code Origin} header is served
 *       only when the origin matches {@link #DEFAULT_ORIGINS} or {@code allowedOrigins} (patterns with {@code *}, as
 *       in {@code OLLAMA_ORIGINS}); otherwise 403. Allowed origins get CORS headers, and their preflight
 *       {@code OPTIONS} requests 204.</li>
 * </ul>
 */
public record RequestGuards(Duration bodyTimeout, int bodiesPerClient, List<String> allowedHosts, List<String> allowedOrigins) {
    public static final Duration DEFAULT_BODY_TIMEOUT = Duration.ofSeconds(10);
    public static final int DEFAULT_BODIES_PER_CLIENT = 32;

    /** Origins always allowed: this machine's browsers and local app shells (Ollama's defaults). */
    public static final List<String> DEFAULT_ORIGINS = defaultOrigins();

    public RequestGuards {
        if (bodyTimeout == null) bodyTimeout = DEFAULT_BODY_TIMEOUT;
        if (bodyTimeout.isNegative() || bodyTimeout.isZero()) {
            throw new InvalidInputException("body timeout must be positive, got " + bodyTimeout.toMillis() + " ms");
        }
        if (bodiesPerClient < 1) throw new InvalidInputException("bodies per client must be at least 1, got " + bodiesPerClient);
        allowedHosts = clean(allowedHosts);
        allowedOrigins = clean(allowedOrigins);
    }

    public static RequestGuards defaults() {
        return new RequestGuards(DEFAULT_BODY_TIMEOUT, DEFAULT_BODIES_PER_CLIENT, List.of(), List.of());
    }

    /** These guards with the origins of an {@code OLLAMA_ORIGINS} value (comma-separated) added; null or blank adds none. */
    public RequestGuards withOriginsFrom(String ollamaOrigins) {
        if (ollamaOrigins == null || ollamaOrigins.isBlank()) return this;
        List<String> all = new ArrayList<>(allowedOrigins);
        for (String o : ollamaOrigins.split(",")) if (!o.isBlank()) all.add(o.trim());
        return new RequestGuards(bodyTimeout, bodiesPerClient, allowedHosts, all);
    }

    /** The longest a whole body may take: six body timeouts (a body that trickles in keeps no slot forever). */
    public Duration bodyDeadline() { return bodyTimeout.multipliedBy(6); }

    /**
     * Whether a request whose Host header is {@code hostHeader} (null when absent) is served by a server listening on
     * {@code boundToLoopback} addresses.
     */
    public boolean allowsHost(String hostHeader, boolean boundToLoopback) {
        if (!boundToLoopback || hostHeader == null || hostHeader.isEmpty()) return true;
        String host = hostOnly(hostHeader).toLowerCase(Locale.ROOT);
        if (host.isEmpty() || host.equals("localhost")) return true;
        if (host.endsWith(".localhost") || host.endsWith(".local") || host.endsWith(".internal")) return true;
        if (isLocalIpLiteral(host)) return true;
        if (host.equals(MachineName.NAME)) return true;
        for (String allowed : allowedHosts) {
            String a = allowed.toLowerCase(Locale.ROOT);
            if (a.equals(host) || (a.startsWith("*.") && host.endsWith(a.substring(1)))) return true;
        }
        return false;
    }

    /** Whether a request with this Origin header (null when absent: not a cross-site browser request) is served. */
    public boolean allowsOrigin(String origin) {
        if (origin == null) return true;
        for (String pattern : DEFAULT_ORIGINS) if (matches(pattern, origin)) return true;
        for (String pattern : allowedOrigins) if (matches(pattern, origin)) return true;
        return false;
    }

    /** The host part of a Host header: {@code [::1]:8080} → {@code ::1}, {@code example.com:80} → {@code example.com}. */
    static String hostOnly(String hostHeader) {
        String h = hostHeader.trim();
        if (h.startsWith("[")) {
            int close = h.indexOf(']');
            return close < 0 ? h : h.substring(1, close);
        }
        int colon = h.indexOf(':');
        if (colon >= 0 && h.indexOf(':', colon + 1) < 0) return h.substring(0, colon);
        return h;
    }

    /** An IP literal (never a name: nothing is resolved) that is loopback, private, link-local or unspecified. */
    static boolean isLocalIpLiteral(String host) {
        if (!host.matches("[0-9.]+") && !(host.contains(":") && host.matches("[0-9a-f:.%]+"))) return false;
        if (host.matches("[0-9.]+") && !host.matches("(\\d{1,3}\\.){3}\\d{1,3}")) return false;
        try {
            InetAddress a = InetAddress.ofLiteral(host.contains("%") ? host.substring(0, host.indexOf('%')) : host);
            return a.isLoopbackAddress() || a.isSiteLocalAddress() || a.isLinkLocalAddress() || a.isAnyLocalAddress()
                    || (a.getAddress().length == 16 && (a.getAddress()[0] & 0xfe) == 0xfc);   // IPv6 unique local fc00::/7
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** Glob match with {@code *} as any run of characters; case-insensitive. */
    static boolean matches(String pattern, String value) {
        StringBuilder re = new StringBuilder();
        for (String part : pattern.split("\\*", -1)) {
            if (!re.isEmpty()) re.append(".*");
            re.append(Pattern.quote(part));
        }
        return Pattern.compile(re.toString(), Pattern.CASE_INSENSITIVE).matcher(value).matches();
    }

    private static List<String> defaultOrigins() {
        List<String> out = new ArrayList<>();
        for (String host : List.of("localhost", "127.0.0.1", "0.0.0.0", "[::1]")) {
            for (String scheme : List.of("http", "https")) {
                out.add(scheme + "://" + host);
                out.add(scheme + "://" + host + ":*");
            }
        }
        out.addAll(List.of("app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*"));
        return List.copyOf(out);
    }

    private static List<String> clean(List<String> values) {
        if (values == null) return List.of();
        List<String> out = new ArrayList<>();
        for (String v : values) {
            if (v == null || v.isBlank()) continue;
            out.add(v.trim());
        }
        return List.copyOf(out);
    }

    /** This machine's host name, lower-case, read once ("" when unknown). */
    private static final class MachineName {
        static final String NAME = read();

        private static String read() {
            try {
                return InetAddress.getLocalHost().getHostName().toLowerCase(Locale.ROOT);
            } catch (UnknownHostException | SecurityException e) {
                return "";
            }
        }
    }
}
