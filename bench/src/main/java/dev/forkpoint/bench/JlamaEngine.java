package dev.forkpoint.bench;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Jlama (com.github.tjake:jlama-core) on a Hugging Face folder, run in a child JVM ({@link JlamaWorker}) with the
 * Vector API module and Jlama's pure-Java (Panama) operations; nothing is downloaded. Prompt and decode times are
 * taken around Jlama's own {@code generate} (timing source "callbacks", see {@link JlamaWorker}).
 */
final class JlamaEngine implements BenchEngine {
    private final ChildWorker worker;
    private final String name;
    private final long residentKb;
    private List<String> lastPieces = List.of();

    private JlamaEngine(String name, Process process, boolean echoLog) throws IOException {
        this.name = name;
        this.worker = new ChildWorker("jlama", process, echoLog, line -> {});
        this.residentKb = Long.parseLong(worker.await("loaded").trim());
    }

    /**
     * Starts the child on {@code folder} and waits until Jlama has loaded it; {@code weights} is
     * {@link JlamaWorker#AS_IS} or the Jlama type (Q4) to quantise to first. The child's heap is sized for Jlama's
     * load: it widens F16 weights to F32 on the Java heap (2 × the folder's bytes, plus 1 GiB for the rest).
     */
    static JlamaEngine start(String name, Path folder, int threads, String weights, boolean echoLog) throws IOException {
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        long heapMb = (2 * safetensorsBytes(folder) >> 20) + 1024;
        List<String> cmd = List.of(java, "-Xmx" + heapMb + "m", "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "--sun-misc-unsafe-memory-access=allow", "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0",
                // Jlama otherwise looks for its optional native library (jlama-native) first and logs that it is missing.
                "-Djlama.force_panama_tensor_operations=true", "-XX:+UseParallelGC",
                "-cp", System.getProperty("java.class.path"), JlamaWorker.class.getName(),
                folder.toAbsolutePath().toString(), Integer.toString(threads), weights);
        return new JlamaEngine(name, new ProcessBuilder(cmd).start(), echoLog);
    }

    private static long safetensorsBytes(Path folder) throws IOException {
        try (var files = Files.list(folder)) {
            long sum = 0;
            for (Path p : files.filter(p -> p.getFileName().toString().endsWith(".safetensors")).toList()) sum += Files.size(p);
            return sum;
        }
    }

    @Override
    public String name() { return name; }

    @Override
    public int countTokens(String text) throws IOException {
        worker.send("tokenize " + text);
        return Integer.parseInt(worker.await("tokens").trim());
    }

    @Override
    public long residentKbAfterLoad() { return residentKb; }

    @Override
    public long residentKbNow() throws IOException {
        worker.send("rss");
        return Long.parseLong(worker.await("rss").trim());
    }

    @Override
    public EngineRun run(String prompt, int maxTokens) throws IOException {
        worker.send("run " + maxTokens + " " + prompt);
        lastPieces = List.copyOf(new ObjectMapper().readValue(worker.await("pieces").trim(), new TypeReference<List<String>>() {}));
        String[] done = worker.await("done").trim().split(" ");
        return new EngineRun(Integer.parseInt(done[0]), Long.parseLong(done[2]), Integer.parseInt(done[1]), Long.parseLong(done[3]),
                Long.parseLong(done[4]), "callbacks");
    }

    /** The text of each token Jlama streamed in the last run (special tokens are not streamed). */
    List<String> lastPieces() { return lastPieces; }

    @Override
    public void close() {
        worker.close();
    }
}
