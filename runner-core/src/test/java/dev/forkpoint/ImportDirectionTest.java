package dev.forkpoint;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layering, checked on the sources: api (server) → engine → model → backend; engine → kv-cache; nothing imports
 * the server (but the CLI, which starts it); formats import no backend; the server's API packages (ollama, openai,
 * anthropic, runner) do not reference each other — what two of them share lives in the server core; a concrete backend
 * ({@code backend.cpu}) is named only by the backend factory ({@code backend.choice}) and the CLI, the others reach it
 * through the backend SPI. A reference counts wherever code names a
 * package (imports and qualified names), not in comments or strings.
 */
class ImportDirectionTest {
    /** Top-level package → the top-level packages it must not reference. */
    static final Map<String, Set<String>> FORBIDDEN = Map.of(
            "format", Set.of("backend", "engine", "model", "server", "cli", "convert", "store", "sampling", "chat"),
            "tensor", Set.of("backend", "engine", "model", "server", "cli", "format", "convert"),
            "backend", Set.of("engine", "model", "server", "cli", "format", "convert", "store", "chat", "tokenizer", "sampling"),
            "model", Set.of("engine", "server", "cli", "convert", "store"),
            "engine", Set.of("server", "cli", "convert", "store"),
            "tokenizer", Set.of("backend", "engine", "model", "server", "cli"),
            "sampling", Set.of("backend", "engine", "model", "server", "cli"),
            "chat", Set.of("backend", "engine", "model", "server", "cli"),
            "convert", Set.of("server", "cli", "engine"),
            "store", Set.of("server", "cli", "engine", "backend"));

    /** The API packages under server: each speaks one protocol and reaches the others only through the core. */
    static final Set<String> APIS = Set.of("ollama", "openai", "anthropic", "runner");
    /** Concrete backends: only {@link #CONCRETE_BACKEND_USERS} and the backend's own package name them. */
    private static final Pattern CONCRETE_BACKEND = Pattern.compile("\\bdev\\.forkpoint\\.backend\\.cpu\\b");
    static final Set<String> CONCRETE_BACKEND_USERS = Set.of("backend.cpu", "backend.choice", "cli");
    private static final Pattern SERVER_REFERENCE = Pattern.compile("\\bdev\\.forkpoint\\.server\\.([a-z0-9]+)\\b");

    private static final Pattern PACKAGE = Pattern.compile("^package dev\\.forkpoint\\.?([a-z0-9.]*);", Pattern.MULTILINE);
    private static final Pattern REFERENCE = Pattern.compile("\\bdev\\.forkpoint\\.([a-z0-9]+)\\b");
    private static final Pattern COMMENTS_AND_STRINGS = Pattern.compile("/\\*.*?\\*/|//[^\\n]*|\"(?:\\\\.|[^\"\\\\])*\"", Pattern.DOTALL);

    /** The arrows against the layering in one source file, as "package → referenced". */
    static List<String> violations(String source) {
        Matcher p = PACKAGE.matcher(source);
        if (!p.find()) return List.of();
        String pkg = p.group(1), top = pkg.isEmpty() ? "" : pkg.split("\\.")[0];
        String code = COMMENTS_AND_STRINGS.matcher(source).replaceAll(" ");
        Set<String> out = new TreeSet<>();
        Matcher r = REFERENCE.matcher(code);
        while (r.find()) {
            String target = r.group(1);
            if (FORBIDDEN.getOrDefault(top, Set.of()).contains(target)) out.add(pkg + " → " + target);
            if (target.equals("server") && !top.equals("server") && !top.equals("cli")) out.add(pkg + " → server");
        }
        boolean concreteAllowed = CONCRETE_BACKEND_USERS.stream().anyMatch(u -> pkg.equals(u) || pkg.startsWith(u + "."));
        if (!concreteAllowed && CONCRETE_BACKEND.matcher(code).find()) out.add(pkg + " → backend.cpu");
        String[] parts = pkg.split("\\.");
        if (parts.length >= 2 && parts[0].equals("server") && APIS.contains(parts[1])) {
            Matcher api = SERVER_REFERENCE.matcher(code);
            while (api.find()) {
                if (APIS.contains(api.group(1)) && !api.group(1).equals(parts[1])) out.add(pkg + " → server." + api.group(1));
            }
        }
        return List.copyOf(out);
    }

    @Test
    void noSourceFileReferencesAPackageAgainstTheLayering() throws IOException {
        List<String> found = new ArrayList<>();
        int scanned = 0;
        for (Path root : List.of(Path.of("src/main/java"), Path.of("../runner-metal/src/main/java"))) {
            if (!Files.isDirectory(root)) continue;
            try (Stream<Path> files = Files.walk(root)) {
                for (Path f : files.filter(x -> x.toString().endsWith(".java")).toList()) {
                    scanned++;
                    for (String v : violations(Files.readString(f))) found.add(root.relativize(f) + ": " + v);
                }
            }
        }
        assertTrue(scanned > 200, "only " + scanned + " source files found from " + Path.of("").toAbsolutePath());
        assertTrue(found.isEmpty(), "arrows against the layering:\n" + String.join("\n", found));
    }

    @Test
    void theCheckSeesQualifiedNamesAndIgnoresCommentsAndStrings() {
        assertEquals(List.of("format.hf → backend"), violations("package dev.forkpoint.format.hf;\nclass X { float[] f = dev.forkpoint.backend.Rope.x(); }"));
        assertEquals(List.of("model → server"), violations("package dev.forkpoint.model;\nimport dev.forkpoint.server.ForkpointServer;\n"));
        assertEquals(List.of(), violations("package dev.forkpoint.chat;\n/** {@link dev.forkpoint.engine.X} */ class Y { String s = \"dev.forkpoint.server\"; }"));
        assertEquals(List.of(), violations("package dev.forkpoint.cli;\nimport dev.forkpoint.server.ForkpointServer;\n"));
        assertEquals(List.of("server.runner → server.ollama"),
                violations("package dev.forkpoint.server.runner;\nclass R { Object o = dev.forkpoint.server.ollama.OllamaApi.format(null); }"));
        assertEquals(List.of(), violations("package dev.forkpoint.server.runner;\nimport dev.forkpoint.server.OllamaOptions;\n"));
        assertEquals(List.of("engine → backend.cpu"), violations("package dev.forkpoint.engine;\nclass L { Object k(Object b) { "
                + "return b instanceof dev.forkpoint.backend.cpu.CpuBackend c ? c.kernelsInUse() : null; } }"));
        assertEquals(List.of(), violations("package dev.forkpoint.backend.choice;\nimport dev.forkpoint.backend.cpu.CpuBackend;\n"));
    }
}
