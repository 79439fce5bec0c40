package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.IntVector;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The vector float16 conversion of AffineMatrix's row scales against the JDK's, for every finite half value. */
class HalfToFloatTest {
    @Test
    void everyFiniteHalfConvertsExactly() {
        int[] lanes = new int[KernelSupport.L];
        float[] out = new float[KernelSupport.L];
        for (int h = 0; h < 65536; h += lanes.length) {
            for (int i = 0; i < lanes.length; i++) lanes[i] = (short) (h + i);   // sign-extended, as S2I gives
            AffineMatrix.halfToFloat(IntVector.fromArray(KernelSupport.I, lanes, 0)).intoArray(out, 0);
            for (int i = 0; i < lanes.length; i++) {
                int bits = (h + i) & 0xffff;
                if ((bits & 0x7c00) == 0x7c00) continue;   // infinities and NaNs take the table
                assertEquals(Float.floatToRawIntBits(Float.float16ToFloat((short) bits)), Float.floatToRawIntBits(out[i]),
                        "half 0x" + Integer.toHexString(bits));
            }
        }
    }
}
