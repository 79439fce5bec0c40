package dev.forkpoint.bench.soak;

/** One thing a correct server guarantees, and whether this run saw it hold. */
record Invariant(String name, Status status, String detail) {
    enum Status { PASS, FAIL, SKIP }

    static Invariant check(String name, boolean holds, String detail) {
        return new Invariant(name, holds ? Status.PASS : Status.FAIL, detail);
    }

    static Invariant skip(String name, String why) {
        return new Invariant(name, Status.SKIP, why);
    }

    boolean failed() { return status == Status.FAIL; }
}
