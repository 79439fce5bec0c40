package dev.forkpoint.bench;

import dev.forkpoint.bench.jmh.WorkPerCall;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/** The work per call behind the rates {@code bench jmh} prints, against sizes computed by hand from the formats. */
class WorkPerCallTest {
    private static WorkPerCall work(String bench, Map<String, String> params) {
        return WorkPerCall.of(bench, params::get).orElseThrow();
    }

    @Test
    void matmulBytesAreTheMatrixInItsStoredTypeAndFlopsTwoPerWeightPerToken() {
        // Q8_0: blocks of 32 weights in 34 bytes; Q4_0: 18 bytes; Q4_K: 256 weights in 144 bytes; Q6_K: 210 bytes
        assertEquals(2048L * 8192 / 32 * 34, work("MatmulBench", Map.of("type", "Q8_0", "shape", "2048x8192", "tokens", "1")).bytes());
        assertEquals(2048L * 8192 / 32 * 18, work("MatmulBench", Map.of("type", "Q4_0", "shape", "8192x2048", "tokens", "1")).bytes());
        assertEquals(2048L * 8192 / 256 * 144, work("MatmulBench", Map.of("type", "Q4_K", "shape", "2048x8192", "tokens", "1")).bytes());
        assertEquals(2048L * 8192 / 256 * 210, work("MatmulBench", Map.of("type", "Q6_K", "shape", "2048x8192", "tokens", "1")).bytes());
        assertEquals(2048L * 8192 * 2, work("MatmulBench", Map.of("type", "BF16", "shape", "2048x8192", "tokens", "1")).bytes());
        WorkPerCall prefill = work("MatmulBench", Map.of("type", "F32", "shape", "2048x8192", "tokens", "512"));
        assertEquals(2048L * 8192 * 4, prefill.bytes());
        assertEquals(2L * 2048 * 8192 * 512, prefill.flops());
        // 17,825,792 bytes in 1 ms = 17.825792 GB/s
        assertEquals(17.825792, work("MatmulBench", Map.of("type", "Q8_0", "shape", "2048x8192", "tokens", "1")).gigabytesPerSecond(1e-3), 1e-9);
    }

    @Test
    void attentionReadsKeysAndValuesOfEveryPositionIncludingTheNewOne() {
        WorkPerCall w = work("AttentionBench", Map.of("context", "1024", "kv", "F16", "threads", "1"));
        assertEquals(2L * 1025 * 8 * 64 * 2, w.bytes());
        assertEquals(4L * 32 * 64 * 1025, w.flops());
        // four rows of forked sequences: the shared K/V once, the flops four times
        WorkPerCall four = work("AttentionBench", Map.of("context", "1024", "kv", "F16", "threads", "1", "streams", "4"));
        assertEquals(w.bytes(), four.bytes());
        assertEquals(4 * w.flops(), four.flops());
    }

    @Test
    void unknownBenchmarksAndTypesHaveNoRate() {
        assertTrue(WorkPerCall.of("PrefixCacheBench", k -> null).isEmpty());
        assertTrue(WorkPerCall.of("MatmulBench", Map.of("type", "NOPE", "shape", "2x2", "tokens", "1")::get).isEmpty());
    }
}
