package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The planned two-pass decode in Java, in f32 and in the order the kernels compute it (per dispatch, per
 * threadgroup, per SIMD group, per lane), for one KV head. Used to check that a plan's decomposition is attention.
 */
final class SdpaEmulation {

    private SdpaEmulation() {}

    /**
     * @param q      per pair (head·rows + row), head dim values
     * @param keys   per key, head dim values
     * @param values per key, head dim values
     * @return per pair, head dim outputs
     */
    static float[][] run(SdpaPlan plan, float[][] q, float[][] keys, float[][] values, float scale) {
        SdpaShape shape = plan.shape();
        int simd = plan.limits().simdWidth();
        int dim = shape.headDim();
        int blocks = plan.blocks();
        int pairs = shape.pairs();
        float[][] blockMax = new float[pairs][blocks];
        float[][] blockSum = new float[pairs][blocks];
        float[][][] blockOut = new float[pairs][blocks][];

        // pass 1: every dispatch, every threadgroup (block), every SIMD group (pair of the tile)
        for (Pass1Dispatch d : plan.pass1()) {
            for (int b = 0; b < d.blocks(); b++) {
                int start = Math.min(shape.keyLength(), b * d.keysPerBlock());
                int end = Math.min(shape.keyLength(), start + d.keysPerBlock());
                for (int h = d.tile().firstHead(); h < d.tile().firstHead() + d.tile().heads(); h++) {
                    for (int r = d.tile().firstRow(); r < d.tile().firstRow() + d.tile().rows(); r++) {
                        int pair = h * shape.queryRows() + r;
                        assertEquals(null, blockOut[pair][b], "pair " + pair + " block " + b + " written twice");
                        pass1Block(q[pair], keys, values, start, end, d.keyTile(), simd, d.elementsPerLane(), scale,
                                blockMax[pair], blockSum[pair], blockOut[pair], b, dim);
                    }
                }
            }
        }

        // pass 2: one threadgroup per pair
        Pass2Dispatch p2 = plan.pass2();
        float[][] out = new float[pairs][];
        for (int pair = 0; pair < pairs; pair++) {
            for (int b = 0; b < blocks; b++) {
                assertEquals(true, blockOut[pair][b] != null, "pair " + pair + " block " + b + " never written");
            }
            out[pair] = pass2(blockMax[pair], blockSum[pair], blockOut[pair], simd, p2, dim);
        }
        return out;
    }

    /** One SIMD group over one block's keys, in key tiles, with an online softmax. */
    private static void pass1Block(float[] q, float[][] keys, float[][] values, int start, int end, int keyTile,
                                   int simd, int elementsPerLane, float scale, float[] maxOut, float[] sumOut,
                                   float[][] outOut, int block, int dim) {
        float max = Float.NEGATIVE_INFINITY;
        float sum = 0;
        float[] o = new float[dim];
        float[] lanePartial = new float[simd];
        for (int tileStart = start; tileStart < end; tileStart += keyTile) {
            int tileEnd = Math.min(end, tileStart + keyTile);
            for (int k = tileStart; k < tileEnd; k++) {
                for (int lane = 0; lane < simd; lane++) {
                    float p = 0;
                    for (int j = 0; j < elementsPerLane; j++) {
                        int e = lane + simd * j;
                        if (e < dim) {
                            p += q[e] * keys[k][e];
                        }
                    }
                    lanePartial[lane] = p;
                }
                float score = simdSum(lanePartial) * scale;
                float newMax = Math.max(max, score);
                float factor = (float) Math.exp(max - newMax);
                float weight = (float) Math.exp(score - newMax);
                sum = sum * factor + weight;
                for (int e = 0; e < dim; e++) {
                    o[e] = o[e] * factor + weight * values[k][e];
                }
                max = newMax;
            }
        }
        maxOut[block] = max;   // an empty block: (−∞, 0, 0)
        sumOut[block] = sum;
        outOut[block] = o;
    }

    private static float[] pass2(float[] blockMax, float[] blockSum, float[][] blockOut, int simd, Pass2Dispatch p2,
                                 int dim) {
        int blocks = blockMax.length;
        // every lane reads blocksPerLane blocks' statistics: lane l gets l, l + simd, …
        float[] laneMax = new float[simd];
        for (int lane = 0; lane < simd; lane++) {
            float m = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < p2.blocksPerLane(); i++) {
                m = Math.max(m, blockMax[lane + simd * i]);
            }
            laneMax[lane] = m;
        }
        float max = Float.NEGATIVE_INFINITY;
        for (float m : laneMax) {
            max = Math.max(max, m);
        }
        float[] laneSum = new float[simd];
        for (int lane = 0; lane < simd; lane++) {
            float s = 0;
            for (int i = 0; i < p2.blocksPerLane(); i++) {
                int b = lane + simd * i;
                s += (float) Math.exp(blockMax[b] - max) * blockSum[b];
            }
            laneSum[lane] = s;
        }
        float sum = simdSum(laneSum);
        // SIMD group w adds blocks w, w + W, … into its row of threadgroup memory
        int groups = p2.simdGroups();
        float[][] rows = new float[groups][dim];
        for (int w = 0; w < groups; w++) {
            for (int i = 0; i < p2.blocksPerSimdGroup(); i++) {
                int b = w + groups * i;
                float factor = (float) Math.exp(blockMax[b] - max);
                for (int e = 0; e < dim; e++) {
                    rows[w][e] += factor * blockOut[b][e];
                }
            }
        }
        assertEquals(blocks, groups * p2.blocksPerSimdGroup());
        float[] out = new float[dim];
        for (int e = 0; e < dim; e++) {
            float acc = 0;
            for (int w = 0; w < groups; w++) {
                acc += rows[w][e];
            }
            out[e] = acc / sum;
        }
        return out;
    }

    /** A SIMD sum as a tree (the order a simd_sum reduces in does not matter to the tolerance, but be honest). */
    private static float simdSum(float[] lanes) {
        float[] v = lanes.clone();
        for (int width = v.length; width > 1; width = (width + 1) / 2) {
            int half = (width + 1) / 2;
            for (int i = 0; i + half < width; i++) {
                v[i] += v[i + half];
            }
        }
        return v[0];
    }

    /** Attention of the same f32 inputs, computed in double. */
    static double[][] naive(float[][] q, float[][] keys, float[][] values, double scale) {
        int dim = keys[0].length;
        double[][] out = new double[q.length][dim];
        double[] scores = new double[keys.length];
        for (int pair = 0; pair < q.length; pair++) {
            double max = Double.NEGATIVE_INFINITY;
            for (int k = 0; k < keys.length; k++) {
                double s = 0;
                for (int e = 0; e < dim; e++) {
                    s += (double) q[pair][e] * keys[k][e];
                }
                scores[k] = s * scale;
                max = Math.max(max, scores[k]);
            }
            double sum = 0;
            for (int k = 0; k < keys.length; k++) {
                double w = Math.exp(scores[k] - max);
                sum += w;
                for (int e = 0; e < dim; e++) {
                    out[pair][e] += w * values[k][e];
                }
            }
            for (int e = 0; e < dim; e++) {
                out[pair][e] /= sum;
            }
        }
        return out;
    }
}
