package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.Activation;

/** An activation matrix held as floats, row-major: row t is data[t·width … (t+1)·width). */
record CpuActivation(float[] data, int tokens, int width) implements Activation {
    CpuActivation {
        if (data.length != tokens * width) throw new IllegalArgumentException(data.length + " values for " + tokens + "×" + width);
    }

    static CpuActivation zeros(int tokens, int width) {
        return new CpuActivation(new float[tokens * width], tokens, width);
    }
}
