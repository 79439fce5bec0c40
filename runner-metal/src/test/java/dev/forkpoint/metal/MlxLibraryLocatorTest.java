package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MlxLibraryLocatorTest {

    /** A simulated machine: files, folders (their entries) and whether the system loader finds the library. */
    private static final class Machine {
        final Set<Path> files = new HashSet<>();
        final Map<String, String> env = new HashMap<>();
        final List<Path> path = new ArrayList<>(List.of(Path.of("/usr/bin"), Path.of("/bin")));
        String os = "Linux";
        boolean loaderFinds;

        Machine file(String path) {
            files.add(Path.of(path));
            return this;
        }

        LocatorEnvironment environment() {
            return new LocatorEnvironment(env, path, os, "aarch64", files::contains, dir -> files.stream()
                    .filter(f -> f.startsWith(dir) && !f.equals(dir))
                    .map(f -> dir.resolve(dir.relativize(f).getName(0)))
                    .distinct().toList(),
                    name -> loaderFinds ? Optional.empty() : Optional.of("Cannot open library: " + name));
        }

        LookupResult locate(String option) {
            return MlxLibraryLocator.locate(Optional.ofNullable(option), environment());
        }
    }

    @Test
    void onThisMachineTheRealLookupReportsEveryPlaceItLooked() {
        LocatorEnvironment env = LocatorEnvironment.current();
        assertEquals(System.mapLibraryName("mlxc"), env.libraryName());
        LookupResult result = MlxLibraryLocator.locate(Optional.empty(), env);
        String report = String.join("\n", result.report());
        System.out.println(report);
        Set<LibrarySource> looked = EnumSet.noneOf(LibrarySource.class);
        result.misses().forEach(m -> looked.add(m.source()));
        assertTrue(looked.contains(LibrarySource.OPTION), report);
        assertTrue(report.contains("--mlx-lib: not given"), report);
        switch (result) {
            // a machine with MLX-C (a Mac with brew install mlx-c): every kind of place before the hit missed
            case LookupResult.Found f -> {
                for (LibrarySource s : LibrarySource.values()) {
                    if (s.ordinal() < f.source().ordinal()) {
                        assertTrue(looked.contains(s), s + " before the hit: " + report);
                    }
                }
            }
            case LookupResult.NotFound n -> {
                // the macOS workflow installs MLX-C and sets FORKPOINT_REQUIRE_MLX: there, not finding it fails
                assertFalse("1".equals(System.getenv("FORKPOINT_REQUIRE_MLX")), "FORKPOINT_REQUIRE_MLX=1 but MLX-C was not found:\n" + report);
                assertEquals(EnumSet.allOf(LibrarySource.class), looked, report);
                for (Path dir : MlxLibraryLocator.HOMEBREW_DIRS) {
                    assertTrue(report.contains(dir.resolve(env.libraryName()) + " (Homebrew): no such file"), report);
                }
                assertTrue(report.contains("system loader (" + env.libraryName() + "): "), report);
                assertTrue(report.endsWith("MLX-C not found (brew install mlx-c, or point --mlx-lib or"
                        + " FORKPOINT_MLXC_LIB at " + env.libraryName() + ")"), report);
            }
        }
    }

    @Test
    void nothingFoundReadsWell() {
        Machine linux = new Machine();
        LookupResult result = linux.locate(null);
        assertInstanceOf(LookupResult.NotFound.class, result);
        assertEquals(List.of(
                "MLX-C (libmlxc.so), first hit wins:",
                "  no    --mlx-lib: not given",
                "  no    FORKPOINT_MLXC_LIB: not set",
                "  no    /opt/homebrew/lib/libmlxc.so (Homebrew): no such file",
                "  no    /usr/local/lib/libmlxc.so (Homebrew): no such file",
                "  no    /opt/homebrew/opt/mlx-c/lib/libmlxc.so (Homebrew): no such file",
                "  no    ollama on the PATH: not in any of the 2 PATH folders",
                "  no    /Applications/Ollama.app/Contents/Resources/lib/ollama/mlx_*: macOS only",
                "  no    system loader (libmlxc.so): Cannot open library: libmlxc.so",
                "MLX-C not found (brew install mlx-c, or point --mlx-lib or FORKPOINT_MLXC_LIB at libmlxc.so)"),
                result.report());
    }

    @Test
    void theFirstHitWinsInOrder() {
        // one library in every place, on a Mac; taking the places away one by one moves the hit down the order
        List<String> places = List.of("/opt/lib/from-option.dylib", "/env/libmlxc.dylib",
                "/opt/homebrew/lib/libmlxc.dylib", "/usr/local/lib/libmlxc.dylib",
                "/opt/homebrew/opt/mlx-c/lib/libmlxc.dylib", "/opt/ollama/lib/ollama/mlx_metal_v3/libmlxc.dylib",
                "/Applications/Ollama.app/Contents/Resources/lib/ollama/mlx_metal/libmlxc.dylib");
        for (int first = 0; first <= places.size(); first++) {
            Machine mac = new Machine();
            mac.os = "Mac OS X";
            mac.path.add(Path.of("/opt/ollama/bin"));
            mac.file("/opt/ollama/bin/ollama");
            mac.env.put("FORKPOINT_MLXC_LIB", "/env");
            mac.loaderFinds = true;
            for (int i = first; i < places.size(); i++) {
                mac.file(places.get(i));
            }
            LookupResult result = mac.locate("/opt/lib/from-option.dylib");
            LookupResult.Found found = assertInstanceOf(LookupResult.Found.class, result);
            if (first < places.size()) {
                assertEquals(new LibraryTarget.File(Path.of(places.get(first))), found.target(),
                        String.join("\n", result.report()));
            } else {
                assertEquals(new LibraryTarget.LoaderName("libmlxc.dylib"), found.target());
                assertEquals(LibrarySource.SYSTEM_LOADER, found.source());
            }
            assertEquals(first, found.misses().size(), String.join("\n", result.report()));
        }
    }

    @Test
    void anExplicitPlaceThatMissesIsReportedAndTheSearchGoesOn() {
        Machine mac = new Machine();
        mac.os = "Mac OS X";
        mac.file("/usr/local/lib/libmlxc.dylib");
        mac.env.put("FORKPOINT_MLXC_LIB", "");
        LookupResult result = mac.locate("/nowhere/libmlxc.dylib");
        assertEquals(List.of(
                "MLX-C (libmlxc.dylib), first hit wins:",
                "  no    --mlx-lib /nowhere/libmlxc.dylib: no such file, nor a folder holding libmlxc.dylib",
                "  no    FORKPOINT_MLXC_LIB: empty",
                "  no    /opt/homebrew/lib/libmlxc.dylib (Homebrew): no such file",
                "  found /usr/local/lib/libmlxc.dylib (Homebrew)"), result.report());
        assertEquals(LibrarySource.HOMEBREW, ((LookupResult.Found) result).source());
    }

    @Test
    void theOptionAndTheVariableMayNameAFolder() {
        Machine linux = new Machine().file("/scratch/mlx-c/build/libmlxc.so");
        linux.env.put("FORKPOINT_MLXC_LIB", "/scratch/mlx-c/build");
        LookupResult.Found found = assertInstanceOf(LookupResult.Found.class, linux.locate(null));
        assertEquals(LibrarySource.ENVIRONMENT, found.source());
        assertEquals("/scratch/mlx-c/build/libmlxc.so (FORKPOINT_MLXC_LIB)", found.place());
        found = assertInstanceOf(LookupResult.Found.class, linux.locate("/scratch/mlx-c/build"));
        assertEquals(LibrarySource.OPTION, found.source());
        assertEquals(List.of(), found.misses());
    }

    @Test
    void ollamasBundledMlxIsFoundNextToItsBinaryInFolderOrder() {
        Machine linux = new Machine()
                .file("/usr/local/bin/ollama")
                .file("/usr/local/lib/ollama/cuda_v12/libggml-cuda.so")
                .file("/usr/local/lib/ollama/mlx_cuda_v13/libmlx.so")
                .file("/usr/local/lib/ollama/mlx_cuda_v12/README")
                .file("/usr/local/lib/ollama/mlx_cpu/libmlxc.so");
        linux.path.addFirst(Path.of("/usr/local/bin"));
        LookupResult result = linux.locate(null);
        LookupResult.Found found = assertInstanceOf(LookupResult.Found.class, result);
        assertEquals(LibrarySource.OLLAMA, found.source());
        assertEquals(new LibraryTarget.File(Path.of("/usr/local/lib/ollama/mlx_cpu/libmlxc.so")), found.target());
        assertEquals("  found /usr/local/lib/ollama/mlx_cpu/libmlxc.so (Ollama)", result.report().getLast());

        // the same Ollama without MLX-C in its mlx_* folders: each folder is a miss, then the system loader
        linux.files.remove(Path.of("/usr/local/lib/ollama/mlx_cpu/libmlxc.so"));
        linux.file("/usr/local/lib/ollama/mlx_cpu/libmlx.so");
        linux.loaderFinds = true;
        result = linux.locate(null);
        assertEquals(List.of(
                "MLX-C (libmlxc.so), first hit wins:",
                "  no    --mlx-lib: not given",
                "  no    FORKPOINT_MLXC_LIB: not set",
                "  no    /opt/homebrew/lib/libmlxc.so (Homebrew): no such file",
                "  no    /usr/local/lib/libmlxc.so (Homebrew): no such file",
                "  no    /opt/homebrew/opt/mlx-c/lib/libmlxc.so (Homebrew): no such file",
                "  no    /usr/local/lib/ollama/mlx_cpu/libmlxc.so (Ollama): no such file",
                "  no    /usr/local/lib/ollama/mlx_cuda_v12/libmlxc.so (Ollama): no such file",
                "  no    /usr/local/lib/ollama/mlx_cuda_v13/libmlxc.so (Ollama): no such file",
                "  no    /Applications/Ollama.app/Contents/Resources/lib/ollama/mlx_*: macOS only",
                "  found system loader (libmlxc.so)"), result.report());
    }

    @Test
    void anOllamaWithoutMlxFolders() {
        Machine mac = new Machine().file("/opt/homebrew/bin/ollama");
        mac.os = "Mac OS X";
        mac.path.add(Path.of("/opt/homebrew/bin"));
        mac.env.put("HOMEBREW_PREFIX", "/opt/homebrew");   // the same place as the fixed one: tried once
        LookupResult result = mac.locate(null);
        assertEquals(List.of(
                "MLX-C (libmlxc.dylib), first hit wins:",
                "  no    --mlx-lib: not given",
                "  no    FORKPOINT_MLXC_LIB: not set",
                "  no    /opt/homebrew/lib/libmlxc.dylib (Homebrew): no such file",
                "  no    /usr/local/lib/libmlxc.dylib (Homebrew): no such file",
                "  no    /opt/homebrew/opt/mlx-c/lib/libmlxc.dylib (Homebrew): no such file",
                "  no    /opt/homebrew/lib/ollama/mlx_* (next to /opt/homebrew/bin/ollama): no mlx_* folder (this"
                        + " Ollama bundles no MLX, or is not there)",
                "  no    /Applications/Ollama.app/Contents/Resources/lib/ollama/mlx_* (Ollama.app): no mlx_* folder"
                        + " (this Ollama bundles no MLX, or is not there)",
                "  no    system loader (libmlxc.dylib): Cannot open library: libmlxc.dylib",
                "MLX-C not found (brew install mlx-c, or point --mlx-lib or FORKPOINT_MLXC_LIB at libmlxc.dylib)"),
                result.report());
    }

    @Test
    void windowsNames() {
        Machine windows = new Machine();
        windows.os = "Windows 11";
        assertEquals("mlxc.dll", windows.environment().libraryName());
    }
}
