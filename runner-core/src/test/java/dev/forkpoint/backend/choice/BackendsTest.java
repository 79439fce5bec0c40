package dev.forkpoint.backend.choice;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.BackendProvider;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.tensor.WeightSource;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The backend factory over fake providers: cpu is the CPU backend; mlx is the provider's backend where it loads and is
 * refused with the provider's reasons where it does not, never replaced by the CPU; auto is MLX only on macOS arm64
 * when MLX loads and runs the architecture, else the CPU, saying why.
 */
class BackendsTest {
    private static final Platform LINUX = new Platform("Linux", "amd64");
    private static final Platform MAC_ARM = new Platform("Mac OS X", "aarch64");
    private static final Platform MAC_INTEL = new Platform("Mac OS X", "x86_64");

    /** A provider whose library loads (or not, with {@code missing}'s lines) and which runs llama only. */
    private static final class FakeMlx implements BackendProvider {
        final List<String> missing;
        final List<String> librariesAsked = new ArrayList<>();
        int created;

        FakeMlx(List<String> missing) { this.missing = missing; }

        public BackendChoice kind() { return BackendChoice.MLX; }

        public Availability availability(String library) {
            librariesAsked.add(library);
            return missing == null ? new Availability.Ready("MLX-C at /x/libmlxc.so, MLX 0.31.2") : new Availability.Unavailable(missing);
        }

        public boolean runs(String architecture) { return architecture.equals("llama"); }

        public Backend create(String library) {
            created++;
            return new NamedBackend("fake-mlx");
        }

        public List<String> diagnose(String library) { return List.of(); }
    }

    private record NamedBackend(String name) implements Backend {
        public Weight weight(WeightSource source) { throw new UnsupportedOperationException(); }
        public KvStore newKvStore(SequenceKv sequence, RecurrentLayout recurrent) { throw new UnsupportedOperationException(); }
        public Ops ops() { throw new UnsupportedOperationException(); }
        public void close() {}
    }

    private static final List<String> NOT_FOUND = List.of("MLX-C (libmlxc.so), first hit wins:", "  no    FORKPOINT_MLXC_LIB: not set",
            "MLX-C not found (brew install mlx-c)");

    @Test
    void parsesTheThreeChoicesInAnyCase() {
        assertEquals(BackendChoice.CPU, BackendChoice.parse("cpu"));
        assertEquals(BackendChoice.MLX, BackendChoice.parse("MLX"));
        assertEquals(BackendChoice.AUTO, BackendChoice.parse(" Auto "));
        assertEquals("auto", BackendChoice.AUTO.label());
    }

    @Test
    void refusesOtherNamesNamingTheOption() {
        for (String bad : new String[] {"gpu", "", "metal", "cpu,mlx"}) {
            var e = assertThrows(InvalidInputException.class, () -> BackendChoice.parse(bad), bad);
            assertEquals("--backend must be cpu, mlx or auto, got '" + bad + "'", e.getMessage());
        }
        assertThrows(InvalidInputException.class, () -> BackendChoice.parse(null));
    }

    @Test
    void cpuIsTheCpuBackendEverywhereAndNeverAsksTheProvider() {
        FakeMlx mlx = new FakeMlx(null);
        for (Platform p : new Platform[] {LINUX, MAC_ARM, MAC_INTEL}) {
            BackendSelection s = Backends.select(BackendChoice.CPU, null, p, List.of(mlx));
            assertEquals(BackendChoice.CPU, s.backend(), p::toString);
            assertEquals("backend cpu (--backend cpu)", s.describe());
        }
        assertEquals(List.of(), mlx.librariesAsked);
    }

    @Test
    void autoIsMlxOnlyOnMacArm64WhenItLoads() {
        FakeMlx loads = new FakeMlx(null);
        assertEquals("backend mlx (auto: MLX-C at /x/libmlxc.so, MLX 0.31.2)",
                Backends.select(BackendChoice.AUTO, "/x", MAC_ARM, List.of(loads)).describe());
        assertEquals(List.of("/x"), loads.librariesAsked, "the --mlx-lib value reaches the provider");
        assertEquals("backend cpu (auto: MLX runs only on macOS arm64, this is Linux amd64)",
                Backends.select(BackendChoice.AUTO, null, LINUX, List.of(loads)).describe());
        assertEquals("backend cpu (auto: MLX runs only on macOS arm64, this is Mac OS X x86_64)",
                Backends.select(BackendChoice.AUTO, null, MAC_INTEL, List.of(loads)).describe());
        assertEquals(List.of("/x"), loads.librariesAsked, "off macOS arm64 auto does not even load MLX-C");
        assertEquals(Backends.select(BackendChoice.AUTO, null, LINUX, List.of()), Backends.select(null, null, LINUX, List.of()), "null is auto");
    }

    @Test
    void autoFallsBackToTheCpuSayingWhy() {
        assertEquals("backend cpu (auto: this build of Forkpoint has no MLX backend (runner-metal not on the class path))",
                Backends.select(BackendChoice.AUTO, null, MAC_ARM, List.of()).describe());
        assertEquals("backend cpu (auto: MLX-C cannot be used: MLX-C (libmlxc.so), first hit wins:; no    FORKPOINT_MLXC_LIB: not set;"
                        + " MLX-C not found (brew install mlx-c))",
                Backends.select(BackendChoice.AUTO, null, MAC_ARM, List.of(new FakeMlx(NOT_FOUND))).describe());
    }

    @Test
    void autoRunsAnArchitectureMlxDoesNotRunOnTheCpu() {
        FakeMlx mlx = new FakeMlx(null);
        try (Backend b = Backends.create(BackendChoice.AUTO, null, 2, "qwen35", MAC_ARM, List.of(mlx))) {
            assertInstanceOf(CpuBackend.class, b);
        }
        assertEquals(0, mlx.created);
        BackendSelection auto = Backends.select(BackendChoice.AUTO, null, MAC_ARM, List.of(mlx));
        assertEquals("backend cpu (auto: the MLX backend does not run qwen35 yet)",
                Backends.forArchitecture(auto, "qwen35", List.of(mlx)).describe());
        try (Backend b = Backends.create(BackendChoice.AUTO, null, 2, "llama", MAC_ARM, List.of(mlx))) {
            assertEquals("fake-mlx", b.name());
        }
        assertEquals(1, mlx.created);
    }

    @Test
    void mlxIsTheProvidersBackendOnAnyPlatformWhereItLoads() {
        FakeMlx mlx = new FakeMlx(null);
        assertEquals("backend mlx (--backend mlx: MLX-C at /x/libmlxc.so, MLX 0.31.2)",
                Backends.select(BackendChoice.MLX, null, LINUX, List.of(mlx)).describe());
        // explicit: not replaced by the CPU for an architecture it does not run (the backend refuses it at load)
        try (Backend b = Backends.create(BackendChoice.MLX, null, 2, "qwen35", LINUX, List.of(mlx))) {
            assertEquals("fake-mlx", b.name());
        }
    }

    @Test
    void mlxIsRefusedWithTheReasonNeverReplacedByTheCpu() {
        var absent = assertThrows(InvalidInputException.class, () -> Backends.select(BackendChoice.MLX, null, MAC_ARM, List.of()));
        assertEquals("--backend mlx: this build of Forkpoint has no MLX backend (the runner-metal module is not on the class path:"
                + " ./forkpoint puts it there); use --backend cpu or auto", absent.getMessage());
        var missing = assertThrows(InvalidInputException.class,
                () -> Backends.create(BackendChoice.MLX, null, 1, "llama", LINUX, List.of(new FakeMlx(NOT_FOUND))));
        assertEquals("--backend mlx: MLX-C cannot be used here; use --backend cpu or auto, or point --mlx-lib at libmlxc\n"
                + String.join("\n", NOT_FOUND), missing.getMessage());
    }

    @Test
    void createsTheCpuBackendWithTheThreadsAsked() {
        for (BackendChoice c : new BackendChoice[] {BackendChoice.CPU, BackendChoice.AUTO}) {
            try (Backend b = Backends.create(c, null, 3, "llama", LINUX, List.of(new FakeMlx(null)))) {
                assertEquals("cpu", b.name());
                assertEquals(3, assertInstanceOf(CpuBackend.class, b).threads());
            }
        }
    }

    @Test
    void macArm64IsRecognisedUnderBothArchNames() {
        assertTrue(new Platform("Mac OS X", "aarch64").macArm64());
        assertTrue(new Platform("macOS", "arm64").macArm64());
        assertFalse(MAC_INTEL.macArm64());
        assertFalse(new Platform("Linux", "aarch64").macArm64());
    }

    @Test
    void aSelectionNamesAConcreteBackend() {
        assertThrows(IllegalArgumentException.class, () -> new BackendSelection(BackendChoice.AUTO, "x", true));
        assertThrows(IllegalArgumentException.class, () -> new BackendSelection(null, "x", false));
    }
}
