package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.kvcache.PagePool;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Shares one loaded model between concurrent requests by continuous batching. {@link #submit} checks a request
 * synchronously (a bad field or a worst case beyond the KV budget throws {@link InvalidInputException} at once, a full
 * queue {@link QueueFullException}) and returns its {@link GenerationStream}; one scheduler thread runs steps:
 * <ol>
 * <li>Cancelled generations stop (their committed tokens go into the prefix cache, their pages are released, their
 * stream ends with {@link GenerationCancelledException}).</li>
 * <li>Waiting requests are admitted in order while fewer than {@code parallel} run and their worst case (prompt +
 * the most tokens they may generate, plus a page for copy-on-write) fits the pages that are free after reserving the
 * worst case of the running ones, evicting unlocked cached prefixes as needed: no admitted generation can run out of
 * KV pages.</li>
 * <li>The decode tokens of all decoding sequences are evaluated together (up to {@link #MAX_DECODE_ROWS} rows a
 * pass), each row attending to its own sequence's KV.</li>
 * <li>Prefill chunks of admitted sequences, in admission order, get what is left of the step's token budget
 * ({@code stepTokens} minus the decode rows), each up to its num_batch tokens. While streams decode, the budget is
 * also bounded by time ({@link SchedulerOptions#stepMillis()}): the chunks are sized from the measured cost of passes
 * ({@link StepCosts}) so that the step takes about that long, and the streams keep their inter-token latency while a
 * long prompt is prefilled.</li>
 * <li>When the backend computes mixed rows exactly as alone ({@link LoadedModel#invariantRows()}: the native CPU
 * kernels, or up to 16 rows on the Java ones), the decode rows and every chunk go in one pass: the weights are read
 * once for all of them, the decode rows ride along with the prefill almost free, and arrivals that collide share
 * their prefill passes. Otherwise the decode rows are one pass and each chunk its own.</li>
 * </ol>
 * Every sequence's part of a pass is a KV step (begin, commit, or rollback of all of them when the pass throws); a
 * failed batched pass is retried one sequence at a time, and only the sequences that fail alone end with
 * {@link GenerationEvent.Failed} (their own exception); the others continue and the scheduler keeps serving.
 * With the CPU backend's batch-invariant decode kernels, a greedy generation produces the same tokens however it is
 * batched. Steps hold the model's lock, so several schedulers on one model (the server's, and the one-slot ones
 * {@link LoadedModel#generate} makes) interleave their steps safely.
 *
 * <p>Invariants: a request that fails to start (whatever throws while it is admitted) leaves the queue with its own
 * error, so no request can stay at the head and make every step fail; an error that repeats is logged once a minute
 * with a count ({@link dev.forkpoint.RepeatedLog}), never once per step.
 */
public final class Scheduler implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Scheduler.class.getName());

    /** Decode rows per forward pass at most: the backend SPI's {@link dev.forkpoint.backend.Backend#MAX_DECODE_ROWS}. */
    static final int MAX_DECODE_ROWS = dev.forkpoint.backend.Backend.MAX_DECODE_ROWS;

    private final LoadedModel model;
    private final SchedulerOptions options;
    private final Object lock = new Object();
    private final ArrayDeque<Job> waiting = new ArrayDeque<>();   // guarded by lock
    private final ArrayDeque<java.util.concurrent.FutureTask<?>> tasks = new ArrayDeque<>();   // guarded by lock: work between steps
    private final List<Active> running = new ArrayList<>();      // the scheduler thread's only
    private final Thread worker;
    private final dev.forkpoint.RepeatedLog stepErrors = new dev.forkpoint.RepeatedLog(LOG, 60);
    private final StepCosts costs = new StepCosts();   // the scheduler thread's only
    private final long gatherNanos;
    private final AtomicLong steps = new AtomicLong(), evaluated = new AtomicLong(), reused = new AtomicLong(), generated = new AtomicLong();
    private volatile int runningCount, livePages, reservedPages;
    private volatile boolean closed;

    /**
     * How long an idle scheduler (nothing running) holds the first waiting request for more arrivals before its first
     * step, when more than one may run together: clients that send together (a burst, or streams that all finished in
     * one step and send their next requests) then share one prefill pass and decode in the same passes, instead of one
     * prefill starting alone and the others' prefills interleaving with its decoding ever after. Counted from the
     * request's submission, so a request that already waited is not held again; a few milliseconds against a prefill
     * of hundreds.
     */
    static final long GATHER_NANOS = 5_000_000;

    private record Job(GenerationRequest request, Generation.Plan plan, GenerationStream stream, long submittedNanos) {}

    private record Active(Job job, Generation generation) {
        GenerationStream stream() { return job.stream(); }
    }

    public Scheduler(LoadedModel model, SchedulerOptions options) {
        this(model, options, GATHER_NANOS);
    }

    /** A scheduler whose idle gathering of arrivals lasts {@code gatherNanos} (tests: a window no slow machine misses). */
    Scheduler(LoadedModel model, SchedulerOptions options, long gatherNanos) {
        this.model = model;
        this.options = options;
        this.gatherNanos = gatherNanos;
        this.worker = Thread.ofPlatform().name("forkpoint-scheduler").daemon().start(this::loop);
    }

    public LoadedModel model() { return model; }

    public SchedulerOptions options() { return options; }

    /**
     * Queues a request. Throws {@link InvalidInputException} (naming the field) for a request that can never run,
     * {@link QueueFullException} when more than queueLimit requests would wait, {@link IllegalStateException} once closed.
     */
    public GenerationStream submit(GenerationRequest request) {
        if (closed) throw new IllegalStateException("scheduler is closed");
        Generation.Plan plan = Generation.plan(model, request);
        GenerationStream stream = new GenerationStream(plan.prompt().length);
        synchronized (lock) {
            if (closed) throw new IllegalStateException("scheduler is closed");
            int freeSlots = Math.max(0, options.parallel() - runningCount);
            if (waiting.size() >= options.queueLimit() + freeSlots) {
                throw new QueueFullException(waiting.size(), options.queueLimit(), 1);
            }
            waiting.add(new Job(request, plan, stream, System.nanoTime()));
            lock.notifyAll();
        }
        return stream;
    }

    /**
     * Runs {@code task} on the scheduler thread between two steps and returns its result: the engine's other work on
     * this model (an embedding: {@link LoadedModel#embed}) shares it with the running generations through the one
     * thread that drives the engine. One task runs after each step (tasks in arrival order), so running generations
     * advance a step between any two of them, and a task sees every sequence between steps (its KV pages are free
     * again before the next). A task's exception is rethrown as it is ({@link InvalidInputException}: 400); more than
     * queueLimit tasks waiting is {@link QueueFullException}; a scheduler closed before the task ran ends it with
     * {@link GenerationCancelledException}.
     */
    public <T> T runBetweenSteps(java.util.concurrent.Callable<T> task) throws InterruptedException {
        var future = new java.util.concurrent.FutureTask<>(task);
        synchronized (lock) {
            if (closed) throw new IllegalStateException("scheduler is closed");
            if (tasks.size() >= options.queueLimit()) throw new QueueFullException(tasks.size(), options.queueLimit(), 1);
            tasks.add(future);
            lock.notifyAll();
        }
        try {
            return future.get();
        } catch (java.util.concurrent.CancellationException e) {
            throw new GenerationCancelledException();
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) throw r;
            if (cause instanceof Error err) throw err;
            throw new IllegalStateException("internal error: " + cause, cause);
        } catch (InterruptedException e) {
            synchronized (lock) {
                tasks.remove(future);
            }
            future.cancel(false);
            throw e;
        }
    }

    /**
     * Runs one request to its end on this scheduler, on the caller's thread as far as its events go: submits it
     * ({@link #submit}: a bad request throws at once) and hands each event to {@code sink} as it arrives; returns the
     * result, or rethrows the generation's own error. When the sink throws, the generation is cancelled and its end
     * awaited (its committed tokens are cached, its pages released) before the sink's exception is rethrown. An
     * interrupted caller cancels it the same way and gets {@link GenerationCancelledException}. The CLI's
     * {@code run} and {@link LoadedModel#generate} drive the engine through this, so every generation has one driver.
     */
    public GenerationResult generate(GenerationRequest request, TokenSink sink) {
        GenerationStream stream = submit(request);
        try {
            for (GenerationEvent e; (e = stream.next()) != null; ) {
                switch (e) {
                    case GenerationEvent.Started s -> sink.started(s.promptTokens(), s.cachedTokens());
                    case GenerationEvent.Text t -> {
                        if (request.wantsLogprobs()) sink.text(t.piece(), t.logprobs());
                        else sink.text(t.piece());
                    }
                    case GenerationEvent.Done d -> { return d.result(); }
                    case GenerationEvent.Failed f -> {
                        if (f.error() instanceof WrappedError w) throw w.error();
                        throw f.error();
                    }
                }
            }
            throw new IllegalStateException("the generation's final event was already taken");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            awaitEnd(stream);
            throw new GenerationCancelledException();
        } catch (RuntimeException | Error e) {
            awaitEnd(stream);
            throw e;
        }
    }

    /** Cancels a stream that has not finished and waits for its final event (uninterruptibly). */
    private static void awaitEnd(GenerationStream stream) {
        stream.cancel();
        boolean interrupted = Thread.interrupted();
        while (!stream.isFinished()) {
            try {
                stream.poll(java.time.Duration.ofMillis(50));
            } catch (InterruptedException again) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    public SchedulerStats stats() {
        int queued;
        synchronized (lock) {
            queued = waiting.size();
        }
        PagePool pool = model.pool();
        return new SchedulerStats(runningCount, queued, steps.get(), evaluated.get(), reused.get(), generated.get(),
                pool.usedPages(), pool.freePages(), pool.totalPages(), livePages, reservedPages);
    }

    private void loop() {
        try {
            while (true) {
                java.util.concurrent.FutureTask<?> task;
                boolean work;
                synchronized (lock) {
                    while (!closed && waiting.isEmpty() && running.isEmpty() && tasks.isEmpty()) lock.wait();
                    if (running.isEmpty() && tasks.isEmpty() && !waiting.isEmpty() && options.parallel() > 1) {
                        long until = waiting.peek().submittedNanos() + gatherNanos;
                        for (long left; !closed && tasks.isEmpty() && waiting.size() < options.parallel() && (left = until - System.nanoTime()) > 0; ) {
                            lock.wait(left / 1_000_000, (int) (left % 1_000_000));
                        }
                    }
                    if (closed) break;
                    work = !waiting.isEmpty() || !running.isEmpty();
                    task = tasks.poll();
                }
                if (work) {
                    synchronized (model) {
                        try {
                            step();
                        } catch (RuntimeException | Error e) {   // a bug outside any one sequence: fail them all, keep serving
                            stepErrors.log(System.Logger.Level.ERROR, "step", "scheduler step failed: " + e, e);
                            for (Active a : List.copyOf(running)) end(a, e);
                        }
                    }
                }
                if (task != null) task.run();   // between steps; its exception goes to its caller
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            synchronized (model) {
                for (Active a : List.copyOf(running)) end(a, new GenerationCancelledException());
            }
            failWaiting();
        }
    }

    /**
     * One scheduler step: cancellations, admissions, then the decode rows and the step's prefill chunks, in one pass
     * when the backend computes mixed rows as if alone, else a decode pass and a pass per chunk.
     */
    private void step() {
        for (Active a : List.copyOf(running)) {
            if (a.stream().isCancelled()) end(a, new GenerationCancelledException());
        }
        admit();
        List<Active> decoding = new ArrayList<>(), prefilling = new ArrayList<>();
        for (Active a : running) {
            if (a.generation().decoding()) decoding.add(a);
            else if (a.generation().prefilling()) prefilling.add(a);
        }
        int budget = options.stepTokens() - decoding.size();
        if (!decoding.isEmpty() && !prefilling.isEmpty() && options.stepMillis() != SchedulerOptions.UNBOUNDED) {
            budget = Math.min(budget, costs.tokensWithin(stepBoundNanos(decoding.size()), decoding.size()));
        }
        List<Active> chunked = new ArrayList<>();
        List<int[]> chunks = new ArrayList<>();
        int rows = decoding.size();
        for (Active a : prefilling) {
            if (budget <= 0) break;
            int[] chunk = a.generation().chunk(budget);
            chunked.add(a);
            chunks.add(chunk);
            budget -= chunk.length;
            rows += chunk.length;
        }
        if (!chunks.isEmpty() && decoding.size() <= MAX_DECODE_ROWS && rows <= model.invariantRows()) {
            pass(decoding, chunked, chunks);
        } else {
            for (int from = 0; from < decoding.size(); from += MAX_DECODE_ROWS) {
                pass(decoding.subList(from, Math.min(decoding.size(), from + MAX_DECODE_ROWS)), List.of(), List.of());
            }
            for (int i = 0; i < chunks.size(); i++) pass(List.of(), List.of(chunked.get(i)), List.of(chunks.get(i)));
        }
        publish();
    }

    /**
     * How long a step with {@code decodeRows} decoding streams may take: {@link SchedulerOptions#stepMillis()} when set
     * (never below the decode pass itself), else {@link SchedulerOptions#AUTO_STEP_FACTOR} decode passes and at least
     * {@link SchedulerOptions#MIN_AUTO_STEP_MILLIS}.
     */
    private long stepBoundNanos(int decodeRows) {
        double decode = costs.estimate(decodeRows);
        if (options.stepMillis() > 0) return (long) Math.max(options.stepMillis() * 1e6, decode);
        return (long) Math.max(SchedulerOptions.MIN_AUTO_STEP_MILLIS * 1e6, SchedulerOptions.AUTO_STEP_FACTOR * decode);
    }
    /** Starts waiting requests in order while a slot is free and their worst case fits the pages not reserved. */
    private void admit() {
        while (running.size() < options.parallel()) {
            Job job;
            synchronized (lock) {
                for (Iterator<Job> it = waiting.iterator(); it.hasNext(); ) {
                    Job j = it.next();
                    if (j.stream().isCancelled()) {
                        it.remove();
                        j.stream().emit(new GenerationEvent.Failed(new GenerationCancelledException()));
                    }
                }
                job = waiting.peek();
            }
            if (job == null) return;
            Generation g = null;
            try {
                g = new Generation(model, job.request(), job.plan(), sink(job.stream()));
                g.start();   // locks the matched prefix: eviction below cannot take it
                int need = reserve() + worstCasePages(g);
                if (!model.cache().ensureFreePages(need)) {
                    g.abandon();
                    if (!running.isEmpty()) return;   // wait for running sequences to finish; keep the order
                    // Alone and still short: the matched path pins pages beyond the sequence's own (boundary pages
                    // that earlier matches split and copied), so run it without reuse rather than fail mid-prefill.
                    model.cache().evictAll();
                    g = new Generation(model, job.request(), job.plan(), sink(job.stream()));
                    g.start();
                }
                synchronized (lock) {
                    waiting.remove(job);
                }
                Active a = new Active(job, g);
                running.add(a);
                runningCount = running.size();
                reused.addAndGet(g.reused());
                g.started();
            } catch (RuntimeException | Error e) {
                // This request fails alone, and it leaves the queue whatever failed: never retried at every step.
                synchronized (lock) {
                    waiting.remove(job);
                }
                Active failed = g == null ? null : find(g);
                if (failed != null) {
                    end(failed, e);
                } else {
                    if (g != null) {
                        try {
                            g.close(e);
                        } catch (RuntimeException | Error closing) {
                            e.addSuppressed(closing);
                        }
                    }
                    if (!job.stream().isFinished()) job.stream().emit(new GenerationEvent.Failed(runtime(e)));
                }
                if (!(e instanceof InvalidInputException)) {
                    stepErrors.log(System.Logger.Level.ERROR, "admit", "a request failed to start: " + e, e);
                }
                runningCount = running.size();
            }
        }
    }

    private Active find(Generation g) {
        for (Active a : running) if (a.generation() == g) return a;
        return null;
    }

    /** Pages the running sequences may still allocate, in their worst case. */
    private int reserve() {
        int sum = 0;
        for (Active a : running) sum += worstCasePages(a.generation());
        return sum;
    }

    /** Pages g may still allocate: its worst case in pages plus one for copy-on-write, less the pages it holds. */
    private int worstCasePages(Generation g) {
        int pageTokens = model.pool().layout().pageTokens();
        int worst = (g.worstCasePositions() + pageTokens - 1) / pageTokens + 1;
        return Math.max(0, worst - g.pages());
    }

    /**
     * One forward pass over the decode token of each of {@code decoding} and the prefill chunk of each of
     * {@code prefilling}; when it throws and holds more than one sequence, each is retried in a pass of its own and
     * only those that fail alone end.
     */
    private void pass(List<Active> decoding, List<Active> prefilling, List<int[]> chunks) {
        int d = decoding.size(), n = d + prefilling.size();
        int[][] tokens = new int[n][];
        KvStore[] kvs = new KvStore[n];
        boolean[] wantLogits = new boolean[n];
        Active[] owner = new Active[n];
        int rows = 0;
        for (int i = 0; i < n; i++) {
            owner[i] = i < d ? decoding.get(i) : prefilling.get(i - d);
            Generation g = owner[i].generation();
            tokens[i] = i < d ? new int[] {g.nextToken()} : chunks.get(i - d);
            kvs[i] = g.kv();
            wantLogits[i] = i < d || g.completesPrompt(tokens[i].length);
            rows += tokens[i].length;
        }
        float[][] logits;
        try {
            steps.incrementAndGet();
            long t0 = System.nanoTime();
            logits = model.evaluate(tokens, kvs, wantLogits);
            costs.record(rows, System.nanoTime() - t0);
        } catch (RuntimeException | Error e) {
            if (n == 1) {
                end(owner[0], e);
                return;
            }
            stepErrors.log(System.Logger.Level.WARNING, "pass", "a pass over " + n + " sequences failed (" + e + "); retrying each alone", null);
            for (int i = 0; i < n; i++) {
                float[] l;
                try {
                    steps.incrementAndGet();
                    l = model.evaluate(new int[][] {tokens[i]}, new KvStore[] {kvs[i]}, new boolean[] {wantLogits[i]})[0];
                } catch (RuntimeException | Error alone) {
                    end(owner[i], alone);
                    continue;
                }
                evaluated(owner[i], i < d, tokens[i].length, l);
            }
            return;
        }
        for (int i = 0; i < n; i++) evaluated(owner[i], i < d, tokens[i].length, logits[i]);
    }

    /** a's decode token ({@code decode}) or prefill chunk of {@code length} tokens was committed, with these logits. */
    private void evaluated(Active a, boolean decode, int length, float[] logits) {
        Generation g = a.generation();
        int before = g.generated();
        try {
            if (decode) {
                g.decoded(logits);
            } else {
                evaluated.addAndGet(length);
                g.prefilled(length, logits);
            }
            generated.addAndGet(g.generated() - before);
            if (g.done()) complete(a);
        } catch (RuntimeException | Error e) {
            end(a, e);
        }
    }

    /** A generation ended normally: its tokens go into the cache, its pages are released, then Done is sent. */
    private void complete(Active a) {
        running.remove(a);
        runningCount = running.size();
        try {
            a.generation().close(null);
        } catch (RuntimeException | Error e) {
            publish();
            a.stream().emit(new GenerationEvent.Failed(runtime(e)));
            return;
        }
        publish();
        a.stream().emit(new GenerationEvent.Done(a.generation().result()));
    }

    /** A generation ended with {@code error} (cancellation included): committed tokens cached, pages released, Failed sent. */
    private void end(Active a, Throwable error) {
        if (!running.remove(a)) return;
        runningCount = running.size();
        try {
            a.generation().close(error);
        } catch (RuntimeException | Error e) {
            error.addSuppressed(e);
        }
        publish();
        if (!a.stream().isFinished()) a.stream().emit(new GenerationEvent.Failed(runtime(error)));
    }

    private void publish() {
        int live = 0;
        for (Active a : running) live += a.generation().pages();
        livePages = live;
        reservedPages = reserve();
    }

    private static RuntimeException runtime(Throwable e) {
        return e instanceof RuntimeException r ? r : new WrappedError((Error) e);
    }

    /** An {@link Error} of a generation, carried in its {@link GenerationEvent.Failed} ({@link #generate} rethrows the error itself). */
    private static final class WrappedError extends IllegalStateException {
        WrappedError(Error error) { super("internal error: " + error, error); }

        Error error() { return (Error) getCause(); }
    }

    private TokenSink sink(GenerationStream stream) {
        return new TokenSink() {
            public void text(String piece) {
                stream.emit(new GenerationEvent.Text(piece));
            }

            public void text(String piece, java.util.List<TokenLogprob> logprobs) {
                stream.emit(new GenerationEvent.Text(piece, logprobs));
            }

            public void started(int promptTokens, int cachedTokens) {
                stream.emit(new GenerationEvent.Started(promptTokens, cachedTokens));
            }
        };
    }

    private void failWaiting() {
        List<Job> left;
        List<java.util.concurrent.FutureTask<?>> leftTasks;
        synchronized (lock) {
            left = new ArrayList<>(waiting);
            waiting.clear();
            leftTasks = new ArrayList<>(tasks);
            tasks.clear();
        }
        for (var t : leftTasks) t.cancel(false);
        for (Job j : left) {
            if (!j.stream().isFinished()) j.stream().emit(new GenerationEvent.Failed(new GenerationCancelledException()));
        }
    }

    /**
     * Stops the scheduler: waits for the step in progress, then ends everything running or queued with
     * {@link GenerationCancelledException} (running generations' committed tokens are cached, their pages released).
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) return;
            closed = true;
            lock.notifyAll();
        }
        if (Thread.currentThread() != worker) {
            try {
                worker.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        failWaiting();
    }
}
