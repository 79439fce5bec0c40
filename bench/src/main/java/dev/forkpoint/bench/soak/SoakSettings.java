package dev.forkpoint.bench.soak;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Everything a soak run needs, validated by {@link SoakCommand}.
 *
 * @param model           the model file the server loads
 * @param serverJar       the runnable jar, or null to run the server from this JVM's class path
 * @param threads         the server's --threads, or null for its default
 * @param apiKey          the key the server is started with, or null for none
 * @param maxBodyBytes    the server's --max-body-bytes, or null for its default
 * @param faults          the faults in the matrix and the mix
 * @param soak            how long the N streams run
 */
record SoakSettings(Path model, Path serverJar, int streams, Duration soak, long seed, Path out, int port, int parallel, Integer threads,
                    String apiKey, Long maxBodyBytes, List<Fault> faults, double faultRate, double disconnectRate, double referenceRate,
                    int maxTokens, int thinkMs, Duration deadline, Duration matrixDeadline, Duration stall, int storm, Duration pause,
                    Duration sampleEvery, Duration heapEvery, Duration heartbeatEvery, Duration versionDeadline, double warmupFraction,
                    double rssGrowthLimitMib, Duration killLoad, Duration afterRestart, int demoCrashes, boolean matrix, boolean recover,
                    boolean quarantine, Duration startTimeout, int cancelTokens) {
    SoakSettings {
        faults = List.copyOf(faults);
    }

    long effectiveMaxBodyBytes() {
        return maxBodyBytes != null ? maxBodyBytes : dev.forkpoint.server.ServerConfig.DEFAULT_MAX_BODY_BYTES;
    }
}
