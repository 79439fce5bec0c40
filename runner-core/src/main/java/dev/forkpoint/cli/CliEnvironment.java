package dev.forkpoint.cli;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * What the CLI talks to: its streams, the environment variables it reads (OLLAMA_MODELS, XDG_CACHE_HOME, HOME) and
 * whether stderr is a terminal (for the load progress bar). Tests build their own; {@link #system()} is the real one.
 * Output is UTF-8 whatever the platform's default charset.
 */
public record CliEnvironment(InputStream in, PrintStream out, PrintStream err, Map<String, String> env,
                             boolean stderrIsTerminal) {

    /** The process's own streams and environment. */
    public static CliEnvironment system() {
        var out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        var err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        return new CliEnvironment(System.in, out, err, System.getenv(), detectTerminal());
    }

    /**
     * The launcher script tells us with {@code -Dforkpoint.stderr.tty=true|false} (it can test stderr itself);
     * without it, a console attached to a terminal is taken as the sign.
     */
    private static boolean detectTerminal() {
        String told = System.getProperty("forkpoint.stderr.tty");
        if (told != null) return Boolean.parseBoolean(told);
        var console = System.console();
        return console != null && console.isTerminal();
    }
}
