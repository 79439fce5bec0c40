package dev.forkpoint.reference;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Optional;

/**
 * An independent float64 forward pass of the decoder-only transformers Forkpoint runs ({@code llama}, {@code qwen2},
 * {@code qwen3}), written from the architecture definitions and llama.cpp's GGUF tensor conventions — not from the
 * engine. Every weight is dequantized once to doubles (F32/F16/BF16 here, block types through
 * {@link Quantization#dequantize}); all arithmetic afterwards is plain double, with no activation quantisation, so
 * the only difference from an exact evaluation of the stored weights is float64 rounding. (Sequences made with
 * {@link ActivationRounding#LLAMA_CPP} deliberately round matrix inputs as llama.cpp does; they are simulations used
 * to size tolerances, not the reference.)
 *
 * <p>Conventions: a GGUF matrix of shape {@code [in, out]} (GGML order) holds {@code out} rows of {@code in}
 * elements and computes {@code y[o] = Σ_i W[o][i]·x[i]}. RMSNorm is {@code x / sqrt(mean(x²) + eps) · w}. RoPE
 * rotates pairs {@code (2i, 2i+1)} of each head for {@code llama} ("normal") and {@code (i, i + d/2)} for
 * {@code qwen2}/{@code qwen3} ("NeoX"), with angle {@code pos · base^(−2i/d) / factor[i]} where {@code factor} is
 * {@code rope_freqs.weight} when present (Llama 3 scaling) and 1 otherwise, {@code d} the rope dimension count.
 * Not thread-safe; {@link #newSequence()} gives independent sequences over the same weights.
 */
final class ReferenceTransformer {
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The hyperparameters the forward pass needs, read from GGUF metadata. */
    record Config(String architecture, int dim, int layers, int heads, int kvHeads, int headDim, int ffn, int vocab,
                  double rmsEps, double ropeBase, int ropeDims, boolean neoxRope) {}

    /**
     * A dense matrix of {@code rows × cols} doubles, row-major, with an optional bias of {@code rows}; {@code type}
     * is how the file stores it (for {@link ActivationRounding}).
     */
    record Matrix(int rows, int cols, double[] w, double[] bias, GgmlType type) {
        double[] times(double[] x, ActivationRounding rounding) {
            x = rounding.apply(type, x);
            if (x.length != cols) throw new IllegalArgumentException("input of " + x.length + " for a matrix of " + cols + " columns");
            double[] y = new double[rows];
            for (int r = 0; r < rows; r++) {
                double s = 0;
                int base = r * cols;
                for (int c = 0; c < cols; c++) s += w[base + c] * x[c];
                y[r] = bias == null ? s : s + bias[r];
            }
            return y;
        }
    }

    private record Layer(double[] attnNorm, Matrix wq, Matrix wk, Matrix wv, Matrix wo, double[] qNorm, double[] kNorm,
                         double[] ffnNorm, Matrix gate, Matrix up, Matrix down) {}

    private final Config config;
    private final double[][] embeddings; // [vocab][dim]
    private final Layer[] layers;
    private final double[] outputNorm;
    private final Matrix output;
    private final double[] inverseFrequencies; // [ropeDims / 2]

    private ReferenceTransformer(Config config, double[][] embeddings, Layer[] layers, double[] outputNorm, Matrix output,
                                 double[] inverseFrequencies) {
        this.config = config;
        this.embeddings = embeddings;
        this.layers = layers;
        this.outputNorm = outputNorm;
        this.output = output;
        this.inverseFrequencies = inverseFrequencies;
    }

    Config config() { return config; }

    /** Reads every weight of {@code file} into doubles; the file may be closed afterwards. */
    static ReferenceTransformer load(GgufFile file) {
        String arch = file.getString("general.architecture");
        boolean neox = switch (arch) {
            case "llama" -> false;
            case "qwen2", "qwen3" -> true;
            default -> throw new IllegalArgumentException("reference transformer has no definition of architecture " + arch);
        };
        int dim = file.getInt(arch + ".embedding_length");
        int heads = file.getInt(arch + ".attention.head_count");
        int kvHeads = file.getInt(arch + ".attention.head_count_kv", heads);
        int headDim = file.getInt(arch + ".attention.key_length", dim / heads);
        int valueDim = file.getInt(arch + ".attention.value_length", headDim);
        if (valueDim != headDim) throw new IllegalArgumentException("value_length " + valueDim + " ≠ key_length " + headDim);
        int layerCount = file.getInt(arch + ".block_count");
        int ffn = file.getInt(arch + ".feed_forward_length");
        double eps = file.getDouble(arch + ".attention.layer_norm_rms_epsilon");
        double base = file.getDouble(arch + ".rope.freq_base", 10000.0);
        int ropeDims = file.getInt(arch + ".rope.dimension_count", headDim);

        GgufTensor embd = file.tensor("token_embd.weight");
        int vocab = embd.rows();
        double[][] embeddings = new double[vocab][];
        double[] flat = dequantize(embd);
        for (int t = 0; t < vocab; t++) {
            embeddings[t] = new double[dim];
            System.arraycopy(flat, t * dim, embeddings[t], 0, dim);
        }
        var config = new Config(arch, dim, layerCount, heads, kvHeads, headDim, ffn, vocab, eps, base, ropeDims, neox);

        Layer[] layers = new Layer[layerCount];
        for (int l = 0; l < layerCount; l++) {
            String p = "blk." + l + ".";
            layers[l] = new Layer(
                    vector(file, p + "attn_norm.weight", dim),
                    matrix(file, p + "attn_q", dim, heads * headDim),
                    matrix(file, p + "attn_k", dim, kvHeads * headDim),
                    matrix(file, p + "attn_v", dim, kvHeads * headDim),
                    matrix(file, p + "attn_output", heads * headDim, dim),
                    file.findTensor(p + "attn_q_norm.weight").map(t -> vector(t, headDim)).orElse(null),
                    file.findTensor(p + "attn_k_norm.weight").map(t -> vector(t, headDim)).orElse(null),
                    vector(file, p + "ffn_norm.weight", dim),
                    matrix(file, p + "ffn_gate", dim, ffn),
                    matrix(file, p + "ffn_up", dim, ffn),
                    matrix(file, p + "ffn_down", ffn, dim));
            if (arch.equals("qwen3") && (layers[l].qNorm == null || layers[l].kNorm == null)) {
                throw new IllegalArgumentException("qwen3 layer " + l + " lacks attn_q_norm/attn_k_norm");
            }
        }
        double[] outputNorm = vector(file, "output_norm.weight", dim);
        Matrix output = file.findTensor("output.weight").isPresent()
                ? matrix(file, "output", dim, vocab)
                : new Matrix(vocab, dim, flat, null, embd.type()); // tied to the embeddings

        double[] inv = new double[ropeDims / 2];
        Optional<GgufTensor> factors = file.findTensor("rope_freqs.weight");
        double[] factor = factors.map(t -> vector(t, ropeDims / 2)).orElse(null);
        for (int i = 0; i < inv.length; i++) {
            inv[i] = Math.pow(base, -2.0 * i / ropeDims);
            if (factor != null) inv[i] /= factor[i];
        }
        return new ReferenceTransformer(config, embeddings, layers, outputNorm, output, inv);
    }

    /** A fresh sequence starting at position 0. */
    Sequence newSequence() { return new Sequence(ActivationRounding.NONE); }

    /** A fresh sequence that rounds matrix inputs as {@code rounding} says (simulations only). */
    Sequence newSequence(ActivationRounding rounding) { return new Sequence(rounding); }

    /** The logits of the last token after evaluating {@code tokens} from position 0. */
    double[] lastLogits(int[] tokens) {
        return lastLogits(tokens, ActivationRounding.NONE);
    }

    /** As {@link #lastLogits(int[])}, rounding matrix inputs as {@code rounding} says. */
    double[] lastLogits(int[] tokens, ActivationRounding rounding) {
        Sequence s = newSequence(rounding);
        double[] last = null;
        for (int t : tokens) last = s.next(t);
        return last;
    }

    /**
     * The final hidden state (the last RMSNorm's output, before the output projection) of every position after
     * evaluating {@code tokens} from position 0: what an embedding pools.
     */
    double[][] hiddenStates(int[] tokens) {
        Sequence s = newSequence();
        double[][] out = new double[tokens.length][];
        for (int i = 0; i < tokens.length; i++) {
            s.next(tokens[i]);
            out[i] = s.hidden();
        }
        return out;
    }

    /** The logits of every position after evaluating {@code tokens} from position 0. */
    double[][] allLogits(int[] tokens) {
        Sequence s = newSequence();
        double[][] out = new double[tokens.length][];
        for (int i = 0; i < tokens.length; i++) out[i] = s.next(tokens[i]);
        return out;
    }

    /** Greedy decoding: evaluates {@code prompt}, then appends the arg-max token {@code count} times. */
    int[] greedy(int[] prompt, int count) {
        Sequence s = newSequence();
        double[] logits = null;
        for (int t : prompt) logits = s.next(t);
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            out[i] = argMax(logits);
            if (i + 1 < count) logits = s.next(out[i]);
        }
        return out;
    }

    static int argMax(double[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }

    /** One sequence: a key/value cache per layer, grown one token at a time. */
    final class Sequence {
        private final double[][][] keys = new double[config.layers()][][];   // [layer][pos][kvHeads*headDim]
        private final double[][][] values = new double[config.layers()][][];
        private final ActivationRounding rounding;
        private int position;
        private double[] hidden;   // the last token's final hidden state

        private Sequence(ActivationRounding rounding) {
            this.rounding = rounding;
            for (int l = 0; l < config.layers(); l++) {
                keys[l] = new double[0][];
                values[l] = new double[0][];
            }
        }

        int position() { return position; }

        /** The final hidden state (output norm applied, before the output projection) of the last token evaluated. */
        double[] hidden() { return hidden.clone(); }

        /** Evaluates {@code token} at the next position and returns the logits that follow it. */
        double[] next(int token) {
            if (token < 0 || token >= config.vocab()) throw new IllegalArgumentException("token " + token + " outside the vocabulary");
            int hd = config.headDim();
            int group = config.heads() / config.kvHeads();
            double scale = 1.0 / Math.sqrt(hd);
            double[] x = embeddings[token].clone();
            for (int l = 0; l < config.layers(); l++) {
                Layer layer = layers[l];
                double[] h = rmsNorm(x, 0, x.length, layer.attnNorm, config.rmsEps());
                double[] q = layer.wq.times(h, rounding);
                double[] k = layer.wk.times(h, rounding);
                double[] v = layer.wv.times(h, rounding);
                for (int head = 0; head < config.heads(); head++) {
                    if (layer.qNorm != null) normInPlace(q, head * hd, hd, layer.qNorm);
                    rope(q, head * hd, position);
                }
                for (int head = 0; head < config.kvHeads(); head++) {
                    if (layer.kNorm != null) normInPlace(k, head * hd, hd, layer.kNorm);
                    rope(k, head * hd, position);
                }
                keys[l] = append(keys[l], k);
                values[l] = append(values[l], v);
                int length = position + 1;
                double[] attended = new double[config.heads() * hd];
                for (int head = 0; head < config.heads(); head++) {
                    int kvOff = (head / group) * hd;
                    double[] scores = new double[length];
                    double max = Double.NEGATIVE_INFINITY;
                    for (int t = 0; t < length; t++) {
                        double s = 0;
                        for (int i = 0; i < hd; i++) s += q[head * hd + i] * keys[l][t][kvOff + i];
                        scores[t] = s * scale;
                        max = Math.max(max, scores[t]);
                    }
                    double sum = 0;
                    for (int t = 0; t < length; t++) {
                        scores[t] = Math.exp(scores[t] - max);
                        sum += scores[t];
                    }
                    for (int t = 0; t < length; t++) {
                        double p = scores[t] / sum;
                        for (int i = 0; i < hd; i++) attended[head * hd + i] += p * values[l][t][kvOff + i];
                    }
                }
                double[] o = layer.wo.times(attended, rounding);
                for (int i = 0; i < x.length; i++) x[i] += o[i];

                double[] h2 = rmsNorm(x, 0, x.length, layer.ffnNorm, config.rmsEps());
                double[] g = layer.gate.times(h2, rounding);
                double[] u = layer.up.times(h2, rounding);
                for (int i = 0; i < g.length; i++) g[i] = g[i] / (1 + Math.exp(-g[i])) * u[i];
                double[] d = layer.down.times(g, rounding);
                for (int i = 0; i < x.length; i++) x[i] += d[i];
            }
            position++;
            hidden = rmsNorm(x, 0, x.length, outputNorm, config.rmsEps());
            return output.times(hidden, rounding);
        }

        private void normInPlace(double[] v, int off, int n, double[] w) {
            double[] normed = rmsNorm(v, off, n, w, config.rmsEps());
            System.arraycopy(normed, 0, v, off, n);
        }

        private void rope(double[] v, int off, int pos) {
            int d = config.ropeDims();
            for (int i = 0; i < d / 2; i++) {
                double angle = pos * inverseFrequencies[i];
                double cos = Math.cos(angle), sin = Math.sin(angle);
                int a = config.neoxRope() ? off + i : off + 2 * i;
                int b = config.neoxRope() ? off + i + d / 2 : off + 2 * i + 1;
                double x0 = v[a], x1 = v[b];
                v[a] = x0 * cos - x1 * sin;
                v[b] = x0 * sin + x1 * cos;
            }
        }
    }

    private static double[][] append(double[][] rows, double[] row) {
        double[][] out = java.util.Arrays.copyOf(rows, rows.length + 1);
        out[rows.length] = row;
        return out;
    }

    static double[] rmsNorm(double[] x, int off, int n, double[] w, double eps) {
        double ss = 0;
        for (int i = 0; i < n; i++) ss += x[off + i] * x[off + i];
        double inv = 1.0 / Math.sqrt(ss / n + eps);
        double[] out = new double[n];
        for (int i = 0; i < n; i++) out[i] = x[off + i] * inv * w[i];
        return out;
    }

    private static Matrix matrix(GgufFile file, String prefix, int in, int out) {
        GgufTensor t = file.tensor(prefix + ".weight");
        if (t.rowLength() != in || t.rows() != out) {
            throw new IllegalArgumentException(t.name() + " has shape " + t.shapeString() + ", expected [" + in + ", " + out + "]");
        }
        double[] bias = file.findTensor(prefix + ".bias").map(b -> vector(b, out)).orElse(null);
        return new Matrix(out, in, dequantize(t), bias, t.type());
    }

    private static double[] vector(GgufFile file, String name, int n) {
        return vector(file.tensor(name), n);
    }

    private static double[] vector(GgufTensor t, int n) {
        if (t.elementCount() != n) throw new IllegalArgumentException(t.name() + " has " + t.elementCount() + " elements, expected " + n);
        return dequantize(t);
    }

    /** All elements of {@code t} as doubles, in storage order. */
    static double[] dequantize(GgufTensor t) {
        int n = Math.toIntExact(t.elementCount());
        MemorySegment data = t.data();
        double[] out = new double[n];
        switch (t.type()) {
            case F32 -> { for (int i = 0; i < n; i++) out[i] = data.getAtIndex(F32_LE, i); }
            case F16 -> { for (int i = 0; i < n; i++) out[i] = Float.float16ToFloat(data.getAtIndex(U16_LE, i)); }
            case BF16 -> { for (int i = 0; i < n; i++) out[i] = Float.intBitsToFloat((data.getAtIndex(U16_LE, i) & 0xFFFF) << 16); }
            default -> {
                float[] tmp = new float[n];
                Quantization.dequantize(t.type(), data, 0, tmp, 0, n);
                for (int i = 0; i < n; i++) out[i] = tmp[i];
            }
        }
        return out;
    }
}
