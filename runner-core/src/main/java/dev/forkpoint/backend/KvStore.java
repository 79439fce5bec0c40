package dev.forkpoint.backend;

/**
 * The keys and values one sequence has stored, for every layer, one entry per position, changed only in steps: the
 * engine opens a step with {@link #begin(int) begin(n)} for positions [length, length + n), the attention op writes
 * exactly those entries and reads all earlier ones, and the engine then {@link #commit() commits} (the positions
 * become part of {@link #length()}) or {@link #rollback() rolls back} (the store is exactly as before begin). Entries
 * at or past the stored positions are never read. Created by {@link Backend#newKvStore}.
 */
public interface KvStore {
    int layers();

    /** Elements of one key (or value) entry: kvHeads × headDim. */
    int kvDim();

    /** Committed positions: [0, length) hold valid entries. */
    int length();

    /** Positions the open step reserved (0 when no step is open). */
    int pending();

    /** Opens a step that will write positions [length, length + n); refuses a second open step. */
    void begin(int n);

    /**
     * Checks, changing nothing, that the open step can commit (a store with recurrent state: the step wrote every
     * linear layer); throws when it cannot. A pass over several stores checks them all before committing any, so that
     * a refused commit rolls back every store.
     */
    default void prepareCommit() {}

    /** Makes the open step's positions committed. */
    void commit();

    /** Drops the open step's positions: the store returns to the last committed length. */
    void rollback();

    /** The recurrent state this store keeps beside its KV (hybrid models), or null when it keeps none. */
    default RecurrentLayout recurrentLayout() { return null; }

    /**
     * A copy of the committed recurrent state, the state after exactly {@link #length()} tokens; refused while a step
     * is open. Only for stores with a {@link #recurrentLayout()}.
     */
    default RecurrentSnapshot snapshot() {
        throw new IllegalStateException("this kv store keeps no recurrent state");
    }

    /**
     * Replaces the committed recurrent state by a copy of {@code snapshot} (of this store's layout, from this backend);
     * refused while a step is open. The caller truncates the KV to the snapshot's offset to match.
     */
    default void restore(RecurrentSnapshot snapshot) {
        throw new IllegalStateException("this kv store keeps no recurrent state");
    }
}
