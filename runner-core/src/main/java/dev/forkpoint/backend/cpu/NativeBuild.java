package dev.forkpoint.backend.cpu;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Builds the native kernels' library from their C sources ({@code native/cpu/*.c}, on the class path)
 * with the system C compiler, once per source and compiler (each C file compiled to an object by a compiler process of
 * its own, all at once, then linked): the library is kept in Forkpoint's cache under a name
 * that is the hash of both ({@code native/<hash>/libforkpoint-kernels.so}). Each build writes its sources and output in
 * a folder of its own ({@code build-*}, removed afterwards; one a killed JVM left is removed by a later build) and
 * renames the library into place, so that concurrent JVMs and killed builds never leave a half-written library under
 * the real name.
 * The compiler is {@code $FORKPOINT_CC}, else {@code $CC}, else {@code cc}, {@code gcc}, {@code clang} on the
 * {@code PATH}; none found is an outcome, not an error: the caller runs the Java kernels and says why.
 */
final class NativeBuild {
    /** The C files of the library (sources and the header they share); the .c ones are compiled, into one library. */
    static final List<String> SOURCES = List.of("fp_kernels.h", "forkpoint_kernels.c", "forkpoint_kquants.c",
            "fp_attention_body.h", "forkpoint_attention.c", "forkpoint_affine.c",
            "fp_float_body.h", "forkpoint_float.c");
    private static final List<String> COMPILERS = List.of("cc", "gcc", "clang");

    /** What a build gave: the library, or why there is none (each compiler looked for, or the compiler's output). */
    sealed interface Outcome {
        record Built(Path library, String compiler) implements Outcome {}
        record Unavailable(String reason) implements Outcome {}
    }

    private NativeBuild() {}

    /** The library for this source and compiler in {@code cache}, built first when it is not there. */
    static Outcome library(Map<String, String> env, Path cache) {
        Optional<String> compiler = compiler(env);
        if (compiler.isEmpty()) {
            return new Outcome.Unavailable("no C compiler found ($FORKPOINT_CC, $CC, then " + String.join(", ", COMPILERS)
                    + " on the PATH)");
        }
        Map<String, String> sources = new java.util.LinkedHashMap<>();
        for (String name : SOURCES) {
            try (InputStream in = NativeBuild.class.getResourceAsStream("native/" + name)) {
                if (in == null) return new Outcome.Unavailable("the kernels' C source " + name + " is not in this build");
                sources.put(name, new String(in.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                return new Outcome.Unavailable("cannot read the kernels' C source " + name + ": " + e.getMessage());
            }
        }
        String version = run(List.of(compiler.get(), "--version"), 20).orElse("?");
        List<String> flags = flags();
        Path dir = cache.resolve("native").resolve(hash(sources + "\n" + compiler.get() + "\n" + version + "\n" + flags + "\n" + LINK));
        Path library = dir.resolve(libraryName());
        if (Files.isRegularFile(library)) return new Outcome.Built(library, compiler.get());
        Path work = null;
        try {
            Files.createDirectories(dir);
            removeAbandonedBuilds(dir);
            // each build writes its sources and its output in a folder of its own, so that concurrent JVMs never
            // compile a half-written source of another, and a killed build leaves only that folder behind
            work = Files.createTempDirectory(dir, BUILD_PREFIX);
            List<Path> files = new ArrayList<>();
            for (var e : sources.entrySet()) {
                Path c = work.resolve(e.getKey());
                Files.writeString(c, e.getValue());
                if (e.getKey().endsWith(".c")) files.add(c);
            }
            Path output = work.resolve(libraryName());
            StringBuilder log = new StringBuilder();
            if (!compileAll(compiler.get(), flags, files, log) || !succeeds(link(compiler.get(), files, output), log)) {
                return new Outcome.Unavailable(compiler.get() + " could not build the kernels: " + log.toString().strip());
            }
            try {
                Files.move(output, library, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(output, library, StandardCopyOption.REPLACE_EXISTING);
            }
            return new Outcome.Built(library, compiler.get());
        } catch (IOException e) {
            return new Outcome.Unavailable("cannot build the kernels in " + dir + ": " + e.getMessage());
        } finally {
            if (work != null) deleteTree(work);
        }
    }

    private static final String BUILD_PREFIX = "build-";
    /** A build folder older than this was left by a killed JVM (a build takes seconds). */
    private static final java.time.Duration ABANDONED = java.time.Duration.ofMinutes(10);

    private static void removeAbandonedBuilds(Path dir) {
        long before = System.currentTimeMillis() - ABANDONED.toMillis();
        try (var entries = Files.list(dir)) {
            for (Path p : entries.toList()) {
                if (p.getFileName().toString().startsWith(BUILD_PREFIX) && Files.getLastModifiedTime(p).toMillis() < before) deleteTree(p);
            }
        } catch (IOException ignored) {
            // a folder we cannot list or remove costs disk, not correctness: the next build uses a fresh one
        }
    }

    private static void deleteTree(Path root) {
        try (var walk = Files.walk(root)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // see removeAbandonedBuilds
        }
    }

    /** The first compiler that runs: $FORKPOINT_CC, $CC, then cc, gcc, clang on the PATH. */
    static Optional<String> compiler(Map<String, String> env) {
        List<String> candidates = new ArrayList<>();
        for (String variable : List.of("FORKPOINT_CC", "CC")) {
            String v = env.get(variable);
            if (v != null && !v.isBlank()) candidates.add(v.strip());
        }
        String path = env.getOrDefault("PATH", "");
        for (String name : COMPILERS) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                if (dir.isEmpty()) continue;
                Path p = Path.of(dir, name);
                if (Files.isExecutable(p)) {
                    candidates.add(p.toString());
                    break;
                }
            }
        }
        for (String c : candidates) {
            if (Path.of(c).isAbsolute() ? Files.isExecutable(Path.of(c)) : run(List.of(c, "--version"), 20).isPresent()) {
                return Optional.of(c);
            }
        }
        return Optional.empty();
    }

    /** The flags each source is compiled with (the library is linked from the objects with {@link #link}). */
    private static List<String> flags() {
        return List.of("-O3", "-std=c11", "-fPIC", "-fvisibility=hidden");
    }

    /**
     * Compiles every source to an object beside it, all at once (the sources are independent; on a machine with
     * several cores the first start waits for the largest file, not for their sum). Each compiler's output goes to a
     * file of its own, read into {@code log} when it fails.
     */
    private static boolean compileAll(String compiler, List<String> flags, List<Path> sources, StringBuilder log) {
        List<Process> running = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        boolean ok = true;
        try {
            for (Path c : sources) {
                List<String> command = new ArrayList<>(List.of(compiler));
                command.addAll(flags);
                command.addAll(List.of("-c", "-o", object(c).toString(), c.toString()));
                Path out = c.resolveSibling(c.getFileName() + ".log");
                logs.add(out);
                running.add(new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start());
            }
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(COMPILE_SECONDS);
            for (int i = 0; i < running.size(); i++) {
                Process p = running.get(i);
                if (!p.waitFor(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    log.append(sources.get(i).getFileName()).append(": timed out after ").append(COMPILE_SECONDS).append(" s\n");
                    ok = false;
                } else if (p.exitValue() != 0) {
                    log.append(Files.readString(logs.get(i)));
                    ok = false;
                }
            }
            return ok;
        } catch (IOException e) {
            log.append(e.getMessage());
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            log.append("interrupted");
            return false;
        } finally {
            for (Process p : running) if (p.isAlive()) p.destroyForcibly();
        }
    }

    private static List<String> link(String compiler, List<Path> sources, Path output) {
        List<String> command = new ArrayList<>(List.of(compiler, LINK, "-o", output.toString()));
        for (Path c : sources) command.add(object(c).toString());
        return command;
    }

    private static Path object(Path source) {
        String name = source.getFileName().toString();
        return source.resolveSibling(name.substring(0, name.length() - 2) + ".o");
    }

    /** How long the compilers of one build may take together. */
    private static final int COMPILE_SECONDS = 300;
    /** The link step's kind (part of the cache key with the compile flags). */
    private static final String LINK = mac() ? "-dynamiclib" : "-shared";

    static String libraryName() {
        return mac() ? "libforkpoint-kernels.dylib" : "libforkpoint-kernels.so";
    }

    private static boolean mac() {
        return System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac");
    }

    private static boolean succeeds(List<String> command, StringBuilder output) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            output.append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                output.append("(timed out after 120 s)");
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            output.append(e.getMessage());
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            output.append("interrupted");
            return false;
        }
    }

    /** The first line a command prints when it exits 0, else empty. */
    private static Optional<String> run(List<String> command, int seconds) {
        StringBuilder out = new StringBuilder();
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            out.append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return Optional.empty();
            }
            return p.exitValue() == 0 ? Optional.of(out.toString().lines().findFirst().orElse("")) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    private static String hash(String text) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(d, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
