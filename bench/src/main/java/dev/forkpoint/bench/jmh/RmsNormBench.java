package dev.forkpoint.bench.jmh;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * RMSNorm over one activation row, scalar and with the Vector API: a small benchmark that proves the JMH wiring of
 * the bench jar ({@code forkpoint bench jmh RmsNormBench}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0"})
public class RmsNormBench {
    private static final VectorSpecies<Float> SPECIES = FloatVector.SPECIES_PREFERRED;
    private static final float EPS = 1e-5f;

    @Param({"2048"})
    public int size;

    private float[] x;
    private float[] weight;
    private float[] out;

    @Setup
    public void setup() {
        var random = new SplittableRandom(42);
        x = new float[size];
        weight = new float[size];
        out = new float[size];
        for (int i = 0; i < size; i++) {
            x[i] = (float) random.nextGaussian();
            weight[i] = 1f + 0.02f * (float) random.nextGaussian();
        }
    }

    @Benchmark
    public float[] scalar() {
        double ss = 0;
        for (float v : x) ss += v * v;
        float scale = (float) (1 / Math.sqrt(ss / size + EPS));
        for (int i = 0; i < size; i++) out[i] = x[i] * scale * weight[i];
        return out;
    }

    @Benchmark
    public float[] vector() {
        int upper = SPECIES.loopBound(size);
        var acc = FloatVector.zero(SPECIES);
        int i = 0;
        for (; i < upper; i += SPECIES.length()) {
            var v = FloatVector.fromArray(SPECIES, x, i);
            acc = v.fma(v, acc);
        }
        float ss = acc.reduceLanes(VectorOperators.ADD);
        for (; i < size; i++) ss += x[i] * x[i];
        float scale = (float) (1 / Math.sqrt(ss / size + EPS));
        i = 0;
        for (; i < upper; i += SPECIES.length()) {
            FloatVector.fromArray(SPECIES, x, i).mul(scale).mul(FloatVector.fromArray(SPECIES, weight, i)).intoArray(out, i);
        }
        for (; i < size; i++) out[i] = x[i] * scale * weight[i];
        return out;
    }
}
