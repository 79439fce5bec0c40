package dev.forkpoint;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.ResourceBundle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A failure repeated in a loop writes one line per window, with the count of the ones held back. */
class RepeatedLogTest {
    static final class Recorder implements System.Logger {
        final List<String> lines = new ArrayList<>();

        public String getName() { return "test"; }

        public boolean isLoggable(Level level) { return true; }

        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) { lines.add(msg); }

        public void log(Level level, ResourceBundle bundle, String format, Object... params) { lines.add(format); }
    }

    @Test
    void aMillionRepeatsWithinAWindowAreOneLineThenOneWithTheirCount() {
        Recorder rec = new Recorder();
        AtomicLong now = new AtomicLong(1);
        RepeatedLog log = new RepeatedLog(rec, TimeUnit.SECONDS.toNanos(60), now::get);
        for (int i = 0; i < 1_000_000; i++) log.log(System.Logger.Level.ERROR, "step", "scheduler step failed", null);
        assertEquals(List.of("scheduler step failed"), rec.lines);
        assertEquals(999_999, log.suppressed("step"));
        log.log(System.Logger.Level.ERROR, "other", "another error", null);
        assertEquals(2, rec.lines.size(), "keys are counted apart");
        now.addAndGet(TimeUnit.SECONDS.toNanos(61));
        assertTrue(log.log(System.Logger.Level.ERROR, "step", "scheduler step failed", null));
        assertEquals("scheduler step failed (999999 more like this in the last 60 s)", rec.lines.get(2));
        assertEquals(0, log.suppressed("step"));
    }
}
