package dev.forkpoint.metal;

/**
 * The (query head, query row) pairs one pass-1 dispatch covers: heads {@code [firstHead, firstHead + heads)} of the
 * GQA group, rows {@code [firstRow, firstRow + rows)}. One SIMD group per pair.
 */
public record PairTile(int firstHead, int heads, int firstRow, int rows) {

    public PairTile {
        if (firstHead < 0 || firstRow < 0 || heads < 1 || rows < 1) {
            throw new IllegalArgumentException("bad tile: heads " + firstHead + "+" + heads + ", rows " + firstRow
                    + "+" + rows);
        }
    }

    public int pairs() {
        return heads * rows;
    }

    public boolean contains(int head, int row) {
        return head >= firstHead && head < firstHead + heads && row >= firstRow && row < firstRow + rows;
    }

    @Override
    public String toString() {
        return "heads " + firstHead + ".." + (firstHead + heads - 1) + " × rows " + firstRow + ".."
                + (firstRow + rows - 1);
    }
}
