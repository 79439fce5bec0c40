package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@code native/mlxc-functions.txt}: well formed, no name twice, and every function issue 14 names is listed. */
class NativeFunctionListTest {

    private static final Path LIST = Path.of("..", "native", "mlxc-functions.txt");
    private static final Pattern NAME = Pattern.compile("mlx_[a-z0-9_]+");

    @Test
    void theListIsWellFormedAndComplete() throws IOException {
        Map<String, String> declarations = new LinkedHashMap<>();
        List<String> lines = Files.readAllLines(LIST);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String where = LIST + ":" + (i + 1) + ": " + line;
            String[] parts = line.split(" \\| ", -1);
            assertTrue(parts.length == 1 || parts.length == 3, "name, or name | header | declaration: " + where);
            String name = parts[0];
            assertTrue(NAME.matcher(name).matches(), "a function name: " + where);
            String declaration = "";
            if (parts.length == 3) {
                assertTrue(parts[1].matches("mlx/c/[a-z_]+\\.h"), "a header: " + where);
                declaration = parts[2];
                assertTrue(declaration.endsWith(");") && declaration.contains(" " + name + "(")
                        || declaration.contains("*" + name + "("), "a declaration of " + name + ": " + where);
            }
            assertEquals(null, declarations.put(name, declaration), "listed twice: " + where);
        }
        for (String required : List.of("mlx_set_error_handler", "mlx_fast_scaled_dot_product_attention",
                "mlx_quantized_matmul", "mlx_fast_rms_norm", "mlx_fast_rope", "mlx_fast_metal_kernel_new",
                "mlx_fast_metal_kernel_apply", "mlx_fast_metal_kernel_config_new",
                "mlx_fast_metal_kernel_config_set_grid", "mlx_fast_metal_kernel_config_set_thread_group",
                "mlx_device_info_get", "mlx_version", "mlx_array_new", "mlx_array_free", "mlx_stream_new",
                "mlx_stream_free", "mlx_eval", "mlx_async_eval", "mlx_get_active_memory")) {
            assertTrue(declarations.containsKey(required), required + " is listed in " + LIST);
        }
        // the facts the backend depends on, as the headers state them
        assertEquals("int mlx_fast_scaled_dot_product_attention(mlx_array* res, const mlx_array queries,"
                + " const mlx_array keys, const mlx_array values, float scale, const char* mask_mode,"
                + " const mlx_array mask_arr /* may be null */, const mlx_array sinks /* may be null */,"
                + " const mlx_stream s);", declarations.get("mlx_fast_scaled_dot_product_attention"));
        assertEquals("void mlx_set_error_handler(mlx_error_handler_func handler, void* data, void (*dtor)(void*));",
                declarations.get("mlx_set_error_handler"));
    }
}
