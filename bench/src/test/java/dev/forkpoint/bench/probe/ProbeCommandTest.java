package dev.forkpoint.bench.probe;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.bench.BenchMain;
import dev.forkpoint.bench.BenchTestData;
import dev.forkpoint.server.ForkpointServer;
import dev.forkpoint.server.ServerConfig;
import dev.forkpoint.server.ollama.OllamaApi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The probe end to end against a live Forkpoint server (in-process, ephemeral port, stories260K): the files it writes
 * agree with each other (CSV rows = samples, the JSON's percentiles recomputed from the CSV), the triple holds what
 * the server and this machine say independently, the cold call is reported apart; and failures are one clear line.
 */
class ProbeCommandTest {
    private static Path modelFile;
    private static ForkpointServer server;

    @BeforeAll
    static void start() {
        modelFile = BenchTestData.shared("models/stories260K.gguf");
        server = ForkpointServer.start(ServerConfig.defaults().withPort(0).withThreads(1).withParallel(2)
                .withEnv(Map.of("HOME", "/nonexistent")).withModel(modelFile), List.of(new OllamaApi()));
    }

    @AfterAll
    static void stop() {
        if (server != null) server.close();
    }

    record Run(int exit, String out, String err) {}

    static Run probe(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        CommandLine cl = BenchMain.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        String[] all = new String[args.length + 1];
        all[0] = "probe";
        System.arraycopy(args, 0, all, 1, args.length);
        int exit = cl.execute(all);
        return new Run(exit, out.toString(), err.toString());
    }

    @Test
    void probesALiveServerAndWritesConsistentFiles(@TempDir Path dir) throws Exception {
        Run run = probe("--url", server.address(), "--model", "stories260K", "--samples", "3", "--concurrency", "1,2",
                "--shared-prefix-tokens", "30", "--prompt-tokens", "5", "--max-tokens", "6", "--out", dir.toString());
        assertEquals(0, run.exit(), () -> "stdout:\n" + run.out() + "\nstderr:\n" + run.err());

        // CSV: one row per steady-state sample (3 per level), the cold call not among them
        List<String> lines = Files.readAllLines(dir.resolve("probe.csv"));
        assertEquals(ProbeReport.CSV_HEADER, lines.getFirst());
        List<String> header = Arrays.asList(lines.getFirst().split(","));
        List<String[]> rows = new ArrayList<>();
        for (String l : lines.subList(1, lines.size())) rows.add(l.split(",", -1));
        assertEquals(6, rows.size());
        assertEquals(List.of("1", "1", "1", "2", "2", "2"), rows.stream().map(r -> r[0]).toList());
        assertEquals(List.of("0", "1", "2", "0", "1", "2"), rows.stream().map(r -> r[1]).toList());
        int promptEval = header.indexOf("prompt_eval_count"), promptCache = header.indexOf("prompt_cache_count"),
                promptTokens = header.indexOf("prompt_tokens"), evalCount = header.indexOf("eval_count");
        for (String[] r : rows) {
            // Forkpoint reports reuse: every turn reuses the shared prefix the cold call left in the cache
            assertTrue(Integer.parseInt(r[promptCache]) > 0, () -> "no reuse in " + String.join(",", r));
            assertEquals(Integer.parseInt(r[promptEval]) + Integer.parseInt(r[promptCache]), Integer.parseInt(r[promptTokens]));
            assertTrue(Integer.parseInt(r[evalCount]) >= 1);
        }

        JsonNode json = OllamaClient.JSON.readTree(dir.resolve("probe.json").toFile());
        // the triple: the server's version and the model file's sha256 as computed here, this machine's OS and cores
        assertEquals(server.version(), json.at("/triple/server_version").asText());
        assertEquals(sha256(modelFile), json.at("/triple/model_digest").asText());
        assertEquals(System.getProperty("os.name"), json.at("/triple/client/os_name").asText());
        assertEquals(System.getProperty("os.arch"), json.at("/triple/client/arch").asText());
        assertEquals(Runtime.getRuntime().availableProcessors(), json.at("/triple/client/cores").asInt());

        // the cold call, apart: nothing of its prompt was cached (the run tag is new) but the tokens before the first
        // word, which the calibration requests (opening with another word) share with it: here BOS alone (no template)
        JsonNode cold = json.get("cold");
        assertNotNull(cold);
        assertEquals(1, cold.get("prompt_cache_count").asInt());
        assertTrue(cold.get("prompt_eval_count").asInt() > 0);
        assertTrue(cold.get("ttft_ms").asDouble() > 0);

        // per level: the JSON's percentiles are those of the CSV's columns
        JsonNode levels = json.get("levels");
        assertEquals(2, levels.size());
        for (JsonNode level : levels) {
            int c = level.get("concurrency").asInt();
            List<String[]> mine = rows.stream().filter(r -> r[0].equals(Integer.toString(c))).toList();
            assertEquals(3, level.get("samples").asInt());
            assertPercentiles(column(mine, header.indexOf("ttft_ms")), level.get("ttft_ms"));
            assertPercentiles(column(mine, header.indexOf("stream_tok_s")), level.get("stream_tok_s"));
            double[] itl = mine.stream().flatMap(r -> Arrays.stream(r[header.indexOf("itl_ms")].split(" ")))
                    .filter(s -> !s.isEmpty()).mapToDouble(Double::parseDouble).toArray();
            assertPercentiles(itl, level.get("itl_ms"));
            long generated = mine.stream().mapToLong(r -> Long.parseLong(r[evalCount])).sum();
            assertEquals(generated, level.get("generated_tokens").asLong());
            assertEquals("prompt_cache_count", level.at("/cache/source").asText());
            assertEquals(mine.stream().mapToLong(r -> Long.parseLong(r[promptCache])).sum(), level.at("/cache/reused_tokens").asLong());
        }
        double ratio = levels.get(1).at("/ttft_ms/p95").asDouble() / levels.get(0).at("/ttft_ms/p95").asDouble();
        assertEquals(ratio, json.at("/ttft_p95_ratio/ratio").asDouble(), 1e-9);
        assertEquals(ratio > 2.8, json.at("/ttft_p95_ratio/warning").asBoolean());
        assertEquals(ratio > 2.8, run.out().contains("WARNING"));

        BufferedImage png = ImageIO.read(dir.resolve("ttft.png").toFile());
        assertNotNull(png, "ttft.png is not an image");
        assertEquals(900, png.getWidth());

        assertTrue(run.out().contains("cold call: TTFT"), run.out());
        // not a terminal: no bar, one line per level on stderr
        assertEquals(2, run.err().lines().filter(l -> l.startsWith("concurrency ")).count(), run.err());
        assertFalse(run.err().contains("\r"));
    }

    /**
     * The default sizes (a 2000-token prefix, 100-token turns, 64 generated) against stories260K, whose 512-token
     * vocabulary makes a word several tokens and whose context here is 2048: calibrated in the server's tokens and
     * shrunk with a note, the probe runs, and the prompts come out as planned (within 10 %) and within num_ctx.
     */
    @Test
    void defaultSizesAreCalibratedToTheServersTokensAndShrunkToItsContext(@TempDir Path dir) throws Exception {
        Run run = probe("--url", server.address(), "--model", "stories260K", "--samples", "2", "--concurrency", "1", "--out", dir.toString());
        assertEquals(0, run.exit(), () -> "stdout:\n" + run.out() + "\nstderr:\n" + run.err());
        assertTrue(run.out().contains("calibration: "), run.out());
        assertTrue(run.out().contains("num_ctx 2048 (/api/ps context_length)"), run.out());
        assertTrue(run.out().contains("note: --shared-prefix-tokens 2000 + --prompt-tokens 100 + --max-tokens 64 do not fit num_ctx 2048"), run.out());
        JsonNode json = OllamaClient.JSON.readTree(dir.resolve("probe.json").toFile());
        JsonNode s = json.get("settings"), c = s.get("calibration");
        double rate = c.get("tokens_per_word").asDouble(), overhead = c.get("overhead_tokens").asDouble();
        assertTrue(rate > 1.5, "stories260K's vocabulary takes several tokens per word, measured " + rate);
        int planned = (int) Math.round(overhead + rate * (s.get("shared_prefix_words").asInt() + s.get("prompt_words").asInt()));
        JsonNode cold = json.get("cold");
        int actual = cold.get("prompt_eval_count").asInt() + cold.get("prompt_cache_count").asInt();
        assertTrue(Math.abs(actual - planned) <= 0.1 * planned, "planned " + planned + " prompt tokens, the server counted " + actual);
        assertTrue(actual + 64 <= 2048, actual + " prompt tokens + 64 exceed num_ctx 2048");
        assertEquals(2000, s.get("shared_prefix_tokens_requested").asInt());
        assertTrue(s.get("shared_prefix_tokens").asInt() < 2000 && s.get("shared_prefix_tokens").asInt() > 1500, s.toString());
        assertEquals(100, s.get("prompt_tokens").asInt(), 5, s.toString());
    }

    @Test
    void sizesThatFitAreKeptAndAContextTooSmallIsOneLine(@TempDir Path dir) {
        Run small = probe("--url", server.address(), "--model", "stories260K", "--samples", "1", "--concurrency", "1",
                "--shared-prefix-tokens", "100", "--prompt-tokens", "20", "--max-tokens", "4", "--out", dir.toString());
        assertEquals(0, small.exit(), () -> small.out() + small.err());
        assertFalse(small.out().contains("note: "), small.out());
        Run tiny = probe("--url", server.address(), "--model", "stories260K", "--samples", "1", "--concurrency", "1",
                "--num-ctx", "64", "--max-tokens", "60", "--out", dir.resolve("tiny").toString());
        assertNotEquals(0, tiny.exit());
        String err = tiny.err().strip();
        assertEquals(1, err.lines().count(), err);
        assertTrue(err.contains("num_ctx 64 (--num-ctx) cannot hold a request"), err);
    }

    @Test
    void anUnknownModelIsOneLineNamingItAndWhatTheServerSaid() {
        Run run = probe("--url", server.address(), "--model", "no-such-model", "--samples", "1", "--concurrency", "1");
        assertNotEquals(0, run.exit());
        String err = run.err().strip();
        assertEquals(1, err.lines().count(), err);
        assertTrue(err.contains("no-such-model") && err.contains(server.address()) && err.contains("not found"), err);
        assertFalse(err.contains("Exception"), err);
    }

    @Test
    void anUnreachableUrlIsOneLineNamingIt() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();   // free now, nothing listens once closed
        }
        String url = "http://127.0.0.1:" + port;
        Run run = probe("--url", url, "--model", "m", "--samples", "1");
        assertNotEquals(0, run.exit());
        String err = run.err().strip();
        assertEquals(1, err.lines().count(), err);
        assertTrue(err.contains("cannot reach " + url), err);
        assertFalse(err.contains("\tat "), err);

        Run bad = probe("--url", "ftp://example", "--model", "m");
        assertEquals(2, bad.exit());
        assertTrue(bad.err().contains("--url"), bad.err());
    }

    private static double[] column(List<String[]> rows, int index) {
        return rows.stream().map(r -> r[index]).filter(s -> !s.isEmpty()).mapToDouble(Double::parseDouble).toArray();
    }

    /** The JSON's p50/p95/p99 against the percentiles of the CSV's (4-decimal) values. */
    private static void assertPercentiles(double[] csv, JsonNode json) {
        Percentiles p = Percentiles.of(csv);
        assertEquals(p.count(), json.get("count").asInt());
        if (p.count() == 0) return;
        assertEquals(p.p50(), json.get("p50").asDouble(), 1e-3, () -> "p50 of " + Arrays.toString(csv) + " vs " + json);
        assertEquals(p.p95(), json.get("p95").asDouble(), 1e-3, () -> "p95 of " + Arrays.toString(csv) + " vs " + json);
        assertEquals(p.p99(), json.get("p99").asDouble(), 1e-3, () -> "p99 of " + Arrays.toString(csv) + " vs " + json);
    }

    private static String sha256(Path file) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
    }
}
