package dev.forkpoint.format.gguf;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.fuzz.FuzzInvariant;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/** Fuzzed GGUF bytes through the reader and every typed accessor of what it returns. */
class GgufFuzzTest {
    static final Path NAME = Path.of("fuzzed.gguf");

    @FuzzTest
    void parse(byte[] bytes) throws Exception {
        var error = FuzzInvariant.typedErrorOrValid(() -> {
            try (GgufFile f = GgufReader.parse(NAME, MemorySegment.ofArray(bytes))) {
                for (String key : f.metadata().keySet()) {
                    FuzzInvariant.typedErrorOrValid(() -> f.getString(key));
                }
            }
        });
        if (error != null) FuzzInvariant.check(error instanceof ModelFormatException, "not a ModelFormatException: " + error);
    }
}
