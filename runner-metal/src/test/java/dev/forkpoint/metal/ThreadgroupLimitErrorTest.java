package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class ThreadgroupLimitErrorTest {

    @Test
    void parsesMlxsMessage() {
        // the message of Ollama #18846, as MLX's check_kernel_threadgroup_size words it
        ThreadgroupLimitError e = ThreadgroupLimitError.parse("mlx: Maximum threads per threadgroup is 896 but"
                + " requested 1024 for kernel sdpa_vector_2pass_1_bfloat16_t_256_256_nomask_qnt_c_nosinks_128.")
                .orElseThrow();
        assertEquals(896, e.limit());
        assertEquals(OptionalInt.of(1024), e.requested());
        assertEquals(Optional.of("sdpa_vector_2pass_1_bfloat16_t_256_256_nomask_qnt_c_nosinks_128"), e.kernel());
        assertEquals("the pipeline of sdpa_vector_2pass_1_bfloat16_t_256_256_nomask_qnt_c_nosinks_128 allows 896"
                + " threads per threadgroup (1024 were requested)", e.toString());
    }

    @Test
    void partsMayBeMissing() {
        ThreadgroupLimitError e = ThreadgroupLimitError.parse("Maximum threads per threadgroup is 640").orElseThrow();
        assertEquals(640, e.limit());
        assertTrue(e.requested().isEmpty());
        assertTrue(e.kernel().isEmpty());
        assertEquals(832, ThreadgroupLimitError.parse("panic: mlx: Maximum threads per threadgroup is 832 but requested"
                + " 1024\ngoroutine 1 [running]:").orElseThrow().limit());
    }

    @Test
    void otherMessagesAreNotLimits() {
        assertTrue(ThreadgroupLimitError.parse(null).isEmpty());
        assertTrue(ThreadgroupLimitError.parse("").isEmpty());
        assertTrue(ThreadgroupLimitError.parse("[matmul] Last dimension of first input with shape (1,64)").isEmpty());
        assertTrue(ThreadgroupLimitError.parse("Maximum threads per threadgroup is many").isEmpty());
        assertTrue(ThreadgroupLimitError.parse("Maximum threads per threadgroup is 0").isEmpty());
        assertTrue(ThreadgroupLimitError.parse("Maximum threads per threadgroup is 99999999999").isEmpty());
        assertThrows(IllegalArgumentException.class, () -> new ThreadgroupLimitError(0, OptionalInt.empty(),
                Optional.empty()));
    }

    @Test
    void rememberedLimitsOnlyGoDown() {
        RememberedLimits limits = new RememberedLimits();
        assertTrue(limits.remembered("p").isEmpty());
        assertEquals(1024, limits.effectiveLimit("p", 1024));
        limits.remember("p", 896);
        limits.remember("p", 960);
        assertEquals(896, limits.remembered("p").orElseThrow());
        assertEquals(896, limits.effectiveLimit("p", 1024));
        assertEquals(512, limits.effectiveLimit("p", 512));
        assertThrows(IllegalArgumentException.class, () -> limits.remember("p", 0));
    }
}
