package dev.forkpoint.bench.soak;

/** What one client stream does next. */
sealed interface Action {
    /** A well-formed request, read to the end. */
    record Complete(Api api, boolean stream, String prompt, int maxTokens, double temperature, long seed) implements Action {}

    /** A well-formed request whose client goes away as {@code drop} says. */
    record Disconnect(Api api, boolean stream, String prompt, int maxTokens, double temperature, long seed, ReadPlan drop) implements Action {}

    /** Variant {@code variant} of {@code fault} against {@code api}. */
    record Inject(Fault fault, Api api, int variant) implements Action {}

    /** Greedy reference request {@code index}; its text must be the one recorded at the start. */
    record Reference(int index) implements Action {}
}
