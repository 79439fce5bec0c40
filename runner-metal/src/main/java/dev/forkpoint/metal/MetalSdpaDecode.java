package dev.forkpoint.metal;

import dev.forkpoint.metal.mlxc.KernelLaunch;
import dev.forkpoint.metal.mlxc.MlxArray;
import dev.forkpoint.metal.mlxc.MlxC;
import dev.forkpoint.metal.mlxc.MlxException;
import dev.forkpoint.metal.mlxc.MlxMetalKernel;
import dev.forkpoint.metal.mlxc.MlxSession;
import dev.forkpoint.metal.objc.MetalCompileException;
import dev.forkpoint.metal.objc.MetalPipelineCompiler;
import dev.forkpoint.metal.objc.PipelineLimits;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Forkpoint's SDPA decode kernel ({@code native/metal}) on MLX's Metal stream, for up to {@value #MAX_ROWS} query
 * rows per sequence (decode, speculative verify). Invariant: no dispatch asks for more threads per threadgroup than the
 * compiled pipeline allows.
 * <ul>
 *   <li>The limit comes from the pipeline itself: each variant (key dtype, head dim) is compiled once through the
 *       Objective-C runtime ({@link MetalPipelineCompiler}) and its {@code maxTotalThreadsPerThreadgroup} read, the
 *       smaller of the two passes'. Without that compiler the device's 1024 is assumed.</li>
 *   <li>{@link SdpaPlanner} plans within it (and within any lower limit remembered for the variant); every pass-1
 *       dispatch is followed by its pass 2, and the tiles' outputs are put together in (head, row) order.</li>
 *   <li>The result is evaluated here: when MLX still says "Maximum threads per threadgroup is N", N is remembered for
 *       the variant and the call is planned and run once more; any other failure of the kernel is its error.</li>
 * </ul>
 * All on the MLX thread of one session.
 */
final class MetalSdpaDecode implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(MetalSdpaDecode.class.getName());

    /** Query rows per sequence this kernel takes (MLX's own decode kernel's range; more rows are a prefill). */
    static final int MAX_ROWS = 8;

    private final MlxSession s;
    private final Optional<MetalPipelineCompiler> compiler;
    private final RememberedLimits remembered;
    private final Map<String, GpuLimits> limits = new HashMap<>();
    private MlxMetalKernel pass1;
    private MlxMetalKernel pass2;

    MetalSdpaDecode(MlxSession session, Optional<MetalPipelineCompiler> compiler) {
        this(session, compiler, new RememberedLimits());
    }

    /** With limits already remembered per variant ({@code forkpoint_sdpa_decode_<f32|f16|bf16>_d<head dim>}). */
    MetalSdpaDecode(MlxSession session, Optional<MetalPipelineCompiler> compiler, RememberedLimits remembered) {
        this.s = session;
        this.compiler = compiler;
        this.remembered = remembered;
    }

    /**
     * Causal attention of {@code rows} query rows — the last {@code rows} positions of a sequence of {@code keyLength}
     * — over its keys and values.
     *
     * @param q      [rows, kvHeads · gqa · headDim] float32; query head h reads KV head h / gqa
     * @param keys   [kvHeads, keyLength, headDim] of {@code dtype} (an {@code MLX_*} float dtype); values the same
     * @return [rows, kvHeads · gqa · headDim] float32, evaluated
     */
    MlxArray attend(MlxArray q, MlxArray keys, MlxArray values, int kvHeads, int gqa, int rows, int headDim,
                    int keyLength, int dtype) {
        if (rows < 1 || rows > MAX_ROWS) throw new IllegalArgumentException("the decode kernel takes 1 … " + MAX_ROWS + " rows, got " + rows);
        SdpaShape shape = new SdpaShape(gqa, rows, headDim, keyLength, dtype == MlxC.MLX_FLOAT32 ? 4 : 2);
        String variant = "forkpoint_sdpa_decode_" + dtypeName(dtype) + "_d" + headDim;
        s.eval(q, keys, values);   // an error evaluated below is then the kernel's, not its inputs'
        try (MlxArray q3 = s.reshape(q, rows, kvHeads * gqa, headDim);
             MlxArray qHeads = s.transpose(q3, 1, 0, 2)) {   // [kvHeads·gqa, rows, headDim]
            SdpaPlan plan = SdpaPlanner.plan(limits(variant, dtype, shape), shape, variant, remembered);
            for (int attempt = 0; ; attempt++) {
                MlxArray out = run(plan, qHeads, keys, values, kvHeads, dtype);
                try {
                    s.eval(out);
                    return out;
                } catch (MlxException e) {
                    out.close();
                    Replan r = SdpaPlanner.replan(plan, e.getMessage(), variant, remembered);
                    if (attempt > 0 || !(r instanceof Replan.Replanned replanned)) throw e;
                    LOG.log(System.Logger.Level.INFO, "{0}: MLX allows {1} threads per threadgroup, not the {2} planned; planned again",
                            variant, replanned.error().limit(), plan.maxThreadsPerThreadgroup());
                    plan = replanned.plan();
                }
            }
        }
    }

    /** Every pass-1 dispatch and its pass 2, the tiles put together: [rows, kvHeads · gqa · headDim], lazy. */
    private MlxArray run(SdpaPlan plan, MlxArray qHeads, MlxArray keys, MlxArray values, int kvHeads, int dtype) {
        SdpaShape shape = plan.shape();
        int simd = plan.limits().simdWidth(), blocks = plan.blocks(), dim = shape.headDim();
        List<MlxArray> tiles = new ArrayList<>();
        try (MlxArray scale = s.fromFloats(new float[] {(float) (1 / Math.sqrt(dim))}, 1)) {
            for (Pass1Dispatch d : plan.pass1()) {
                int pairs = d.tile().pairs();
                try (MlxArray params = s.fromInts(new int[] {shape.keyLength(), d.tile().firstHead(), d.tile().firstRow(),
                        d.keysPerBlock(), shape.keyLength()}, 5)) {
                    KernelLaunch one = new KernelLaunch(
                            new int[] {simd * blocks, d.tile().heads(), d.tile().rows() * kvHeads},
                            new int[] {d.threadgroup().x(), d.threadgroup().y(), d.threadgroup().z()},
                            SdpaDecodeSource.pass1Constants(plan, d), Map.of("T", dtype),
                            List.of(new KernelLaunch.Output(new int[] {kvHeads, pairs, blocks}, MlxC.MLX_FLOAT32),
                                    new KernelLaunch.Output(new int[] {kvHeads, pairs, blocks}, MlxC.MLX_FLOAT32),
                                    new KernelLaunch.Output(new int[] {kvHeads, pairs, blocks, dim}, MlxC.MLX_FLOAT32)));
                    List<MlxArray> partials = s.applyKernel(pass1(), List.of(qHeads, keys, values, params, scale), one);
                    try {
                        KernelLaunch two = new KernelLaunch(
                                new int[] {simd, plan.pass2().simdGroups(), kvHeads * pairs},
                                new int[] {plan.pass2().threadgroup().x(), plan.pass2().threadgroup().y(), 1},
                                SdpaDecodeSource.pass2Constants(plan), Map.of(),
                                List.of(new KernelLaunch.Output(new int[] {kvHeads * pairs, dim}, MlxC.MLX_FLOAT32)));
                        List<MlxArray> out = s.applyKernel(pass2(), partials, two);
                        try (MlxArray flat = out.getFirst()) {
                            tiles.add(s.reshape(flat, kvHeads, d.tile().heads(), d.tile().rows(), dim));
                        }
                    } finally {
                        for (MlxArray a : partials) a.close();
                    }
                }
            }
            return assemble(s, tiles, plan.pass1().stream().map(Pass1Dispatch::tile).toList(), shape.gqa() * kvHeads * dim);
        } finally {
            for (MlxArray t : tiles) t.close();
        }
    }

    /**
     * The tiles' outputs ([kvHeads, tile heads, tile rows, headDim] each, in the plan's order: row ranges over the
     * whole GQA group, or head ranges of one row, row after row) as [rows, kvHeads · gqa · headDim].
     */
    static MlxArray assemble(MlxSession s, List<MlxArray> tiles, List<PairTile> tileList, int width) {
        List<MlxArray> made = new ArrayList<>();
        try {
            List<MlxArray> rowGroups = new ArrayList<>();
            for (int i = 0; i < tiles.size(); ) {
                int j = i;
                while (j < tiles.size() && tileList.get(j).firstRow() == tileList.get(i).firstRow()) j++;
                if (j - i == 1) {
                    rowGroups.add(tiles.get(i));
                } else {   // head ranges of one row, side by side
                    MlxArray heads = s.concatenate(1, tiles.subList(i, j).toArray(MlxArray[]::new));
                    made.add(heads);
                    rowGroups.add(heads);
                }
                i = j;
            }
            MlxArray all = rowGroups.size() == 1 ? rowGroups.getFirst() : s.concatenate(2, rowGroups.toArray(MlxArray[]::new));
            if (rowGroups.size() > 1) made.add(all);
            try (MlxArray byRow = s.transpose(all, 2, 0, 1, 3)) {   // [rows, kvHeads, gqa, headDim]
                int rows = byRow.shape()[0];
                return s.reshape(byRow, rows, width);
            }
        } finally {
            for (MlxArray a : made) a.close();
        }
    }

    /** The variant's limits: read from its compiled pipelines (the smaller pass's), or the device's 1024 assumed. */
    private GpuLimits limits(String variant, int dtype, SdpaShape shape) {
        return limits.computeIfAbsent(variant, v -> {
            if (compiler.isEmpty()) return GpuLimits.apple(1024);
            SdpaPlan nominal = SdpaPlanner.plan(GpuLimits.apple(1024), shape);
            String type = metalType(dtype);
            try {
                PipelineLimits one = compiler.get().compile(SdpaDecodeSource.standalone(SdpaDecodeSource.PASS1,
                        SdpaDecodeSource.pass1Constants(nominal, nominal.pass1().getFirst()), type, "pass1"), "pass1");
                PipelineLimits two = compiler.get().compile(SdpaDecodeSource.standalone(SdpaDecodeSource.PASS2,
                        SdpaDecodeSource.pass2Constants(nominal), type, "pass2"), "pass2");
                GpuLimits l = new GpuLimits(Math.min(one.maxTotalThreadsPerThreadgroup(), two.maxTotalThreadsPerThreadgroup()),
                        one.threadExecutionWidth(), one.deviceThreadgroupMemoryBytes());
                LOG.log(System.Logger.Level.DEBUG, "{0}: {1}", v, l);
                return l;
            } catch (MetalCompileException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        });
    }

    private MlxMetalKernel pass1() {
        if (pass1 == null) pass1 = s.metalKernel(SdpaDecodeSource.PASS1.baseName(), SdpaDecodeSource.PASS1.inputNames(),
                SdpaDecodeSource.PASS1.outputNames(), SdpaDecodeSource.PASS1.body());
        return pass1;
    }

    private MlxMetalKernel pass2() {
        if (pass2 == null) pass2 = s.metalKernel(SdpaDecodeSource.PASS2.baseName(), SdpaDecodeSource.PASS2.inputNames(),
                SdpaDecodeSource.PASS2.outputNames(), SdpaDecodeSource.PASS2.body());
        return pass2;
    }

    private static String dtypeName(int dtype) {
        return switch (dtype) {
            case MlxC.MLX_FLOAT32 -> "f32";
            case MlxC.MLX_FLOAT16 -> "f16";
            case MlxC.MLX_BFLOAT16 -> "bf16";
            default -> throw new IllegalArgumentException("the decode kernel reads float keys, not mlx_dtype " + dtype);
        };
    }

    private static String metalType(int dtype) {
        return switch (dtype) {
            case MlxC.MLX_FLOAT32 -> "float";
            case MlxC.MLX_FLOAT16 -> "half";
            case MlxC.MLX_BFLOAT16 -> "bfloat";
            default -> throw new IllegalArgumentException("mlx_dtype " + dtype);
        };
    }

    @Override
    public void close() {
        if (pass1 != null) pass1.close();
        if (pass2 != null) pass2.close();
        compiler.ifPresent(MetalPipelineCompiler::close);
    }
}
