package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.IOException;

/** {@code forkpoint bench}: synthetic model generation, engine comparison against llama.cpp, serving and cache benchmarks, the load probe, the soak and chaos benchmark, and JMH. */
@Command(name = "forkpoint bench", mixinStandardHelpOptions = true,
        subcommands = {GenerateCommand.class, CompareCommand.class, DecodeStepCommand.class, ConcurrencyCommand.class, FormatsCommand.class, CacheCommand.class, FuzzCommand.class,
                dev.forkpoint.bench.probe.ProbeCommand.class, dev.forkpoint.bench.soak.SoakCommand.class, JmhCommand.class, CommandLine.HelpCommand.class},
        description = "Benchmarks for Forkpoint.")
public final class BenchMain implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    /** Runs the command line and exits: llama.cpp's native threads may otherwise keep the JVM alive. */
    public static void main(String[] args) {
        // The engine's per-request INFO line (cache total=…) would interleave with the tables; keep warnings only.
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        System.exit(commandLine().execute(args));
    }

    public static CommandLine commandLine() {
        return new CommandLine(new BenchMain()).setExecutionExceptionHandler((ex, cl, parsed) -> {
            if (ex instanceof InvalidInputException || ex instanceof IOException) {
                cl.getErr().println("error: " + ex.getMessage());
                return 2;
            }
            if (ex instanceof dev.forkpoint.bench.probe.ProbeException) {   // the server or the network, not the arguments
                cl.getErr().println("error: " + ex.getMessage());
                return 1;
            }
            throw ex;
        });
    }
}
