package dev.forkpoint.backend;

/**
 * The keys and values a sequence has stored, for every layer, one entry per position. The attention op writes the
 * entries for the positions it computes and reads all earlier ones. Created by {@link Backend#newKvStore}.
 */
public interface KvStore {
    int layers();
    /** Elements of one key (or value) entry: kvHeads × headDim. */
    int kvDim();
    /** Positions this store can hold. */
    int capacity();
    /** Positions [0, length) hold valid entries. */
    int length();
    /** Marks positions [0, length) valid; entries beyond are ignored until overwritten. */
    void setLength(int length);
}
