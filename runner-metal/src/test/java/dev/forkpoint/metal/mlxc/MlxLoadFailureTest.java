package dev.forkpoint.metal.mlxc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.forkpoint.metal.LibrarySource;
import dev.forkpoint.metal.LookupMiss;
import dev.forkpoint.metal.LookupResult;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Why MLX-C cannot be used, said precisely. Runs everywhere: no MLX-C is needed to be told it is missing. */
class MlxLoadFailureTest {

    @Test
    void notFoundReportsEveryPlaceLooked() {
        var notFound = new LookupResult.NotFound("libmlxc.so", List.of(
                new LookupMiss(LibrarySource.ENVIRONMENT, "FORKPOINT_MLXC_LIB", "not set"),
                new LookupMiss(LibrarySource.SYSTEM_LOADER, "system loader (libmlxc.so)", "cannot open")));
        MlxUnavailableException e = assertThrows(MlxUnavailableException.class, () -> Mlx.load(notFound));
        assertEquals(MlxUnavailableException.Reason.NOT_FOUND, e.reason());
        assertTrue(e.getMessage().contains("FORKPOINT_MLXC_LIB: not set"), e.getMessage());
        assertTrue(e.getMessage().contains("system loader (libmlxc.so): cannot open"), e.getMessage());
    }

    @Test
    void aLibraryLackingEveryFunctionNamesThemAll() {
        SymbolLookup nothing = name -> Optional.empty();
        MlxUnavailableException e = assertThrows(MlxUnavailableException.class,
                () -> MlxC.bind(nothing, "/somewhere/libmlxc.so"));
        assertEquals(MlxUnavailableException.Reason.MISSING_SYMBOLS, e.reason());
        assertEquals("MLX-C at /somewhere/libmlxc.so lacks " + String.join(", ", MlxC.FUNCTIONS.keySet()),
                e.getMessage());
    }

    @Test
    void aLibraryLackingOneFunctionNamesThatOne() {
        // any real symbol stands in for the others: binding makes handles, it calls nothing
        MemorySegment strlen = Linker.nativeLinker().defaultLookup().find("strlen").orElseThrow();
        SymbolLookup allButMatmul = name -> name.equals("mlx_matmul") ? Optional.empty() : Optional.of(strlen);
        MlxUnavailableException e = assertThrows(MlxUnavailableException.class,
                () -> MlxC.bind(allButMatmul, "/old/libmlxc.dylib"));
        assertEquals("MLX-C at /old/libmlxc.dylib lacks mlx_matmul", e.getMessage());
    }
}
