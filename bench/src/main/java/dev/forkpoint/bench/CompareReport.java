package dev.forkpoint.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * The result of {@code bench compare}: for each thread count, each engine's prefill and decode rates (median and
 * range over the measured runs) and each measured engine's ratio of medians to llama.cpp's. An engine that could
 * not be measured on the file carries a status and the reason instead of numbers (never made-up values).
 */
record CompareReport(Machine machine, String command, String model, long modelBytes, int requestedPromptTokens,
                     int genTokens, int ctx, int batch, int warmups, int runs, List<ThreadsResult> results) {

    static final String BASELINE = "llama.cpp";
    static final String MEASURED = "measured";

    /** Where it ran: CPU model, logical CPUs, memory, OS, JVM. */
    record Machine(String cpu, int logicalCpus, long memoryKb, String os, String jvm) {}

    /**
     * One engine at one thread count. Summaries and resident figures are null/−1 unless status is "measured"; the note
     * says why an engine was not measured, or qualifies a measured one (null when there is nothing to say).
     */
    record EngineReport(String engine, String status, String note, long residentKbAfterLoad, long residentKbAfterRuns,
                        int promptTokens, int promptTokensWithoutBos, Summary prefillTokensPerSecond,
                        Summary decodeTokensPerSecond, List<EngineRun> runs) {

        static EngineReport measured(String engine, long residentKbAfterLoad, long residentKbAfterRuns, int promptTokensWithoutBos,
                                     List<EngineRun> runs) {
            return new EngineReport(engine, MEASURED, null, residentKbAfterLoad, residentKbAfterRuns, runs.getFirst().promptTokens(),
                    promptTokensWithoutBos, Summary.of(runs.stream().mapToDouble(EngineRun::prefillTokensPerSecond).toArray()),
                    Summary.of(runs.stream().mapToDouble(EngineRun::decodeTokensPerSecond).toArray()), List.copyOf(runs));
        }

        EngineReport withNote(String text) {
            return new EngineReport(engine, status, text, residentKbAfterLoad, residentKbAfterRuns, promptTokens, promptTokensWithoutBos,
                    prefillTokensPerSecond, decodeTokensPerSecond, runs);
        }

        static EngineReport notMeasured(String engine, String status, String note) {
            return new EngineReport(engine, status, note, -1, -1, -1, -1, null, null, List.of());
        }

        boolean isMeasured() { return MEASURED.equals(status); }
    }

    /** An engine's median over llama.cpp's median at the same thread count. */
    record Ratio(String engine, String baseline, double prefill, double decode) {}

    /** All engines at one thread count. */
    record ThreadsResult(int threads, List<EngineReport> engines, List<Ratio> ratios, boolean promptTokensEqual) {

        /**
         * Ratios of every measured engine to llama.cpp (when it was measured), and whether all measured engines'
         * prompt token counts agree (with llama.cpp's, or else with the first measured engine's).
         */
        static ThreadsResult of(int threads, List<EngineReport> engines) {
            EngineReport base = engines.stream().filter(e -> e.engine().equals(BASELINE) && e.isMeasured()).findFirst().orElse(null);
            EngineReport reference = base != null ? base : engines.stream().filter(EngineReport::isMeasured).findFirst().orElse(null);
            List<Ratio> ratios = new ArrayList<>();
            boolean equal = true;
            for (EngineReport e : engines) {
                if (e == reference || !e.isMeasured()) continue;
                if (base != null) {
                    ratios.add(new Ratio(e.engine(), BASELINE,
                            e.prefillTokensPerSecond().median() / base.prefillTokensPerSecond().median(),
                            e.decodeTokensPerSecond().median() / base.decodeTokensPerSecond().median()));
                }
                equal &= e.promptTokensWithoutBos() == reference.promptTokensWithoutBos()
                        && (reference.promptTokens() < 0 || e.promptTokens() < 0 || e.promptTokens() == reference.promptTokens());
            }
            return new ThreadsResult(threads, List.copyOf(engines), List.copyOf(ratios), equal);
        }
    }
}
