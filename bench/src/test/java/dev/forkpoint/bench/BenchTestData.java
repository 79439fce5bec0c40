package dev.forkpoint.bench;

import org.junit.jupiter.api.Assumptions;

import java.nio.file.Files;
import java.nio.file.Path;

/** Locates {@code ../shared} (beside the project root) for bench tests; skips a test clearly when it is absent. */
public final class BenchTestData {
    private BenchTestData() {}

    /** A file under the shared folder, or a skipped test when it is not there. */
    public static Path shared(String relative) {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path candidate = p.resolveSibling("shared").resolve(relative);
            if (Files.exists(candidate)) return candidate;
        }
        Assumptions.abort("../shared/" + relative + " (test models) is not beside the project; skipping");
        return null;
    }
}
