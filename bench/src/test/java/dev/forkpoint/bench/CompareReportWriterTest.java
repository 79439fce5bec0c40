package dev.forkpoint.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The report files on a hand-made result set whose medians, ranges and ratios are computed by hand below: rates are
 * tokens / seconds of runs with round numbers, e.g. 100 prompt tokens in 4 s = 25 tok/s.
 */
class CompareReportWriterTest {
    @TempDir
    Path dir;

    private static EngineRun run(double promptSeconds, double decodeSeconds) {
        // 100 prompt tokens, 50 generated
        return new EngineRun(100, (long) (promptSeconds * 1e9), 50, (long) (decodeSeconds * 1e9), 0, "engine");
    }

    /**
     * threads 1: forkpoint prefill 10, 20, 25 (median 20), decode 5, 10, 25 (median 10); llama.cpp prefill 50, 40, 100
     * (median 50), decode 10, 20, 25 (median 20) → ratios 0.4 and 0.5.
     * threads 2: forkpoint prefill 25, 40, 50 (median 40), decode 25, 25, 50 (25); llama.cpp prefill 100, 125, 62.5
     * (median 100), decode 50, 100, 80 (median 80) → ratios 0.4 and 0.3125.
     */
    static CompareReport sample() {
        var f1 = CompareReport.EngineReport.measured("forkpoint", 1_000_000, 2_000_000, 99, List.of(run(10, 10), run(5, 5), run(4, 2)));
        var l1 = CompareReport.EngineReport.measured("llama.cpp", 1_500_000, 1_600_000, 99, List.of(run(2, 5), run(2.5, 2.5), run(1, 2)));
        var f2 = CompareReport.EngineReport.measured("forkpoint", 1_000_000, 2_000_000, 99, List.of(run(4, 2), run(2.5, 2), run(2, 1)));
        var l2 = CompareReport.EngineReport.measured("llama.cpp", 1_500_000, 1_600_000, 99, List.of(run(1, 1), run(0.8, 0.5), run(1.6, 0.625)));
        var j = CompareReport.EngineReport.notMeasured("jlama", "not comparable on this format", "reads safetensors, not GGUF");
        var machine = new CompareReport.Machine("Test CPU 9000", 2, 24_000_000, "TestOS", "TestJVM 25");
        return new CompareReport(machine, "./forkpoint bench compare --model m.gguf --threads 1,2 --runs 3", "/tmp/m.gguf", 700_000_000L,
                100, 50, 256, 256, 1, 3,
                List.of(CompareReport.ThreadsResult.of(1, List.of(f1, l1, j)), CompareReport.ThreadsResult.of(2, List.of(f2, l2, j))));
    }

    @Test
    void jsonCsvAndMarkdownCarryTheHandComputedMediansRangesAndRatios() throws Exception {
        List<Path> files = CompareReportWriter.writeAll(sample(), dir);

        JsonNode json = new ObjectMapper().readTree(files.get(0).toFile());
        JsonNode t1 = json.get("results").get(0), t2 = json.get("results").get(1);
        assertEquals(1, t1.get("threads").asInt());
        JsonNode f1 = t1.get("engines").get(0);
        assertEquals("forkpoint", f1.get("engine").asText());
        assertEquals(20, f1.get("prefillTokensPerSecond").get("median").asDouble(), 1e-9);
        assertEquals(10, f1.get("prefillTokensPerSecond").get("min").asDouble(), 1e-9);
        assertEquals(25, f1.get("prefillTokensPerSecond").get("max").asDouble(), 1e-9);
        assertEquals(10, f1.get("decodeTokensPerSecond").get("median").asDouble(), 1e-9);
        assertEquals(50, t1.get("engines").get(1).get("prefillTokensPerSecond").get("median").asDouble(), 1e-9);
        assertEquals(0.4, t1.get("ratios").get(0).get("prefill").asDouble(), 1e-12);
        assertEquals(0.5, t1.get("ratios").get(0).get("decode").asDouble(), 1e-12);
        assertEquals(0.4, t2.get("ratios").get(0).get("prefill").asDouble(), 1e-12);
        assertEquals(0.3125, t2.get("ratios").get(0).get("decode").asDouble(), 1e-12);
        assertEquals(1, t1.get("ratios").size(), "no ratio for an engine that was not measured");
        assertEquals("not comparable on this format", t1.get("engines").get(2).get("status").asText());
        assertTrue(t1.get("engines").get(2).get("prefillTokensPerSecond").isNull());

        List<String> csv = Files.readAllLines(files.get(1));
        assertEquals("threads,engine,status,metric,median_tok_s,min_tok_s,max_tok_s,runs,ratio_to_llamacpp,resident_kb_after_load,resident_kb_after_runs,note",
                csv.getFirst());
        assertTrue(csv.contains("1,forkpoint,measured,prefill,20.000,10.000,25.000,3,0.4000,1000000,2000000,"), csv::toString);
        assertTrue(csv.contains("1,forkpoint,measured,decode,10.000,5.000,25.000,3,0.5000,1000000,2000000,"), csv::toString);
        assertTrue(csv.contains("1,llama.cpp,measured,prefill,50.000,40.000,100.000,3,,1500000,1600000,"), csv::toString);
        assertTrue(csv.contains("2,forkpoint,measured,decode,25.000,25.000,50.000,3,0.3125,1000000,2000000,"), csv::toString);
        assertTrue(csv.contains("2,llama.cpp,measured,decode,80.000,50.000,100.000,3,,1500000,1600000,"), csv::toString);
        assertTrue(csv.contains("1,jlama,not comparable on this format,,,,,,,,,\"reads safetensors, not GGUF\""), csv::toString);
        assertEquals(1 + 2 * (2 + 2 + 1), csv.size());

        String md = Files.readString(files.get(2));
        assertTrue(md.contains("Generated by `./forkpoint bench compare --model m.gguf --threads 1,2 --runs 3`"), md);
        assertTrue(md.contains("Test CPU 9000, 2 logical CPUs, 24.6 GB memory; TestOS; TestJVM 25"), md);
        assertTrue(md.contains("| 1 | forkpoint | 20.0 (10.0–25.0) | 10.0 (5.0–25.0) | 1.02 GB / 2.05 GB |"), md);
        assertTrue(md.contains("| 1 | llama.cpp | 50.0 (40.0–100.0) | 20.0 (10.0–25.0) |"), md);
        assertTrue(md.contains("| 1 | **forkpoint / llama.cpp** | **0.40** | **0.50** | |"), md);
        assertTrue(md.contains("| 2 | forkpoint | 40.0 (25.0–50.0) | 25.0 (25.0–50.0) |"), md);
        assertTrue(md.contains("| 2 | **forkpoint / llama.cpp** | **0.40** | **0.31** | |"), md);
        assertTrue(md.contains("* jlama: not comparable on this format — reads safetensors, not GGUF"), md);
    }

    @Test
    void pngIsAnImageOfTheChartSizeWithBarsDrawn() throws Exception {
        Path png = CompareReportWriter.writeAll(sample(), dir).get(3);
        BufferedImage image = ImageIO.read(png.toFile());
        assertNotNull(image, "not a readable image");
        assertEquals(CompareReportWriter.CHART_WIDTH, image.getWidth());
        assertEquals(CompareReportWriter.CHART_HEIGHT, image.getHeight());
        Set<Integer> colours = new HashSet<>();
        for (int y = 0; y < image.getHeight(); y += 4) for (int x = 0; x < image.getWidth(); x += 4) colours.add(image.getRGB(x, y));
        assertTrue(colours.size() > 4, "the chart has only " + colours.size() + " colours: nothing drawn");
    }

    @Test
    void readmeSectionIsReplacedBetweenTheMarkersOnly() throws Exception {
        Path readme = dir.resolve("README.md");
        Files.writeString(readme, "# T\n\nbefore\n" + CompareReportWriter.BEGIN + "\nold table\n" + CompareReportWriter.END + "\nafter\n");
        CompareReportWriter.updateReadme(readme, "new table\n");
        assertEquals("# T\n\nbefore\n" + CompareReportWriter.BEGIN + "\nnew table\n" + CompareReportWriter.END + "\nafter\n", Files.readString(readme));

        Path plain = dir.resolve("PLAIN.md");
        Files.writeString(plain, "# no markers\n");
        var e = assertThrows(InvalidInputException.class, () -> CompareReportWriter.updateReadme(plain, "x"));
        assertTrue(e.getMessage().contains(CompareReportWriter.BEGIN), e.getMessage());
        assertEquals("# no markers\n", Files.readString(plain));
    }
}
