package dev.forkpoint.backend;

import java.util.List;

/**
 * One sequence's part of a batched forward pass: its {@code tokens} at positions startPos, startPos+1, …, whose keys
 * and values go to {@code kv} (which has an open step of exactly tokens.length positions starting at startPos). In a
 * pass over several segments the activations hold the segments' rows one after another, in order; every op but
 * attention treats rows independently, and attention lets each row see only its own segment's store.
 */
public record Segment(int[] tokens, int startPos, KvStore kv) {
    public Segment {
        if (tokens == null || tokens.length == 0) throw new IllegalArgumentException("segment without tokens");
        if (startPos < 0) throw new IllegalArgumentException("segment start position " + startPos);
        if (kv == null) throw new IllegalArgumentException("segment without a kv store");
    }

    /**
     * Refuses a segment whose store's open step is not exactly its positions: what every op that writes a step's
     * entries or state checks first ({@code op} names it in the message).
     */
    public void requireOpenStep(String op) {
        if (startPos != kv.length() || tokens.length != kv.pending()) {
            throw new IllegalStateException(op + " at positions " + startPos + "…" + (startPos + tokens.length - 1)
                    + " but the open kv step is [" + kv.length() + ", " + (kv.length() + kv.pending()) + ")");
        }
    }

    /** The segments' tokens one after another (the rows of a pass over them). */
    public static int[] tokens(List<Segment> segments) {
        int[] out = new int[rows(segments)];
        int row = 0;
        for (Segment s : segments) {
            System.arraycopy(s.tokens, 0, out, row, s.tokens.length);
            row += s.tokens.length;
        }
        return out;
    }

    /** The position of every row of a pass over the segments. */
    public static int[] positions(List<Segment> segments) {
        int[] out = new int[rows(segments)];
        int row = 0;
        for (Segment s : segments) {
            for (int i = 0; i < s.tokens.length; i++) out[row++] = s.startPos + i;
        }
        return out;
    }

    /** Rows in a pass over the segments. */
    public static int rows(List<Segment> segments) {
        int n = 0;
        for (Segment s : segments) n += s.tokens.length;
        return n;
    }
}
