package dev.forkpoint.metal;

/** A place MLX-C was looked for and not found there, and why. */
public record LookupMiss(LibrarySource source, String place, String reason) {

    @Override
    public String toString() {
        return place + ": " + reason;
    }
}
