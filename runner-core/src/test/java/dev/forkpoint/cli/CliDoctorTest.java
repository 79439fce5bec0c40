package dev.forkpoint.cli;

import dev.forkpoint.backend.choice.Platform;
import dev.forkpoint.backend.cpu.CpuBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code forkpoint doctor} in runner-core alone (no MLX provider on the class path): it describes the machine, says
 * the MLX backend is not in this build, resolves auto and cpu to the CPU (exit 0) and refuses mlx with the reason
 * (exit 2). The MLX side is tested in runner-metal.
 */
class CliDoctorTest {
    @TempDir
    Path tmp;

    @Test
    void describesTheMachineAndResolvesTheChoice() {
        var r = new CliHarness(tmp).run("doctor");
        assertEquals(0, r.exitCode(), r.err());
        String out = r.out();
        assertTrue(out.contains("cpu kernels  " + CpuBackend.kernels()), out);
        assertTrue(out.contains(Runtime.getRuntime().availableProcessors() + " logical CPUs"), out);
        assertTrue(out.contains(Platform.current().toString()), out);
        assertTrue(out.contains("mlx          not in this build (the runner-metal module is not on the class path"), out);
        String expected = Platform.current().macArm64()
                ? "backend      --backend auto → cpu (auto: this build of Forkpoint has no MLX backend"
                : "backend      --backend auto → cpu (auto: MLX runs only on macOS arm64, this is " + Platform.current() + ")";
        assertTrue(out.contains(expected), out);
        var cpu = new CliHarness(tmp).run("doctor", "--backend", "cpu");
        assertEquals(0, cpu.exitCode(), cpu.err());
        assertTrue(cpu.out().contains("backend      --backend cpu → cpu (--backend cpu)"), cpu.out());
    }

    @Test
    void aBackendThatCannotRunHereIsReportedWithExitStatus2() {
        var r = new CliHarness(tmp).run("doctor", "--backend", "mlx");
        assertEquals(2, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("backend      --backend mlx cannot be used here:\n  --backend mlx: this build of Forkpoint has no MLX backend"), r.out());
    }
}
