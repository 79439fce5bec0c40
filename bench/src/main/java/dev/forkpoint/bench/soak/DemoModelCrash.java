package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.store.DefaultModel;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The one file {@code forkpoint serve} writes: the built-in demo model, generated into
 * {@code $XDG_CACHE_HOME/forkpoint} on the first request that names it when no {@code --model} is given and the
 * Ollama store is empty. Each round starts a server with a sandboxed cache, asks for the demo model, and kills the
 * server with SIGKILL: in odd rounds the moment inotify reports a temporary file of the write in the cache folder (so
 * the kill lands mid-write when the write is slower than the notification), in even rounds after a random 0–40 ms. After each kill the cache may hold no model
 * file or a complete one, byte-identical to what {@link DefaultModel#write} produces here, never a partial one under
 * the final name. Then a final start must serve greedy text from it, a kill and restart must serve the same text,
 * the file must not have been rewritten, and the temporaries the kills left must be gone once the model was served.
 */
final class DemoModelCrash {
    record Round(int n, boolean killedMidWrite, String finalFile, List<String> leftovers) {}

    record Result(List<Round> rounds, String referenceSha256, boolean firstServeOk, boolean sameTextAfterRestart, boolean notRewritten,
                  List<String> leftovers, List<String> problems) {
        boolean passed() { return problems.isEmpty(); }
    }

    private DemoModelCrash() {}

    static Result run(ServerLaunch base, Path sandbox, String apiKey, int rounds, Duration startTimeout, Duration deadline, Events events)
            throws IOException {
        Path home = Files.createDirectories(sandbox.resolve("home"));
        Path cache = Files.createDirectories(sandbox.resolve("cache"));
        Path store = Files.createDirectories(sandbox.resolve("ollama-empty"));
        Path tmp = Files.createDirectories(sandbox.resolve("tmp"));
        Map<String, String> env = new HashMap<>(base.env());
        env.put("HOME", home.toString());
        env.put("XDG_CACHE_HOME", cache.toString());
        env.put("OLLAMA_MODELS", store.toString());
        env.put("TMPDIR", tmp.toString());
        Path dir = DefaultModel.cacheDirectory(env);
        Path file = dir.resolve(DefaultModel.FILE_NAME);
        List<String> args = new ArrayList<>(List.of("--parallel", "2", "--threads", "1"));
        if (apiKey != null) args.addAll(List.of("--api-key", apiKey));
        List<String> flags = new ArrayList<>(base.jvmFlags());
        flags.replaceAll(f -> f.startsWith("-Djava.io.tmpdir=") ? "-Djava.io.tmpdir=" + tmp : f);
        ServerLaunch launch = new ServerLaunch(base.java(), flags, base.program(), args, env, base.how());

        Path refFile = Files.createTempFile(sandbox, "reference-", ".gguf");
        DefaultModel.write(refFile);
        String refSha = DiskSnapshot.sha256(refFile);
        Files.delete(refFile);

        List<String> problems = new ArrayList<>();
        List<Round> done = new ArrayList<>();
        int logs = 0;
        Files.createDirectories(dir);
        java.util.Random rng = new java.util.Random(rounds * 31L + 7);
        for (int i = 1; i <= rounds; i++) {
            ServerProcess p = ServerProcess.start(launch, 0, sandbox.resolve("demo-server-" + (++logs) + ".log"), startTimeout);
            Traffic t = new Traffic(new RawHttp("127.0.0.1", p.port()), "forkpoint-default", apiKey);
            boolean mid = false;
            java.util.Set<String> before = java.util.Set.copyOf(temporaries(dir, file));
            // odd rounds: SIGKILL as soon as inotify reports a temporary file of the write; even rounds: after a random 0-40 ms
            try (WatchService watch = dir.getFileSystem().newWatchService()) {
                dir.register(watch, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_MODIFY);
                Thread client = Thread.ofVirtual().start(() -> t.http().exchange(t.post(Api.OLLAMA_GENERATE, request(t)), ReadPlan.WHOLE, deadline));
                if (i % 2 == 1) {
                    long until = System.nanoTime() + deadline.toNanos();
                    while (!mid && client.isAlive() && System.nanoTime() < until) {
                        WatchKey key = watch.poll(20, java.util.concurrent.TimeUnit.MILLISECONDS);
                        if (key == null) continue;
                        for (WatchEvent<?> e : key.pollEvents()) {
                            if (e.context() instanceof Path name && writeOfTheModel(dir, name)) mid = true;
                        }
                        key.reset();
                    }
                } else {
                    Thread.sleep(rng.nextInt(41));
                }
                p.kill9();
                join(client);
                if (!mid) {
                    WatchKey key = watch.poll();
                    if (key != null) {
                        for (WatchEvent<?> e : key.pollEvents()) {
                            if (e.context() instanceof Path name && writeOfTheModel(dir, name) && Files.exists(dir.resolve(name))) mid = true;
                        }
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                p.kill9();
            }
            String state = verify(file, refSha);
            List<String> left = temporaries(dir, file);
            mid = mid || !before.containsAll(left);
            done.add(new Round(i, mid, state, left));
            events.say("demo-model round " + i + ": " + (mid ? "killed mid-write" : "killed before or after the write") + "; model file " + state
                    + (left.isEmpty() ? "" : "; files left in the cache " + left));
            if (state.startsWith("CORRUPT")) problems.add("round " + i + ": " + state);
        }

        // the first request on a fresh cache writes the demo model and builds the native kernels (seconds of compiler
        // time on a small machine), so a reply gets the server's start time, not the per-request deadline
        Duration firstReply = startTimeout.compareTo(deadline) > 0 ? startTimeout : deadline;
        ServerProcess p = ServerProcess.start(launch, 0, sandbox.resolve("demo-server-" + (++logs) + ".log"), startTimeout);
        String first = greedy(p, apiKey, firstReply);
        String state = verify(file, refSha);
        boolean firstOk = first != null;
        if (!firstOk) problems.add("after the crash rounds the demo model was not served (no OK greedy reply)");
        if (!state.equals("complete")) problems.add("after a served request the model file is " + state);
        long mtime = Files.exists(file) ? Files.getLastModifiedTime(file).toMillis() : -1;
        p.kill9();
        ServerProcess q = ServerProcess.start(launch, 0, sandbox.resolve("demo-server-" + (++logs) + ".log"), startTimeout);
        String second = greedy(q, apiKey, firstReply);
        q.stop(Duration.ofSeconds(10));
        boolean same = first != null && first.equals(second);
        if (!same) problems.add("greedy text of the demo model changed after kill -9 and restart: '" + first + "' then '" + second + "'");
        boolean notRewritten = Files.exists(file) && Files.getLastModifiedTime(file).toMillis() == mtime && verify(file, refSha).equals("complete");
        if (!notRewritten) problems.add("the intact model file was rewritten (or damaged) by the restart");
        List<String> left = temporaries(dir, file);
        if (!left.isEmpty() && done.stream().anyMatch(r -> !r.leftovers().isEmpty())) {
            problems.add("temporary files of killed writers are still in the cache after the model was served again: " + left);
        }
        return new Result(done, refSha, firstOk, same, notRewritten, left, problems);
    }

    private static ObjectNode request(Traffic t) {
        return Api.OLLAMA_GENERATE.body("forkpoint-default", "Hello there", 12, false, 0.0, 3);
    }

    private static String greedy(ServerProcess p, String apiKey, Duration deadline) {
        Traffic t = new Traffic(new RawHttp("127.0.0.1", p.port()), "forkpoint-default", apiKey);
        RawResponse r = t.http().exchange(t.post(Api.OLLAMA_GENERATE, request(t)), ReadPlan.WHOLE, deadline);
        Verdict v = Classifier.classify(Api.OLLAMA_GENERATE, false, null, r);
        return v.outcome() == Outcome.OK ? v.text() : null;
    }

    /** "absent", "complete" (byte-identical to the reference), or "CORRUPT: …". */
    static String verify(Path file, String refSha) throws IOException {
        if (!Files.exists(file)) return "absent";
        String sha = DiskSnapshot.sha256(file);
        return sha.equals(refSha) ? "complete" : "CORRUPT: " + Files.size(file) + " bytes, sha256 " + sha + " (expected " + refSha + ")";
    }

    /**
     * Whether a new entry {@code name} of the cache folder belongs to the model's write: a file other than the model
     * itself. Folders are the cache's other tenants (the compiled native kernels live in {@code native/}).
     */
    private static boolean writeOfTheModel(Path dir, Path name) {
        return !name.toString().equals(DefaultModel.FILE_NAME) && !Files.isDirectory(dir.resolve(name));
    }

    /**
     * Plain files in the cache folder other than the model file (temporaries of a write, and what kills left behind);
     * folders are the cache's other tenants, not part of the model's write.
     */
    static List<String> temporaries(Path dir, Path file) {
        if (!Files.isDirectory(dir)) return List.of();
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> !p.equals(file) && !Files.isDirectory(p)).map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private static void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
