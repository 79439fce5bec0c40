package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.KernelChoice;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.Optional;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What the native kernel tests share: the variant a test runs, or the test skipped with a line saying why (not built,
 * or not this CPU's); the kernels {@code --kernels native} picks; their inputs and exact-sum assertion; and the
 * {@link Fixture} of a test class (its worker pool and variants).
 */
final class NativeVariants {
    private NativeVariants() {}

    /** Variant v, or the test skipped: a line on stderr names {@code test} when the variant does not run on this CPU. */
    static NativeKernels kernels(NativeKernels.Variant v, Class<?> test) {
        assumeBuilt();
        Optional<NativeKernels> k = NativeKernels.variant(v);
        if (k.isEmpty()) System.err.println(test.getSimpleName() + ": variant " + v + " not runnable on this CPU (or not built for it): skipped");
        Assumptions.assumeTrue(k.isPresent(), () -> v + " does not run here");
        return k.get();
    }

    /** The kernels {@code --kernels native} takes here (the best variant this CPU runs), or the test skipped when none are built. */
    static NativeKernels chosen() {
        assumeBuilt();
        return NativeKernels.forChoice(KernelChoice.NATIVE).orElseThrow();
    }

    private static void assumeBuilt() {
        Object library = NativeKernels.library(System.getenv());
        Assumptions.assumeTrue(library instanceof NativeKernels.Library, () -> "native kernels not built here: " + library);
    }

    /** count standard normal floats from rnd. */
    static float[] gaussian(int count, Random rnd) {
        float[] x = new float[count];
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        return x;
    }

    /** An integer sum exact in float: the Java kernels give it, and the native kernels its very bits. */
    static void assertExactSum(long exact, float java, float nat, String what) {
        assertEquals((float) exact, java, what + " Java");
        assertEquals(Float.floatToRawIntBits((float) exact), Float.floatToRawIntBits(nat), what + ": native " + nat + " vs exact " + exact);
    }

    /**
     * What a native kernel test class shares, registered as
     * {@code @RegisterExtension static final NativeVariants.Fixture fixture = new NativeVariants.Fixture();}: a worker
     * pool of two threads, started before the class's first test and closed after its last, and the variant a test
     * runs ({@link #kernels}, skipped with a line naming the class as {@link NativeVariants#kernels} says).
     */
    static final class Fixture implements BeforeAllCallback, AfterAllCallback {
        private WorkerPool pool;
        private Class<?> test;

        @Override
        public void beforeAll(ExtensionContext context) {
            test = context.getRequiredTestClass();
            pool = new WorkerPool(2);
        }

        @Override
        public void afterAll(ExtensionContext context) {
            pool.close();
        }

        WorkerPool pool() {
            return pool;
        }

        NativeKernels kernels(NativeKernels.Variant v) {
            return NativeVariants.kernels(v, test);
        }

        /** m times the n tokens of x (token-major) on the pool: a new array, m.rows() results a token. */
        float[] multiply(PackedMatrix m, float[] x, int n) {
            float[] out = new float[n * m.rows()];
            m.multiply(x, n, out, pool);
            return out;
        }
    }
}
