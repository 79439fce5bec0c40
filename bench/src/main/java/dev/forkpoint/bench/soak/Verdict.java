package dev.forkpoint.bench.soak;

/** A classified response: its class, a few words on why (null for a plain OK), and the reply text when one was read. */
record Verdict(Outcome outcome, String detail, String text) {}
