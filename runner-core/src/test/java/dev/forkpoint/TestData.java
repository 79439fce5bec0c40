package dev.forkpoint;

import org.junit.jupiter.api.Assumptions;

import java.nio.file.Files;
import java.nio.file.Path;

/** Locates {@code ../shared} (beside the project root) for tests; skips a test clearly when it is absent. */
public final class TestData {
    private TestData() {}

    /** The shared folder, or a skipped test when it is not there. */
    public static Path shared() {
        String given = System.getProperty("forkpoint.shared", "");   // bench fuzz's children run elsewhere and say where
        if (!given.isEmpty() && Files.isDirectory(Path.of(given).resolve("models"))) return Path.of(given);
        Path dir = Path.of("").toAbsolutePath();
        for (Path p = dir; p != null; p = p.getParent()) {
            Path candidate = p.resolveSibling("shared");
            if (Files.isDirectory(candidate.resolve("models"))) return candidate;
        }
        Assumptions.abort("../shared (test models and reference data) is not beside the project; skipping");
        return null;
    }

    /** A file under the shared folder, or a skipped test when it is not there. */
    public static Path shared(String relative) {
        Path p = shared().resolve(relative);
        Assumptions.assumeTrue(Files.exists(p), () -> p + " is missing; skipping");
        return p;
    }
}
