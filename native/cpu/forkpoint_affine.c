/*
 * Forkpoint's native CPU kernels for MLX affine-quantised matrices at 4 and 8 bits (issue 15; one concept per file:
 * forkpoint_kernels.c holds Q8_0 and Q4_0, fp_cpu_features() and the ABI version). Written for this project;
 * compiled into the same library, under the same invariants (see the top of forkpoint_kernels.c): a (row, token)
 * result depends only on that row's and that token's bytes, never on n, the slice or the row's place in it; every
 * integer block sum is exact (int32); nothing is allocated or kept between calls; at most FP_MAX_TOKENS tokens per
 * call; the codes are read once per call as one stream prefetched FP_PREFETCH_BYTES ahead (and each row's scales and
 * biases, two short streams beside it, the same distance ahead; the one-token tiles at 4 bits read their rows one after
 * the other, prefetched FP_STREAM_PREFETCH_BYTES ahead into L2).
 *
 * The format (MLX affine, backend.cpu.AffineMatrix / tensor.AffineFormat): a row of `blocks`·32 elements in groups of
 * 32·2^group_shift (group size 32, 64, 128: group_shift 0, 1, 2); element j of group g stands for s_g·q_j + b_g with
 * q_j an unsigned code. The codes of a row are one little-endian bit stream: at 8 bits byte j is element j; at 4 bits
 * byte i holds element 2i in its low nibble and element 2i+1 in its high nibble (16 bytes per 32-element block).
 * Scales and biases: one per group, row-major, as F32 (scale_kind 0), F16 (1) or BF16 (2), little-endian.
 *
 * Activations are Q8_0, quantised on the Java side (AffineMatrix, Q8Activations.q8_0): per 32-element block k of token
 * t, 32 int8 codes x (|x| ≤ 127) at xq[(t·blocks + k)·32] and a float scale d_k at xd[t·blocks + k]; for 4-bit rows the
 * Java side stores a block's codes in nibble order (the 16 even-indexed elements, then the 16 odd-indexed ones), so that
 * a block's low nibbles meet the first 16 codes and its high nibbles the last 16; 8-bit rows take element order. Per
 * group g of token t, xg[t·groups + g] = X_g = Σ_{k∈g} d_k·Σ_{j∈k} x_j (float, as the Java side forms it).
 *
 * out[t·out_stride + r] = Σ_k (s_g(k)·d_k)·S_k + Σ_g b_g·X_g, S_k = Σ_{j∈k} q_j·x_j, exact in int32 (|S_k| ≤
 * 32·255·127 < 2^20). Variants whose integer instructions want signed codes (AVX2, NEON at 8 bits) use q − 128 and pair
 * it with b_g + 128·s_g, as the Java 8-bit kernel does; both forms are the same sum before float rounding. The float
 * terms are added in a fixed lane order per variant: variants differ from each other and from the Java kernels only by
 * float rounding (the tests state the bound), and with unit scales, integer biases and unit activation scales every
 * term is an integer, so all of them give the same bits.
 */
#include "fp_kernels.h"

enum { FP_SCALE_F32 = 0, FP_SCALE_F16 = 1, FP_SCALE_BF16 = 2 };

static inline float bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Scale or bias g of a row's values at p (little-endian; x86 and arm64 hosts are little-endian). */
static inline float affine_value(const uint8_t* p, int kind, int32_t g) {
    if (kind == FP_SCALE_F16) return fp16_to_f32(load_u16(p + 2 * (int64_t)g));
    if (kind == FP_SCALE_BF16) return bf16_to_f32(load_u16(p + 2 * (int64_t)g));
    float f;
    memcpy(&f, p + 4 * (int64_t)g, sizeof f);
    return f;
}

static inline int affine_value_bytes(int kind) { return kind == FP_SCALE_F32 ? 4 : 2; }

/* Every line of a row's scales and biases, FP_PREFETCH_BYTES ahead (the streams beside the codes'). */
static inline void affine_prefetch_groups(const uint8_t* sc, const uint8_t* bi, int32_t bytes) {
    for (int32_t o = 0; o < bytes; o += 64) {
        FP_PREFETCH(sc + o);
        FP_PREFETCH(bi + o);
    }
}

/* The codes, scales and biases of the sixteen rows of the tile at r0 (the sixteen-rows-in-lanes kernels): a partial
 * last tile's missing rows read the slice's last row (their lanes are computed and not stored). */
static inline void affine_tile_rows(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int64_t row_bytes,
                                    int64_t group_bytes, int32_t r0, int32_t rows, const uint8_t* code[16],
                                    const uint8_t* sc[16], const uint8_t* bi[16]) {
    for (int j = 0; j < 16; j++) {
        int64_t r = r0 + j < rows ? r0 + j : rows - 1;
        code[j] = w + r * row_bytes;
        sc[j] = scales + r * group_bytes;
        bi[j] = biases + r * group_bytes;
    }
}

/* ---- portable C ---------------------------------------------------------------------------------------------- */

/* One row (codes at row, 16 or 32 bytes per block) times one token, bits 4 or 8: the exact block sums scaled and
 * added in block order, then the bias term in group order. */
static inline float affine_row_token_c(int bits, const uint8_t* row, const uint8_t* sc, const uint8_t* bi, int kind,
                                       int32_t gs, int32_t blocks, const int8_t* x, const float* dx, const float* xg) {
    float acc = 0.0f;
    for (int32_t b = 0; b < blocks; b++) {
        const int8_t* xb = x + (int64_t)b * 32;
        int32_t s = 0;
        if (bits == 4) {
            const uint8_t* k = row + (int64_t)b * 16;
            for (int j = 0; j < 16; j++) s += (int32_t)(k[j] & 0x0f) * xb[j] + (int32_t)(k[j] >> 4) * xb[16 + j];
        } else {
            const uint8_t* k = row + (int64_t)b * 32;
            for (int j = 0; j < 32; j++) s += (int32_t)k[j] * xb[j];
        }
        acc += (float)s * (affine_value(sc, kind, b >> gs) * dx[b]);
    }
    float bias = 0.0f;
    for (int32_t g = 0; g < (blocks >> gs); g++) bias += affine_value(bi, kind, g) * xg[g];
    return acc + bias;
}

static inline void affine_rows_c(int bits, const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t kind,
                                 int32_t gs, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 const float* xg, int32_t n, float* out, int32_t out_stride) {
    int32_t groups = blocks >> gs;
    int64_t row_bytes = (int64_t)blocks * (bits == 4 ? 16 : 32), group_bytes = (int64_t)groups * affine_value_bytes(kind);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* sc = scales + r * group_bytes;
        const uint8_t* bi = biases + r * group_bytes;
        for (int64_t o = 0; o < row_bytes; o += 64) FP_PREFETCH(row + o);
        affine_prefetch_groups(sc, bi, (int32_t)group_bytes);
        for (int32_t t = 0; t < n; t++) {
            out[(int64_t)t * out_stride + r] = affine_row_token_c(bits, row, sc, bi, kind, gs, blocks,
                    xq + (int64_t)t * blocks * 32, xd + (int64_t)t * blocks, xg + (int64_t)t * groups);
        }
    }
}

FP_EXPORT void fp_affine4_rows_c(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t scale_kind,
                                 int32_t group_shift, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 const float* xg, int32_t n, float* out, int32_t out_stride) {
    affine_rows_c(4, w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
}

FP_EXPORT void fp_affine8_rows_c(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t scale_kind,
                                 int32_t group_shift, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 const float* xg, int32_t n, float* out, int32_t out_stride) {
    affine_rows_c(8, w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
}

/* ---- x86 --------------------------------------------------------------------------------------------------------- */
#ifdef FP_X86

/* Scale or bias g as a float, F16 by one F16C instruction. */
__attribute__((target("avx2,fma,f16c")))
static inline float affine_value_x86(const uint8_t* p, int kind, int32_t g) {
    if (kind == FP_SCALE_F16) return half_x86(p + 2 * (int64_t)g);
    return affine_value(p, kind, g);
}

/* Eight scales or biases from group g on (all eight must exist) as floats. */
__attribute__((target("avx2,fma,f16c")))
static inline __m256 affine_values8_avx2(const uint8_t* p, int kind, int32_t g) {
    if (kind == FP_SCALE_F32) return _mm256_loadu_ps((const float*)(p + 4 * (int64_t)g));
    __m128i h = _mm_loadu_si128((const __m128i*)(p + 2 * (int64_t)g));
    if (kind == FP_SCALE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* ---- AVX2 + FMA + F16C, 8 bits (and 4 bits at group sizes the format lacks): token-outer, one block per step ---- */

/*
 * One row times one token. 4 bits: a block's 16 bytes as [low nibbles | high nibbles] (the activations' nibble
 * order), unsigned 0 … 15 times int8 by vpmaddubsw (pairs ≤ 2·15·128, exact in 16 bits), then to int32. 8 bits:
 * vpmaddubsw would saturate on codes up to 255, so the codes are used as q − 128 (signed) with the signed dot product
 * of the Q8_0 kernel and the bias as b + 128·s. The bias term: eight groups per step in its own accumulator.
 */
__attribute__((target("avx2,fma,f16c"), always_inline))
static inline float affine_row_token_avx2(int bits, const uint8_t* row, const uint8_t* sc, const uint8_t* bi, int kind,
                                          int32_t gs, int32_t blocks, const int8_t* x, const float* dx, const float* xg) {
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), accb = _mm256_setzero_ps();
    for (int32_t b = 0; b < blocks; b++) {
        __m256i xv = _mm256_loadu_si256((const __m256i*)(x + (int64_t)b * 32));
        __m256i s;
        if (bits == 4) {
            const uint8_t* k = row + (int64_t)b * 16;
            __m128i packed = _mm_loadu_si128((const __m128i*)k);
            __m128i m = _mm_set1_epi8(0x0f);
            __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), m), _mm_and_si128(packed, m));
            s = _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), ones16);
        } else {
            __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(row + (int64_t)b * 32)), _mm256_set1_epi8((char)0x80));
            s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xv, q)), ones16);
        }
        __m256 scaled = _mm256_set1_ps(affine_value_x86(sc, kind, b >> gs) * dx[b]);
        if (b & 1) acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scaled, acc1);
        else acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scaled, acc0);
    }
    int32_t groups = blocks >> gs, g = 0;
    for (; g + 8 <= groups; g += 8) {
        __m256 bv = affine_values8_avx2(bi, kind, g);
        if (bits == 8) bv = _mm256_fmadd_ps(_mm256_set1_ps(128.0f), affine_values8_avx2(sc, kind, g), bv);
        accb = _mm256_fmadd_ps(bv, _mm256_loadu_ps(xg + g), accb);
    }
    float tail = 0.0f;
    for (; g < groups; g++) {
        float bv = affine_value_x86(bi, kind, g);
        if (bits == 8) bv = __builtin_fmaf(128.0f, affine_value_x86(sc, kind, g), bv);
        tail += bv * xg[g];
    }
    return hsum256(_mm256_add_ps(_mm256_add_ps(acc0, acc1), accb)) + tail;
}

__attribute__((target("avx2,fma,f16c"), always_inline))
static inline void affine_rows_avx2(int bits, const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t kind,
                                    int32_t gs, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const float* xg, int32_t n, float* out, int32_t out_stride) {
    int32_t groups = blocks >> gs;
    int64_t row_bytes = (int64_t)blocks * (bits == 4 ? 16 : 32), group_bytes = (int64_t)groups * affine_value_bytes(kind);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* sc = scales + r * group_bytes;
        const uint8_t* bi = biases + r * group_bytes;
        for (int64_t o = 0; o < row_bytes; o += 64) FP_PREFETCH(row + o);
        affine_prefetch_groups(sc, bi, (int32_t)group_bytes);
        for (int32_t t = 0; t < n; t++) {
            out[(int64_t)t * out_stride + r] = affine_row_token_avx2(bits, row, sc, bi, kind, gs, blocks,
                    xq + (int64_t)t * blocks * 32, xd + (int64_t)t * blocks, xg + (int64_t)t * groups);
        }
    }
}

/* ---- AVX2 4 bits: sixteen rows in the int32 lanes of two registers ---- */

/* An 8 × 8 transpose of floats: lane j of r[i] becomes lane i of r[j]. */
__attribute__((target("avx2,fma,f16c"), always_inline))
static inline void affine_transpose8(__m256 r[8]) {
    __m256 a[8], b[8];
    for (int k = 0; k < 4; k++) {   /* per 128-bit half: a[2k] columns 0, 1 (4, 5) of rows 2k, 2k+1; a[2k+1] columns 2, 3 (6, 7) */
        a[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 2; k++) {   /* b[4k + c], half H: column 4H + c of rows 4k … 4k+3 */
        b[4 * k] = _mm256_shuffle_ps(a[4 * k], a[4 * k + 2], 0x44);
        b[4 * k + 1] = _mm256_shuffle_ps(a[4 * k], a[4 * k + 2], 0xee);
        b[4 * k + 2] = _mm256_shuffle_ps(a[4 * k + 1], a[4 * k + 3], 0x44);
        b[4 * k + 3] = _mm256_shuffle_ps(a[4 * k + 1], a[4 * k + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(b[c], b[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(b[c], b[4 + c], 0x31);
    }
}

/* The scales or biases of groups g0 … g0 + count − 1 (count 1 … 8) of eight rows (p[j]: row j's), v[i] lane j = group
 * g0 + i of row j. */
__attribute__((target("avx2,fma,f16c"), always_inline))
static inline void affine_values8x8(const uint8_t* const* p, int kind, int32_t g0, int32_t count, __m256 v[8]) {
    if (count == 8) {
        for (int j = 0; j < 8; j++) v[j] = affine_values8_avx2(p[j], kind, g0);
        affine_transpose8(v);
    } else {
        float lane[8];
        for (int32_t i = 0; i < count; i++) {
            for (int j = 0; j < 8; j++) lane[j] = affine_value_x86(p[j], kind, g0 + i);
            v[i] = _mm256_loadu_ps(lane);
        }
    }
}

#define FP_AFFINE_CHUNK 8    /* groups per chunk: the transposed codes of up to 8 · 4 blocks (group 128) in L1 */

/*
 * The VNNI kernel's sixteen-rows form (affine_rows_vnni below) on 256 bits, sixteen rows in the lanes of two registers:
 * per tile of sixteen rows (the last one's missing rows read the slice's last row, and their lanes are not stored) and
 * per chunk of FP_AFFINE_CHUNK groups, the groups' scales and biases as one register per group and half tile (lane j =
 * row j or 8 + j), and each block's codes transposed once (fp_nibbles8, eight rows at a time) into sixteen registers
 * of nibbles in an L1 scratch, low (meeting the activations' first 16 codes, in nibble order) and high (the last 16);
 * every token of the
 * call then runs through the chunk with its two accumulators in registers: the bias terms b_g·X_g in group order, then
 * per block (s_g·d_k)·Σ q·x in block order, Σ q·x by fp_dot16_u4 (unsigned codes times signed activations, exact, no
 * correction). The form depends on the matrix only, never on n, the slice or the lane; the next tile's codes are
 * prefetched as one sequential stream, and its scales and biases per chunk.
 */
__attribute__((target("avx2,fma,f16c")))
static void affine4_rows16_avx2(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t kind, int32_t gs,
                                int32_t blocks, int32_t rows, const int8_t* xq, const float* xd, const float* xg,
                                int32_t n, float* out, int32_t out_stride) {
    const int32_t groups = blocks >> gs;
    const int64_t value_bytes = affine_value_bytes(kind);
    const int64_t row_bytes = (int64_t)blocks * 16, group_bytes = (int64_t)groups * value_bytes;
    __m256i q[FP_AFFINE_CHUNK << 2][16];
    __m256 acc[FP_MAX_TOKENS][2];
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        const uint8_t* code[16];
        const uint8_t* sc[16];
        const uint8_t* bi[16];
        affine_tile_rows(w, scales, biases, row_bytes, group_bytes, r0, rows, code, sc, bi);
        for (int32_t t = 0; t < n; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
        for (int32_t g0 = 0; g0 < groups; g0 += FP_AFFINE_CHUNK) {
            const int32_t count = groups - g0 < FP_AFFINE_CHUNK ? groups - g0 : FP_AFFINE_CHUNK;
            __m256 s[2][8], b[2][8];   /* s[h][i] lane j: the scale of group g0 + i of row 8h + j */
            for (int h = 0; h < 2; h++) {
                affine_values8x8(sc + 8 * h, kind, g0, count, s[h]);
                affine_values8x8(bi + 8 * h, kind, g0, count, b[h]);
            }
            if (r0 + 16 < rows) {
                for (int j = 0; j < 16; j++) {
                    const int64_t at = (int64_t)(r0 + 16 + j < rows ? r0 + 16 + j : rows - 1) * group_bytes + g0 * value_bytes;
                    __builtin_prefetch(scales + at, 0, 3);
                    __builtin_prefetch(biases + at, 0, 3);
                }
            }
            const int32_t k0 = g0 << gs, kc = count << gs;
            /* rows 0–7, then 8–15: rows of 8192 columns (4 KiB) share an L1 set, eight of them fit its ways (all sixteen
               block by block made one-token decode 1.5x slower) */
            for (int h = 0; h < 2; h++) {
                for (int32_t c = 0; c < kc; c++) {
                    const int64_t o = (int64_t)(k0 + c) * 16;
                    if (h == 0 && r0 + 16 < rows) {   /* the next tile (16 contiguous rows) as one stream, 16 blocks' bytes per block */
                        fp_prefetch_tile16(w + (int64_t)(r0 + 16) * row_bytes, o, 16);
                    }
                    fp_nibbles8(code + 8 * h, o, q[c] + 8 * h);
                }
            }
            for (int32_t t = 0; t < n; t++) {
                const float* X = xg + (int64_t)t * groups + g0;
                const int8_t* x = xq + ((int64_t)t * blocks + k0) * 32;
                const float* dx = xd + (int64_t)t * blocks + k0;
                __m256 a0 = acc[t][0], a1 = acc[t][1];
                for (int32_t i = 0; i < count; i++) {
                    const __m256 xv = _mm256_set1_ps(X[i]);
                    a0 = _mm256_fmadd_ps(b[0][i], xv, a0);
                    a1 = _mm256_fmadd_ps(b[1][i], xv, a1);
                }
                for (int32_t c = 0; c < kc; c++) {
                    __m256i lo, hi;
                    fp_dot16_u4(q[c], x + (int64_t)c * 32, _mm256_setzero_si256(), &lo, &hi);
                    const __m256 sx = _mm256_set1_ps(dx[c]);
                    a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_mul_ps(s[0][c >> gs], sx), a0);
                    a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_mul_ps(s[1][c >> gs], sx), a1);
                }
                acc[t][0] = a0;
                acc[t][1] = a1;
            }
        }
        const int32_t live = rows - r0 < 16 ? rows - r0 : 16;
        for (int32_t t = 0; t < n; t++) fp_store16(out + (int64_t)t * out_stride + r0, acc[t][0], acc[t][1], live);
    }
}

/* 4 bits: sixteen rows in the lanes for group sizes 32 … 128 (what the format has), the one-row body otherwise. */
__attribute__((target("avx2,fma,f16c")))
FP_EXPORT void fp_affine4_rows_avx2(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t scale_kind,
                                    int32_t group_shift, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const float* xg, int32_t n, float* out, int32_t out_stride) {
    if (group_shift >= 0 && group_shift <= 2) {
        affine4_rows16_avx2(w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
    } else {
        affine_rows_avx2(4, w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
    }
}

__attribute__((target("avx2,fma,f16c")))
FP_EXPORT void fp_affine8_rows_avx2(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t scale_kind,
                                    int32_t group_shift, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const float* xg, int32_t n, float* out, int32_t out_stride) {
    affine_rows_avx2(8, w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
}

/* ---- AVX-512 VNNI: 8 bits one row at a time (as the Q4_0 / Q8_0 VNNI kernels); 4 bits sixteen rows in the sixteen
 * lanes, every token of the call per block ---- */

/*
 * Why rows in lanes: with a row's blocks in the lanes (one row at a time), each vpdpbusd of a block pair was followed, per
 * token, by a conversion, a scale product and a multiply-add of its own, and by a reload of the pair's 64 activation
 * bytes, which for rows of 8192 columns and 16 tokens (128 KiB) came from L2: prefill ran at half the rate of short rows.
 * Here a register holds one int32 lane per row of a tile of sixteen: four codes of that row (one dword of its block,
 * low or high nibbles) meet four activation bytes broadcast to every lane, so a block is eight vpdpbusd per token and
 * the float work (conversion, s·d, multiply-add) is one instruction each per block, token and sixteen rows. The codes
 * of a block are transposed into that order once per tile for all the call's tokens, and the scales and biases once per
 * sixteen groups. The lanes never mix: a row's result does not depend on its lane, the tile, the slice or n.
 */

/* Up to sixteen scales or biases from group g on (mask: which exist) as floats; the others 0. */
__attribute__((target(FP_VNNI)))
static inline __m512 affine_values16(const uint8_t* p, int kind, int32_t g, __mmask16 mask) {
    if (kind == FP_SCALE_F32) return _mm512_maskz_loadu_ps(mask, p + 4 * (int64_t)g);
    __m256i h = _mm256_maskz_loadu_epi16(mask, p + 2 * (int64_t)g);
    if (kind == FP_SCALE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static const int32_t FP_AFFINE_PAIR_SCALES[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

/* The activation scales of blocks b and b+1 (two consecutive floats) spread to lanes 0–7 and 8–15. */
__attribute__((target(FP_VNNI)))
static inline __m512 affine_pair_scales(const float* two) {
    return _mm512_permutexvar_ps(_mm512_loadu_si512((const void*)FP_AFFINE_PAIR_SCALES),
                                 _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd((const double*)two))));
}

/*
 * The 8-bit body (one row at a time, its blocks in the lanes) for a token count and width known at compile time (the n
 * accumulators then stay in registers); the sixteen-rows form below measured 2.5x faster for 8-bit prefill too, but a
 * converted 8-bit MoE model's prompt logits then differed from the Java kernels' by 0.515 (HybridMlxGreedyTest, bound
 * 1e-3). Not a kernel bug: every affine product of that prefill (expert slices, n 15 and 16 + 2 … 8 included) is
 * within 1e-6 of a float64 reference on the same int8 activations, as the Java kernel's; the result is the same with 1
 * or 2 threads and run to run; no top-k choice differs in any layer (smallest router margin 0.024). The 0.515 is an
 * int8 rounding tie: the sixteen-rows form adds the same terms in another order (bias terms first, unsigned codes), so
 * layer 0's outputs differ from Java's in the last bit, and layer 1's first projection (128 × 64) got for token 30,
 * element 16, 1.1784512 instead of Java's 1.1784513, x/d = 73.49999 instead of 73.5: Q8_0 code 73 instead of 74. The
 * layer's recurrent mixer carries that to tokens 31 … 39 (1e-2), the next layers grow it (0.17 in layer 3's inputs).
 * Any order differing from Java's can meet such a tie (this one-row form and the 4-bit kernel differ from Java in the
 * last bit in about 3/4 of those activations too; here they came as near a tie, 4-bit within 7e-5 of a code, without
 * crossing one), so 8 bits keeps the form whose order the test was measured with.
 * Per row, first the bias term Σ_g b_g·X_g, sixteen groups per step (masked at the end), into each token's
 * accumulator; then per pair of blocks the codes in the activations' order in one register — 8 bits: the 64 bytes as
 * they are; 4 bits: the two blocks' 16 bytes each twice, shifted by 0 or 4 per 128-bit lane and masked, [low b | high
 * b | low b+1 | high b+1] — and per token one load, one vpdpbusd (unsigned codes times signed activations: no
 * correction, exact), a conversion and a multiply-add with the blocks' s·d (lanes 0–7 block b, 8–15 block b+1).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void affine_rows_vnni_pairs(const int bits, const int32_t kind, const uint8_t* w, const uint8_t* scales,
                                    const uint8_t* biases, int32_t gs, int32_t blocks, int32_t rows, const int8_t* xq,
                                    const float* xd, const float* xg, const int32_t n, float* out, int32_t out_stride) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i low = _mm512_set1_epi8(0x0f);
    const __m512i nibble_shift = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
    const int32_t groups = blocks >> gs;
    const int64_t block_bytes = bits == 4 ? 16 : 32;
    const int64_t row_bytes = (int64_t)blocks * block_bytes, group_bytes = (int64_t)groups * affine_value_bytes(kind);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* sc = scales + r * group_bytes;
        const uint8_t* bi = biases + r * group_bytes;
        affine_prefetch_groups(sc, bi, (int32_t)group_bytes);
        __m512 acc[FP_MAX_TOKENS];
        float tail[FP_MAX_TOKENS];
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) { acc[t] = _mm512_setzero_ps(); tail[t] = 0.0f; }
        for (int32_t g = 0; g < groups; g += 16) {
            __mmask16 mask = groups - g >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (groups - g)) - 1);
            __m512 bv = affine_values16(bi, kind, g, mask);
#pragma GCC unroll 16
            for (int32_t t = 0; t < n; t++) acc[t] = _mm512_fmadd_ps(bv, _mm512_maskz_loadu_ps(mask, xg + (int64_t)t * groups + g), acc[t]);
        }
        int32_t b = 0;
        for (; b + 1 < blocks; b += 2) {
            const uint8_t* k0 = row + b * block_bytes;
            FP_PREFETCH(k0);
            __m512i q;
            if (bits == 4) {
                __m512i twice = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)k0))),
                                                   _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(k0 + 16))), 1);
                q = _mm512_and_si512(_mm512_srlv_epi64(twice, nibble_shift), low);
            } else {
                q = _mm512_loadu_si512((const void*)k0);
            }
            float s0 = affine_value_x86(sc, kind, b >> gs), s1 = affine_value_x86(sc, kind, (b + 1) >> gs);
            __m512 dw = _mm512_mask_blend_ps((__mmask16)0xff00, _mm512_set1_ps(s0), _mm512_set1_ps(s1));
#pragma GCC unroll 16
            for (int32_t t = 0; t < n; t++) {
                __m512i xv = _mm512_loadu_si512((const void*)(xq + (int64_t)t * blocks * 32 + (int64_t)b * 32));
                __m512i s = _mm512_dpbusd_epi32(zero, q, xv);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, affine_pair_scales(xd + (int64_t)t * blocks + b)), acc[t]);
            }
        }
        if (b < blocks) {
            const uint8_t* k0 = row + b * block_bytes;
            __m256i q;
            if (bits == 4) {
                __m128i packed = _mm_loadu_si128((const __m128i*)k0);
                __m128i m = _mm_set1_epi8(0x0f);
                q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), m), _mm_and_si128(packed, m));
            } else {
                q = _mm256_loadu_si256((const __m256i*)k0);
            }
            float s0 = affine_value_x86(sc, kind, b >> gs);
#pragma GCC unroll 16
            for (int32_t t = 0; t < n; t++) {
                __m256i xv = _mm256_loadu_si256((const __m256i*)(xq + (int64_t)t * blocks * 32 + (int64_t)b * 32));
                __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, xv);
                tail[t] = hsum256(_mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(s0 * xd[(int64_t)t * blocks + b])));
            }
        }
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = hsum512(acc[t]) + tail[t];
    }
}

/* Four bytes at p as one int32 (for a broadcast). */
static inline int32_t affine_load_i32(const int8_t* p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A 16 × 16 transpose of floats: lane j of r[i] becomes lane i of r[j]. */
__attribute__((target(FP_VNNI), always_inline))
static inline void affine_transpose16(__m512 r[16]) {
    __m512 a[16], b[16];
    for (int k = 0; k < 8; k++) {   /* per 128-bit lane L: a[2k] = columns 4L, 4L+1 of rows 2k, 2k+1; a[2k+1] columns 4L+2, 4L+3 */
        a[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 4; k++) {   /* b[4k + c], lane L: column 4L + c of rows 4k … 4k+3 */
        __m512d l0 = _mm512_castps_pd(a[4 * k]), l1 = _mm512_castps_pd(a[4 * k + 2]);
        __m512d h0 = _mm512_castps_pd(a[4 * k + 1]), h1 = _mm512_castps_pd(a[4 * k + 3]);
        b[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(l0, l1));
        b[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(l0, l1));
        b[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(h0, h1));
        b[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(h0, h1));
    }
    for (int c = 0; c < 4; c++) {   /* the 128-bit lanes of b[c], b[4+c], b[8+c], b[12+c] transposed 4 × 4 */
        __m512 e0 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0x44), e1 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0xee);
        __m512 e2 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0x44), e3 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0xee);
        r[c] = _mm512_shuffle_f32x4(e0, e2, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(e0, e2, 0xdd);
        r[8 + c] = _mm512_shuffle_f32x4(e1, e3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(e1, e3, 0xdd);
    }
}

/* Groups g0 … g0 + 15 (present: which exist, the others 0) of sixteen rows' scales and biases (sc[j], bi[j]: row j's) as
 * floats, s[i] and b[i] lane j = group g0 + i of row j. */
__attribute__((target(FP_VNNI), always_inline))
static inline void affine_groups16(const uint8_t* const* sc, const uint8_t* const* bi, int kind, int32_t g0,
                                   __mmask16 present, __m512 s[16], __m512 b[16]) {
    for (int j = 0; j < 16; j++) {
        s[j] = affine_values16(sc[j], kind, g0, present);
        b[j] = affine_values16(bi[j], kind, g0, present);
    }
    affine_transpose16(s);
    affine_transpose16(b);
}

/* The line at byte `at` of the scales and biases of the sixteen rows from `next` on (those past the last row read
 * the last row's): the next tile's, prefetched while this one is read. */
__attribute__((target(FP_VNNI), always_inline))
static inline void affine_prefetch_groups16(const uint8_t* scales, const uint8_t* biases, int64_t group_bytes,
                                            int32_t next, int32_t rows, int64_t at) {
    for (int j = 0; j < 16; j++) {
        const int64_t o = (int64_t)(next + j < rows ? next + j : rows - 1) * group_bytes + at;
        __builtin_prefetch(scales + o, 0, 3);
        __builtin_prefetch(biases + o, 0, 3);
    }
}


/*
 * The body for a token count known at compile time (the n accumulators, one register of sixteen rows each, then stay
 * in registers). Per tile of sixteen rows (the last one's missing rows read the slice's last row, and their lanes are
 * not stored) and per sixteen groups: the groups' scales and biases as floats, transposed to one register per group;
 * into each token's accumulator the bias terms b_g·X_g in group order, then per block in block order
 * (s_g·d_k)·Σ q·x, where Σ q·x is eight vpdpbusd of the block's transposed codes (unsigned: 4 bits the low nibbles of
 * dwords 0–3 then their high nibbles, meeting the activations' nibble order; 8 bits the codes as they are) with the
 * token's activation dwords broadcast; exact in int32, no correction. While a tile is read, the next tile's codes
 * are prefetched into L2 as one sequential stream, and its scales and biases per sixteen groups.
 * One token's whole tiles at 4 bits take affine4_tiles16_one_token_vnni below (the same integers and multiply-adds
 * without the code transpose).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void affine_rows_vnni(const int bits, const int32_t kind, const uint8_t* w, const uint8_t* scales,
                                    const uint8_t* biases, int32_t gs, int32_t blocks, int32_t rows, const int8_t* xq,
                                    const float* xd, const float* xg, const int32_t n, float* out, int32_t out_stride) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i low = _mm512_set1_epi8(0x0f);
    const int32_t groups = blocks >> gs;
    const int64_t block_bytes = bits == 4 ? 16 : 32, value_bytes = affine_value_bytes(kind);
    const int64_t row_bytes = (int64_t)blocks * block_bytes, group_bytes = (int64_t)groups * value_bytes;
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        const uint8_t* code[16];
        const uint8_t* sc[16];
        const uint8_t* bi[16];
        affine_tile_rows(w, scales, biases, row_bytes, group_bytes, r0, rows, code, sc, bi);
        const __mmask16 live = fp_tile16_live(r0, rows);
        __m512 acc[FP_MAX_TOKENS];
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        for (int32_t g0 = 0; g0 < groups; g0 += 16) {
            const int32_t count = groups - g0 < 16 ? groups - g0 : 16;
            const __mmask16 present = count == 16 ? (__mmask16)0xffff : (__mmask16)((1u << count) - 1);
            __m512 s[16], b[16];   /* s[i] lane j: the scale of group g0 + i of row j */
            affine_groups16(sc, bi, kind, g0, present, s, b);
            affine_prefetch_groups16(scales, biases, group_bytes, r0 + 16, rows, g0 * value_bytes);
            for (int32_t i = 0; i < count; i++) {
#pragma GCC unroll 16
                for (int32_t t = 0; t < n; t++) acc[t] = _mm512_fmadd_ps(b[i], _mm512_set1_ps(xg[(int64_t)t * groups + g0 + i]), acc[t]);
            }
            const int32_t end = (g0 + count) << gs;
            for (int32_t k = g0 << gs; k < end; k++) {
                const int64_t o = (int64_t)k * block_bytes;
                /* the next tile's codes (16 rows: one contiguous span of blocks·16 block sizes) as one sequential
                   stream into L2, 16 block sizes of it per block, so that it is all asked for by the tile's end
                   (a line per row at the sweep's column instead, 16 streams, measured slower: decode 1.4x the time) */
                if (r0 + 16 < rows) {
                    fp_prefetch_tile16(w + (int64_t)(r0 + 16) * row_bytes, o, block_bytes);
                }
                const __m512 sk = s[(k >> gs) - g0];
                __m512i q[8];
                if (bits == 4) {
                    __m512i d[4];
                    fp_codes16(code, o, d);
                    for (int i = 0; i < 4; i++) {
                        q[i] = _mm512_and_si512(d[i], low);
                        q[4 + i] = _mm512_and_si512(_mm512_srli_epi32(d[i], 4), low);
                    }
                } else {
                    fp_codes16(code, o, q);
                    fp_codes16(code, o + 16, q + 4);
                }
#pragma GCC unroll 16
                for (int32_t t = 0; t < n; t++) {
                    const int8_t* x = xq + ((int64_t)t * blocks + k) * 32;
                    __m512i dot = _mm512_dpbusd_epi32(zero, q[0], _mm512_set1_epi32(affine_load_i32(x)));
                    for (int i = 1; i < 8; i++) dot = _mm512_dpbusd_epi32(dot, q[i], _mm512_set1_epi32(affine_load_i32(x + 4 * i)));
                    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(sk, _mm512_set1_ps(xd[(int64_t)t * blocks + k])), acc[t]);
                }
            }
        }
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) _mm512_mask_storeu_ps(out + (int64_t)t * out_stride + r0, live, acc[t]);
    }
}

/*
 * One chunk (four blocks, 64 code bytes of a row) times one token: xs[0] lane L = block L's activation bytes 0–15
 * (meeting the low nibbles), xs[1] bytes 16–31 (the high nibbles); dwords 4L … 4L + 3 of the result are partial sums
 * of block L.
 */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512i affine_chunk(__m512i z, const __m512i* xs) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(z, low), xs[0]),
                               _mm512_and_si512(_mm512_srli_epi32(z, 4), low), xs[1]);
}

/* Four chunks' partial sums (e[m]: chunk m) added into one register of sixteen block sums, exact: dword 4L + m = the sum
 * of block 4m + L. Pairs of chunks, then the two pairs, added within each 128-bit lane. */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512i affine_quad_sums(const __m512i e[4]) {
    const __m512i p01 = _mm512_add_epi32(_mm512_unpacklo_epi32(e[0], e[1]), _mm512_unpackhi_epi32(e[0], e[1]));
    const __m512i p23 = _mm512_add_epi32(_mm512_unpacklo_epi32(e[2], e[3]), _mm512_unpackhi_epi32(e[2], e[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(p01, p23), _mm512_unpackhi_epi64(p01, p23));
}

/* The first `bytes` (0 … 64) bytes at p, the rest 0. */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512i affine_load_part(const void* p, int32_t bytes) {
    const __mmask64 m = bytes >= 64 ? ~(__mmask64)0 : bytes <= 0 ? (__mmask64)0 : (((__mmask64)1 << bytes) - 1);
    return _mm512_maskz_loadu_epi8(m, p);
}

#define FP_AFFINE_PANEL 16   /* quads (sixteen blocks) per panel: a tile's sums 16 KiB, the activations 8 KiB */

/*
 * One token (a decode step) at 4 bits, the whole tiles of sixteen rows: the same integers and the same multiply-adds,
 * in the same order, per row as affine_rows_vnni (so the same bits), read in the matrix's own order. A tile's rows go
 * one after the other, each from its start (per panel of up to FP_AFFINE_PANEL · 16 blocks: the whole row up to 8192
 * columns), so the codes are one sequential stream, prefetched FP_STREAM_PREFETCH_BYTES ahead into L2. Read across
 * the sixteen rows a few blocks at a time, as the rows-in-lanes forms do, one core streamed a mapped file at 0.7x the
 * rate however the next tile was prefetched (a decode step's matrices took 1.1x the time of this form). Per row and
 * chunk of four blocks (one 64-byte load) the partial sums of affine_chunk, with the token's activations put in that
 * order once per panel (two lane shuffles per chunk); four chunks' sums added into one register of sixteen block sums
 * (affine_quad_sums) kept in an L1 scratch; after the tile's sixteen rows, per sixteen blocks the sixteen rows'
 * registers transposed (lane j = row j) and the float work in block order, the bias terms of every sixteen groups
 * first, as in affine_rows_vnni. A panel's last quad, when the row ends inside it, is read with masked loads (zeros
 * past the end). Returns the rows done.
 */
__attribute__((target(FP_VNNI)))
static int32_t affine4_tiles16_one_token_vnni(const int32_t kind, const uint8_t* w, const uint8_t* scales,
                                              const uint8_t* biases, int32_t gs, int32_t blocks, int32_t rows,
                                              const int8_t* xq, const float* xd, const float* xg, float* out) {
    const int32_t groups = blocks >> gs, quads = (blocks + 15) >> 4;
    const int64_t value_bytes = affine_value_bytes(kind);
    const int64_t rb = (int64_t)blocks * 16, group_bytes = (int64_t)groups * value_bytes;
    __m512i xs[8 * FP_AFFINE_PANEL];      /* chunk c: xs[2c] low-nibble activations, xs[2c + 1] high */
    __m512i sums[16 * FP_AFFINE_PANEL];   /* row j, quad q of the panel: sums[j · FP_AFFINE_PANEL + q] */
    int32_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        const uint8_t* tile = w + (int64_t)r0 * rb;
        const uint8_t* sc[16];
        const uint8_t* bi[16];
        for (int j = 0; j < 16; j++) {
            sc[j] = scales + (int64_t)(r0 + j) * group_bytes;
            bi[j] = biases + (int64_t)(r0 + j) * group_bytes;
        }
        __m512 acc = _mm512_setzero_ps();
        for (int32_t q0 = 0; q0 < quads; q0 += FP_AFFINE_PANEL) {
            const int32_t nq = quads - q0 < FP_AFFINE_PANEL ? quads - q0 : FP_AFFINE_PANEL;
            const int32_t k0 = q0 * 16, k1 = blocks - k0 < nq * 16 ? blocks : k0 + nq * 16;   /* the panel's blocks */
            const int32_t whole = (k1 - k0) >> 4;   /* quads with all sixteen blocks */
            for (int32_t c = 0; c < 4 * nq; c++) {
                const int32_t k = k0 + 4 * c, bytes = (k1 - k) * 32;
                const int8_t* x = xq + (int64_t)k * 32;
                const __m512i x0 = bytes >= 128 ? _mm512_loadu_si512((const void*)x) : affine_load_part(x, bytes);
                const __m512i x1 = bytes >= 128 ? _mm512_loadu_si512((const void*)(x + 64)) : affine_load_part(x + 64, bytes - 64);
                xs[2 * c] = _mm512_shuffle_i32x4(x0, x1, 0x88);       /* lane L: block k + L's bytes 0–15 */
                xs[2 * c + 1] = _mm512_shuffle_i32x4(x0, x1, 0xdd);   /* and 16–31 */
            }
            for (int j = 0; j < 16; j++) {
                const uint8_t* row = tile + (int64_t)j * rb + (int64_t)k0 * 16;
                int32_t q = 0;
                for (; q < whole; q++) {
                    const uint8_t* p = row + (int64_t)q * 256;
                    __m512i e[4];
                    for (int m = 0; m < 4; m++) {
                        FP_STREAM_PREFETCH(p + 64 * m);
                        e[m] = affine_chunk(_mm512_loadu_si512((const void*)(p + 64 * m)), xs + 8 * q + 2 * m);
                    }
                    sums[j * FP_AFFINE_PANEL + q] = affine_quad_sums(e);
                }
                if (q < nq) {   /* the row ends inside this quad */
                    const uint8_t* p = row + (int64_t)q * 256;
                    const int32_t bytes = (k1 - k0 - 16 * q) * 16;
                    __m512i e[4];
                    for (int m = 0; m < 4; m++) e[m] = affine_chunk(affine_load_part(p + 64 * m, bytes - 64 * m), xs + 8 * q + 2 * m);
                    sums[j * FP_AFFINE_PANEL + q] = affine_quad_sums(e);
                }
            }
            for (int32_t g0 = k0 >> gs; g0 < k1 >> gs; g0 += 16) {
                const int32_t count = groups - g0 < 16 ? groups - g0 : 16;
                const __mmask16 present = count == 16 ? (__mmask16)0xffff : (__mmask16)((1u << count) - 1);
                __m512 s[16], b[16];   /* s[i] lane j: the scale of group g0 + i of row j */
                affine_groups16(sc, bi, kind, g0, present, s, b);
                affine_prefetch_groups16(scales, biases, group_bytes, r0 + 16, rows, g0 * value_bytes);
                for (int32_t i = 0; i < count; i++) acc = _mm512_fmadd_ps(b[i], _mm512_set1_ps(xg[g0 + i]), acc);
                const int32_t end = (g0 + count) << gs;
                for (int32_t k = g0 << gs; k < end; k += 16) {
                    const int32_t q = (k - k0) >> 4, n16 = end - k < 16 ? end - k : 16;
                    __m512 t[16];   /* t[4L + m] lane j: row j's sum of block k + 4m + L */
                    for (int j = 0; j < 16; j++) t[j] = _mm512_castsi512_ps(sums[j * FP_AFFINE_PANEL + q]);
                    affine_transpose16(t);
                    for (int32_t i = 0; i < n16; i++) {
                        const __m512 sk = s[((k + i) >> gs) - g0];
                        const __m512i dot = _mm512_castps_si512(t[4 * (i & 3) + (i >> 2)]);
                        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(sk, _mm512_set1_ps(xd[k + i])), acc);
                    }
                }
            }
        }
        _mm512_storeu_ps(out + r0, acc);
    }
    return r0;
}

/*
 * 4 bits: one token on its own path (whole tiles without the transpose, the last rows as any other count), one copy
 * per token count 2 … 8 and 16 (accumulators in registers; a prefill calls with 16), the general body for 9 … 15
 * (copies of those doubled the file's build time). The scale type stays a run-time argument (a predictable branch per
 * sixteen groups).
 */
#define FP_AFFINE4_VNNI_CASE(N) \
    case N: affine_rows_vnni(4, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, N, out, out_stride); return;
__attribute__((target(FP_VNNI)))
FP_EXPORT void fp_affine4_rows_avx512vnni(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t kind,
                                          int32_t gs, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                          const float* xg, int32_t n, float* out, int32_t out_stride) {
    switch (n) {
        case 1: {
            const int32_t done = affine4_tiles16_one_token_vnni(kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, out);
            const int64_t group_bytes = (int64_t)(blocks >> gs) * affine_value_bytes(kind);
            if (done < rows) affine_rows_vnni(4, kind, w + (int64_t)done * blocks * 16, scales + done * group_bytes,
                                              biases + done * group_bytes, gs, blocks, rows - done, xq, xd, xg, 1,
                                              out + done, out_stride);
            return;
        }
        FP_AFFINE4_VNNI_CASE(2) FP_AFFINE4_VNNI_CASE(3) FP_AFFINE4_VNNI_CASE(4) FP_AFFINE4_VNNI_CASE(5)
        FP_AFFINE4_VNNI_CASE(6) FP_AFFINE4_VNNI_CASE(7) FP_AFFINE4_VNNI_CASE(8) FP_AFFINE4_VNNI_CASE(16)
        default: affine_rows_vnni(4, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, n, out, out_stride); return;
    }
}

/* 8 bits: the one-row body, one copy per token count 1 … 8, the general body for more. */
#define FP_AFFINE8_PAIRS_CASE(N) \
    case N: affine_rows_vnni_pairs(8, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, N, out, out_stride); return;
__attribute__((target(FP_VNNI)))
FP_EXPORT void fp_affine8_rows_avx512vnni(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t kind,
                                          int32_t gs, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                          const float* xg, int32_t n, float* out, int32_t out_stride) {
    switch (n) {
        FP_AFFINE8_PAIRS_CASE(1) FP_AFFINE8_PAIRS_CASE(2) FP_AFFINE8_PAIRS_CASE(3) FP_AFFINE8_PAIRS_CASE(4)
        FP_AFFINE8_PAIRS_CASE(5) FP_AFFINE8_PAIRS_CASE(6) FP_AFFINE8_PAIRS_CASE(7) FP_AFFINE8_PAIRS_CASE(8)
        default: affine_rows_vnni_pairs(8, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, n, out, out_stride); return;
    }
}

#endif /* FP_X86 */

/* ---- arm64: NEON --------------------------------------------------------------------------------------------- */
#ifdef FP_ARM

/* Σ a·x[0…15] + b·x[16…31] over int8 codes, exact: widening multiplies to 16 bits (|a·x| ≤ 128·128), pairwise-added
 * into 32 bits. */
static inline int32_t affine_dot32_neon(int8x16_t a, int8x16_t b, const int8_t* x) {
    int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
    int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(x0)));
    s = vpadalq_s16(s, vmull_s8(vget_high_s8(a), vget_high_s8(x0)));
    s = vpadalq_s16(s, vmull_s8(vget_low_s8(b), vget_low_s8(x1)));
    s = vpadalq_s16(s, vmull_s8(vget_high_s8(b), vget_high_s8(x1)));
    return vaddvq_s32(s);
}

/* 4 bits: the nibbles (0 … 15, valid int8) against the activations' nibble order; 8 bits: the codes as q − 128
 * (int8), the bias as b + 128·s. Token-outer, block order, then the bias term in group order. */
static inline void affine_rows_neon(int bits, const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t kind,
                                    int32_t gs, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const float* xg, int32_t n, float* out, int32_t out_stride) {
    const uint8x16_t m = vdupq_n_u8(0x0f), flip = vdupq_n_u8(0x80);
    int32_t groups = blocks >> gs;
    int64_t row_bytes = (int64_t)blocks * (bits == 4 ? 16 : 32), group_bytes = (int64_t)groups * affine_value_bytes(kind);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* sc = scales + r * group_bytes;
        const uint8_t* bi = biases + r * group_bytes;
        for (int64_t o = 0; o < row_bytes; o += 64) FP_PREFETCH(row + o);
        affine_prefetch_groups(sc, bi, (int32_t)group_bytes);
        for (int32_t t = 0; t < n; t++) {
            const int8_t* x = xq + (int64_t)t * blocks * 32;
            const float* dx = xd + (int64_t)t * blocks;
            const float* X = xg + (int64_t)t * groups;
            float acc = 0.0f;
            for (int32_t b = 0; b < blocks; b++) {
                int32_t s;
                if (bits == 4) {
                    uint8x16_t packed = vld1q_u8(row + (int64_t)b * 16);
                    s = affine_dot32_neon(vreinterpretq_s8_u8(vandq_u8(packed, m)), vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), x + (int64_t)b * 32);
                } else {
                    const uint8_t* k = row + (int64_t)b * 32;
                    s = affine_dot32_neon(vreinterpretq_s8_u8(veorq_u8(vld1q_u8(k), flip)),
                                          vreinterpretq_s8_u8(veorq_u8(vld1q_u8(k + 16), flip)), x + (int64_t)b * 32);
                }
                acc += (float)s * (affine_value(sc, kind, b >> gs) * dx[b]);
            }
            float bias = 0.0f;
            for (int32_t g = 0; g < groups; g++) {
                float bv = affine_value(bi, kind, g);
                if (bits == 8) bv = __builtin_fmaf(128.0f, affine_value(sc, kind, g), bv);
                bias += bv * X[g];
            }
            out[(int64_t)t * out_stride + r] = acc + bias;
        }
    }
}

FP_EXPORT void fp_affine4_rows_neon(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t scale_kind,
                                    int32_t group_shift, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const float* xg, int32_t n, float* out, int32_t out_stride) {
    affine_rows_neon(4, w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
}

FP_EXPORT void fp_affine8_rows_neon(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t scale_kind,
                                    int32_t group_shift, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const float* xg, int32_t n, float* out, int32_t out_stride) {
    affine_rows_neon(8, w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
}
#endif /* FP_ARM */
