package dev.forkpoint.cli;

import dev.forkpoint.server.ServerConfig;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The {@link ServerConfig} {@code forkpoint serve ARGS} would start with under an environment map, built by the command
 * itself ({@link ServeCommand#config}) without listening, and what it printed on stderr meanwhile.
 */
record ServeArgs(ServerConfig config, String err) {
    static ServeArgs parse(Map<String, String> env, String... args) {
        var err = new ByteArrayOutputStream();
        var environment = new CliEnvironment(new ByteArrayInputStream(new byte[0]), new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), Map.copyOf(env), false);
        String[] all = new String[args.length + 1];
        all[0] = "serve";
        System.arraycopy(args, 0, all, 1, args.length);
        var parsed = Main.commandLine(environment).parseArgs(all);
        ServeCommand serve = (ServeCommand) parsed.subcommand().commandSpec().userObject();
        ServerConfig config = serve.config(environment);
        return new ServeArgs(config, err.toString(StandardCharsets.UTF_8));
    }
}
