package dev.forkpoint.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint}: the command-line entry point. Exit status 0 on success, 2 for bad input (options, model names,
 * unusable files), 1 for internal errors; errors go to stderr as {@code forkpoint: error: <message>}.
 */
@Command(name = "forkpoint", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Runs language models (llama, qwen2, qwen3; GGUF and MLX / Hugging Face safetensors) on the JVM.",
        subcommands = {RunCommand.class, ServeCommand.class, ShowCommand.class, TokenizeCommand.class, QuantizeCommand.class, ConvertCommand.class,
                DoctorCommand.class,
                CommandLine.HelpCommand.class})
public final class Main implements Callable<Integer> {
    @Option(names = "--debug", scope = ScopeType.INHERIT, description = "Print stack traces and extra diagnostics.")
    boolean debug;

    @Spec
    CommandSpec spec;

    private final CliEnvironment environment;

    public Main() {
        this(CliEnvironment.system());
    }

    public Main(CliEnvironment environment) {
        this.environment = environment;
    }

    CliEnvironment environment() { return environment; }

    boolean debug() { return debug; }

    public static void main(String[] args) {
        CliLogging.configure(java.util.Arrays.asList(args).contains("--debug"));
        CliEnvironment env = CliEnvironment.system();
        int code = commandLine(env).execute(args);
        env.out().flush();
        env.err().flush();
        System.exit(code);
    }

    /** A command line for {@code environment} with Forkpoint's error reporting and exit codes. */
    public static CommandLine commandLine(CliEnvironment environment) {
        Main main = new Main(environment);
        var cl = new CommandLine(main);
        cl.setOut(new PrintWriter(environment.out(), true));
        cl.setErr(new PrintWriter(environment.err(), true));
        cl.setParameterExceptionHandler((e, args) -> {
            var err = environment.err();
            err.println("forkpoint: error: " + e.getMessage());
            var suggestions = new PrintWriter(err, true);
            CommandLine.UnmatchedArgumentException.printSuggestions(e, suggestions);
            err.println("forkpoint: see '" + e.getCommandLine().getCommandSpec().qualifiedName() + " --help'");
            err.flush();
            return ExitCodes.BAD_INPUT;
        });
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> ExitCodes.report(e, environment.err(), main.debug));
        return cl;
    }

    @Override
    public Integer call() {
        spec.commandLine().usage(environment.err());
        return ExitCodes.BAD_INPUT;
    }

    /** The version from the jar manifest, when there is one. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"forkpoint " + (v != null ? v : "0.1.0-SNAPSHOT")};
        }
    }
}
