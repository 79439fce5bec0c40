package dev.forkpoint.metal.objc;

/** A Metal kernel that did not compile or yield a pipeline, with Metal's own message. */
public final class MetalCompileException extends RuntimeException {
    private final String function;

    public MetalCompileException(String function, String message) {
        super("Metal kernel " + function + ": " + message);
        this.function = function;
    }

    public String function() {
        return function;
    }
}
