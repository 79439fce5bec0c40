package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.metal.MlxBackend;
import dev.forkpoint.metal.MlxTimings;
import dev.forkpoint.model.Architecture;
import dev.forkpoint.model.ModelConfig;
import dev.forkpoint.model.ModelFiles;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint bench decode-step}: the time of one decode step (one token, greedy) on the MLX backend against the
 * CPU backend, on the same file, driven through the backend interface as the engine drives it (begin, forward, the
 * last row's logits, commit; the whole step submitted with {@link Backend#runStep}). Each round prefills the same
 * seeded prompt into a fresh sequence on each backend and times every decode step after it; the backends alternate
 * (CPU first in even rounds, MLX first in odd ones) so that a busy machine slows both alike. Reports the median and
 * the range of the round medians per backend (the first round is a warm-up, left out when there are more), the MLX
 * thread's hops, graph-building time and evaluation time per step ({@link MlxTimings}), and whether both backends
 * chose the same greedy ids. The MLX backend is made directly ({@code --mlx-lib}, {@code FORKPOINT_MLXC_LIB}, …):
 * this jar registers no backend provider, so the other commands keep running on the CPU.
 */
@Command(name = "decode-step", mixinStandardHelpOptions = true,
        description = "Median decode-step time on the MLX backend against the CPU backend, with the MLX graph-building time per step.")
final class DecodeStepCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "a GGUF file or model folder")
    Path model;

    @Option(names = "--steps", defaultValue = "100", description = "decode steps per round and backend (default: ${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--rounds", defaultValue = "4", description = "rounds; the first is a warm-up when there are more (default: ${DEFAULT-VALUE})")
    int rounds;

    @Option(names = "--prompt-tokens", defaultValue = "32", description = "prompt tokens prefilled before the timed steps (default: ${DEFAULT-VALUE})")
    int promptTokens;

    @Option(names = "--threads", defaultValue = "2", description = "CPU backend threads (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--mlx-lib", description = "the MLX-C library (a file or folder; default: FORKPOINT_MLXC_LIB, Homebrew, Ollama, the loader)")
    String mlxLib;

    @Option(names = "--kv-type", defaultValue = "F32", description = "KV element type: F32, F16, Q8_0 or Q4_0 (default: ${DEFAULT-VALUE})")
    KvElementType kvType;

    @Option(names = "--kernels", defaultValue = "java", description = "CPU kernels: java, native or auto (default: ${DEFAULT-VALUE})")
    String kernels;

    @Option(names = "--streams", split = ",",
            description = "CPU only, no MLX: decode passes of this many sequences each (a list, e.g. 1,4), compared in alternating rounds")
    int[] streams;

    @Option(names = "--shared-prefix-tokens", defaultValue = "0",
            description = "with --streams: a prefix prefilled once and shared (forked pages) by every stream before its own prompt (default: ${DEFAULT-VALUE})")
    int sharedPrefixTokens;

    /** One backend on the model: its architecture and a page pool. */
    private record Loaded(String name, ModelFiles files, Backend backend, Architecture arch, PagePool pool) implements AutoCloseable {
        public void close() {
            pool.close();
            files.close();
            backend.close();
        }
    }

    /** One round on one backend: each decode step's nanoseconds, the greedy ids, and the MLX thread's share (or null). */
    private record Round(long[] stepNanos, int[] ids, MlxTimings mlx) {}

    @Override
    public Integer call() throws Exception {
        if (steps < 1 || rounds < 1 || promptTokens < 1) throw new InvalidInputException("--steps, --rounds and --prompt-tokens must be ≥ 1");
        if (!Files.exists(model)) throw new InvalidInputException("--model " + model + " is not a file or folder");
        if (streams != null) return streams();
        try (Loaded cpu = load("cpu", new CpuBackend(threads, dev.forkpoint.backend.KernelChoice.parse(kernels))); Loaded mlx = load("mlx", MlxBackend.open(Optional.ofNullable(mlxLib)))) {
            ModelConfig c = cpu.arch().config();
            System.out.printf(Locale.ROOT, "model: %s (%s, dim %d, %d layers, %d/%d heads, vocabulary %d), prompt %d tokens, %d decode steps × %d rounds, "
                            + "KV %s, CPU threads %d%n", model.getFileName(), c.architecture(), c.dim(), c.layers(), c.heads(), c.kvHeads(),
                    c.vocabSize(), promptTokens, steps, rounds, kvType, threads);
            int[] prompt = prompt(c.vocabSize());
            List<Round> cpuRounds = new ArrayList<>(), mlxRounds = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                if (r % 2 == 0) {
                    cpuRounds.add(round(cpu, prompt));
                    mlxRounds.add(round(mlx, prompt));
                } else {
                    mlxRounds.add(round(mlx, prompt));
                    cpuRounds.add(round(cpu, prompt));
                }
                System.out.printf(Locale.ROOT, "round %d: cpu %.3f ms, mlx %.3f ms (median step)%n", r,
                        median(cpuRounds.getLast().stepNanos()) / 1e6, median(mlxRounds.getLast().stepNanos()) / 1e6);
            }
            int from = rounds > 1 ? 1 : 0;
            report("cpu", cpuRounds.subList(from, rounds));
            report("mlx", mlxRounds.subList(from, rounds));
            MlxTimings t = new MlxTimings(0, 0, 0);
            for (Round r : mlxRounds.subList(from, rounds)) {
                t = new MlxTimings(t.hops() + r.mlx().hops(), t.threadNanos() + r.mlx().threadNanos(), t.evalNanos() + r.mlx().evalNanos());
            }
            double n = (double) steps * (rounds - from);
            System.out.printf(Locale.ROOT, "mlx thread per step: %.1f hops, %.1f µs building the graph (and host work), %.1f µs in mlx_eval%n",
                    t.hops() / n, t.buildNanos() / n / 1e3, t.evalNanos() / n / 1e3);
            boolean same = Arrays.equals(cpuRounds.getLast().ids(), mlxRounds.getLast().ids());
            System.out.println("greedy ids: " + (same ? "equal on both backends" : "differ between the backends"));
            return 0;
        }
    }

    /**
     * {@code --streams}: on the CPU backend alone, for each stream count s a round forks s sequences from one prefilled
     * shared prefix, prefills each with its own seeded prompt, then times {@code --steps} decode passes of s rows
     * (one token per sequence, greedy, each row attending to its own sequence). The stream counts alternate in order
     * and reversed order between rounds; reports the median pass per count and its ratio to the first count's.
     */
    private Integer streams() throws java.io.IOException {
        if (Arrays.stream(streams).anyMatch(n -> n < 1) || sharedPrefixTokens < 0) {
            throw new InvalidInputException("--streams must be ≥ 1 each, --shared-prefix-tokens ≥ 0");
        }
        int most = Arrays.stream(streams).max().orElseThrow();
        int saved = promptTokens;
        try (Loaded cpu = load("cpu", new CpuBackend(threads, dev.forkpoint.backend.KernelChoice.parse(kernels)), sharedPrefixTokens + promptTokens + steps + 16, most + 1)) {
            ModelConfig c = cpu.arch().config();
            System.out.printf(Locale.ROOT, "model: %s (%s, dim %d, %d layers, %d/%d heads), shared prefix %d + %d own prompt tokens per stream, "
                            + "%d decode passes × %d rounds, KV %s, CPU threads %d, kernels %s%n", model.getFileName(), c.architecture(), c.dim(), c.layers(),
                    c.heads(), c.kvHeads(), sharedPrefixTokens, promptTokens, steps, rounds, kvType, threads, ((CpuBackend) cpu.backend()).kernelsInUse());
            promptTokens = sharedPrefixTokens;
            int[] prefix = sharedPrefixTokens == 0 ? new int[0] : prompt(c.vocabSize());
            promptTokens = saved;
            try (SequenceKv base = cpu.pool().newSequence()) {
                KvStore baseKv = cpu.backend().newKvStore(base);
                for (int from = 0; from < prefix.length; from += 512) {
                    step(cpu, baseKv, Arrays.copyOfRange(prefix, from, Math.min(prefix.length, from + 512)));
                }
                System.out.println("shared prefix prefilled");
                List<List<long[]>> measured = new ArrayList<>();
                for (int ignored : streams) measured.add(new ArrayList<>());
                for (int r = 0; r < rounds; r++) {
                    StringBuilder line = new StringBuilder("round " + r + ":");
                    for (int k = 0; k < streams.length; k++) {
                        int i = r % 2 == 0 ? k : streams.length - 1 - k;
                        long[] nanos = streamRound(cpu, base, streams[i], c.vocabSize(), r);
                        measured.get(i).add(nanos);
                        line.append(String.format(Locale.ROOT, " %d streams %.3f ms", streams[i], median(nanos) / 1e6));
                    }
                    System.out.println(line.append(" (median pass)"));
                }
                int from = rounds > 1 ? 1 : 0;
                double first = 0;
                for (int i = 0; i < streams.length; i++) {
                    long[] all = measured.get(i).subList(from, rounds).stream().flatMapToLong(Arrays::stream).toArray();
                    double m = median(all);
                    if (i == 0) first = m;
                    System.out.printf(Locale.ROOT, "%d streams: median decode pass %.3f ms (%.2f × the %d-stream pass; %.1f tokens/s over all streams)%n",
                            streams[i], m / 1e6, m / first, streams[0], streams[i] * 1e9 / m);
                }
            }
            return 0;
        }
    }

    /** One round of {@code count} streams forked from {@code base}: each stream's prompt prefilled, then the timed passes. */
    private long[] streamRound(Loaded m, SequenceKv base, int count, int vocab, int round) {
        List<SequenceKv> sequences = new ArrayList<>();
        try {
            KvStore[] kvs = new KvStore[count];
            int[] next = new int[count];
            for (int s = 0; s < count; s++) {
                SequenceKv forked = base.fork();
                sequences.add(forked);
                kvs[s] = m.backend().newKvStore(forked);
                Random random = new Random(1000L * round + s);
                int[] own = new int[promptTokens];
                for (int i = 0; i < own.length; i++) own[i] = 3 + random.nextInt(Math.min(vocab, 256) - 3);
                next[s] = argmax(step(m, kvs[s], own));
            }
            long[] nanos = new long[steps];
            for (int i = 0; i < steps; i++) {
                long started = System.nanoTime();
                float[][] logits = stepAll(m, kvs, next);
                nanos[i] = System.nanoTime() - started;
                for (int s = 0; s < count; s++) next[s] = argmax(logits[s]);
            }
            return nanos;
        } finally {
            for (SequenceKv s : sequences) s.close();
        }
    }

    /** One decode pass over one token per sequence, as the scheduler takes it (all begun, one forward, all committed). */
    private static float[][] stepAll(Loaded m, KvStore[] kvs, int[] tokens) {
        return m.backend().runStep(() -> {
            Ops ops = m.backend().ops();
            List<Segment> segments = new ArrayList<>();
            int[] last = new int[kvs.length];
            for (int s = 0; s < kvs.length; s++) {
                segments.add(new Segment(new int[] {tokens[s]}, kvs[s].length(), kvs[s]));
                last[s] = s;
            }
            for (KvStore kv : kvs) kv.begin(1);
            try {
                Activation hidden = m.arch().forward(ops, segments);
                float[][] logits = ops.logits(ops.rows(hidden, last), m.arch().output());
                for (KvStore kv : kvs) kv.prepareCommit();
                for (KvStore kv : kvs) kv.commit();
                return logits;
            } catch (RuntimeException | Error e) {
                for (KvStore kv : kvs) if (kv.pending() > 0) kv.rollback();
                throw e;
            }
        });
    }

    private Loaded load(String name, Backend backend) throws java.io.IOException {
        return load(name, backend, promptTokens + steps + 16, 2);
    }

    private Loaded load(String name, Backend backend, int positions, int sequences) throws java.io.IOException {
        ModelFiles files = null;
        try {
            files = ModelFiles.open(model);
            Architecture arch = files.load(backend, n -> {});
            ModelConfig c = arch.config();
            KvLayout layout = KvLayout.of(c.kvLayers(), c.kvDim(), kvType);
            return new Loaded(name, files, backend, arch, new PagePool(layout, layout.budgetFor(positions, sequences)));
        } catch (java.io.IOException | RuntimeException | Error e) {
            if (files != null) files.close();
            backend.close();
            throw e;
        }
    }

    /** A seeded prompt of ids below min(vocabulary, 256): byte-level and SentencePiece vocabularies alike hold no control token there past 3. */
    private int[] prompt(int vocab) {
        Random random = new Random(42);
        int[] ids = new int[promptTokens];
        int bound = Math.min(vocab, 256);
        for (int i = 0; i < ids.length; i++) ids[i] = 3 + random.nextInt(bound - 3);
        return ids;
    }

    private Round round(Loaded m, int[] prompt) {
        try (SequenceKv sequence = m.pool().newSequence()) {
            KvStore kv = m.backend().newKvStore(sequence);
            float[] logits = step(m, kv, prompt);
            long[] nanos = new long[steps];
            int[] ids = new int[steps];
            MlxTimings before = m.backend() instanceof MlxBackend b ? b.timings() : null;
            for (int i = 0; i < steps; i++) {
                ids[i] = argmax(logits);
                long started = System.nanoTime();
                logits = step(m, kv, new int[] {ids[i]});
                nanos[i] = System.nanoTime() - started;
            }
            MlxTimings spent = m.backend() instanceof MlxBackend b ? b.timings().minus(before).minus(new MlxTimings(1, 0, 0)) : null;
            return new Round(nanos, ids, spent);
        }
    }

    /** One step as the engine takes it: begin, forward, the last row's logits, commit (rolled back when anything throws). */
    private static float[] step(Loaded m, KvStore kv, int[] chunk) {
        return m.backend().runStep(() -> {
            Ops ops = m.backend().ops();
            Segment segment = new Segment(chunk, kv.length(), kv);
            kv.begin(chunk.length);
            try {
                Activation hidden = m.arch().forward(ops, List.of(segment));
                float[] logits = ops.logits(ops.rows(hidden, new int[] {chunk.length - 1}), m.arch().output())[0];
                kv.prepareCommit();
                kv.commit();
                return logits;
            } catch (RuntimeException | Error e) {
                kv.rollback();
                throw e;
            }
        });
    }

    private void report(String name, List<Round> measured) {
        long[] all = measured.stream().flatMapToLong(r -> Arrays.stream(r.stepNanos())).toArray();
        double lo = Double.MAX_VALUE, hi = 0;
        for (Round r : measured) {
            double m = median(r.stepNanos());
            lo = Math.min(lo, m);
            hi = Math.max(hi, m);
        }
        System.out.printf(Locale.ROOT, "%s: median decode step %.3f ms (round medians %.3f–%.3f ms, %d steps)%n",
                name, median(all) / 1e6, lo / 1e6, hi / 1e6, all.length);
    }

    private static double median(long[] values) {
        long[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }
}
