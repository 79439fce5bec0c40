package dev.forkpoint.bench.soak;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One {@code forkpoint serve} child process: started and waited for until it prints its address, then observed by
 * pid ({@code /proc}, {@code jcmd}), paused and resumed ({@code kill -STOP/-CONT}), killed with SIGKILL or stopped
 * with SIGTERM.
 */
final class ServerProcess {
    private static final Pattern LISTENING = Pattern.compile("listening on http://(\\S+):(\\d+)");
    static final long LOG_CAP_BYTES = 16L << 20;

    private final Process process;
    private final LogPump log;
    private final int port;
    private final Path logFile;
    private final long startMillis;

    private ServerProcess(Process process, LogPump log, int port, Path logFile, long startMillis) {
        this.process = process;
        this.log = log;
        this.port = port;
        this.logFile = logFile;
        this.startMillis = startMillis;
    }

    /**
     * Starts {@code launch} on {@code port} (0: any free one) and waits until it listens; an IOException says why not
     * (it exited, with its last log lines, or it did not listen within {@code timeout}; then it is killed).
     */
    static ServerProcess start(ServerLaunch launch, int port, Path logFile, Duration timeout) throws IOException {
        long t0 = System.nanoTime();
        ProcessBuilder pb = new ProcessBuilder(launch.command(port));
        pb.environment().putAll(launch.env());
        Process p = pb.start();
        CompletableFuture<Integer> ready = new CompletableFuture<>();
        LogPump log = new LogPump(p, logFile, LOG_CAP_BYTES, line -> {
            Matcher m = LISTENING.matcher(line);
            if (m.find()) ready.complete(Integer.parseInt(m.group(2)));
        });
        p.onExit().thenRun(() -> ready.completeExceptionally(new IOException("exited with status " + p.exitValue())));
        try {
            int bound = ready.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return new ServerProcess(p, log, bound, logFile, (System.nanoTime() - t0) / 1_000_000);
        } catch (TimeoutException e) {
            p.destroyForcibly();
            waitFor(p);
            log.close();
            throw new IOException("forkpoint serve did not listen within " + timeout.toSeconds() + " s; its log (" + logFile + ") ends:\n" + log.tail(15));
        } catch (ExecutionException e) {
            waitFor(p);
            log.close();
            throw new IOException("forkpoint serve " + e.getCause().getMessage() + " before listening; its log (" + logFile + ") ends:\n" + log.tail(15));
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting the server", e);
        }
    }

    private static void waitFor(Process p) {
        try {
            p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    long pid() { return process.pid(); }

    int port() { return port; }

    Path logFile() { return logFile; }

    LogPump log() { return log; }

    /** Milliseconds from the start of the JVM to its "listening on" line. */
    long startMillis() { return startMillis; }

    boolean alive() { return process.isAlive(); }

    /** The exit status, or null while it runs. */
    Integer exitStatus() { return process.isAlive() ? null : process.exitValue(); }

    /** SIGKILL, and waits until it is gone. */
    void kill9() {
        process.destroyForcibly();
        waitFor(process);
        log.close();
    }

    /** SIGTERM (the server's shutdown hook closes it); SIGKILL after {@code grace}. Returns the exit status. */
    int stop(Duration grace) {
        process.destroy();
        try {
            if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        log.close();
        return process.isAlive() ? -1 : process.exitValue();
    }

    /** {@code kill -STOP} (true) or {@code kill -CONT} (false); whether the signal was sent. */
    boolean signalPause(boolean stop) {
        try {
            Process k = new ProcessBuilder("kill", stop ? "-STOP" : "-CONT", Long.toString(process.pid())).redirectErrorStream(true).start();
            return k.waitFor(5, TimeUnit.SECONDS) && k.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
