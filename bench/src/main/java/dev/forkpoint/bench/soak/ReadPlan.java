package dev.forkpoint.bench.soak;

import java.time.Duration;

/** How the client reads the answer: to the end, or like a client that goes away or stops reading. */
sealed interface ReadPlan {
    /** Reads the whole response (until the deadline). */
    record Whole() implements ReadPlan {}

    /** Closes the connection once {@code bodyBytes} bytes of the (de-chunked) body have arrived. */
    record DropAfterBytes(long bodyBytes) implements ReadPlan {}

    /** Closes the connection {@code after} the request was sent, unless the response was complete before. */
    record DropAfter(Duration after) implements ReadPlan {}

    /** Never reads (a small receive buffer lets the server's writes back up), then closes after {@code hold}. */
    record Ignore(Duration hold) implements ReadPlan {}

    /** Reads until {@code signal} opens (then closes the connection) or the response is complete. */
    record DropOnSignal(java.util.concurrent.CountDownLatch signal) implements ReadPlan {}

    ReadPlan WHOLE = new Whole();
}
