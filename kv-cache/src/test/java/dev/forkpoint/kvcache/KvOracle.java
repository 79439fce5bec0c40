package dev.forkpoint.kvcache;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * The reference for every KV value in the tests: the K or V of (position p, layer, kind, element) is a fixed function
 * of the hash of tokens [0, p] — so any sequence that computes the same tokens writes bit-identical values — chosen to
 * be exactly representable in the layout's element type (no NaN, no rounding). The toy recurrent state after o tokens
 * is a different running hash of tokens [0, o).
 */
final class KvOracle {
    private KvOracle() {}

    static long mix(long x) {
        x ^= x >>> 33;
        x *= 0xff51afd7ed558ccdL;
        x ^= x >>> 33;
        x *= 0xc4ceb9fe1a85ec53L;
        x ^= x >>> 33;
        return x;
    }

    /** Hash of tokens [0, p] given the hash of [0, p−1] (use 0x9E3779B97F4A7C15 for p = 0). */
    static long extend(long previous, int token) {
        return mix(previous * 31 + token + 0x632BE59BD9B4E019L);
    }

    static final long EMPTY = 0x9E3779B97F4A7C15L;

    /** prefixHash[p] = hash of tokens [0, p]. */
    static long[] prefixHashes(int[] tokens, int count) {
        long[] h = new long[count];
        long x = EMPTY;
        for (int p = 0; p < count; p++) {
            x = extend(x, tokens[p]);
            h[p] = x;
        }
        return h;
    }

    static float[] value(KvLayout layout, long prefixHash, int layer, KvKind kind) {
        float[] v = new float[layout.kvDim()];
        for (int e = 0; e < v.length; e++) {
            long bits = mix(prefixHash ^ (layer * 0x100000001B3L) ^ ((long) kind.ordinal() << 40) ^ ((long) e << 48));
            if (layout.elementType() == KvElementType.F16) {
                short s = (short) bits;
                if ((s & 0x7C00) == 0x7C00) s &= (short) ~0x4000; // no inf/NaN
                v[e] = Float.float16ToFloat(s);
            } else {
                int i = (int) bits;
                if ((i & 0x7F800000) == 0x7F800000) i &= ~0x40000000;
                v[e] = Float.intBitsToFloat(i);
            }
        }
        return v;
    }

    /** Writes the oracle KV of positions [from, to) of {@code tokens} into the sequence's open step. */
    static void writeAll(SequenceKv seq, int[] tokens, int from, int to) {
        long[] h = prefixHashes(tokens, to);
        KvLayout layout = seq.layout();
        for (int p = from; p < to; p++) {
            for (int layer = 0; layer < layout.layers(); layer++) {
                for (KvKind kind : KvKind.values()) seq.write(p, layer, kind, value(layout, h[p], layer, kind));
            }
        }
    }

    /** True when every position [0, count) of the sequence holds the oracle KV of {@code tokens}, bit for bit. */
    static String mismatch(SequenceKv seq, int[] tokens, int count) {
        long[] h = prefixHashes(tokens, count);
        KvLayout layout = seq.layout();
        float[] got = new float[layout.kvDim()];
        for (int p = 0; p < count; p++) {
            for (int layer = 0; layer < layout.layers(); layer++) {
                for (KvKind kind : KvKind.values()) {
                    seq.read(p, layer, kind, got, 0);
                    String m = compare(got, value(layout, h[p], layer, kind));
                    if (m != null) return "sequence " + seq.id() + " position " + p + " layer " + layer + " " + kind + ": " + m;
                }
            }
        }
        return null;
    }

    static String compare(float[] got, float[] want) {
        for (int e = 0; e < want.length; e++) {
            if (Float.floatToRawIntBits(got[e]) != Float.floatToRawIntBits(want[e])) {
                return "element " + e + " is " + got[e] + ", expected " + want[e];
            }
        }
        return null;
    }

    /** The toy recurrent state after tokens [0, offset). */
    static long state(int[] tokens, int offset) {
        long s = 0x1234_5678_9ABC_DEF0L;
        for (int i = 0; i < offset; i++) s = mix(s ^ (tokens[i] * 0x9E3779B97F4A7C15L));
        return s;
    }

    static Checkpoint stateCheckpoint(int[] tokens, int offset) {
        return new BytesCheckpoint(ByteBuffer.allocate(8).putLong(state(tokens, offset)).array());
    }

    static long stateOf(Checkpoint c) {
        return ByteBuffer.wrap(((BytesCheckpoint) c).bytes()).getLong();
    }

    static int[] toArray(List<Integer> tokens) {
        return tokens.stream().mapToInt(Integer::intValue).toArray();
    }
}
