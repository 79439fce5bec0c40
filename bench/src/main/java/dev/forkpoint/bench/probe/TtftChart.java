package dev.forkpoint.bench.probe;

import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.renderer.category.BoxAndWhiskerRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.statistics.BoxAndWhiskerItem;
import org.jfree.data.statistics.DefaultBoxAndWhiskerCategoryDataset;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * The TTFT distribution of each concurrency level as a box plot (PNG, 900 × 560, rendered headless): the box spans
 * p25–p75, the line is p50, the whiskers reach the minimum and the maximum; each level's label
 * carries its p95 and p99. Quartiles use {@link Percentiles}'s method, so the chart agrees with the report.
 */
final class TtftChart {
    static {
        System.setProperty("java.awt.headless", "true");
    }

    private TtftChart() {}

    static void write(Path png, List<ProbeLevel> levels, String subject) throws IOException {
        var dataset = new DefaultBoxAndWhiskerCategoryDataset();
        for (ProbeLevel l : levels) {
            double[] sorted = l.samples().stream().mapToDouble(ProbeSample::ttftMillis).filter(v -> !Double.isNaN(v)).sorted().toArray();
            if (sorted.length == 0) continue;
            Percentiles p = l.ttft();
            String label = String.format(Locale.ROOT, "%d stream%s (p95 %.0f, p99 %.0f ms)", l.concurrency(), l.concurrency() == 1 ? "" : "s", p.p95(), p.p99());
            var item = new BoxAndWhiskerItem(p.mean(), p.p50(), Percentiles.ofSorted(sorted, 25), Percentiles.ofSorted(sorted, 75),
                    p.min(), p.max(), p.min(), p.max(), List.of());
            dataset.add(item, "TTFT", label);
        }
        JFreeChart chart = ChartFactory.createBoxAndWhiskerChart("Time to first token per concurrency level",
                "concurrency level", "TTFT (ms)", dataset, false);
        chart.addSubtitle(new TextTitle(subject));
        CategoryPlot plot = chart.getCategoryPlot();
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        var renderer = (BoxAndWhiskerRenderer) plot.getRenderer();
        renderer.setSeriesPaint(0, new Color(0x4C, 0x78, 0xA8));
        renderer.setMeanVisible(false);
        renderer.setMaximumBarWidth(0.25);
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 560);
    }
}
