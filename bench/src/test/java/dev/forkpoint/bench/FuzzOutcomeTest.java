package dev.forkpoint.bench;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** Executions and findings are read from libFuzzer's own lines. */
class FuzzOutcomeTest {
    @Test
    void executionsComeFromTheDoneLineElseTheLastStatusLine() {
        String finished = "#1024\tpulse  cov: 20 ft: 20 corp: 6/45b\n#1822266\tDONE   cov: 20 ft: 20 corp: 6/45b\nDone 1822266 runs in 21 second(s)\n";
        assertEquals(1_822_266, FuzzOutcome.executions(finished));
        String killed = "#2\tINITED cov: 5\n#4096\tpulse  cov: 9\n#5003\tNEW    cov: 10\n==12== ERROR: libFuzzer: timeout after 10 seconds\n";
        assertEquals(5003, FuzzOutcome.executions(killed));
        assertEquals(0, FuzzOutcome.executions("Error: could not find the target class\n"));
    }

    @Test
    void theFindingIsTheFirstJavaException() {
        String log = "INFO: x\n== Java Exception: java.lang.ArrayIndexOutOfBoundsException: Index 16 out of bounds for length 16\n"
                + "\tat dev.forkpoint.engine.Generation.accept(Generation.java:228)\n== Java Exception: java.lang.Error: second\n";
        assertEquals("java.lang.ArrayIndexOutOfBoundsException: Index 16 out of bounds for length 16", FuzzOutcome.firstException(log));
        assertNull(FuzzOutcome.firstException("Done 5 runs in 1 second(s)\n"));
    }

    @Test
    void aRunFailsWithAFindingOrWhenItDidNotComplete() {
        assertEquals(false, new FuzzOutcome("t", 10, 0, 0, 1, true, null).failed());
        assertEquals(true, new FuzzOutcome("t", 10, 0, 1, 1, true, null).failed());
        assertEquals(true, new FuzzOutcome("t", 10, 0, 0, 1, false, "exit status 1").failed());
    }
}
