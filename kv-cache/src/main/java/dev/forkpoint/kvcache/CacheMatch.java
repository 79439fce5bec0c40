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
 * {@link #checkpointOffsets}. The caller owns {@code sequence} and must close it.
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
     * The offsets, ascending and all greater than {@link #statefulResumeOffset()}, at which a stateful engine should
     * capture checkpoints while evaluating this prompt and pass them to {@link RadixCache#insert}: the fork point
     * (matchedTokens, where the radix tree split or the match stopped) when it has none yet, the given chat-message
     * boundaries, promptTokens − 1 (an identical prompt resumes there) and promptTokens (the prompt end, before
     * generation). Offsets outside (resume, promptTokens] are ignored.
     */
    public int[] checkpointOffsets(int... messageBoundaries) {
        int resume = statefulResumeOffset();
        TreeSet<Integer> offsets = new TreeSet<>();
        offsets.add(matchedTokens);
        for (int b : messageBoundaries) offsets.add(b);
        offsets.add(promptTokens - 1);
        offsets.add(promptTokens);
        return offsets.stream().mapToInt(Integer::intValue).filter(o -> o > resume && o <= promptTokens).toArray();
    }
}
