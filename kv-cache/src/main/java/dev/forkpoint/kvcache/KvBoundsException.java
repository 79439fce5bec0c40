package dev.forkpoint.kvcache;

/**
 * A sequence's KV was addressed at an offset it does not hold: a read at or past the stored positions, a write outside
 * the open step, or a truncate/restore beyond what is stored. Nothing was read or changed.
 */
public final class KvBoundsException extends IndexOutOfBoundsException {
    private final long sequenceId;
    private final long offset;
    private final int stored;

    KvBoundsException(long sequenceId, long offset, int stored, String message) {
        super(message);
        this.sequenceId = sequenceId;
        this.offset = offset;
        this.stored = stored;
    }

    /** "sequence 7: offset 130 exceeds 128 stored positions". */
    static KvBoundsException exceeds(long sequenceId, long offset, int stored) {
        String what = offset < 0 ? "offset " + offset + " is negative" : "offset " + offset + " exceeds";
        return new KvBoundsException(sequenceId, offset, stored,
                "sequence " + sequenceId + ": " + what + (offset < 0 ? " (" + stored + " stored positions)"
                        : " " + stored + " stored positions"));
    }

    /** A write outside [from, to), the positions reserved by the open step (or with no step open). */
    static KvBoundsException outsideStep(long sequenceId, long offset, int stored, int from, int to) {
        String step = from == to ? " with no open step" : " outside the open step [" + from + ", " + to + ")";
        return new KvBoundsException(sequenceId, offset, stored, "sequence " + sequenceId + ": write at offset "
                + offset + step + " (" + stored + " stored positions)");
    }

    public long sequenceId() {
        return sequenceId;
    }

    public long offset() {
        return offset;
    }

    /** Positions the sequence held when the access was refused. */
    public int stored() {
        return stored;
    }
}
