package dev.forkpoint.metal.mlxc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Each function {@link MlxC} binds is listed in {@code native/mlxc-functions.txt}, and its descriptor is what the
 * C declaration there says (return and parameter types, mapped as jextract maps them). Runs everywhere: no MLX-C.
 */
class MlxCDescriptorTest {

    private static final Path LIST = Path.of("..", "native", "mlxc-functions.txt");

    @Test
    void everyBoundFunctionMatchesItsListedDeclaration() throws IOException {
        Map<String, String> declarations = new HashMap<>();
        for (String line : Files.readAllLines(LIST)) {
            String[] parts = line.strip().split(" \\| ", -1);
            if (parts.length == 3 && !line.startsWith("#")) {
                declarations.put(parts[0], parts[2]);
            }
        }
        assertEquals("mlx_set_error_handler", MlxC.FUNCTIONS.keySet().iterator().next(), "the handler is bound first");
        MlxC.FUNCTIONS.forEach((name, descriptor) -> {
            String declaration = declarations.get(name);
            assertNotNull(declaration, name + " is bound but not listed in " + LIST);
            assertEquals(fromDeclaration(name, declaration), descriptor, name + ": " + declaration);
        });
    }

    @Test
    void theHandlerTypeMatchesErrorH() {
        assertEquals(FunctionDescriptor.ofVoid(MlxC.C_POINTER, MlxC.C_POINTER), MlxC.mlx_error_handler_func$DESC);
        for (var handle : List.of(MlxC.mlx_array, MlxC.mlx_stream, MlxC.mlx_device, MlxC.mlx_string,
                MlxC.mlx_vector_array)) {
            assertEquals(8, handle.byteSize(), handle + " is one pointer");
        }
    }

    /** {@code ret name(type a, type b);} as a descriptor. */
    static FunctionDescriptor fromDeclaration(String name, String declaration) {
        String d = declaration.replaceAll("/\\*.*?\\*/", " ").strip();
        int open = d.indexOf(name + "(");
        assertTrue(open > 0 && d.endsWith(");"), declaration);
        String ret = d.substring(0, open).strip();
        String params = d.substring(open + name.length() + 1, d.length() - 2).strip();
        List<MemoryLayout> args = new ArrayList<>();
        if (!params.equals("void") && !params.isEmpty()) {
            for (String param : splitTopLevel(params)) {
                args.add(type(param, true));
            }
        }
        MemoryLayout[] argArray = args.toArray(MemoryLayout[]::new);
        return ret.equals("void") ? FunctionDescriptor.ofVoid(argArray)
                : FunctionDescriptor.of(type(ret, false), argArray);
    }

    private static List<String> splitTopLevel(String params) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < params.length(); i++) {
            char ch = params.charAt(i);
            if (ch == '(') {
                depth++;
            } else if (ch == ')') {
                depth--;
            } else if (ch == ',' && depth == 0) {
                out.add(params.substring(start, i).strip());
                start = i + 1;
            }
        }
        out.add(params.substring(start).strip());
        return out;
    }

    /** A C type (with a parameter name when {@code named}) as the layout jextract would give it. */
    private static MemoryLayout type(String text, boolean named) {
        String t = text.replace("const ", " ").strip();
        if (t.contains("*") || t.contains("(")) {
            return MlxC.C_POINTER;
        }
        if (named) {
            t = t.substring(0, t.lastIndexOf(' ')).strip();
        }
        return switch (t) {
            case "int", "mlx_dtype", "mlx_device_type" -> MlxC.C_INT;
            case "size_t" -> MlxC.C_SIZE_T;
            case "float" -> ValueLayout.JAVA_FLOAT;
            case "bool" -> ValueLayout.JAVA_BOOLEAN;
            case "mlx_error_handler_func" -> MlxC.C_POINTER;
            case "mlx_array" -> MlxC.mlx_array;
            case "mlx_stream" -> MlxC.mlx_stream;
            case "mlx_device" -> MlxC.mlx_device;
            case "mlx_string" -> MlxC.mlx_string;
            case "mlx_vector_array" -> MlxC.mlx_vector_array;
            case "mlx_vector_string" -> MlxC.mlx_vector_string;
            case "mlx_fast_metal_kernel" -> MlxC.mlx_fast_metal_kernel;
            case "mlx_fast_metal_kernel_config" -> MlxC.mlx_fast_metal_kernel_config;
            case "mlx_optional_int" -> MlxC.mlx_optional_int;
            case "mlx_optional_float" -> MlxC.mlx_optional_float;
            case "mlx_optional_dtype" -> MlxC.mlx_optional_dtype;
            default -> throw new AssertionError("a C type this test does not map: " + text);
        };
    }
}
