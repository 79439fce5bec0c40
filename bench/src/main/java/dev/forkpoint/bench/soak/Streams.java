package dev.forkpoint.bench.soak;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * N client streams, each a thread that takes its next {@link Action} from the mix (its own seeded random), performs
 * it, and waits a random think time of up to {@code thinkMs}, until stopped. After a reset or refusal it waits
 * 100 ms more (a server being restarted is not hammered).
 */
final class Streams {
    private final Driver driver;
    private final ActionMix mix;
    private final long seed;
    private final int n;
    private final int thinkMs;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean running;
    private volatile String phase;

    Streams(Driver driver, ActionMix mix, long seed, int n, int thinkMs) {
        this.driver = driver;
        this.mix = mix;
        this.seed = seed;
        this.n = n;
        this.thinkMs = thinkMs;
    }

    /** Starts the streams in {@code phase}; {@code salt} makes each start's random sequence its own. */
    void start(String phase, int salt) {
        this.phase = phase;
        running = true;
        for (int i = 0; i < n; i++) {
            int id = i;
            Random rng = new Random(seed * 1_000_003L + salt * 7919L + i);
            threads.add(Thread.ofPlatform().daemon().name("soak-stream-" + i).start(() -> loop(id, rng)));
        }
    }

    void phase(String p) { phase = p; }

    int inFlight() { return inFlight.get(); }

    private void loop(int id, Random rng) {
        while (running) {
            Action a = mix.next(rng);
            inFlight.incrementAndGet();
            RequestRecord r;
            try {
                r = driver.perform(a, id, phase, rng);
            } finally {
                inFlight.decrementAndGet();
            }
            int pause = thinkMs > 0 ? rng.nextInt(thinkMs + 1) : 0;
            if (r.outcome() == Outcome.RESET) pause += 100;
            if (pause > 0) {
                try {
                    Thread.sleep(pause);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /** Stops taking new actions and waits for the requests in flight to end (each is bounded by its deadline). */
    void stop() {
        running = false;
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        threads.clear();
    }
}
