package dev.forkpoint.sampling;

import java.util.List;

/**
 * Watches generated text for stop strings, across token boundaries. Text that might be the start of a stop string
 * is held back; a matched stop string and everything after it is never emitted.
 */
public final class StopSequences {
    public StopSequences(List<String> stops) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** Adds newly generated text; returns the text that is safe to emit now. */
    public String accept(String text) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** True once a stop string has matched; the caller stops generating. */
    public boolean stopped() {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** At the end of generation: the held-back text that turned out not to be a stop string. */
    public String flush() {
        throw new UnsupportedOperationException("not implemented yet");
    }
}
