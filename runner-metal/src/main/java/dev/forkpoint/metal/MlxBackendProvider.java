package dev.forkpoint.metal;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.BackendProvider;
import dev.forkpoint.metal.mlxc.Mlx;
import dev.forkpoint.metal.mlxc.MlxUnavailableException;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The MLX backend as runner-core finds it ({@link java.util.ServiceLoader}, registered in
 * {@code META-INF/services/dev.forkpoint.backend.BackendProvider}): MLX-C looked for and loaded by {@link Mlx#load}
 * (once per process), {@link MlxBackend} made on it.
 */
public final class MlxBackendProvider implements BackendProvider {

    public BackendChoice kind() {
        return BackendChoice.MLX;
    }

    public Availability availability(String library) {
        try {
            Mlx mlx = Mlx.load(Optional.ofNullable(library));
            return new Availability.Ready("MLX-C at " + mlx.where() + ", MLX " + mlx.version());
        } catch (MlxUnavailableException e) {
            return new Availability.Unavailable(e.report());
        } catch (IllegalStateException e) {   // another MLX-C is loaded in this process already
            return new Availability.Unavailable(List.of(e.getMessage()));
        }
    }

    public boolean runs(String architecture) {
        return MlxBackend.ARCHITECTURES.contains(architecture);
    }

    public Backend create(String library) {
        return MlxBackend.open(Optional.ofNullable(library));
    }

    /** Every place MLX-C was looked for and the one found; then what was loaded and what it runs, or why it did not load. */
    public List<String> diagnose(String library) {
        List<String> lines = new ArrayList<>();
        switch (availability(library)) {
            case Availability.Ready r -> {
                Mlx mlx = Mlx.load(Optional.ofNullable(library));
                lines.addAll(MlxLibraryLocator.locate(Optional.ofNullable(library)).report());
                lines.add("loaded: MLX " + mlx.version() + " (" + mlx.where() + ")");
                lines.add("runs: " + String.join(", ", MlxBackend.ARCHITECTURES));
                lines.addAll(metal());
            }
            case Availability.Unavailable u -> {
                // MLX-C's own report already lists the places looked; another library loaded first is one line
                if (u.report().size() == 1) lines.addAll(MlxLibraryLocator.locate(Optional.ofNullable(library)).report());
                lines.addAll(u.report());
            }
        }
        return lines;
    }

    /** The Metal device and the thread limits of the SDPA decode kernel's compiled pipelines (f16, head dim 128), or why not. */
    static List<String> metal() {
        var opened = dev.forkpoint.metal.objc.MetalPipelineCompiler.open();
        if (opened.compiler().isEmpty()) return List.of("metal: " + opened.reason() + "; attention runs on MLX's SDPA");
        try (var compiler = opened.compiler().get()) {
            List<String> lines = new ArrayList<>();
            lines.add("metal: " + compiler.deviceName() + ", " + compiler.maxThreadgroupMemoryBytes() + " bytes of threadgroup memory");
            SdpaPlan nominal = SdpaPlanner.plan(GpuLimits.apple(1024), new SdpaShape(8, 1, 128, 4096, 2));
            try {
                var one = compiler.compile(SdpaDecodeSource.standalone(SdpaDecodeSource.PASS1,
                        SdpaDecodeSource.pass1Constants(nominal, nominal.pass1().getFirst()), "half", "pass1"), "pass1");
                var two = compiler.compile(SdpaDecodeSource.standalone(SdpaDecodeSource.PASS2,
                        SdpaDecodeSource.pass2Constants(nominal), "half", "pass2"), "pass2");
                lines.add("sdpa decode kernel (f16, head dim 128): pass 1 at most " + one.maxTotalThreadsPerThreadgroup()
                        + " threads per threadgroup, pass 2 at most " + two.maxTotalThreadsPerThreadgroup() + ", SIMD width "
                        + one.threadExecutionWidth());
            } catch (RuntimeException e) {
                lines.add("sdpa decode kernel does not compile (attention runs on MLX's SDPA): " + e.getMessage());
            }
            return lines;
        }
    }
}
