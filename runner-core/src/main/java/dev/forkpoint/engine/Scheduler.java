package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Shares one loaded model between concurrent requests. {@link #submit} checks a request synchronously (a bad field
 * throws {@link InvalidInputException} at once, a full queue {@link QueueFullException}) and returns its
 * {@link GenerationStream}; one scheduler thread evaluates the admitted requests.
 *
 * <p>INTERIM implementation (API pinned): requests run one at a time, in order; cancellation is seen at the next
 * generated piece. Continuous batching replaces the body, not the API.
 */
public final class Scheduler implements AutoCloseable {
    private final LoadedModel model;
    private final SchedulerOptions options;
    private final ArrayBlockingQueue<Job> queue;
    private final Thread worker;
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicLong steps = new AtomicLong(), evaluated = new AtomicLong(), reused = new AtomicLong(), generated = new AtomicLong();
    private volatile boolean closed;

    private record Job(GenerationRequest request, GenerationStream stream) {}

    public Scheduler(LoadedModel model, SchedulerOptions options) {
        this.model = model;
        this.options = options;
        this.queue = new ArrayBlockingQueue<>(Math.max(1, options.queueLimit() + options.parallel()));
        this.worker = Thread.ofPlatform().name("forkpoint-scheduler").daemon().start(this::loop);
    }

    public LoadedModel model() { return model; }

    public SchedulerOptions options() { return options; }

    /**
     * Queues a request. Throws {@link InvalidInputException} (naming the field) for a request that can never run,
     * {@link QueueFullException} when the queue is full.
     */
    public GenerationStream submit(GenerationRequest request) {
        if (closed) throw new IllegalStateException("scheduler is closed");
        int promptTokens = model.check(request);
        GenerationStream stream = new GenerationStream(promptTokens);
        if (queue.size() >= options.queueLimit() + options.parallel() - running.get() || !queue.offer(new Job(request, stream))) {
            throw new QueueFullException(queue.size(), options.queueLimit(), 1);
        }
        return stream;
    }

    public SchedulerStats stats() {
        return new SchedulerStats(running.get(), queue.size(), steps.get(), evaluated.get(), reused.get(), generated.get());
    }

    private void loop() {
        while (!closed) {
            Job job;
            try {
                job = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            running.incrementAndGet();
            GenerationStream stream = job.stream();
            try {
                if (stream.isCancelled()) throw new GenerationCancelledException();
                GenerationResult r = model.generate(job.request(), new TokenSink() {
                    public void text(String piece) {
                        if (stream.isCancelled()) throw new GenerationCancelledException();
                        stream.emit(new GenerationEvent.Text(piece));
                    }

                    public void started(int promptTokens, int cachedTokens) {
                        stream.emit(new GenerationEvent.Started(promptTokens, cachedTokens));
                    }
                });
                steps.addAndGet(1 + r.generatedIds().length);
                evaluated.addAndGet(r.evaluatedPromptTokens());
                reused.addAndGet(r.cachedTokens());
                generated.addAndGet(r.generatedIds().length);
                stream.emit(new GenerationEvent.Done(r));
            } catch (RuntimeException e) {
                stream.emit(new GenerationEvent.Failed(e));
            } catch (Error e) {
                stream.emit(new GenerationEvent.Failed(new IllegalStateException("internal error: " + e, e)));
            } finally {
                running.decrementAndGet();
            }
        }
    }

    /** Cancels everything queued or running and stops the scheduler thread. */
    @Override
    public void close() {
        closed = true;
        for (Job j; (j = queue.poll()) != null; ) j.stream().emit(new GenerationEvent.Failed(new GenerationCancelledException()));
        worker.interrupt();
    }
}
