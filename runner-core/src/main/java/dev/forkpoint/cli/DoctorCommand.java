package dev.forkpoint.cli;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.BackendProvider;
import dev.forkpoint.backend.choice.BackendSelection;
import dev.forkpoint.backend.choice.Backends;
import dev.forkpoint.backend.choice.Platform;
import dev.forkpoint.backend.cpu.CpuBackend;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.ParentCommand;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint doctor}: what this machine is and which backend Forkpoint would run on, and why — OS, CPU, memory,
 * the JVM, the CPU kernels, each backend provider's diagnosis (for MLX: every place MLX-C was looked for, the one
 * found, its version and device), then the backend {@code --backend} resolves to. Exit status 0, or 2 when the
 * backend asked for cannot be used here (the reason is printed as part of the report).
 */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = "Diagnose this machine: OS, CPU, memory, MLX-C (where it was looked for, its version), and the backend chosen and why.")
final class DoctorCommand implements Callable<Integer> {
    @ParentCommand
    Main main;

    @Mixin
    BackendOption backend = new BackendOption();

    @Override
    public Integer call() {
        PrintStream out = main.environment().out();
        BackendChoice choice = backend.choice();
        Platform platform = Platform.current();
        String version = Main.class.getPackage().getImplementationVersion();
        row(out, "forkpoint", version == null ? "(development build)" : version);
        row(out, "os", Platform.distribution().map(d -> d + ", ").orElse("") + platform + " " + System.getProperty("os.version", ""));
        row(out, "cpu", Platform.cpuModel().orElse("(model name not found)") + ", "
                + Runtime.getRuntime().availableProcessors() + " logical CPUs available to the JVM");
        row(out, "memory", gib(totalMemory()) + " total, JVM heap up to " + gib(Runtime.getRuntime().maxMemory()));
        row(out, "java", System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " "
                + System.getProperty("java.runtime.version"));
        row(out, "cpu kernels", CpuBackend.kernels() + "; Q8_0 / Q4_0 / Q4_K / Q6_K / F16 / BF16 / F32 with --kernels " + backend.kernelChoice().label() + ": "
                + (backend.kernelChoice() == dev.forkpoint.backend.KernelChoice.JAVA ? "java" : CpuBackend.nativeKernelsStatus()));
        List<BackendProvider> providers = Backends.providers();
        if (providers.stream().noneMatch(p -> p.kind() == BackendChoice.MLX)) {
            row(out, "mlx", "not in this build (the runner-metal module is not on the class path; ./forkpoint puts it there)");
        }
        for (BackendProvider p : providers) {
            out.println(p.kind().label() + ":");
            for (String line : p.diagnose(backend.mlxLib)) out.println("  " + line);
        }
        try {
            BackendSelection s = backend.check();
            row(out, "backend", "--backend " + choice.label() + " → " + s.backend().label() + " (" + s.reason() + ")"
                    + (s.auto() && s.backend() == BackendChoice.MLX ? "; the CPU for architectures the MLX backend does not run" : ""));
            return ExitCodes.OK;
        } catch (InvalidInputException e) {
            row(out, "backend", "--backend " + choice.label() + " cannot be used here:");
            e.getMessage().lines().forEach(l -> out.println("  " + l));
            return ExitCodes.BAD_INPUT;
        }
    }

    private static long totalMemory() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getTotalMemorySize() : -1;
    }

    private static String gib(long bytes) {
        return bytes < 0 ? "unknown" : String.format(Locale.ROOT, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    }

    private static void row(PrintStream out, String name, String value) {
        out.printf(Locale.ROOT, "%-12s %s%n", name, value);
    }
}
