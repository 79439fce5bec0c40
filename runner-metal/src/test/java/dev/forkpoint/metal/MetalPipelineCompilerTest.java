package dev.forkpoint.metal;

import dev.forkpoint.metal.objc.MetalCompileException;
import dev.forkpoint.metal.objc.MetalPipelineCompiler;
import dev.forkpoint.metal.objc.PipelineLimits;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.Locale;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The Objective-C path to a compiled pipeline's own limits (macOS with a Metal GPU; elsewhere {@link
 * MetalPipelineCompiler#open} says why not, which is checked everywhere): both passes of the SDPA decode kernel
 * compile from {@code native/metal} as {@link SdpaDecodeSource#standalone} writes them, and report a thread limit
 * that is a whole number of SIMD groups, at most 1024, with the SIMD width Apple GPUs have; a source that does not
 * compile is Metal's message, not a crash.
 */
@Tag("metal")
class MetalPipelineCompilerTest {

    private static MetalPipelineCompiler compiler() {
        MetalPipelineCompiler.Result r = MetalPipelineCompiler.open();
        boolean mac = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac");
        if (r.compiler().isEmpty() && mac && "1".equals(System.getenv("FORKPOINT_REQUIRE_MLX"))) {
            fail("FORKPOINT_REQUIRE_MLX=1 on macOS but Metal is not usable: " + r.reason());
        }
        Assumptions.assumeTrue(r.compiler().isPresent(), r.reason());
        return r.compiler().get();
    }

    @Test
    void offMacOsTheReasonIsSaid() {
        Assumptions.assumeFalse(System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac"));
        MetalPipelineCompiler.Result r = MetalPipelineCompiler.open();
        assertTrue(r.compiler().isEmpty());
        assertTrue(r.reason().startsWith("Metal pipelines are read on macOS only (this is "), r.reason());
    }

    @Test
    void bothPassesCompileAndReportTheirLimits() {
        try (MetalPipelineCompiler c = compiler()) {
            SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(1024), new SdpaShape(8, 4, 256, 4096, 2));
            for (String type : new String[] {"half", "float"}) {
                PipelineLimits p1 = c.compile(SdpaDecodeSource.standalone(SdpaDecodeSource.PASS1,
                        SdpaDecodeSource.pass1Constants(plan, plan.pass1().getFirst()), type, "pass1"), "pass1");
                PipelineLimits p2 = c.compile(SdpaDecodeSource.standalone(SdpaDecodeSource.PASS2,
                        SdpaDecodeSource.pass2Constants(plan), type, "pass2"), "pass2");
                for (PipelineLimits p : new PipelineLimits[] {p1, p2}) {
                    assertEquals(32, p.threadExecutionWidth(), p::toString);
                    assertTrue(p.maxTotalThreadsPerThreadgroup() >= 32 && p.maxTotalThreadsPerThreadgroup() <= 1024
                            && p.maxTotalThreadsPerThreadgroup() % 32 == 0, p::toString);
                    assertTrue(p.deviceThreadgroupMemoryBytes() >= 16 * 1024, p::toString);
                }
                System.err.println("Metal " + c.deviceName() + ", " + type + ": pass 1 " + p1 + "; pass 2 " + p2);
            }
        }
    }

    @Test
    void aSourceThatDoesNotCompileIsMetalsMessage() {
        try (MetalPipelineCompiler c = compiler()) {
            var e = assertThrows(MetalCompileException.class,
                    () -> c.compile("#include <metal_stdlib>\nkernel void broken(device float* x [[buffer(0)]]) { x[0] = y; }\n", "broken"));
            assertTrue(e.getMessage().startsWith("Metal kernel broken: the source does not compile: "), e.getMessage());
            var missing = assertThrows(MetalCompileException.class,
                    () -> c.compile("#include <metal_stdlib>\nkernel void k(device float* x [[buffer(0)]]) { x[0] = 1; }\n", "other"));
            assertEquals("Metal kernel other: the library has no kernel named other", missing.getMessage());
        }
    }
}
