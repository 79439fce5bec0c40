package dev.forkpoint.bench;

import dev.forkpoint.tensor.GgmlType;

import java.util.ArrayList;
import java.util.List;

/**
 * One tensor to generate: its name, role, layer (-1 for global tensors), encoding and GGML-order shape
 * ({@code shape[0]} is the row length).
 */
record TensorPlan(String name, TensorRole role, int layer, GgmlType type, long[] shape) {

    long elements() {
        long n = 1;
        for (long d : shape) n *= d;
        return n;
    }

    int rowLength() { return (int) shape[0]; }

    long rows() { return elements() / shape[0]; }

    long bytes() { return type.bytesFor(elements()); }

    /**
     * The tensors of {@code shape} in llama.cpp's order: token embedding, RoPE factors (when wanted and the shape
     * has them), each layer's nine tensors, output norm. Embeddings are tied, so there is no {@code output.weight}.
     */
    static List<TensorPlan> forModel(ModelShape shape, FileType fileType, boolean ropeFreqs) {
        var plans = new ArrayList<TensorPlan>();
        int d = shape.dim();
        plans.add(plan(TensorRole.TOKEN_EMBD, -1, shape, fileType, d, shape.vocabSize()));
        if (ropeFreqs && shape.ropeScaling().isPresent()) {
            plans.add(plan(TensorRole.ROPE_FREQS, -1, shape, fileType, shape.headDim() / 2));
        }
        for (int l = 0; l < shape.layers(); l++) {
            plans.add(plan(TensorRole.ATTN_NORM, l, shape, fileType, d));
            plans.add(plan(TensorRole.ATTN_Q, l, shape, fileType, d, d));
            plans.add(plan(TensorRole.ATTN_K, l, shape, fileType, d, shape.kvDim()));
            plans.add(plan(TensorRole.ATTN_V, l, shape, fileType, d, shape.kvDim()));
            plans.add(plan(TensorRole.ATTN_OUTPUT, l, shape, fileType, d, d));
            plans.add(plan(TensorRole.FFN_NORM, l, shape, fileType, d));
            plans.add(plan(TensorRole.FFN_GATE, l, shape, fileType, d, shape.ffnDim()));
            plans.add(plan(TensorRole.FFN_UP, l, shape, fileType, d, shape.ffnDim()));
            plans.add(plan(TensorRole.FFN_DOWN, l, shape, fileType, shape.ffnDim(), d));
        }
        plans.add(plan(TensorRole.OUTPUT_NORM, -1, shape, fileType, d));
        return List.copyOf(plans);
    }

    private static TensorPlan plan(TensorRole role, int layer, ModelShape shape, FileType fileType, long... dims) {
        return new TensorPlan(role.tensorName(layer), role, layer, fileType.typeOf(role, layer, shape.layers()), dims);
    }
}
