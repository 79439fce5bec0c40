package dev.forkpoint.bench.soak;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How the soak starts {@code forkpoint serve} as a child process: the current JVM's {@code java} with the JVM flags
 * of the {@code ./forkpoint} launcher, then either {@code -jar runner-core/target/forkpoint.jar} or (when the soak
 * runs from classes, as in tests) this JVM's class path and the CLI's main class; then {@code serve} with
 * {@code serveArgs} and {@code --port}. {@code env} overrides the inherited environment (HOME, XDG_CACHE_HOME,
 * OLLAMA_MODELS … pointed into a sandbox under the output folder, so that whatever the server writes is found there).
 */
record ServerLaunch(String java, List<String> jvmFlags, List<String> program, List<String> serveArgs, Map<String, String> env,
                    String how) {
    /**
     * The launcher's {@code JVM_FLAGS} (./forkpoint; a test keeps the two equal). {@code -Dforkpoint.stderr.tty=false}
     * and {@code -Djava.io.tmpdir} (into the sandbox) are added by {@link #jvmFlags}' builder.
     */
    static final List<String> LAUNCHER_JVM_FLAGS = List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
            "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0", "-XX:+UseParallelGC", "-Xmn256m");

    static final String MAIN_CLASS = "dev.forkpoint.cli.Main";

    ServerLaunch {
        jvmFlags = List.copyOf(jvmFlags);
        program = List.copyOf(program);
        serveArgs = List.copyOf(serveArgs);
        env = Map.copyOf(env);
    }

    /** {@code -jar jar}, or this JVM's class path and the CLI's main class when {@code jar} is null. */
    static List<String> program(Path jar) {
        return jar != null ? List.of("-jar", jar.toString()) : List.of("-cp", System.getProperty("java.class.path"), MAIN_CLASS);
    }

    /** The launcher's flags plus the non-interactive stderr and the temporary folder. */
    static List<String> flags(Path tmpDir) {
        List<String> f = new ArrayList<>(LAUNCHER_JVM_FLAGS);
        f.add("-Dforkpoint.stderr.tty=false");
        f.add("-Djava.io.tmpdir=" + tmpDir);
        return f;
    }

    /** The current JVM's java binary. */
    static String currentJava() {
        return ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    List<String> command(int port) {
        List<String> c = new ArrayList<>();
        c.add(java);
        c.addAll(jvmFlags);
        c.addAll(program);
        c.add("serve");
        c.addAll(serveArgs);
        c.add("--port");
        c.add(Integer.toString(port));
        return c;
    }
}
