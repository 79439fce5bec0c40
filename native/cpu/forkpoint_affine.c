/*
 * Forkpoint's native CPU kernels for MLX affine-quantised matrices at 4 and 8 bits (issue 15; one concept per file:
 * forkpoint_kernels.c holds Q8_0 and Q4_0, fp_cpu_features() and the ABI version). Written for this project;
 * compiled into the same library, under the same invariants (see the top of forkpoint_kernels.c): a (row, token)
 * result depends only on that row's and that token's bytes, never on n, the slice or the row's place in it; every
 * integer block sum is exact (int32); nothing is allocated or kept between calls; at most FP_MAX_TOKENS tokens per
 * call; the codes are read once per call as one stream prefetched FP_PREFETCH_BYTES ahead (and each row's scales and
 * biases, two short streams beside it, the same distance ahead).
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

/* ---- AVX2 + FMA + F16C: token-outer like the other AVX2 kernels, one block per step ---- */

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

__attribute__((target("avx2,fma,f16c")))
FP_EXPORT void fp_affine4_rows_avx2(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t scale_kind,
                                    int32_t group_shift, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const float* xg, int32_t n, float* out, int32_t out_stride) {
    affine_rows_avx2(4, w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
}

__attribute__((target("avx2,fma,f16c")))
FP_EXPORT void fp_affine8_rows_avx2(const uint8_t* w, const uint8_t* scales, const uint8_t* biases, int32_t scale_kind,
                                    int32_t group_shift, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const float* xg, int32_t n, float* out, int32_t out_stride) {
    affine_rows_avx2(8, w, scales, biases, scale_kind, group_shift, blocks, rows, xq, xd, xg, n, out, out_stride);
}

/* ---- AVX-512 VNNI: row-outer, a pair of blocks per step for all n tokens (as the Q4_0 / Q8_0 VNNI kernels) ---- */

static const int32_t FP_AFFINE_PAIR_SCALES[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

/* The activation scales of blocks b and b+1 (two consecutive floats) spread to lanes 0–7 and 8–15. */
__attribute__((target(FP_VNNI)))
static inline __m512 affine_pair_scales(const float* two) {
    return _mm512_permutexvar_ps(_mm512_loadu_si512((const void*)FP_AFFINE_PAIR_SCALES),
                                 _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd((const double*)two))));
}

/* Up to sixteen scales or biases from group g on (mask: which exist) as floats; the others 0. */
__attribute__((target(FP_VNNI)))
static inline __m512 affine_values16(const uint8_t* p, int kind, int32_t g, __mmask16 mask) {
    if (kind == FP_SCALE_F32) return _mm512_maskz_loadu_ps(mask, p + 4 * (int64_t)g);
    __m256i h = _mm256_maskz_loadu_epi16(mask, p + 2 * (int64_t)g);
    if (kind == FP_SCALE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/*
 * The body for a token count and width known at compile time (the n accumulators then stay in registers).
 * Per row, first the bias term Σ_g b_g·X_g, sixteen groups per step (masked at the end), into each token's
 * accumulator; then per pair of blocks the codes in the activations' order in one register — 8 bits: the 64 bytes as
 * they are; 4 bits: the two blocks' 16 bytes each twice, shifted by 0 or 4 per 128-bit lane and masked, [low b | high
 * b | low b+1 | high b+1] — and per token one load, one vpdpbusd (unsigned codes times signed activations: no
 * correction, exact), a conversion and a multiply-add with the blocks' s·d (lanes 0–7 block b, 8–15 block b+1).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void affine_rows_vnni(const int bits, const int32_t kind, const uint8_t* w, const uint8_t* scales,
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

/*
 * One copy per token count 1 … 8 (accumulators in registers), the general body for more. The scale type stays a
 * run-time argument (a predictable branch per block pair): a copy per type as well would triple the library's build
 * time, which every first use pays.
 */
#define FP_AFFINE_VNNI_ENTRY(BITS)                                                                                    \
    __attribute__((target(FP_VNNI)))                                                                                  \
    FP_EXPORT void fp_affine##BITS##_rows_avx512vnni(const uint8_t* w, const uint8_t* scales, const uint8_t* biases,  \
            int32_t kind, int32_t gs, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,               \
            const float* xg, int32_t n, float* out, int32_t out_stride) {                                             \
        switch (n) {                                                                                                  \
            case 1: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, 1, out, out_stride); return; \
            case 2: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, 2, out, out_stride); return; \
            case 3: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, 3, out, out_stride); return; \
            case 4: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, 4, out, out_stride); return; \
            case 5: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, 5, out, out_stride); return; \
            case 6: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, 6, out, out_stride); return; \
            case 7: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, 7, out, out_stride); return; \
            case 8: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, 8, out, out_stride); return; \
            default: affine_rows_vnni(BITS, kind, w, scales, biases, gs, blocks, rows, xq, xd, xg, n, out, out_stride); return; \
        }                                                                                                             \
    }

FP_AFFINE_VNNI_ENTRY(4)
FP_AFFINE_VNNI_ENTRY(8)

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
