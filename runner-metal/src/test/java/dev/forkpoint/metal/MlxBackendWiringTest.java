package dev.forkpoint.metal;

import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.BackendProvider;
import dev.forkpoint.backend.choice.Backends;
import dev.forkpoint.cli.CliEnvironment;
import dev.forkpoint.cli.Main;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.metal.mlxc.Mlx;
import dev.forkpoint.metal.mlxc.MlxTestLibrary;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * How runner-core reaches the MLX backend: through {@link java.util.ServiceLoader} ({@link Backends#providers()}),
 * chosen by {@code --backend mlx} / {@code --mlx-lib} on the command line and in {@link EngineOptions}; the CLI's
 * greedy output on MLX equals its output on the CPU backend, and {@code forkpoint doctor} reports what it loaded.
 */
class MlxBackendWiringTest {
    private static final Path STORIES = Path.of("../../shared/models/stories260K.gguf");

    private record Run(int code, String out, String err) {}

    private static Run cli(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        var env = new CliEnvironment(new ByteArrayInputStream(new byte[0]), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), Map.of("HOME", System.getProperty("java.io.tmpdir")), false);
        int code = Main.commandLine(env).execute(args);
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static Path stories() {
        Path p = STORIES.toAbsolutePath().normalize();
        if (!Files.isRegularFile(p)) p = Path.of("../shared/models/stories260K.gguf").toAbsolutePath().normalize();
        assertTrue(Files.isRegularFile(p), "stories260K.gguf in ../shared/models");
        return p;
    }

    @Test
    void theMlxProviderIsFoundOnTheClassPath() {
        List<BackendProvider> providers = Backends.providers();
        BackendProvider mlx = providers.stream().filter(p -> p.kind() == BackendChoice.MLX).findFirst().orElseThrow();
        assertInstanceOf(MlxBackendProvider.class, mlx);
        for (String a : MlxBackend.ARCHITECTURES) assertTrue(mlx.runs(a), a);
        assertFalse(mlx.runs("gpt2"));
    }

    @Test
    @Tag("mlx")
    void runWithBackendMlxPrintsWhatTheCpuBackendPrints() {
        Mlx mlx = MlxTestLibrary.require();
        String model = stories().toString();
        String[] common = {"--model", model, "--prompt", "Once upon a time", "--temperature", "0", "--num-predict", "24"};
        Run onMlx = cli(concat(new String[] {"run", "--backend", "mlx", "--mlx-lib", mlx.where()}, common));
        Run onCpu = cli(concat(new String[] {"run", "--backend", "cpu"}, common));
        assertEquals(0, onMlx.code(), onMlx.err());
        assertEquals(0, onCpu.code(), onCpu.err());
        assertTrue(onCpu.out().length() > 40, onCpu.out());
        assertEquals(onCpu.out(), onMlx.out());
    }

    @Test
    @Tag("mlx")
    void aModelLoadedWithBackendMlxRunsOnMlx() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        EngineOptions options = EngineOptions.defaults().withBackend(BackendChoice.MLX).withMlxLibrary(mlx.where());
        try (LoadedModel m = LoadedModel.load(stories(), 1, (done, total) -> {}, options)) {
            assertEquals("mlx", m.backendName());
            assertEquals("mlx", m.info().backend());
        }
    }

    @Test
    @Tag("mlx")
    void doctorReportsTheLoadedMlxAndTheChoice() {
        Mlx mlx = MlxTestLibrary.require();
        Run r = cli("doctor", "--backend", "mlx", "--mlx-lib", mlx.where());
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("found " + mlx.where() + " (--mlx-lib)"), r.out());
        assertTrue(r.out().contains("loaded: MLX " + mlx.version()), r.out());
        assertTrue(r.out().contains("--backend mlx → mlx (--backend mlx: MLX-C at " + mlx.where()), r.out());
    }

    private static String[] concat(String[] a, String[] b) {
        String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
