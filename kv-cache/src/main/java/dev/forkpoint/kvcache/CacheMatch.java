package dev.forkpoint.kvcache;

import java.util.Optional;
import java.util.TreeSet;

/**
 * The result of {@link RadixCache#match}: a new sequence holding (retained, path-locked) pages for positions
 * [0, matchedTokens) of the prompt, and the deepest checkpoint at or before matchedTokens on the matched path.
 * matchedTokens ≤ promptTokens − 1: the last prompt token is always evaluated (its logits are needed).
 *
 * <p>An attention-only engine writes the remaining prompt tokens from {@code matchedTokens}. An engine with
 * non-truncatable state restores {@link #checkpoint()} (or its initial state when empty), calls
 * {@code sequence().truncate(statefulResumeOffset())} and evaluates from there, capturing checkpoints at
 * {@link #checkpointOffsets(int[], int, int)}. The checkpoint is the cache's immutable object: the engine copies it into
 * its own state and keeps no reference, since the cache may drop it (least recently used) at any time after the match,
 * even while {@code sequence} holds its path. The caller owns {@code sequence} and must close it.
 *
 * <p>The ladder: besides the fork point, the message boundaries and the prompt end, a stateful engine captures
 * checkpoints at promptTokens − 1, − 2, − 4, − 8, … down to the start of the prompt's last message. A later prompt that
 * differs from this one in its last k tokens (matching promptTokens − k) then finds a checkpoint at or before its
 * divergence but less than k tokens before it (the rung promptTokens − 2^⌈log2 k⌉, or this request's own resume point
 * when that is deeper), provided the divergence lies in the last message, this request resumed at or before it, and
 * the checkpoint has not been evicted since. Editing or regenerating the end of a prompt then costs O(k) tokens instead
 * of the whole last message, for O(log n) checkpoints per prompt.
 */
public record CacheMatch(SequenceKv sequence, int promptTokens, int matchedTokens, Optional<CheckpointAt> checkpoint) {

    /** Prompt tokens an attention-only engine evaluates (≥ 1). */
    public int tokensToEvaluate() {
        return promptTokens - matchedTokens;
    }

    /** Where an engine with non-truncatable state resumes: the checkpoint's offset, or 0 without one. */
    public int statefulResumeOffset() {
        return checkpoint.map(CheckpointAt::offset).orElse(0);
    }

    /**
     * The offsets without a ladder: the fork point, the given chat-message boundaries, promptTokens − 1 (an identical
     * prompt resumes there) and promptTokens. The same as {@code checkpointOffsets(messageBoundaries, 0, 1)} (a ladder
     * of its first rung only), as before the ladder existed.
     */
    public int[] checkpointOffsets(int... messageBoundaries) {
        return checkpointOffsets(messageBoundaries, 0, 1);
    }

    /**
     * The offsets, ascending, distinct and all in ({@link #statefulResumeOffset()}, promptTokens], at which a stateful
     * engine should capture checkpoints while evaluating this prompt and pass them to {@link RadixCache#insert}: the
     * fork point (matchedTokens, where the radix tree split or the match stopped) when it has none yet, the given
     * chat-message boundaries, the ladder promptTokens − 1, − 2, − 4, …, − 2^(ladderCount−1), of which only the rungs
     * ≥ {@code ladderFloor} (the start of the prompt's last chat message; 0 or 1 for a raw prompt) are kept, and
     * promptTokens (the prompt end, before generation). Offsets outside (resume, promptTokens] are ignored.
     *
     * @param ladderCount the most rungs (≥ 0; 0: no ladder, not even promptTokens − 1)
     * @throws IllegalArgumentException when ladderCount is negative or messageBoundaries is missing
     */
    public int[] checkpointOffsets(int[] messageBoundaries, int ladderFloor, int ladderCount) {
        if (messageBoundaries == null) throw new IllegalArgumentException("checkpoint offsets: message boundaries are missing");
        if (ladderCount < 0) throw new IllegalArgumentException("checkpoint offsets: ladder count " + ladderCount + " is negative");
        int resume = statefulResumeOffset();
        TreeSet<Integer> offsets = new TreeSet<>();
        offsets.add(matchedTokens);
        for (int b : messageBoundaries) offsets.add(b);
        long step = 1;
        for (int rung = 0; rung < ladderCount && promptTokens - step >= Math.max(ladderFloor, resume + 1); rung++, step *= 2) {
            offsets.add((int) (promptTokens - step));
        }
        offsets.add(promptTokens);
        return offsets.stream().mapToInt(Integer::intValue).filter(o -> o > resume && o <= promptTokens).toArray();
    }
}
