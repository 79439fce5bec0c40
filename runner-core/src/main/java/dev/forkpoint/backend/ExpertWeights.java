package dev.forkpoint.backend;

/**
 * The experts of one mixture-of-experts block, as stored: each of {@code gate}, {@code up} and {@code down} holds
 * every expert's matrix as a block of rows of one weight ({@link ExpertRows}). The router has one row per expert.
 *
 * @param count       experts
 * @param topK        experts chosen per token
 * @param renormalize whether the chosen experts' probabilities are rescaled to sum to 1
 */
public record ExpertWeights(Weight router, ExpertRows gate, ExpertRows up, ExpertRows down, int count, int topK,
                            boolean renormalize) {
    public ExpertWeights {
        if (count < 1 || topK < 1 || topK > count) throw new IllegalArgumentException("experts: top-" + topK + " of " + count);
        if (router.rows() != count) throw new IllegalArgumentException(router.name() + " routes to " + router.rows() + " experts, not " + count);
        for (ExpertRows r : new ExpertRows[] {gate, up, down}) {
            if (r.perExpert() != null) {
                if (r.perExpert().length != count) throw new IllegalArgumentException(r.weight().name() + ": " + r.perExpert().length + " experts' matrices for " + count + " experts");
                for (Weight w : r.perExpert()) {
                    if (w.rows() != r.rows() || w.cols() != r.weight().cols()) {
                        throw new IllegalArgumentException(w.name() + " is " + w.rows() + "×" + w.cols() + ", expected " + r.rows() + "×" + r.weight().cols());
                    }
                }
            } else if ((long) (count - 1) * r.stride() + r.offset() + r.rows() > r.weight().rows()) {
                throw new IllegalArgumentException(r.weight().name() + " has " + r.weight().rows() + " rows, too few for " + count
                        + " experts of " + r.rows() + " rows at stride " + r.stride());
            }
        }
        if (gate.rows() != up.rows() || gate.weight().cols() != up.weight().cols() || down.weight().cols() != gate.rows()
                || down.rows() != gate.weight().cols()) {
            throw new IllegalArgumentException("expert shapes disagree: gate " + gate.rows() + "×" + gate.weight().cols()
                    + ", up " + up.rows() + "×" + up.weight().cols() + ", down " + down.rows() + "×" + down.weight().cols());
        }
    }

    /** Input (and output) width. */
    public int dim() { return gate.weight().cols(); }

    /** Hidden width of one expert. */
    public int ffnDim() { return gate.rows(); }

    /**
     * Expert e's matrix: rows [e·stride + offset, e·stride + offset + rows) of {@code weight} (a fused gate/up tensor
     * [E, 2·I, H] gives gate stride 2I offset 0 and up stride 2I offset I; separate ones stride I offset 0); or, when
     * {@code perExpert} is not null (Hugging Face's {@code experts.{e}.gate_proj} tensors), the whole of
     * {@code perExpert[e]}.
     */
    public record ExpertRows(Weight weight, int stride, int offset, int rows, Weight[] perExpert) {
        public ExpertRows {
            if (rows < 1 || stride < rows || offset < 0 || offset + rows > stride) {
                throw new IllegalArgumentException(weight.name() + ": expert rows " + rows + " at offset " + offset + " of stride " + stride);
            }
            if (perExpert != null) perExpert = perExpert.clone();
        }

        public ExpertRows(Weight weight, int stride, int offset, int rows) {
            this(weight, stride, offset, rows, null);
        }

        /** One matrix per expert. */
        public static ExpertRows of(Weight[] perExpert) {
            return new ExpertRows(perExpert[0], perExpert[0].rows(), 0, perExpert[0].rows(), perExpert);
        }

        /** The weight holding expert e's rows. */
        public Weight weight(int expert) { return perExpert == null ? weight : perExpert[expert]; }

        /** Expert e's first row in {@link #weight(int)}. */
        public int firstRow(int expert) { return perExpert == null ? expert * stride + offset : 0; }
    }
}
