package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;

import java.util.Locale;

/**
 * Where {@code OLLAMA_HOST} says to listen, read as Ollama reads it ({@code envconfig.Host}): {@code [scheme://]host[:port][/path]}
 * with surrounding spaces and quotes dropped. No scheme = http; the port defaults to 11434, or to 80 / 443 when the
 * scheme http / https is written; a bare IPv6 address may be bracketed; an empty host ({@code ":8080"}) listens on
 * every interface (0.0.0.0), and an empty value on 127.0.0.1; a path is ignored (a server listens on a port). Unlike
 * Ollama, which falls back to the default port with a warning, a port that is not a number in [0, 65535] or a scheme
 * other than http and https is refused naming the variable and the value.
 *
 * @param scheme "http" or "https"
 * @param host   the address to bind
 * @param port   the port
 */
public record OllamaHost(String scheme, String host, int port) {
    public static final String VARIABLE = "OLLAMA_HOST";

    /** {@code value} read as Ollama does (see the class comment). */
    public static OllamaHost parse(String value) {
        String s = OllamaEnvironment.unquote(value);
        String scheme = "http";
        int defaultPort = ServerConfig.DEFAULT_PORT;
        String hostPort = s;
        int sep = s.indexOf("://");
        if (sep >= 0) {
            scheme = s.substring(0, sep).toLowerCase(Locale.ROOT);
            hostPort = s.substring(sep + 3);
            switch (scheme) {
                case "http" -> defaultPort = 80;
                case "https" -> defaultPort = 443;
                default -> throw bad(value, "the scheme must be http or https");
            }
        }
        int slash = hostPort.indexOf('/');
        if (slash >= 0) hostPort = hostPort.substring(0, slash);
        String host;
        String port;
        if (hostPort.startsWith("[")) {   // [v6] or [v6]:port
            int close = hostPort.indexOf(']');
            if (close < 0) throw bad(value, "an opening '[' has no ']'");
            host = hostPort.substring(1, close);
            String after = hostPort.substring(close + 1);
            if (after.isEmpty()) port = null;
            else if (after.startsWith(":")) port = after.substring(1);
            else throw bad(value, "expected ':port' after ']'");
        } else {
            int colon = hostPort.lastIndexOf(':');
            if (colon >= 0 && hostPort.indexOf(':') == colon) {   // host:port (more than one ':' = a bare IPv6 address)
                host = hostPort.substring(0, colon);
                port = hostPort.substring(colon + 1);
            } else {
                host = hostPort;
                port = null;
            }
        }
        if (port == null) {
            if (host.isEmpty()) host = ServerConfig.DEFAULT_HOST;
        } else if (host.isEmpty()) {
            host = "0.0.0.0";   // ":8080": Go listens on every interface
        }
        int p = defaultPort;
        if (port != null) {
            if (!port.matches("\\d{1,5}") || Integer.parseInt(port) > 65535) throw bad(value, "the port must be a number in [0, 65535]");
            p = Integer.parseInt(port);
        }
        return new OllamaHost(scheme, host, p);
    }

    private static InvalidInputException bad(String value, String why) {
        return new InvalidInputException(VARIABLE + " must be [http://|https://]host[:port], got '" + value + "': " + why);
    }
}
