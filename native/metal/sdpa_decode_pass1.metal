// Forkpoint's two-pass split-K SDPA decode kernel, pass 1: the body of an MLX custom Metal kernel
// (mlx_fast_metal_kernel_new; MLX writes the signature from the names below). Planned by runner-metal's SdpaPlanner:
// a dispatch covers one tile of the (query head, query row) pairs of every KV head, one SIMD group per pair; one
// threadgroup per (block of keys, KV head); a block's keys are staged through threadgroup memory KEY_TILE at a time
// and reduced with an online softmax. Causal over the query rows: row r of ROWS (the last ROWS positions of the
// sequence) sees the first key_length - (ROWS - 1 - r) keys. Writes, per (KV head, pair of the tile, block), the block's running maximum,
// sum of exponentials and unnormalised output; an empty block writes (-inf, 0, 0).
//
// inputs   q [kv_heads · GQA, ROWS, DIM] float32 · keys, values [kv_heads, capacity, DIM] T
//          params [5] int32: key_length, first_head, first_row, keys_per_block, capacity · scale [1] float32
// outputs  partial_max, partial_sum [kv_heads, TILE_HEADS · TILE_ROWS, BLOCKS] float32
//          partial_out [kv_heads, TILE_HEADS · TILE_ROWS, BLOCKS, DIM] float32
// template T (key/value dtype), DIM, GQA, ROWS, BLOCKS, KEY_TILE, EPL (= ceil(DIM / SIMD)), SIMD, TILE_HEADS, TILE_ROWS
// grid     (SIMD · BLOCKS, TILE_HEADS, TILE_ROWS · kv_heads); threadgroup (SIMD, TILE_HEADS, TILE_ROWS)

const uint lane = thread_position_in_threadgroup.x;
const uint tile_head = thread_position_in_threadgroup.y;
const uint tile_row = thread_position_in_threadgroup.z;
const uint block = threadgroup_position_in_grid.x;
const uint kv_head = threadgroup_position_in_grid.z;
const uint threads = threads_per_threadgroup.x * threads_per_threadgroup.y * threads_per_threadgroup.z;

const int key_length = params[0];
const int head = params[1] + int(tile_head);
const int row = params[2] + int(tile_row);
const int row_keys = key_length - (ROWS - 1 - row);   // causal: a row sees the keys up to its own position
const int keys_per_block = params[3];
const int capacity = params[4];
const float softmax_scale = scale[0];

threadgroup T key_tile[KEY_TILE * DIM];
threadgroup T value_tile[KEY_TILE * DIM];

const device float* query = q + ((size_t(kv_head) * GQA + head) * ROWS + row) * DIM;
float qv[EPL];
float o[EPL];
for (int j = 0; j < EPL; j++) {
    const int e = int(lane) + SIMD * j;
    qv[j] = e < DIM ? query[e] : 0.0f;
    o[j] = 0.0f;
}

const int start = min(key_length, int(block) * keys_per_block);
const int end = min(key_length, start + keys_per_block);
const device T* key_base = keys + size_t(kv_head) * capacity * DIM;
const device T* value_base = values + size_t(kv_head) * capacity * DIM;

float running_max = -INFINITY;
float running_sum = 0.0f;
for (int tile_start = start; tile_start < end; tile_start += KEY_TILE) {   // uniform over the threadgroup
    const int n = min(KEY_TILE, end - tile_start);
    for (uint i = thread_index_in_threadgroup; i < uint(n * DIM); i += threads) {
        key_tile[i] = key_base[size_t(tile_start) * DIM + i];
        value_tile[i] = value_base[size_t(tile_start) * DIM + i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int k = 0; k < n; k++) {
        if (tile_start + k >= row_keys) break;   // the same for every lane of the SIMD group (one row)
        float partial = 0.0f;
        for (int j = 0; j < EPL; j++) {
            const int e = int(lane) + SIMD * j;
            if (e < DIM) partial += qv[j] * float(key_tile[k * DIM + e]);
        }
        const float score = simd_sum(partial) * softmax_scale;
        const float new_max = max(running_max, score);
        const float factor = exp(running_max - new_max);
        const float weight = exp(score - new_max);
        running_sum = running_sum * factor + weight;
        for (int j = 0; j < EPL; j++) {
            const int e = int(lane) + SIMD * j;
            if (e < DIM) o[j] = o[j] * factor + weight * float(value_tile[k * DIM + e]);
        }
        running_max = new_max;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

const size_t pair = size_t(kv_head) * (TILE_HEADS * TILE_ROWS) + tile_head * TILE_ROWS + tile_row;
const size_t at = pair * BLOCKS + block;
if (lane == 0) {
    partial_max[at] = running_max;
    partial_sum[at] = running_sum;
}
for (int j = 0; j < EPL; j++) {
    const int e = int(lane) + SIMD * j;
    if (e < DIM) partial_out[at * DIM + e] = o[j];
}
