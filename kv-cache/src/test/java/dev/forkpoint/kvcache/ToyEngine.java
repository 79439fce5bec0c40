package dev.forkpoint.kvcache;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * A test engine that drives the cache the way the real one will: match, (stateful: restore the checkpoint and
 * truncate), evaluate the rest of the prompt in chunks writing oracle KV, decode a reply (its last token is sampled
 * but not evaluated), insert everything committed with the checkpoints it captured, close. Its "model" is the KV
 * oracle plus, when stateful, the toy recurrent state, which it can only obtain by folding tokens from a checkpoint.
 */
final class ToyEngine {
    record Result(int promptTokens, int matched, int resumedAt, int evaluated, long stateAtPromptEnd, int[] committed) {}

    private final RadixCache cache;
    private final boolean stateful;
    private final int chunk;
    /** The ladder's rungs (−1: the offsets without a ladder, {@link CacheMatch#checkpointOffsets(int...)}). */
    private final int ladderCount;
    /** Checkpoints are 8 bytes of state plus 0 .. padding bytes (varying with the offset). */
    private final int padding;
    /** Called after each cache call (match, insert) with the request's live sequence. */
    private final Consumer<SequenceKv> afterCacheCall;

    ToyEngine(RadixCache cache, boolean stateful, int chunk) {
        this(cache, stateful, chunk, -1, 0, s -> {});
    }

    ToyEngine(RadixCache cache, boolean stateful, int chunk, int ladderCount, int padding) {
        this(cache, stateful, chunk, ladderCount, padding, s -> {});
    }

    ToyEngine(RadixCache cache, boolean stateful, int chunk, int ladderCount, int padding, Consumer<SequenceKv> afterCacheCall) {
        this.cache = cache;
        this.stateful = stateful;
        this.chunk = chunk;
        this.ladderCount = ladderCount;
        this.padding = padding;
        this.afterCacheCall = afterCacheCall;
    }

    /** {@link #run(CacheNamespace, int[], int[], int, int[])} with the ladder down to the prompt's start. */
    Result run(CacheNamespace ns, int[] prompt, int[] reply, int... messageBoundaries) {
        return run(ns, prompt, reply, 0, messageBoundaries);
    }

    /** One request; {@code ladderFloor} is where the prompt's last message starts. */
    Result run(CacheNamespace ns, int[] prompt, int[] reply, int ladderFloor, int[] messageBoundaries) {
        CacheMatch m = cache.match(ns, prompt);
        try (SequenceKv seq = m.sequence()) {
            afterCacheCall.accept(seq);
            String bad = KvOracle.mismatch(seq, prompt, m.matchedTokens());
            if (bad != null) throw new AssertionError("restored KV differs: " + bad);
            int resume = m.matchedTokens();
            long state = KvOracle.state(prompt, 0);
            List<CheckpointAt> captured = new ArrayList<>();
            int[] capture = new int[0];
            if (stateful) {
                resume = m.statefulResumeOffset();
                if (m.checkpoint().isPresent()) {
                    CheckpointAt c = m.checkpoint().get();
                    if (c.offset() > m.matchedTokens()) throw new AssertionError("checkpoint at " + c.offset() + " beyond the match " + m.matchedTokens());
                    state = KvOracle.stateOf(c.checkpoint());
                }
                if (state != KvOracle.state(prompt, resume)) throw new AssertionError("checkpoint at " + resume + " is not the state of this prompt");
                seq.truncate(resume);
                capture = ladderCount < 0 ? m.checkpointOffsets(messageBoundaries)
                        : m.checkpointOffsets(messageBoundaries, ladderFloor, ladderCount);
            }
            int[] all = Arrays.copyOf(prompt, prompt.length + Math.max(0, reply.length - 1));
            System.arraycopy(reply, 0, all, prompt.length, Math.max(0, reply.length - 1));
            int pos = resume;
            while (pos < prompt.length) {
                int end = Math.min(pos + chunk, prompt.length);
                for (int c : capture) if (c > pos && c < end) { end = c; break; }
                state = step(seq, all, pos, end, state);
                pos = end;
                if (contains(capture, pos)) captured.add(new CheckpointAt(pos, bytes(state, pos)));
            }
            long promptState = state;
            while (pos < all.length) state = step(seq, all, pos, ++pos, state);
            if (stateful && all.length > prompt.length) captured.add(new CheckpointAt(all.length, bytes(state, all.length)));
            cache.insert(ns, all, seq, captured);
            afterCacheCall.accept(seq);
            return new Result(prompt.length, m.matchedTokens(), resume, prompt.length - resume, promptState, all);
        }
    }

    private static long step(SequenceKv seq, int[] tokens, int from, int to, long state) {
        seq.begin(to - from);
        KvOracle.writeAll(seq, tokens, from, to);
        seq.commit();
        for (int i = from; i < to; i++) state = KvOracle.mix(state ^ (tokens[i] * 0x9E3779B97F4A7C15L));
        return state;
    }

    private Checkpoint bytes(long state, int offset) {
        return new BytesCheckpoint(ByteBuffer.allocate(8 + offset * 7 % (padding + 1)).putLong(state).array());
    }

    private static boolean contains(int[] a, int x) {
        for (int v : a) if (v == x) return true;
        return false;
    }
}
