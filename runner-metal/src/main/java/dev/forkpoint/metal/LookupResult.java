package dev.forkpoint.metal;

import java.util.ArrayList;
import java.util.List;

/** Where MLX-C was found, or that it was not; either way every place looked in before, with why it missed. */
public sealed interface LookupResult {

    /** The places that missed, in the order they were tried. */
    List<LookupMiss> misses();

    /** The library's file name on this OS ({@code libmlxc.dylib}, {@code libmlxc.so}, {@code mlxc.dll}). */
    String libraryName();

    /** Lines for {@code forkpoint doctor} and the log: one per place, in order, then the outcome. */
    default List<String> report() {
        List<String> lines = new ArrayList<>();
        lines.add("MLX-C (" + libraryName() + "), first hit wins:");
        for (LookupMiss miss : misses()) {
            lines.add("  no    " + miss);
        }
        switch (this) {
            case Found f -> lines.add("  found " + f.place());
            case NotFound n -> lines.add("MLX-C not found (brew install mlx-c, or point --mlx-lib or"
                    + " FORKPOINT_MLXC_LIB at " + libraryName() + ")");
        }
        return lines;
    }

    record Found(LibrarySource source, String place, LibraryTarget target, String libraryName,
                 List<LookupMiss> misses) implements LookupResult {
        public Found {
            misses = List.copyOf(misses);
        }
    }

    record NotFound(String libraryName, List<LookupMiss> misses) implements LookupResult {
        public NotFound {
            misses = List.copyOf(misses);
        }
    }
}
