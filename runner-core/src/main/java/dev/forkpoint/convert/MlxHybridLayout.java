package dev.forkpoint.convert;

import dev.forkpoint.model.TensorRows;
import java.util.ArrayList;
import java.util.List;

/**
 * The tensors of a Qwen3.5 hybrid as an MLX folder lays them out (mlx-lm's {@code qwen3_5_moe} sanitize): Hugging
 * Face's fused experts {@code P.mlp.experts.gate_up_proj} [E, 2I, H] become {@code P.mlp.switch_mlp.gate_proj.weight}
 * (rows {@code [:I]} of each expert) and {@code P.mlp.switch_mlp.up_proj.weight} (rows {@code [I:]}), both [E, I, H],
 * and {@code P.mlp.experts.down_proj} [E, H, I] becomes {@code P.mlp.switch_mlp.down_proj.weight}. Every other tensor
 * keeps its name, shape and values (the convolution stays [C, 1, K], so loaders still add 1 to the zero-centred
 * norms). Values are never copied here: the new tensors read the source's rows.
 */
final class MlxHybridLayout {
    private static final String GATE_UP = ".mlp.experts.gate_up_proj";
    private static final String DOWN = ".mlp.experts.down_proj";

    private MlxHybridLayout() {}

    /** The tensors to write, in the source's order (a fused expert tensor replaced by its two halves in place). */
    static List<TensorRows> tensors(List<TensorRows> source) {
        List<TensorRows> out = new ArrayList<>(source.size() + 8);
        for (TensorRows t : source) {
            if (t.name().endsWith(GATE_UP) && t.shape().length == 3) {
                String layer = t.name().substring(0, t.name().length() - GATE_UP.length());
                out.add(half(t, layer + ".mlp.switch_mlp.gate_proj.weight", 0));
                out.add(half(t, layer + ".mlp.switch_mlp.up_proj.weight", 1));
            } else if (t.name().endsWith(DOWN) && t.shape().length == 3) {
                String layer = t.name().substring(0, t.name().length() - DOWN.length());
                out.add(new TensorRows(layer + ".mlp.switch_mlp.down_proj.weight", t.shape(), t.floatType(), t.origin(), t.reader()));
            } else {
                out.add(t);
            }
        }
        return out;
    }

    /**
     * Half {@code which} (0: gate, 1: up) of each expert's 2I rows: row {@code e·I + i} of the result is source row
     * {@code e·2I + which·I + i}. (The source's shape was checked against config.json: axis 1 is 2·moe_intermediate_size.)
     */
    private static TensorRows half(TensorRows t, String name, int which) {
        long[] s = t.shape();
        int inter = Math.toIntExact(s[1] / 2);
        TensorRows.RowReader r = t.reader();
        return new TensorRows(name, new long[]{s[0], inter, s[2]}, t.floatType(), t.origin() + (which == 0 ? " [gate rows]" : " [up rows]"),
                (row, dst) -> r.read((row / inter) * 2 * inter + which * inter + row % inter, dst));
    }
}
