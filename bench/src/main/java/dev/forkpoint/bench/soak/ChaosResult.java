package dev.forkpoint.bench.soak;

import java.util.List;

/**
 * The chaos step: a SIGKILL of the server while client streams are in flight, and the restart.
 *
 * @param inFlightAtKill    client requests in flight when the kill was sent
 * @param runningAtKill     the server's running sequences in its last /metrics before the kill (NaN if unknown)
 * @param restarted         the new server listened within the start timeout
 * @param restartMs         JVM start → listening, of the new server (-1 when it did not start)
 * @param restartError      why it did not start, or null
 * @param referenceFailures greedy references after the restart that were not OK with the same text
 * @param diskAfterKill     the sandbox (HOME, cache, temp folder, Ollama store) and the model file, before the first start → after the kill
 * @param diskAtEnd         the same, before the first start → after the final stop
 * @param modelUnchanged    the model file's size, time and SHA-256 are what they were before the first start
 */
record ChaosResult(int inFlightAtKill, double runningAtKill, boolean restarted, long restartMs, String restartError,
                   List<RequestRecord> referenceFailures, DiskSnapshot.Diff diskAfterKill, DiskSnapshot.Diff diskAtEnd, boolean modelUnchanged) {}
