package dev.forkpoint.sampling;

import dev.forkpoint.InvalidInputException;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Chooses the next token from logits according to {@link SamplingOptions}. One per generation (it holds the RNG).
 *
 * <p>The chain follows llama.cpp's default order, which Ollama's llama.cpp runner uses:
 * <ol>
 * <li>penalties over the last repeat_last_n ids of the history (−1 = all of it, 0 = no penalties at all): for each
 *     distinct id seen there {@code c} times, its logit is divided by repeat_penalty if positive (multiplied if
 *     ≤ 0), then {@code c × frequency_penalty + presence_penalty} is subtracted;</li>
 * <li>temperature 0: argmax (ties go to the lowest id), done;</li>
 * <li>top_k (0 or ≥ vocabulary = disabled; ties at the cut keep the lower ids);</li>
 * <li>top_p over the probabilities (at temperature 1) of what top_k kept, renormalised: the smallest
 *     highest-first prefix whose mass reaches top_p, at least one token (top_p 1 = disabled);</li>
 * <li>min_p: keep tokens whose probability is at least min_p × the largest (0 = disabled);</li>
 * <li>temperature, softmax, one draw from a SplitMix64 stream seeded with seed (−1 = a random seed).</li>
 * </ol>
 * NaN logits are never chosen. Tokens at +∞ (e.g. from repeat_penalty 0) win: the draw is uniform among them
 * (among the first top_k of them when top_k is on).
 *
 * <p>Cost per token is a few vectorised O(vocabulary) passes and no full sort: top_k scans for logits above the
 * worst kept one into a bounded heap; top_p without top_k gathers the tokens within a logit window below the max,
 * widened until it holds top_p's mass, and sorts them only when few (else a logit histogram finds the cut and only
 * the boundary bucket is sorted); with neither, the draw walks vectorised exp terms of the whole vocabulary. The
 * mass sums that decide top_p's cut without top_k use float exp terms (summed in double), so a cut within about
 * 1e-7 of top_p may fall one token differently from a float64 computation. For a fixed seed the draws are the same
 * run to run on one machine; vector width may change the last bits of those sums across machines.
 */
public final class Sampler {
    /** First logit window (below the max) tried for top_p without top_k; doubled until it holds top_p's mass. */
    private static final double FIRST_WINDOW = 8;
    private static final double LAST_WINDOW = 256;
    /** Above this many tokens in the window, top_p orders them by histogram rather than a full sort. */
    private static final int SORT_LIMIT = 4096;
    private static final int BUCKETS = 4096;
    /** Above this many candidates the draw's weights are computed vectorised in float. */
    private static final int GATHER_MIN = 1024;

    private final SamplingOptions options;
    private final int vocabSize;
    private final long seed;
    private final SplitMix64 rng;
    private final boolean topKOn;
    private final boolean penaltiesOn;
    /** Temperature 0, or one so small that 1/T overflows a float (the vectorised weights): argmax, T's limit. */
    private final boolean greedy;

    private final long[] keys;      // candidate sort keys (logit descending, id ascending), reused
    private final int[] ids;        // final candidates
    private final double[] weights; // their temperature-scaled weights
    private int[] counts;           // per-id counts for penalties, all zero between calls
    private float[] terms;          // per-id exp terms for top_p without top_k
    private float[] floatWeights;   // candidate weights when there are many
    private short[] bucketOf;       // histogram bucket per gathered token (BUCKETS < 2^15)
    private float maxLogit;

    /**
     * @throws dev.forkpoint.InvalidInputException if the options are out of range
     * @throws IllegalArgumentException            if vocabSize is not positive
     */
    public Sampler(SamplingOptions options, int vocabSize) {
        if (vocabSize <= 0) throw new IllegalArgumentException("vocabulary size must be positive, got " + vocabSize);
        this.options = options.validate();
        this.vocabSize = vocabSize;
        this.seed = options.seed() == -1 ? new SplittableRandom().nextLong() : options.seed();
        this.rng = new SplitMix64(seed);
        this.greedy = options.isGreedy() || Float.isInfinite((float) (1.0 / options.temperature()));
        this.topKOn = options.topK() > 0 && options.topK() < vocabSize;
        this.penaltiesOn = options.repeatLastN() != 0
                && (options.repeatPenalty() != 1 || options.presencePenalty() != 0 || options.frequencyPenalty() != 0);
        int capacity = topKOn ? options.topK() : vocabSize;
        this.keys = new long[capacity];
        this.ids = new int[capacity];
        this.weights = new double[capacity];
    }

    /** The options this sampler applies. */
    public SamplingOptions options() {
        return options;
    }

    /** The seed actually used (drawn at random when the options say −1); reusing it repeats the generation. */
    public long seed() {
        return seed;
    }

    /**
     * Picks a token. {@code logits} may be modified. {@code history} holds the ids seen so far (prompt and generated),
     * of which the first {@code historyLength} are valid; penalties look at the last repeat_last_n of them.
     *
     * @throws InvalidInputException    if the logits hold no value above −∞ (NaN ignored) once the penalties are applied
     * @throws IllegalArgumentException if logits are shorter than the vocabulary or the history holds an id outside
     *                                  the vocabulary (the engine's own contract)
     */
    public int sample(float[] logits, int[] history, int historyLength) {
        return sample(logits, history, historyLength, null);
    }

    /**
     * {@link #sample(float[], int[], int)} among the tokens {@code allowed} holds (a bit set over the ids, bit i of word
     * i / 64; null = all): every other logit is set to −∞ first, before the penalties, top_k, top_p, min_p and the
     * temperature, so greedy picks the best allowed token and a draw never lands outside the set.
     */
    public int sample(float[] logits, int[] history, int historyLength, long[] allowed) {
        if (allowed != null) dev.forkpoint.sampling.structured.TokenConstraint.apply(logits, allowed);
        applyPenalties(logits, history, historyLength);
        if (greedy) return argmax(logits);
        int n = filter(logits);
        if (n == ALL) {
            float invT = (float) (1.0 / options.temperature());
            double total = LogitScan.sumExp(logits, vocabSize, maxLogit, invT);
            return LogitScan.cumulativeExpSearch(logits, vocabSize, maxLogit, invT, rng.nextDouble() * total);
        }
        return ids[draw(logits, n)];
    }

    /** The penalty step alone, in place. */
    void applyPenalties(float[] logits, int[] history, int historyLength) {
        if (logits.length < vocabSize)
            throw new IllegalArgumentException("logits hold " + logits.length + " values for a vocabulary of " + vocabSize);
        if (!penaltiesOn || historyLength <= 0) return;
        if (historyLength > history.length)
            throw new IllegalArgumentException("history length " + historyLength + " exceeds its array (" + history.length + ")");
        int window = options.repeatLastN() < 0 ? historyLength : Math.min(options.repeatLastN(), historyLength);
        int start = historyLength - window;
        if (counts == null) counts = new int[vocabSize];
        for (int i = start; i < historyLength; i++) {
            int id = history[i];
            if (id < 0 || id >= vocabSize) {
                for (int j = start; j < i; j++) counts[history[j]] = 0;
                throw new IllegalArgumentException("history holds token id " + id + " outside the vocabulary of " + vocabSize);
            }
            counts[id]++;
        }
        double rp = options.repeatPenalty(), presence = options.presencePenalty(), frequency = options.frequencyPenalty();
        for (int i = start; i < historyLength; i++) {
            int id = history[i];
            int c = counts[id];
            if (c == 0) continue; // already done
            counts[id] = 0;
            double l = logits[id];
            l = l <= 0 ? l * rp : l / rp;
            logits[id] = (float) (l - (c * frequency + presence));
        }
    }

    /** Whether any of the logits is above −∞ (NaN ignored): whether there is anything to sample from at all. */
    public static boolean anyLogit(float[] logits) {
        return LogitScan.max(logits, logits.length) != Float.NEGATIVE_INFINITY;
    }

    /** The lowest id of the largest logit, NaN ignored. */
    static int argmax(float[] logits, int vocabSize) {
        return LogitScan.indexOf(logits, vocabSize, maxOf(logits, vocabSize));
    }

    private static float maxOf(float[] logits, int vocabSize) {
        float max = LogitScan.max(logits, vocabSize);
        if (max == Float.NEGATIVE_INFINITY) throw noUsableLogit();
        return max;
    }

    /**
     * Every logit is NaN or −∞ (after the penalties): the model's weights overflowed or are corrupt, or a penalty
     * pushed every token to −∞. Nothing can be drawn; the request fails with this message rather than an internal error.
     */
    private static InvalidInputException noUsableLogit() {
        return new InvalidInputException("the model produced no usable logits (every value is NaN or -infinity after the "
                + "penalties): its weights are corrupt or overflow, or a penalty option removed every token");
    }

    private int argmax(float[] logits) {
        return argmax(logits, vocabSize);
    }

    /** {@link #filter}'s answer when every token may be drawn; ids is then not filled. */
    private static final int ALL = -1;

    /**
     * Steps 3–5: fills {@code ids[0, n)} with the tokens that may be drawn and returns n, or {@link #ALL}. Sets
     * {@link #maxLogit}. When the tokens were sorted, ids are in order of decreasing logit.
     */
    private int filter(float[] logits) {
        double minP = options.minP(), topP = options.topP();
        if (topKOn) {
            int n = selectTopK(logits);
            if (n == 0 || logits[ids[0]] == Float.NEGATIVE_INFINITY) throw noUsableLogit();
            float max = maxLogit = logits[ids[0]];
            if (max == Float.POSITIVE_INFINITY) {
                int m = 0;
                while (m < n && logits[ids[m]] == Float.POSITIVE_INFINITY) m++;
                return m;
            }
            if (topP < 1) n = nucleusPrefix(logits, n, sumWeights(logits, n, max) * topP, max);
            return minPPrefix(logits, n, minLogit(max, minP));
        }
        float max = maxLogit = maxOf(logits, vocabSize);
        if (max == Float.POSITIVE_INFINITY) return collect(logits, Float.POSITIVE_INFINITY);
        double minLogit = minLogit(max, minP);
        if (topP < 1) return nucleusFullVocabulary(logits, max, topP, minLogit);
        if (minP > 0) return collect(logits, ceilFloat(minLogit));
        return ALL;
    }

    /** min_p in logit space: p_i ≥ min_p · p_max  ⇔  l_i ≥ max + ln(min_p). */
    private static double minLogit(float max, double minP) {
        return minP > 0 ? max + Math.log(minP) : Double.NEGATIVE_INFINITY;
    }

    /** The smallest float ≥ d, so that for a float l: l ≥ d ⇔ l ≥ ceilFloat(d). */
    private static float ceilFloat(double d) {
        float f = (float) d;
        return f < d ? Math.nextUp(f) : f;
    }

    /** Ids with logit ≥ threshold into ids[0, n), in id order; returns n. */
    private int collect(float[] logits, float threshold) {
        int n = 0;
        for (int i = LogitScan.nextAtLeast(logits, 0, vocabSize, threshold); i < vocabSize && n < ids.length;
             i = LogitScan.nextAtLeast(logits, i + 1, vocabSize, threshold)) {
            ids[n++] = i;
        }
        return n;
    }

    /** Sort key: ascending key order = descending logit, then ascending id. Logit must not be NaN. */
    private static long key(float logit, int id) {
        int bits = Float.floatToRawIntBits(logit + 0.0f); // -0 → +0
        bits ^= (bits >> 31) & 0x7fffffff;                // monotone in the float's value, as a signed int
        return ((long) ~bits << 32) | id;
    }

    /** The top_k best tokens into ids[0, k), sorted, with a bounded max-heap of keys (root = worst kept). */
    private int selectTopK(float[] logits) {
        int k = options.topK();
        long[] heap = keys;
        int size = 0;
        int i = 0;
        for (; i < vocabSize && size < k; i++) {
            float l = logits[i];
            if (l == l) {
                heap[size] = key(l, i);
                siftUp(heap, size++);
            }
        }
        if (size == k) {
            float worst = logits[(int) heap[0]];
            // only a greater logit beats the root: an equal one has a higher id
            for (i = LogitScan.nextAbove(logits, i, vocabSize, worst); i < vocabSize;
                 i = LogitScan.nextAbove(logits, i + 1, vocabSize, worst)) {
                heap[0] = key(logits[i], i);
                siftDown(heap, k);
                worst = logits[(int) heap[0]];
            }
        }
        Arrays.sort(heap, 0, size);
        for (int j = 0; j < size; j++) ids[j] = (int) heap[j];
        return size;
    }

    private static void siftUp(long[] heap, int i) {
        long v = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (heap[parent] >= v) break;
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = v;
    }

    private static void siftDown(long[] heap, int size) {
        long v = heap[0];
        int i = 0;
        while (true) {
            int child = 2 * i + 1;
            if (child >= size) break;
            if (child + 1 < size && heap[child + 1] > heap[child]) child++;
            if (heap[child] <= v) break;
            heap[i] = heap[child];
            i = child;
        }
        heap[i] = v;
    }

    private double sumWeights(float[] logits, int n, float max) {
        double z = 0;
        for (int j = 0; j < n; j++) z += Math.exp(logits[ids[j]] - (double) max);
        return z;
    }

    /** Given ids[0, n) sorted, the shortest prefix whose weight reaches target (at least 1; n if never). */
    private int nucleusPrefix(float[] logits, int n, double target, float max) {
        double cum = 0;
        for (int j = 0; j < n; j++) {
            cum += Math.exp(logits[ids[j]] - (double) max);
            if (cum >= target) return j + 1;
        }
        return n;
    }

    /** Given ids[0, n) sorted, the prefix with logit ≥ minLogit. */
    private int minPPrefix(float[] logits, int n, double minLogit) {
        int m = 0;
        while (m < n && logits[ids[m]] >= minLogit) m++;
        return m;
    }

    /**
     * top_p (then min_p) over the whole vocabulary: gathers the tokens within a logit window below the max,
     * widening it until their mass reaches top_p, and sorts only those. If min_p cuts deeper than top_p would, its
     * set is the answer and nothing is sorted.
     */
    private int nucleusFullVocabulary(float[] logits, float max, double topP, double minLogit) {
        if (terms == null) terms = new float[vocabSize];
        float[] e = terms; // exp(l − max) per id, computed once; all top_p mass sums here use these
        double target = LogitScan.expInto(logits, vocabSize, max, 1f, e) * topP;
        for (double window = FIRST_WINDOW; ; window *= 2) {
            double threshold = max - window;
            boolean last = window >= LAST_WINDOW;
            if (last) threshold = Double.NEGATIVE_INFINITY;
            boolean capped = threshold <= minLogit;
            if (capped) threshold = minLogit;
            float t = ceilFloat(threshold);
            int n = 0;
            double mass = 0;
            for (int i = 0; i < vocabSize; i++) {
                float l = logits[i];
                if (l >= t) {
                    mass += e[i];
                    keys[n++] = key(l, i);
                }
            }
            if (mass >= target || last || capped) {
                if (capped && mass < target) { // min_p's set, within top_p's prefix
                    for (int j = 0; j < n; j++) ids[j] = (int) keys[j];
                    return n;
                }
                int m = n > SORT_LIMIT ? bucketedNucleus(logits, e, n, max, t, target) : sortedNucleus(e, n, target);
                // min_p is a threshold: keep what passes it, in place
                int kept = 0;
                for (int j = 0; j < m; j++) if (logits[ids[j]] >= minLogit) ids[kept++] = ids[j];
                return kept;
            }
        }
    }

    /** Sorts keys[0, n) and puts the shortest prefix reaching target into ids (at least 1, n if never). */
    private int sortedNucleus(float[] e, int n, double target) {
        Arrays.sort(keys, 0, n);
        double cum = 0;
        for (int j = 0; j < n; j++) {
            int id = ids[j] = (int) keys[j];
            cum += e[id];
            if (cum >= target) return j + 1;
        }
        return n;
    }

    /**
     * The nucleus of keys[0, n) (all logits ≥ low, holding at least target) without sorting them all: a histogram
     * of logit buckets finds the bucket where the cumulative mass reaches target; the buckets above it are taken
     * whole, and only that bucket is sorted. ids then hold the higher buckets unsorted, then the sorted part.
     */
    private int bucketedNucleus(float[] logits, float[] e, int n, float max, float low, double target) {
        double perUnit = BUCKETS / Math.max(max - (double) low, Double.MIN_NORMAL); // buckets per unit of logit
        double[] mass = new double[BUCKETS + 1];
        if (bucketOf == null) bucketOf = new short[vocabSize];
        short[] bucketOf = this.bucketOf;
        for (int j = 0; j < n; j++) {
            int id = (int) keys[j];
            int b = bucket(logits[id], max, perUnit);
            bucketOf[j] = (short) b;
            mass[b] += e[id];
        }
        int boundary = 0;
        double above = 0;
        while (boundary < BUCKETS && above + mass[boundary] < target) above += mass[boundary++];
        // partition without branches: higher buckets to ids, the boundary bucket's keys to the front of keys
        // (writing keys[part] with part ≤ j never overwrites a key not yet read)
        int whole = 0, part = 0;
        for (int j = 0; j < n; j++) {
            long k = keys[j];
            int b = bucketOf[j];
            ids[whole] = (int) k;
            whole += b < boundary ? 1 : 0;
            keys[part] = k;
            part += b == boundary ? 1 : 0;
        }
        Arrays.sort(keys, 0, part);
        double cum = above;
        int m = whole;
        for (int j = 0; j < part; j++) {
            int id = (int) keys[j];
            ids[m++] = id;
            cum += e[id];
            if (cum >= target) break;
        }
        return m;
    }

    /** 0 for the max, growing as the logit falls; monotone, so equal logits share a bucket. */
    private static int bucket(float logit, float max, double perUnit) {
        return (int) Math.min(BUCKETS, (max - (double) logit) * perUnit);
    }

    /** Step 6: temperature-scaled weights of ids[0, n) and one draw; returns the index into ids. */
    private int draw(float[] logits, int n) {
        if (n > GATHER_MIN && maxLogit != Float.POSITIVE_INFINITY) { // many candidates: vectorised float weights
            if (floatWeights == null) floatWeights = new float[ids.length];
            float[] w = floatWeights;
            double total = LogitScan.gatherExpInto(logits, ids, n, maxLogit, (float) (1.0 / options.temperature()), w);
            double u = rng.nextDouble() * total;
            double cum = 0;
            int lastPositive = 0;
            for (int j = 0; j < n; j++) {
                if (w[j] > 0) {
                    cum += w[j];
                    lastPositive = j;
                    if (u < cum) return j;
                }
            }
            return lastPositive;
        }
        double total = weigh(logits, n);
        double u = rng.nextDouble() * total;
        double cum = 0;
        int lastPositive = 0;
        for (int j = 0; j < n; j++) {
            double w = weights[j];
            if (w > 0) {
                cum += w;
                lastPositive = j;
                if (u < cum) return j;
            }
        }
        return lastPositive; // rounding
    }

    private double weigh(float[] logits, int n) {
        double total = 0;
        if (maxLogit == Float.POSITIVE_INFINITY) {
            Arrays.fill(weights, 0, n, 1.0);
            return n;
        }
        double invT = 1.0 / options.temperature();
        for (int j = 0; j < n; j++) {
            double w = Math.exp((logits[ids[j]] - (double) maxLogit) * invT);
            weights[j] = w;
            total += w;
        }
        return total;
    }

    /**
     * For tests: the probability of each id under steps 2–6 (penalties not applied); greedy gives a one-hot vector.
     */
    double[] probabilities(float[] logits) {
        double[] p = new double[vocabSize];
        if (greedy) {
            p[argmax(logits)] = 1;
            return p;
        }
        int n = filter(logits);
        if (n == ALL) { // what the vectorised draw approximates to float precision
            double total = 0;
            for (int i = 0; i < vocabSize; i++)
                if (logits[i] == logits[i]) total += p[i] = Math.exp((logits[i] - (double) maxLogit) / options.temperature());
            for (int i = 0; i < vocabSize; i++) p[i] /= total;
            return p;
        }
        double total = weigh(logits, n);
        for (int j = 0; j < n; j++) p[ids[j]] = weights[j] / total;
        return p;
    }
}
