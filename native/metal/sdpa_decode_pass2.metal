// Forkpoint's two-pass split-K SDPA decode kernel, pass 2: the body of an MLX custom Metal kernel. One threadgroup
// per (KV head, pair of the tile) reduces pass 1's BLOCKS partials: every lane takes BLOCKS_PER_LANE blocks'
// statistics (lane l: l, l + SIMD, …) for the global maximum and sum; SIMD group w adds blocks w, w + SIMD_GROUPS, …
// into its row of threadgroup memory; SIMD group 0 adds the rows and divides by the sum.
//
// inputs   partial_max, partial_sum [pairs, BLOCKS] float32 · partial_out [pairs, BLOCKS, DIM] float32
//          (pairs = kv_heads · TILE_HEADS · TILE_ROWS, as pass 1 wrote them)
// outputs  out [pairs, DIM] float32
// template DIM, BLOCKS, SIMD, SIMD_GROUPS, BLOCKS_PER_LANE (= BLOCKS / SIMD), BLOCKS_PER_SIMD_GROUP (= BLOCKS / SIMD_GROUPS)
// grid     (SIMD, SIMD_GROUPS, pairs); threadgroup (SIMD, SIMD_GROUPS, 1)

const uint lane = thread_index_in_simdgroup;
const uint simd_group = simdgroup_index_in_threadgroup;
const size_t pair = threadgroup_position_in_grid.z;
const device float* block_max = partial_max + pair * BLOCKS;
const device float* block_sum = partial_sum + pair * BLOCKS;
const device float* block_out = partial_out + pair * BLOCKS * DIM;

threadgroup float rows[SIMD_GROUPS * DIM];

float lane_max = -INFINITY;
for (int i = 0; i < BLOCKS_PER_LANE; i++) lane_max = max(lane_max, block_max[lane + SIMD * i]);
const float global_max = simd_max(lane_max);
float lane_sum = 0.0f;
for (int i = 0; i < BLOCKS_PER_LANE; i++) {
    const int b = int(lane) + SIMD * i;
    lane_sum += exp(block_max[b] - global_max) * block_sum[b];
}
const float total = simd_sum(lane_sum);

for (int e = int(lane); e < DIM; e += SIMD) {
    float acc = 0.0f;
    for (int i = 0; i < BLOCKS_PER_SIMD_GROUP; i++) {
        const int b = int(simd_group) + SIMD_GROUPS * i;
        acc += exp(block_max[b] - global_max) * block_out[size_t(b) * DIM + e];
    }
    rows[simd_group * DIM + e] = acc;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (simd_group == 0) {
    for (int e = int(lane); e < DIM; e += SIMD) {
        float acc = 0.0f;
        for (int g = 0; g < SIMD_GROUPS; g++) acc += rows[g * DIM + e];
        out[pair * DIM + e] = acc / total;
    }
}
