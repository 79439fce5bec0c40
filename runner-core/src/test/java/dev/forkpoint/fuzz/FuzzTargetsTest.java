package dev.forkpoint.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The registry of fuzz targets names every {@code @FuzzTest} of the test classes, once, and each has seeds. */
class FuzzTargetsTest {
    @Test
    void everyFuzzTestIsRegisteredOnceWithSeeds() throws IOException, URISyntaxException, ClassNotFoundException {
        Path classes = Path.of(FuzzTargetsTest.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Set<String> found = new TreeSet<>();
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path p : files.filter(f -> f.getFileName().toString().endsWith("FuzzTest.class")).toList()) {
                String name = classes.relativize(p).toString().replace('/', '.').replaceAll("\\.class$", "");
                for (Method m : Class.forName(name).getDeclaredMethods()) {
                    if (m.isAnnotationPresent(FuzzTest.class)) found.add(name + "#" + m.getName());
                }
            }
        }
        Set<String> registered = FuzzTargets.ALL.stream().map(t -> t.className() + "#" + t.method()).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(found, registered, "FuzzTargets.ALL and the @FuzzTest methods differ");
        assertEquals(FuzzTargets.ALL.size(), FuzzTargets.ALL.stream().map(FuzzTargets.Target::name).distinct().count(), "a name is used twice");
        for (FuzzTargets.Target t : FuzzTargets.ALL) {
            Path seeds = classes.resolve(t.inputsPath());
            try (Stream<Path> s = Files.isDirectory(seeds) ? Files.list(seeds) : Stream.empty()) {
                assertTrue(s.findAny().isPresent(), "no seed corpus for " + t.name() + " in " + t.inputsPath());
            }
        }
    }
}
