package dev.forkpoint.backend.choice;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.cpu.CpuBackend;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/** The backend factory: cpu is the CPU backend, auto resolves to it and says why, mlx is refused with the reason. */
class BackendsTest {
    private static final Platform LINUX = new Platform("Linux", "amd64");
    private static final Platform MAC_ARM = new Platform("Mac OS X", "aarch64");
    private static final Platform MAC_INTEL = new Platform("Mac OS X", "x86_64");

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
    void cpuIsTheCpuBackendEverywhere() {
        for (Platform p : new Platform[] {LINUX, MAC_ARM, MAC_INTEL}) {
            BackendSelection s = Backends.select(BackendChoice.CPU, p);
            assertEquals(BackendChoice.CPU, s.backend(), p::toString);
            assertEquals("backend cpu (--backend cpu)", s.describe());
        }
    }

    @Test
    void autoResolvesToTheCpuAndSaysWhy() {
        assertEquals(new BackendSelection(BackendChoice.CPU, "auto: MLX backend not built in this version"),
                Backends.select(BackendChoice.AUTO, MAC_ARM));
        assertEquals("backend cpu (auto: MLX runs only on macOS arm64, this is Linux amd64)",
                Backends.select(BackendChoice.AUTO, LINUX).describe());
        assertEquals("backend cpu (auto: MLX runs only on macOS arm64, this is Mac OS X x86_64)",
                Backends.select(BackendChoice.AUTO, MAC_INTEL).describe());
        assertEquals(Backends.select(BackendChoice.AUTO, LINUX), Backends.select(null, LINUX), "null is auto");
    }

    @Test
    void mlxIsRefusedNeverReplacedByTheCpu() {
        var onMac = assertThrows(InvalidInputException.class, () -> Backends.select(BackendChoice.MLX, MAC_ARM));
        assertEquals("--backend mlx: this version of Forkpoint has no MLX backend yet; use --backend cpu or auto", onMac.getMessage());
        var onLinux = assertThrows(InvalidInputException.class, () -> Backends.select(BackendChoice.MLX, LINUX));
        assertEquals("--backend mlx: the MLX backend runs only on macOS arm64 (this is Linux amd64), and this version of"
                + " Forkpoint has none yet; use --backend cpu or auto", onLinux.getMessage());
        var created = assertThrows(InvalidInputException.class, () -> Backends.create(BackendChoice.MLX, 1));
        assertTrue(created.getMessage().startsWith("--backend mlx: "), created::getMessage);
    }

    @Test
    void createsTheCpuBackendWithTheThreadsAsked() {
        for (BackendChoice c : new BackendChoice[] {BackendChoice.CPU, BackendChoice.AUTO}) {
            try (Backend b = Backends.create(c, 3)) {
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
        assertThrows(IllegalArgumentException.class, () -> new BackendSelection(BackendChoice.AUTO, "x"));
        assertThrows(IllegalArgumentException.class, () -> new BackendSelection(null, "x"));
    }
}
