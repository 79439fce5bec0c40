package dev.forkpoint.metal;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;

/** What to open once MLX-C is found: a file, or a bare name the system loader resolves. */
public sealed interface LibraryTarget {

    /** Opens the library for the lifetime of {@code arena} (dlopen; restricted: needs native access). */
    SymbolLookup open(Arena arena);

    record File(Path path) implements LibraryTarget {
        @Override
        public SymbolLookup open(Arena arena) {
            return SymbolLookup.libraryLookup(path, arena);
        }

        @Override
        public String toString() {
            return path.toString();
        }
    }

    record LoaderName(String name) implements LibraryTarget {
        @Override
        public SymbolLookup open(Arena arena) {
            return SymbolLookup.libraryLookup(name, arena);
        }

        @Override
        public String toString() {
            return name + " (through the system loader)";
        }
    }
}
