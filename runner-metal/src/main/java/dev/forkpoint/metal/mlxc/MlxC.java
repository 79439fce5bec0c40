package dev.forkpoint.metal.mlxc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The raw FFM bindings to MLX-C (0.6, MLX 0.31.2), hand-written in jextract's shape: C type layouts, one
 * {@code FunctionDescriptor} per bound function ({@code NAME$DESC}, in {@link #FUNCTIONS}), one downcall
 * {@code MethodHandle} per function, and a method per function under its C name taking and returning exactly what
 * the C function does (handles are one-pointer structs passed and returned by value as {@code MemorySegment}s of
 * their layout; a struct return takes a {@code SegmentAllocator} first, as jextract's do). Nothing here checks a
 * return code or an error: that is {@link Mlx}'s job.
 *
 * <p>Unlike jextract's output the handles are fields of one instance, not static: where MLX-C lives is known only
 * at run time ({@code MlxLibraryLocator}), and every symbol is looked up when the library is bound, so that a library
 * lacking one fails at load with its name, never at the first call. The declarations are those in
 * {@code native/mlxc-functions.txt}; {@code MlxCDescriptorTest} checks each descriptor against them. 64-bit
 * platforms only ({@code size_t} is {@code long}).
 */
public final class MlxC {

    // C types
    public static final ValueLayout.OfInt C_INT = JAVA_INT;
    public static final ValueLayout.OfLong C_SIZE_T = JAVA_LONG;
    public static final AddressLayout C_POINTER = ADDRESS;

    // handles: typedef struct mlx_X_ { void* ctx; } mlx_X;
    public static final StructLayout mlx_array = handle("mlx_array_");
    public static final StructLayout mlx_stream = handle("mlx_stream_");
    public static final StructLayout mlx_device = handle("mlx_device_");
    public static final StructLayout mlx_string = handle("mlx_string_");
    public static final StructLayout mlx_vector_array = handle("mlx_vector_array_");
    public static final StructLayout mlx_vector_string = handle("mlx_vector_string_");
    public static final StructLayout mlx_fast_metal_kernel = handle("mlx_fast_metal_kernel_");
    public static final StructLayout mlx_fast_metal_kernel_config = handle("mlx_fast_metal_kernel_config_");

    public static final ValueLayout.OfBoolean C_BOOL = ValueLayout.JAVA_BOOLEAN;
    public static final ValueLayout.OfFloat C_FLOAT = ValueLayout.JAVA_FLOAT;

    // optionals (optional.h): typedef struct mlx_optional_X_ { X value; bool has_value; } mlx_optional_X; by value
    public static final StructLayout mlx_optional_int = MemoryLayout.structLayout(
            C_INT.withName("value"), C_BOOL.withName("has_value"), MemoryLayout.paddingLayout(3)).withName("mlx_optional_int_");
    public static final StructLayout mlx_optional_float = MemoryLayout.structLayout(
            C_FLOAT.withName("value"), C_BOOL.withName("has_value"), MemoryLayout.paddingLayout(3)).withName("mlx_optional_float_");
    public static final StructLayout mlx_optional_dtype = MemoryLayout.structLayout(
            C_INT.withName("value"), C_BOOL.withName("has_value"), MemoryLayout.paddingLayout(3)).withName("mlx_optional_dtype_");

    // enum mlx_dtype_ (array.h), enum mlx_device_type_ (device.h)
    public static final int MLX_UINT8 = 1;
    public static final int MLX_UINT32 = 3;
    public static final int MLX_INT32 = 7;
    public static final int MLX_FLOAT16 = 9;
    public static final int MLX_FLOAT32 = 10;
    public static final int MLX_BFLOAT16 = 12;
    public static final int MLX_CPU = 0;
    public static final int MLX_GPU = 1;

    // typedef void (*mlx_error_handler_func)(const char* msg, void* data);
    public static final FunctionDescriptor mlx_error_handler_func$DESC = FunctionDescriptor.ofVoid(C_POINTER, C_POINTER);

    public static final FunctionDescriptor mlx_set_error_handler$DESC =
            FunctionDescriptor.ofVoid(C_POINTER, C_POINTER, C_POINTER);
    public static final FunctionDescriptor mlx_version$DESC = FunctionDescriptor.of(C_INT, C_POINTER);
    public static final FunctionDescriptor mlx_string_new$DESC = FunctionDescriptor.of(mlx_string);
    public static final FunctionDescriptor mlx_string_data$DESC = FunctionDescriptor.of(C_POINTER, mlx_string);
    public static final FunctionDescriptor mlx_string_free$DESC = FunctionDescriptor.of(C_INT, mlx_string);
    public static final FunctionDescriptor mlx_device_new$DESC = FunctionDescriptor.of(mlx_device);
    public static final FunctionDescriptor mlx_get_default_device$DESC = FunctionDescriptor.of(C_INT, C_POINTER);
    public static final FunctionDescriptor mlx_device_free$DESC = FunctionDescriptor.of(C_INT, mlx_device);
    public static final FunctionDescriptor mlx_stream_new$DESC = FunctionDescriptor.of(mlx_stream);
    public static final FunctionDescriptor mlx_get_default_stream$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_device);
    public static final FunctionDescriptor mlx_stream_free$DESC = FunctionDescriptor.of(C_INT, mlx_stream);
    public static final FunctionDescriptor mlx_synchronize$DESC = FunctionDescriptor.of(C_INT, mlx_stream);
    public static final FunctionDescriptor mlx_array_new$DESC = FunctionDescriptor.of(mlx_array);
    public static final FunctionDescriptor mlx_array_new_data$DESC =
            FunctionDescriptor.of(mlx_array, C_POINTER, C_POINTER, C_INT, C_INT);
    public static final FunctionDescriptor mlx_array_free$DESC = FunctionDescriptor.of(C_INT, mlx_array);
    public static final FunctionDescriptor mlx_array_ndim$DESC = FunctionDescriptor.of(C_SIZE_T, mlx_array);
    public static final FunctionDescriptor mlx_array_shape$DESC = FunctionDescriptor.of(C_POINTER, mlx_array);
    public static final FunctionDescriptor mlx_array_strides$DESC = FunctionDescriptor.of(C_POINTER, mlx_array);
    public static final FunctionDescriptor mlx_array_size$DESC = FunctionDescriptor.of(C_SIZE_T, mlx_array);
    public static final FunctionDescriptor mlx_array_dtype$DESC = FunctionDescriptor.of(C_INT, mlx_array);
    public static final FunctionDescriptor mlx_array_data_float32$DESC = FunctionDescriptor.of(C_POINTER, mlx_array);
    public static final FunctionDescriptor mlx_vector_array_new_data$DESC =
            FunctionDescriptor.of(mlx_vector_array, C_POINTER, C_SIZE_T);
    public static final FunctionDescriptor mlx_vector_array_free$DESC = FunctionDescriptor.of(C_INT, mlx_vector_array);
    public static final FunctionDescriptor mlx_eval$DESC = FunctionDescriptor.of(C_INT, mlx_vector_array);
    public static final FunctionDescriptor mlx_async_eval$DESC = FunctionDescriptor.of(C_INT, mlx_vector_array);
    public static final FunctionDescriptor mlx_matmul$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_add$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_get_active_memory$DESC = FunctionDescriptor.of(C_INT, C_POINTER);
    public static final FunctionDescriptor mlx_take_axis$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, C_INT, mlx_stream);
    public static final FunctionDescriptor mlx_reshape$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, C_POINTER, C_SIZE_T, mlx_stream);
    public static final FunctionDescriptor mlx_transpose_axes$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, C_POINTER, C_SIZE_T, mlx_stream);
    public static final FunctionDescriptor mlx_transpose$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_slice$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, C_POINTER, C_SIZE_T, C_POINTER, C_SIZE_T, C_POINTER, C_SIZE_T, mlx_stream);
    public static final FunctionDescriptor mlx_slice_update$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, C_POINTER, C_SIZE_T, C_POINTER, C_SIZE_T, C_POINTER, C_SIZE_T, mlx_stream);
    public static final FunctionDescriptor mlx_concatenate_axis$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_vector_array, C_INT, mlx_stream);
    public static final FunctionDescriptor mlx_astype$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, C_INT, mlx_stream);
    public static final FunctionDescriptor mlx_multiply$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_sigmoid$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_contiguous$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, C_BOOL, mlx_stream);
    public static final FunctionDescriptor mlx_dequantize$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, mlx_array, mlx_optional_int, mlx_optional_int, C_POINTER, mlx_array, mlx_optional_dtype, mlx_stream);
    public static final FunctionDescriptor mlx_quantized_matmul$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, mlx_array, mlx_array, C_BOOL, mlx_optional_int, mlx_optional_int, C_POINTER, mlx_stream);
    public static final FunctionDescriptor mlx_fast_rms_norm$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, C_FLOAT, mlx_stream);
    public static final FunctionDescriptor mlx_fast_rope$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, C_INT, C_BOOL, mlx_optional_float, C_FLOAT, C_INT, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_fast_scaled_dot_product_attention$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, mlx_array, C_FLOAT, C_POINTER, mlx_array, mlx_array, mlx_stream);
    // the hybrids' ops (Gated DeltaNet gates, l2 norm, a fresh state)
    public static final FunctionDescriptor mlx_exp$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_rsqrt$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_square$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_subtract$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_logaddexp$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, mlx_array, mlx_stream);
    public static final FunctionDescriptor mlx_sum_axis$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, mlx_array, C_INT, C_BOOL, mlx_stream);
    public static final FunctionDescriptor mlx_zeros$DESC =
            FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_SIZE_T, C_INT, mlx_stream);
    public static final FunctionDescriptor mlx_device_get_type$DESC = FunctionDescriptor.of(C_INT, C_POINTER, mlx_device);
    public static final FunctionDescriptor mlx_metal_is_available$DESC = FunctionDescriptor.of(C_INT, C_POINTER);
    public static final FunctionDescriptor mlx_vector_array_new$DESC = FunctionDescriptor.of(mlx_vector_array);
    public static final FunctionDescriptor mlx_vector_array_size$DESC = FunctionDescriptor.of(C_SIZE_T, mlx_vector_array);
    public static final FunctionDescriptor mlx_vector_array_get$DESC = FunctionDescriptor.of(C_INT, C_POINTER, mlx_vector_array, C_SIZE_T);
    public static final FunctionDescriptor mlx_vector_string_new_data$DESC = FunctionDescriptor.of(mlx_vector_string, C_POINTER, C_SIZE_T);
    public static final FunctionDescriptor mlx_vector_string_free$DESC = FunctionDescriptor.of(C_INT, mlx_vector_string);
    public static final FunctionDescriptor mlx_fast_metal_kernel_new$DESC = FunctionDescriptor.of(mlx_fast_metal_kernel, C_POINTER, mlx_vector_string, mlx_vector_string, C_POINTER, C_POINTER, C_BOOL, C_BOOL);
    public static final FunctionDescriptor mlx_fast_metal_kernel_free$DESC = FunctionDescriptor.ofVoid(mlx_fast_metal_kernel);
    public static final FunctionDescriptor mlx_fast_metal_kernel_apply$DESC = FunctionDescriptor.of(C_INT, C_POINTER, mlx_fast_metal_kernel, mlx_vector_array, mlx_fast_metal_kernel_config, mlx_stream);
    public static final FunctionDescriptor mlx_fast_metal_kernel_config_new$DESC = FunctionDescriptor.of(mlx_fast_metal_kernel_config);
    public static final FunctionDescriptor mlx_fast_metal_kernel_config_free$DESC = FunctionDescriptor.ofVoid(mlx_fast_metal_kernel_config);
    public static final FunctionDescriptor mlx_fast_metal_kernel_config_add_output_arg$DESC = FunctionDescriptor.of(C_INT, mlx_fast_metal_kernel_config, C_POINTER, C_SIZE_T, C_INT);
    public static final FunctionDescriptor mlx_fast_metal_kernel_config_set_grid$DESC = FunctionDescriptor.of(C_INT, mlx_fast_metal_kernel_config, C_INT, C_INT, C_INT);
    public static final FunctionDescriptor mlx_fast_metal_kernel_config_set_thread_group$DESC = FunctionDescriptor.of(C_INT, mlx_fast_metal_kernel_config, C_INT, C_INT, C_INT);
    public static final FunctionDescriptor mlx_fast_metal_kernel_config_add_template_arg_dtype$DESC = FunctionDescriptor.of(C_INT, mlx_fast_metal_kernel_config, C_POINTER, C_INT);
    public static final FunctionDescriptor mlx_fast_metal_kernel_config_add_template_arg_int$DESC = FunctionDescriptor.of(C_INT, mlx_fast_metal_kernel_config, C_POINTER, C_INT);

    /** Every function bound here, by C name, in binding order (the error handler first). */
    public static final Map<String, FunctionDescriptor> FUNCTIONS = functions();

    private final String where;
    private final MethodHandle mlx_set_error_handler$MH;
    private final MethodHandle mlx_version$MH;
    private final MethodHandle mlx_string_new$MH;
    private final MethodHandle mlx_string_data$MH;
    private final MethodHandle mlx_string_free$MH;
    private final MethodHandle mlx_device_new$MH;
    private final MethodHandle mlx_get_default_device$MH;
    private final MethodHandle mlx_device_free$MH;
    private final MethodHandle mlx_stream_new$MH;
    private final MethodHandle mlx_get_default_stream$MH;
    private final MethodHandle mlx_stream_free$MH;
    private final MethodHandle mlx_synchronize$MH;
    private final MethodHandle mlx_array_new$MH;
    private final MethodHandle mlx_array_new_data$MH;
    private final MethodHandle mlx_array_free$MH;
    private final MethodHandle mlx_array_ndim$MH;
    private final MethodHandle mlx_array_shape$MH;
    private final MethodHandle mlx_array_strides$MH;
    private final MethodHandle mlx_array_size$MH;
    private final MethodHandle mlx_array_dtype$MH;
    private final MethodHandle mlx_array_data_float32$MH;
    private final MethodHandle mlx_vector_array_new_data$MH;
    private final MethodHandle mlx_vector_array_free$MH;
    private final MethodHandle mlx_eval$MH;
    private final MethodHandle mlx_async_eval$MH;
    private final MethodHandle mlx_matmul$MH;
    private final MethodHandle mlx_add$MH;
    private final MethodHandle mlx_get_active_memory$MH;
    private final MethodHandle mlx_take_axis$MH;
    private final MethodHandle mlx_reshape$MH;
    private final MethodHandle mlx_transpose_axes$MH;
    private final MethodHandle mlx_transpose$MH;
    private final MethodHandle mlx_slice$MH;
    private final MethodHandle mlx_slice_update$MH;
    private final MethodHandle mlx_concatenate_axis$MH;
    private final MethodHandle mlx_astype$MH;
    private final MethodHandle mlx_multiply$MH;
    private final MethodHandle mlx_sigmoid$MH;
    private final MethodHandle mlx_contiguous$MH;
    private final MethodHandle mlx_dequantize$MH;
    private final MethodHandle mlx_quantized_matmul$MH;
    private final MethodHandle mlx_fast_rms_norm$MH;
    private final MethodHandle mlx_fast_rope$MH;
    private final MethodHandle mlx_fast_scaled_dot_product_attention$MH;
    private final MethodHandle mlx_exp$MH;
    private final MethodHandle mlx_rsqrt$MH;
    private final MethodHandle mlx_square$MH;
    private final MethodHandle mlx_subtract$MH;
    private final MethodHandle mlx_logaddexp$MH;
    private final MethodHandle mlx_sum_axis$MH;
    private final MethodHandle mlx_zeros$MH;
    private final MethodHandle mlx_device_get_type$MH;
    private final MethodHandle mlx_metal_is_available$MH;
    private final MethodHandle mlx_vector_array_new$MH;
    private final MethodHandle mlx_vector_array_size$MH;
    private final MethodHandle mlx_vector_array_get$MH;
    private final MethodHandle mlx_vector_string_new_data$MH;
    private final MethodHandle mlx_vector_string_free$MH;
    private final MethodHandle mlx_fast_metal_kernel_new$MH;
    private final MethodHandle mlx_fast_metal_kernel_free$MH;
    private final MethodHandle mlx_fast_metal_kernel_apply$MH;
    private final MethodHandle mlx_fast_metal_kernel_config_new$MH;
    private final MethodHandle mlx_fast_metal_kernel_config_free$MH;
    private final MethodHandle mlx_fast_metal_kernel_config_add_output_arg$MH;
    private final MethodHandle mlx_fast_metal_kernel_config_set_grid$MH;
    private final MethodHandle mlx_fast_metal_kernel_config_set_thread_group$MH;
    private final MethodHandle mlx_fast_metal_kernel_config_add_template_arg_dtype$MH;
    private final MethodHandle mlx_fast_metal_kernel_config_add_template_arg_int$MH;

    private MlxC(String where, Map<String, MethodHandle> h) {
        this.where = where;
        mlx_set_error_handler$MH = h.get("mlx_set_error_handler");
        mlx_version$MH = h.get("mlx_version");
        mlx_string_new$MH = h.get("mlx_string_new");
        mlx_string_data$MH = h.get("mlx_string_data");
        mlx_string_free$MH = h.get("mlx_string_free");
        mlx_device_new$MH = h.get("mlx_device_new");
        mlx_get_default_device$MH = h.get("mlx_get_default_device");
        mlx_device_free$MH = h.get("mlx_device_free");
        mlx_stream_new$MH = h.get("mlx_stream_new");
        mlx_get_default_stream$MH = h.get("mlx_get_default_stream");
        mlx_stream_free$MH = h.get("mlx_stream_free");
        mlx_synchronize$MH = h.get("mlx_synchronize");
        mlx_array_new$MH = h.get("mlx_array_new");
        mlx_array_new_data$MH = h.get("mlx_array_new_data");
        mlx_array_free$MH = h.get("mlx_array_free");
        mlx_array_ndim$MH = h.get("mlx_array_ndim");
        mlx_array_shape$MH = h.get("mlx_array_shape");
        mlx_array_strides$MH = h.get("mlx_array_strides");
        mlx_array_size$MH = h.get("mlx_array_size");
        mlx_array_dtype$MH = h.get("mlx_array_dtype");
        mlx_array_data_float32$MH = h.get("mlx_array_data_float32");
        mlx_vector_array_new_data$MH = h.get("mlx_vector_array_new_data");
        mlx_vector_array_free$MH = h.get("mlx_vector_array_free");
        mlx_eval$MH = h.get("mlx_eval");
        mlx_async_eval$MH = h.get("mlx_async_eval");
        mlx_matmul$MH = h.get("mlx_matmul");
        mlx_add$MH = h.get("mlx_add");
        mlx_get_active_memory$MH = h.get("mlx_get_active_memory");
        mlx_take_axis$MH = h.get("mlx_take_axis");
        mlx_reshape$MH = h.get("mlx_reshape");
        mlx_transpose_axes$MH = h.get("mlx_transpose_axes");
        mlx_transpose$MH = h.get("mlx_transpose");
        mlx_slice$MH = h.get("mlx_slice");
        mlx_slice_update$MH = h.get("mlx_slice_update");
        mlx_concatenate_axis$MH = h.get("mlx_concatenate_axis");
        mlx_astype$MH = h.get("mlx_astype");
        mlx_multiply$MH = h.get("mlx_multiply");
        mlx_sigmoid$MH = h.get("mlx_sigmoid");
        mlx_contiguous$MH = h.get("mlx_contiguous");
        mlx_dequantize$MH = h.get("mlx_dequantize");
        mlx_quantized_matmul$MH = h.get("mlx_quantized_matmul");
        mlx_fast_rms_norm$MH = h.get("mlx_fast_rms_norm");
        mlx_fast_rope$MH = h.get("mlx_fast_rope");
        mlx_fast_scaled_dot_product_attention$MH = h.get("mlx_fast_scaled_dot_product_attention");
        mlx_exp$MH = h.get("mlx_exp");
        mlx_rsqrt$MH = h.get("mlx_rsqrt");
        mlx_square$MH = h.get("mlx_square");
        mlx_subtract$MH = h.get("mlx_subtract");
        mlx_logaddexp$MH = h.get("mlx_logaddexp");
        mlx_sum_axis$MH = h.get("mlx_sum_axis");
        mlx_zeros$MH = h.get("mlx_zeros");
        mlx_device_get_type$MH = h.get("mlx_device_get_type");
        mlx_metal_is_available$MH = h.get("mlx_metal_is_available");
        mlx_vector_array_new$MH = h.get("mlx_vector_array_new");
        mlx_vector_array_size$MH = h.get("mlx_vector_array_size");
        mlx_vector_array_get$MH = h.get("mlx_vector_array_get");
        mlx_vector_string_new_data$MH = h.get("mlx_vector_string_new_data");
        mlx_vector_string_free$MH = h.get("mlx_vector_string_free");
        mlx_fast_metal_kernel_new$MH = h.get("mlx_fast_metal_kernel_new");
        mlx_fast_metal_kernel_free$MH = h.get("mlx_fast_metal_kernel_free");
        mlx_fast_metal_kernel_apply$MH = h.get("mlx_fast_metal_kernel_apply");
        mlx_fast_metal_kernel_config_new$MH = h.get("mlx_fast_metal_kernel_config_new");
        mlx_fast_metal_kernel_config_free$MH = h.get("mlx_fast_metal_kernel_config_free");
        mlx_fast_metal_kernel_config_add_output_arg$MH = h.get("mlx_fast_metal_kernel_config_add_output_arg");
        mlx_fast_metal_kernel_config_set_grid$MH = h.get("mlx_fast_metal_kernel_config_set_grid");
        mlx_fast_metal_kernel_config_set_thread_group$MH = h.get("mlx_fast_metal_kernel_config_set_thread_group");
        mlx_fast_metal_kernel_config_add_template_arg_dtype$MH = h.get("mlx_fast_metal_kernel_config_add_template_arg_dtype");
        mlx_fast_metal_kernel_config_add_template_arg_int$MH = h.get("mlx_fast_metal_kernel_config_add_template_arg_int");
    }

    /**
     * Binds every function in {@link #FUNCTIONS} from {@code lookup}; {@code where} names the library in messages.
     *
     * @throws MlxUnavailableException naming every function the library lacks
     */
    public static MlxC bind(SymbolLookup lookup, String where) {
        Linker linker = Linker.nativeLinker();
        Map<String, MethodHandle> handles = new LinkedHashMap<>();
        List<String> missing = new ArrayList<>();
        FUNCTIONS.forEach((name, descriptor) -> {
            Optional<MemorySegment> symbol = lookup.find(name);
            if (symbol.isEmpty()) {
                missing.add(name);
            } else {
                handles.put(name, linker.downcallHandle(symbol.get(), descriptor));
            }
        });
        if (!missing.isEmpty()) {
            throw new MlxUnavailableException(MlxUnavailableException.Reason.MISSING_SYMBOLS,
                    List.of("MLX-C at " + where + " lacks " + String.join(", ", missing)));
        }
        return new MlxC(where, handles);
    }

    /** The library these handles were bound from, as given to {@link #bind}. */
    public String where() {
        return where;
    }

    public void mlx_set_error_handler(MemorySegment handler, MemorySegment data, MemorySegment dtor) {
        try {
            mlx_set_error_handler$MH.invokeExact(handler, data, dtor);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_version(MemorySegment str) {
        try {
            return (int) mlx_version$MH.invokeExact(str);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_string_new(SegmentAllocator allocator) {
        try {
            return (MemorySegment) mlx_string_new$MH.invokeExact(allocator);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_string_data(MemorySegment str) {
        try {
            return (MemorySegment) mlx_string_data$MH.invokeExact(str);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_string_free(MemorySegment str) {
        try {
            return (int) mlx_string_free$MH.invokeExact(str);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_device_new(SegmentAllocator allocator) {
        try {
            return (MemorySegment) mlx_device_new$MH.invokeExact(allocator);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_get_default_device(MemorySegment dev) {
        try {
            return (int) mlx_get_default_device$MH.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_device_free(MemorySegment dev) {
        try {
            return (int) mlx_device_free$MH.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_stream_new(SegmentAllocator allocator) {
        try {
            return (MemorySegment) mlx_stream_new$MH.invokeExact(allocator);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_get_default_stream(MemorySegment stream, MemorySegment dev) {
        try {
            return (int) mlx_get_default_stream$MH.invokeExact(stream, dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_stream_free(MemorySegment stream) {
        try {
            return (int) mlx_stream_free$MH.invokeExact(stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_synchronize(MemorySegment stream) {
        try {
            return (int) mlx_synchronize$MH.invokeExact(stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_array_new(SegmentAllocator allocator) {
        try {
            return (MemorySegment) mlx_array_new$MH.invokeExact(allocator);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_array_new_data(SegmentAllocator allocator, MemorySegment data, MemorySegment shape,
                                            int dim, int dtype) {
        try {
            return (MemorySegment) mlx_array_new_data$MH.invokeExact(allocator, data, shape, dim, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_array_free(MemorySegment arr) {
        try {
            return (int) mlx_array_free$MH.invokeExact(arr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public long mlx_array_ndim(MemorySegment arr) {
        try {
            return (long) mlx_array_ndim$MH.invokeExact(arr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_array_shape(MemorySegment arr) {
        try {
            return (MemorySegment) mlx_array_shape$MH.invokeExact(arr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_array_strides(MemorySegment arr) {
        try {
            return (MemorySegment) mlx_array_strides$MH.invokeExact(arr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public long mlx_array_size(MemorySegment arr) {
        try {
            return (long) mlx_array_size$MH.invokeExact(arr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_array_dtype(MemorySegment arr) {
        try {
            return (int) mlx_array_dtype$MH.invokeExact(arr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_array_data_float32(MemorySegment arr) {
        try {
            return (MemorySegment) mlx_array_data_float32$MH.invokeExact(arr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_vector_array_new_data(SegmentAllocator allocator, MemorySegment data, long size) {
        try {
            return (MemorySegment) mlx_vector_array_new_data$MH.invokeExact(allocator, data, size);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_vector_array_free(MemorySegment vec) {
        try {
            return (int) mlx_vector_array_free$MH.invokeExact(vec);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_eval(MemorySegment outputs) {
        try {
            return (int) mlx_eval$MH.invokeExact(outputs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_async_eval(MemorySegment outputs) {
        try {
            return (int) mlx_async_eval$MH.invokeExact(outputs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_matmul(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try {
            return (int) mlx_matmul$MH.invokeExact(res, a, b, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_add(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try {
            return (int) mlx_add$MH.invokeExact(res, a, b, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_get_active_memory(MemorySegment res) {
        try {
            return (int) mlx_get_active_memory$MH.invokeExact(res);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_take_axis(MemorySegment res, MemorySegment a, MemorySegment indices, int axis, MemorySegment s) {
        try {
            return (int) mlx_take_axis$MH.invokeExact(res, a, indices, axis, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_reshape(MemorySegment res, MemorySegment a, MemorySegment shape, long shape_num, MemorySegment s) {
        try {
            return (int) mlx_reshape$MH.invokeExact(res, a, shape, shape_num, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_transpose_axes(MemorySegment res, MemorySegment a, MemorySegment axes, long axes_num, MemorySegment s) {
        try {
            return (int) mlx_transpose_axes$MH.invokeExact(res, a, axes, axes_num, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_transpose(MemorySegment res, MemorySegment a, MemorySegment s) {
        try {
            return (int) mlx_transpose$MH.invokeExact(res, a, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_slice(MemorySegment res, MemorySegment a, MemorySegment start, long start_num, MemorySegment stop, long stop_num, MemorySegment strides, long strides_num, MemorySegment s) {
        try {
            return (int) mlx_slice$MH.invokeExact(res, a, start, start_num, stop, stop_num, strides, strides_num, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_slice_update(MemorySegment res, MemorySegment src, MemorySegment update, MemorySegment start, long start_num, MemorySegment stop, long stop_num, MemorySegment strides, long strides_num, MemorySegment s) {
        try {
            return (int) mlx_slice_update$MH.invokeExact(res, src, update, start, start_num, stop, stop_num, strides, strides_num, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_concatenate_axis(MemorySegment res, MemorySegment arrays, int axis, MemorySegment s) {
        try {
            return (int) mlx_concatenate_axis$MH.invokeExact(res, arrays, axis, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_astype(MemorySegment res, MemorySegment a, int dtype, MemorySegment s) {
        try {
            return (int) mlx_astype$MH.invokeExact(res, a, dtype, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_multiply(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try {
            return (int) mlx_multiply$MH.invokeExact(res, a, b, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_sigmoid(MemorySegment res, MemorySegment a, MemorySegment s) {
        try {
            return (int) mlx_sigmoid$MH.invokeExact(res, a, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_contiguous(MemorySegment res, MemorySegment a, boolean allow_col_major, MemorySegment s) {
        try {
            return (int) mlx_contiguous$MH.invokeExact(res, a, allow_col_major, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_dequantize(MemorySegment res, MemorySegment w, MemorySegment scales, MemorySegment biases, MemorySegment group_size, MemorySegment bits, MemorySegment mode, MemorySegment global_scale, MemorySegment dtype, MemorySegment s) {
        try {
            return (int) mlx_dequantize$MH.invokeExact(res, w, scales, biases, group_size, bits, mode, global_scale, dtype, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_quantized_matmul(MemorySegment res, MemorySegment x, MemorySegment w, MemorySegment scales, MemorySegment biases, boolean transpose, MemorySegment group_size, MemorySegment bits, MemorySegment mode, MemorySegment s) {
        try {
            return (int) mlx_quantized_matmul$MH.invokeExact(res, x, w, scales, biases, transpose, group_size, bits, mode, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_rms_norm(MemorySegment res, MemorySegment x, MemorySegment weight, float eps, MemorySegment s) {
        try {
            return (int) mlx_fast_rms_norm$MH.invokeExact(res, x, weight, eps, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_rope(MemorySegment res, MemorySegment x, int dims, boolean traditional, MemorySegment base, float scale, int offset, MemorySegment freqs, MemorySegment s) {
        try {
            return (int) mlx_fast_rope$MH.invokeExact(res, x, dims, traditional, base, scale, offset, freqs, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_scaled_dot_product_attention(MemorySegment res, MemorySegment queries, MemorySegment keys, MemorySegment values, float scale, MemorySegment mask_mode, MemorySegment mask_arr, MemorySegment sinks, MemorySegment s) {
        try {
            return (int) mlx_fast_scaled_dot_product_attention$MH.invokeExact(res, queries, keys, values, scale, mask_mode, mask_arr, sinks, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_exp(MemorySegment res, MemorySegment a, MemorySegment s) {
        try {
            return (int) mlx_exp$MH.invokeExact(res, a, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_rsqrt(MemorySegment res, MemorySegment a, MemorySegment s) {
        try {
            return (int) mlx_rsqrt$MH.invokeExact(res, a, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_square(MemorySegment res, MemorySegment a, MemorySegment s) {
        try {
            return (int) mlx_square$MH.invokeExact(res, a, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_subtract(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try {
            return (int) mlx_subtract$MH.invokeExact(res, a, b, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_logaddexp(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try {
            return (int) mlx_logaddexp$MH.invokeExact(res, a, b, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_sum_axis(MemorySegment res, MemorySegment a, int axis, boolean keepdims, MemorySegment s) {
        try {
            return (int) mlx_sum_axis$MH.invokeExact(res, a, axis, keepdims, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_zeros(MemorySegment res, MemorySegment shape, long shape_num, int dtype, MemorySegment s) {
        try {
            return (int) mlx_zeros$MH.invokeExact(res, shape, shape_num, dtype, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_device_get_type(MemorySegment type, MemorySegment dev) {
        try {
            return (int) mlx_device_get_type$MH.invokeExact(type, dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_metal_is_available(MemorySegment res) {
        try {
            return (int) mlx_metal_is_available$MH.invokeExact(res);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_vector_array_new(SegmentAllocator allocator) {
        try {
            return (MemorySegment) mlx_vector_array_new$MH.invokeExact(allocator);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public long mlx_vector_array_size(MemorySegment vec) {
        try {
            return (long) mlx_vector_array_size$MH.invokeExact(vec);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_vector_array_get(MemorySegment res, MemorySegment vec, long idx) {
        try {
            return (int) mlx_vector_array_get$MH.invokeExact(res, vec, idx);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_vector_string_new_data(SegmentAllocator allocator, MemorySegment data, long size) {
        try {
            return (MemorySegment) mlx_vector_string_new_data$MH.invokeExact(allocator, data, size);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_vector_string_free(MemorySegment vec) {
        try {
            return (int) mlx_vector_string_free$MH.invokeExact(vec);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_fast_metal_kernel_new(SegmentAllocator allocator, MemorySegment name, MemorySegment input_names, MemorySegment output_names, MemorySegment source, MemorySegment header, boolean ensure_row_contiguous, boolean atomic_outputs) {
        try {
            return (MemorySegment) mlx_fast_metal_kernel_new$MH.invokeExact(allocator, name, input_names, output_names, source, header, ensure_row_contiguous, atomic_outputs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void mlx_fast_metal_kernel_free(MemorySegment cls) {
        try {
            mlx_fast_metal_kernel_free$MH.invokeExact(cls);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_metal_kernel_apply(MemorySegment outputs, MemorySegment cls, MemorySegment inputs, MemorySegment config, MemorySegment stream) {
        try {
            return (int) mlx_fast_metal_kernel_apply$MH.invokeExact(outputs, cls, inputs, config, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_fast_metal_kernel_config_new(SegmentAllocator allocator) {
        try {
            return (MemorySegment) mlx_fast_metal_kernel_config_new$MH.invokeExact(allocator);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void mlx_fast_metal_kernel_config_free(MemorySegment cls) {
        try {
            mlx_fast_metal_kernel_config_free$MH.invokeExact(cls);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_metal_kernel_config_add_output_arg(MemorySegment cls, MemorySegment shape, long size, int dtype) {
        try {
            return (int) mlx_fast_metal_kernel_config_add_output_arg$MH.invokeExact(cls, shape, size, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_metal_kernel_config_set_grid(MemorySegment cls, int grid1, int grid2, int grid3) {
        try {
            return (int) mlx_fast_metal_kernel_config_set_grid$MH.invokeExact(cls, grid1, grid2, grid3);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_metal_kernel_config_set_thread_group(MemorySegment cls, int thread1, int thread2, int thread3) {
        try {
            return (int) mlx_fast_metal_kernel_config_set_thread_group$MH.invokeExact(cls, thread1, thread2, thread3);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_metal_kernel_config_add_template_arg_dtype(MemorySegment cls, MemorySegment name, int dtype) {
        try {
            return (int) mlx_fast_metal_kernel_config_add_template_arg_dtype$MH.invokeExact(cls, name, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_metal_kernel_config_add_template_arg_int(MemorySegment cls, MemorySegment name, int value) {
        try {
            return (int) mlx_fast_metal_kernel_config_add_template_arg_int$MH.invokeExact(cls, name, value);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static StructLayout handle(String name) {
        return MemoryLayout.structLayout(C_POINTER.withName("ctx")).withName(name);
    }

    private static Map<String, FunctionDescriptor> functions() {
        Map<String, FunctionDescriptor> f = new LinkedHashMap<>();
        f.put("mlx_set_error_handler", mlx_set_error_handler$DESC);
        f.put("mlx_version", mlx_version$DESC);
        f.put("mlx_string_new", mlx_string_new$DESC);
        f.put("mlx_string_data", mlx_string_data$DESC);
        f.put("mlx_string_free", mlx_string_free$DESC);
        f.put("mlx_device_new", mlx_device_new$DESC);
        f.put("mlx_get_default_device", mlx_get_default_device$DESC);
        f.put("mlx_device_free", mlx_device_free$DESC);
        f.put("mlx_stream_new", mlx_stream_new$DESC);
        f.put("mlx_get_default_stream", mlx_get_default_stream$DESC);
        f.put("mlx_stream_free", mlx_stream_free$DESC);
        f.put("mlx_synchronize", mlx_synchronize$DESC);
        f.put("mlx_array_new", mlx_array_new$DESC);
        f.put("mlx_array_new_data", mlx_array_new_data$DESC);
        f.put("mlx_array_free", mlx_array_free$DESC);
        f.put("mlx_array_ndim", mlx_array_ndim$DESC);
        f.put("mlx_array_shape", mlx_array_shape$DESC);
        f.put("mlx_array_strides", mlx_array_strides$DESC);
        f.put("mlx_array_size", mlx_array_size$DESC);
        f.put("mlx_array_dtype", mlx_array_dtype$DESC);
        f.put("mlx_array_data_float32", mlx_array_data_float32$DESC);
        f.put("mlx_vector_array_new_data", mlx_vector_array_new_data$DESC);
        f.put("mlx_vector_array_free", mlx_vector_array_free$DESC);
        f.put("mlx_eval", mlx_eval$DESC);
        f.put("mlx_async_eval", mlx_async_eval$DESC);
        f.put("mlx_matmul", mlx_matmul$DESC);
        f.put("mlx_add", mlx_add$DESC);
        f.put("mlx_get_active_memory", mlx_get_active_memory$DESC);
        f.put("mlx_take_axis", mlx_take_axis$DESC);
        f.put("mlx_reshape", mlx_reshape$DESC);
        f.put("mlx_transpose_axes", mlx_transpose_axes$DESC);
        f.put("mlx_transpose", mlx_transpose$DESC);
        f.put("mlx_slice", mlx_slice$DESC);
        f.put("mlx_slice_update", mlx_slice_update$DESC);
        f.put("mlx_concatenate_axis", mlx_concatenate_axis$DESC);
        f.put("mlx_astype", mlx_astype$DESC);
        f.put("mlx_multiply", mlx_multiply$DESC);
        f.put("mlx_sigmoid", mlx_sigmoid$DESC);
        f.put("mlx_contiguous", mlx_contiguous$DESC);
        f.put("mlx_dequantize", mlx_dequantize$DESC);
        f.put("mlx_quantized_matmul", mlx_quantized_matmul$DESC);
        f.put("mlx_fast_rms_norm", mlx_fast_rms_norm$DESC);
        f.put("mlx_fast_rope", mlx_fast_rope$DESC);
        f.put("mlx_fast_scaled_dot_product_attention", mlx_fast_scaled_dot_product_attention$DESC);
        f.put("mlx_exp", mlx_exp$DESC);
        f.put("mlx_rsqrt", mlx_rsqrt$DESC);
        f.put("mlx_square", mlx_square$DESC);
        f.put("mlx_subtract", mlx_subtract$DESC);
        f.put("mlx_logaddexp", mlx_logaddexp$DESC);
        f.put("mlx_sum_axis", mlx_sum_axis$DESC);
        f.put("mlx_zeros", mlx_zeros$DESC);
        f.put("mlx_device_get_type", mlx_device_get_type$DESC);
        f.put("mlx_metal_is_available", mlx_metal_is_available$DESC);
        f.put("mlx_vector_array_new", mlx_vector_array_new$DESC);
        f.put("mlx_vector_array_size", mlx_vector_array_size$DESC);
        f.put("mlx_vector_array_get", mlx_vector_array_get$DESC);
        f.put("mlx_vector_string_new_data", mlx_vector_string_new_data$DESC);
        f.put("mlx_vector_string_free", mlx_vector_string_free$DESC);
        f.put("mlx_fast_metal_kernel_new", mlx_fast_metal_kernel_new$DESC);
        f.put("mlx_fast_metal_kernel_free", mlx_fast_metal_kernel_free$DESC);
        f.put("mlx_fast_metal_kernel_apply", mlx_fast_metal_kernel_apply$DESC);
        f.put("mlx_fast_metal_kernel_config_new", mlx_fast_metal_kernel_config_new$DESC);
        f.put("mlx_fast_metal_kernel_config_free", mlx_fast_metal_kernel_config_free$DESC);
        f.put("mlx_fast_metal_kernel_config_add_output_arg", mlx_fast_metal_kernel_config_add_output_arg$DESC);
        f.put("mlx_fast_metal_kernel_config_set_grid", mlx_fast_metal_kernel_config_set_grid$DESC);
        f.put("mlx_fast_metal_kernel_config_set_thread_group", mlx_fast_metal_kernel_config_set_thread_group$DESC);
        f.put("mlx_fast_metal_kernel_config_add_template_arg_dtype", mlx_fast_metal_kernel_config_add_template_arg_dtype$DESC);
        f.put("mlx_fast_metal_kernel_config_add_template_arg_int", mlx_fast_metal_kernel_config_add_template_arg_int$DESC);
        return Collections.unmodifiableMap(f);
    }

    /** A downcall's Throwable: unchecked ones as they are (the handles declare none checked). */
    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new AssertionError("a downcall threw a checked exception", t);
    }
}
