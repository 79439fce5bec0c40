package dev.forkpoint.backend.cpu;

import org.junit.jupiter.api.Assumptions;

import java.util.Optional;

/** The native kernels' variant a test runs, or the test skipped with a line saying why (not built, or not this CPU's). */
final class NativeVariants {
    private NativeVariants() {}

    static NativeKernels kernels(NativeKernels.Variant v, Class<?> test) {
        Object library = NativeKernels.library(System.getenv());
        Assumptions.assumeTrue(library instanceof NativeKernels.Library, () -> "native kernels not built here: " + library);
        Optional<NativeKernels> k = NativeKernels.variant(v);
        if (k.isEmpty()) System.err.println(test.getSimpleName() + ": variant " + v + " not runnable on this CPU (or not built for it): skipped");
        Assumptions.assumeTrue(k.isPresent(), () -> v + " does not run here");
        return k.get();
    }
}
