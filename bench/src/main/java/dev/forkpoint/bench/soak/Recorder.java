package dev.forkpoint.bench.soak;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/** Every request of the run: kept for the summary and appended to {@code requests.csv} as it ends. Thread-safe. */
final class Recorder implements AutoCloseable {
    private final BufferedWriter csv;
    private final List<RequestRecord> records = new ArrayList<>();
    private final Map<Outcome, Long> counts = new EnumMap<>(Outcome.class);
    private long lastFlush = System.nanoTime();

    Recorder(Path file) throws IOException {
        csv = Files.newBufferedWriter(file);
        csv.write(RequestRecord.CSV_HEADER);
        csv.newLine();
    }

    synchronized void add(RequestRecord r) {
        records.add(r);
        counts.merge(r.outcome(), 1L, Long::sum);
        try {
            csv.write(r.csv());
            csv.newLine();
            if (System.nanoTime() - lastFlush > 2_000_000_000L) {
                csv.flush();
                lastFlush = System.nanoTime();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    synchronized List<RequestRecord> all() { return List.copyOf(records); }

    synchronized long count(Outcome o) { return counts.getOrDefault(o, 0L); }

    synchronized long total() { return records.size(); }

    @Override
    public synchronized void close() throws IOException {
        csv.close();
    }
}
