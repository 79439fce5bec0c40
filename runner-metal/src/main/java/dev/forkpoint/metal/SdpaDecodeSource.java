package dev.forkpoint.metal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The two passes of Forkpoint's SDPA decode kernel as Metal source: the bodies in {@code native/metal} (on the class
 * path under {@code dev/forkpoint/metal/kernels}), their input and output names and the template constants of one
 * instantiation from an {@link SdpaPlan}. MLX writes a body's signature itself ({@code mlx_fast_metal_kernel_new});
 * {@link #standalone} writes the same kernel as a whole Metal library, which is what the Objective-C runtime compiles
 * to read the pipeline's own thread limit before anything is dispatched.
 */
public final class SdpaDecodeSource {

    /** One argument of a kernel: its name and element type ({@code "T"} = the key/value dtype). */
    public record Argument(String name, String type) {}

    /** One kernel: its body (the leading comment removed) and arguments, in buffer order. */
    public record Kernel(String baseName, String body, List<Argument> inputs, List<Argument> outputs) {
        public List<String> inputNames() {
            return inputs.stream().map(Argument::name).toList();
        }

        public List<String> outputNames() {
            return outputs.stream().map(Argument::name).toList();
        }
    }

    public static final Kernel PASS1 = new Kernel("forkpoint_sdpa_decode_pass1", body("sdpa_decode_pass1.metal"),
            List.of(new Argument("q", "float"), new Argument("keys", "T"), new Argument("values", "T"),
                    new Argument("params", "int"), new Argument("scale", "float")),
            List.of(new Argument("partial_max", "float"), new Argument("partial_sum", "float"),
                    new Argument("partial_out", "float")));

    public static final Kernel PASS2 = new Kernel("forkpoint_sdpa_decode_pass2", body("sdpa_decode_pass2.metal"),
            List.of(new Argument("partial_max", "float"), new Argument("partial_sum", "float"),
                    new Argument("partial_out", "float")),
            List.of(new Argument("out", "float")));

    /** The thread-position attributes a body may use, with their Metal types. */
    static final Map<String, String> ATTRIBUTES = attributes();

    private SdpaDecodeSource() {}

    /** Pass 1's template constants for dispatch {@code d} of {@code plan} (the dtype is separate: {@code T}). */
    public static Map<String, Integer> pass1Constants(SdpaPlan plan, Pass1Dispatch d) {
        Map<String, Integer> c = new LinkedHashMap<>();
        c.put("DIM", plan.shape().headDim());
        c.put("GQA", plan.shape().gqa());
        c.put("ROWS", plan.shape().queryRows());
        c.put("BLOCKS", plan.blocks());
        c.put("KEY_TILE", d.keyTile());
        c.put("EPL", d.elementsPerLane());
        c.put("SIMD", plan.limits().simdWidth());
        c.put("TILE_HEADS", d.tile().heads());
        c.put("TILE_ROWS", d.tile().rows());
        return c;
    }

    /** Pass 2's template constants for {@code plan}. */
    public static Map<String, Integer> pass2Constants(SdpaPlan plan) {
        Map<String, Integer> c = new LinkedHashMap<>();
        c.put("DIM", plan.shape().headDim());
        c.put("BLOCKS", plan.blocks());
        c.put("SIMD", plan.limits().simdWidth());
        c.put("SIMD_GROUPS", plan.pass2().simdGroups());
        c.put("BLOCKS_PER_LANE", plan.pass2().blocksPerLane());
        c.put("BLOCKS_PER_SIMD_GROUP", plan.pass2().blocksPerSimdGroup());
        return c;
    }

    /**
     * The kernel as a whole Metal library: the constants, {@code T} as {@code metalType} ("float", "half",
     * "bfloat"), and a kernel function {@code function} whose arguments are the kernel's buffers in order followed by
     * the thread-position attributes its body uses — the shape MLX gives it.
     */
    public static String standalone(Kernel kernel, Map<String, Integer> constants, String metalType, String function) {
        StringBuilder s = new StringBuilder("#include <metal_stdlib>\nusing namespace metal;\n\n");
        constants.forEach((name, value) -> s.append("constant constexpr int ").append(name).append(" = ").append(value).append(";\n"));
        s.append("typedef ").append(metalType).append(" T;\n\n[[kernel]] void ").append(function).append("(\n");
        int buffer = 0;
        StringBuilder args = new StringBuilder();
        for (Argument a : kernel.inputs()) {
            args.append("    const device ").append(a.type()).append("* ").append(a.name()).append(" [[buffer(").append(buffer++).append(")]],\n");
        }
        for (Argument a : kernel.outputs()) {
            args.append("    device ").append(a.type()).append("* ").append(a.name()).append(" [[buffer(").append(buffer++).append(")]],\n");
        }
        for (var attribute : ATTRIBUTES.entrySet()) {
            if (kernel.body().contains(attribute.getKey())) {
                args.append("    ").append(attribute.getValue()).append(' ').append(attribute.getKey())
                        .append(" [[").append(attribute.getKey()).append("]],\n");
            }
        }
        s.append(args, 0, args.length() - 2).append(") {\n").append(kernel.body()).append("}\n");
        return s.toString();
    }

    /** The kernel's name for one instantiation: its base name, the dtype and every constant, so each is one pipeline. */
    public static String instanceName(Kernel kernel, Map<String, Integer> constants, String dtype) {
        return kernel.baseName() + "_" + dtype + constants.entrySet().stream()
                .map(e -> "_" + e.getKey().toLowerCase(java.util.Locale.ROOT) + e.getValue()).collect(Collectors.joining());
    }

    private static Map<String, String> attributes() {
        Map<String, String> a = new LinkedHashMap<>();
        a.put("threadgroup_position_in_grid", "uint3");
        a.put("thread_position_in_threadgroup", "uint3");
        a.put("thread_index_in_threadgroup", "uint");
        a.put("threads_per_threadgroup", "uint3");
        a.put("thread_index_in_simdgroup", "uint");
        a.put("simdgroup_index_in_threadgroup", "uint");
        return a;
    }

    /** A kernel body from the class path, without its leading comment lines. */
    static String body(String file) {
        try (InputStream in = SdpaDecodeSource.class.getResourceAsStream("kernels/" + file)) {
            if (in == null) throw new IllegalStateException("kernel source " + file + " is not on the class path (dev/forkpoint/metal/kernels)");
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            StringBuilder body = new StringBuilder();
            boolean header = true;
            for (String line : text.split("\n", -1)) {
                if (header && (line.startsWith("//") || line.isBlank())) continue;
                header = false;
                body.append(line).append('\n');
            }
            return body.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
