/*
 * Forkpoint's native CPU kernels (issue 15), called from runner-core through FFM (backend.cpu.NativeKernels).
 * Written for this project. Built at run time by runner-core with the system C compiler (cc, gcc or clang) into the
 * user's cache; one library holds every variant its compiler can build for this architecture, each function marked
 * with the instruction set it needs (so the library loads on any CPU of the architecture), and the Java side calls
 * the best variant fp_cpu_features() says this CPU runs.
 *
 * The kernels compute one slice of rows of a quantised matrix times n = 1 … 16 tokens (the Java side calls again for more) of activations that the Java side
 * quantised to Q8_0 (int8 codes, one float scale per 32): out[t * out_stride + i] = Σ_b d_w(row i, b) · d_x(t, b) ·
 * Σ_j q_w · q_x. Invariants the Java side relies on:
 *   - a (row, token) result depends only on that row's and that token's bytes: not on the token count, the slice or
 *     the row's place in it (batch invariance: a decode batch equals its rows run one at a time, bit for bit);
 *   - each block's integer dot product is exact (int32); the float sum over blocks runs in block order in a fixed
 *     number of lanes per variant, so variants differ from each other and from the Java kernels only by float
 *     rounding (tests state the bound);
 *   - nothing is allocated, nothing is kept between calls, no thread is started: the Java worker pool splits the rows;
 *   - the weights are read once per call as one stream, prefetched FP_PREFETCH_BYTES ahead (fp_kernels.h).
 *
 * The K-quant kernels (Q4_K, Q6_K times Q8_K activations) are in forkpoint_kquants.c, under the same invariants.
 *
 * GGML block layouts: Q8_0 = f16 scale + 32 int8 codes (34 bytes), value q·d; Q4_0 = f16 scale + 16 bytes whose low
 * nibbles are elements 0…15 and high nibbles elements 16…31 (18 bytes), value (q − 8)·d.
 */
#include "fp_kernels.h"

enum { FP_AVX2 = 1, FP_AVX512_VNNI = 2, FP_NEON = 4 };

/* The variants this CPU runs (a bit set of FP_*): what the Java side chooses from. */
FP_EXPORT int fp_cpu_features(void) {
    int f = 0;
#ifdef FP_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) f |= FP_AVX2;
    if ((f & FP_AVX2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
            && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")) f |= FP_AVX512_VNNI;
#endif
#ifdef FP_ARM
    f |= FP_NEON;
#endif
    return f;
}

/* The ABI version of these entry points: the Java side refuses a library of another. */
FP_EXPORT int fp_abi_version(void) { return 1; }

/* ---- portable C ---------------------------------------------------------------------------------------------- */

FP_EXPORT void fp_q8_0_rows_c(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                              int32_t n, float* out, int32_t out_stride) {
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * 34;
        for (int32_t t = 0; t < n; t++) {
            const int8_t* x = xq + (int64_t)t * blocks * 32;
            const float* dx = xd + (int64_t)t * blocks;
            float acc = 0.0f;
            for (int32_t b = 0; b < blocks; b++) {
                const uint8_t* blk = row + (int64_t)b * 34;
                if (t == 0) FP_PREFETCH(blk);
                const int8_t* q = (const int8_t*)(blk + 2);
                int32_t s = 0;
                for (int j = 0; j < 32; j++) s += (int32_t)q[j] * x[b * 32 + j];
                acc += (float)s * (fp16_to_f32(load_u16(blk)) * dx[b]);
            }
            out[(int64_t)t * out_stride + r] = acc;
        }
    }
}

FP_EXPORT void fp_q4_0_rows_c(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                              int32_t n, float* out, int32_t out_stride) {
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * 18;
        for (int32_t t = 0; t < n; t++) {
            const int8_t* x = xq + (int64_t)t * blocks * 32;
            const float* dx = xd + (int64_t)t * blocks;
            float acc = 0.0f;
            for (int32_t b = 0; b < blocks; b++) {
                const uint8_t* blk = row + (int64_t)b * 18;
                if (t == 0) FP_PREFETCH(blk);
                const int8_t* xb = x + b * 32;
                int32_t s = 0;
                for (int j = 0; j < 16; j++) {
                    s += ((int32_t)(blk[2 + j] & 0x0f) - 8) * xb[j];
                    s += ((int32_t)(blk[2 + j] >> 4) - 8) * xb[j + 16];
                }
                acc += (float)s * (fp16_to_f32(load_u16(blk)) * dx[b]);
            }
            out[(int64_t)t * out_stride + r] = acc;
        }
    }
}

/* ---- x86: AVX2 + FMA ----------------------------------------------------------------------------------------- */
#ifdef FP_X86

/* Σ w·x over 32 int8 pairs as 8 int32 lanes: |w| (unsigned) times x with w's sign, pairs summed (≤ 2·128·127 fits
 * 16 bits), then to 32 bits. Exact. */
__attribute__((target("avx2,fma,f16c")))
static inline __m256i dot32_s8_avx2(__m256i w, __m256i x) {
    __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

/* Σ q·x with q unsigned nibbles 0…15 (as 32 bytes) and x int8: pairs ≤ 2·15·128 fit 16 bits. Exact. */
__attribute__((target("avx2,fma,f16c")))
static inline __m256i dot32_u4s8_avx2(__m256i q, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, x), _mm256_set1_epi16(1));
}

/* A Q4_0 block's 16 code bytes as 32 unsigned nibbles in element order (low nibbles, then high). */
__attribute__((target("avx2,fma,f16c")))
static inline __m256i nibbles_avx2(const uint8_t* qs) {
    __m128i packed = _mm_loadu_si128((const __m128i*)qs);
    __m128i m = _mm_set1_epi8(0x0f);
    __m128i lo = _mm_and_si128(packed, m);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), m);
    return _mm256_set_m128i(hi, lo);
}

__attribute__((target("avx2,fma,f16c")))
FP_EXPORT void fp_q8_0_rows_avx2(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 int32_t n, float* out, int32_t out_stride) {
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * 34;
        for (int32_t t = 0; t < n; t++) {
            const int8_t* x = xq + (int64_t)t * blocks * 32;
            const float* dx = xd + (int64_t)t * blocks;
            __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
            int32_t b = 0;
            for (; b + 1 < blocks; b += 2) {
                const uint8_t* k0 = row + (int64_t)b * 34;
                if (t == 0) FP_PREFETCH(k0);
                const uint8_t* k1 = k0 + 34;
                __m256i s0 = dot32_s8_avx2(_mm256_loadu_si256((const __m256i*)(k0 + 2)), _mm256_loadu_si256((const __m256i*)(x + b * 32)));
                __m256i s1 = dot32_s8_avx2(_mm256_loadu_si256((const __m256i*)(k1 + 2)), _mm256_loadu_si256((const __m256i*)(x + b * 32 + 32)));
                acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(half_x86((k0)) * dx[b]), acc0);
                acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_set1_ps(half_x86((k1)) * dx[b + 1]), acc1);
            }
            if (b < blocks) {
                const uint8_t* k0 = row + (int64_t)b * 34;
                __m256i s0 = dot32_s8_avx2(_mm256_loadu_si256((const __m256i*)(k0 + 2)), _mm256_loadu_si256((const __m256i*)(x + b * 32)));
                acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(half_x86((k0)) * dx[b]), acc0);
            }
            out[(int64_t)t * out_stride + r] = hsum256(_mm256_add_ps(acc0, acc1));
        }
    }
}

/* The one-row body, left to rows of more than FP_Q4_0_SUMS blocks (every token count; see q4_0_rows16_avx2 below). */
__attribute__((target("avx2,fma,f16c")))
static void q4_0_rows1_avx2(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                            int32_t n, float* out, int32_t out_stride) {
    const __m256i ones = _mm256_set1_epi8(1);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * 18;
        for (int32_t t = 0; t < n; t++) {
            const int8_t* x = xq + (int64_t)t * blocks * 32;
            const float* dx = xd + (int64_t)t * blocks;
            __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
            int32_t b = 0;
            for (; b < blocks; b++) {
                const uint8_t* k = row + (int64_t)b * 18;
                if (t == 0) FP_PREFETCH(k);
                __m256i xv = _mm256_loadu_si256((const __m256i*)(x + b * 32));
                /* Σ (q − 8)·x = Σ q·x − 8·Σ x, both exact */
                __m256i s = _mm256_sub_epi32(dot32_u4s8_avx2(nibbles_avx2(k + 2), xv),
                                             _mm256_slli_epi32(dot32_u4s8_avx2(ones, xv), 3));
                __m256 scaled = _mm256_set1_ps(half_x86((k)) * dx[b]);
                if (b & 1) acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scaled, acc1);
                else acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scaled, acc0);
            }
            out[(int64_t)t * out_stride + r] = hsum256(_mm256_add_ps(acc0, acc1));
        }
    }
}

#define FP_Q4_0_SUMS 8192   /* int32 of −8·Σx on the stack: tokens per pass = FP_Q4_0_SUMS / blocks */

/* s[t·blocks + k] = −8 · Σ of token t's 32 activation codes of block k (|Σ| ≤ 32·128: exact). */
__attribute__((target("avx2,fma,f16c")))
static void q4_0_neg_sums(const int8_t* xq, int32_t blocks, int32_t n, int32_t* s) {
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int64_t i = 0; i < (int64_t)n * blocks; i++) {
        __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(xq + i * 32)), bias);   /* x + 128 */
        __m256i q = _mm256_sad_epu8(u, _mm256_setzero_si256());
        __m128i h = _mm_add_epi64(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        int32_t sum = (int32_t)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) - 32 * 128;
        s[i] = -8 * sum;
    }
}

/*
 * Q4_0 on AVX2 with sixteen rows in the lanes of two registers (the form of the VNNI kernel, q4_0_rows16_vnni): per
 * tile of sixteen rows (the last one's missing rows read the slice's last row, and their lanes are not stored) and per
 * chunk of FP_Q4_0_CHUNK blocks, the rows' codes of each block transposed once (fp_nibbles8, eight rows at a time) into
 * sixteen registers of nibbles, low (elements 0–15) and high (16–31), kept in an L1 scratch with the sixteen f16
 * scales converted once;
 * every token of the call then runs through the chunk with its two accumulators in registers: per block fp_dot16_u4
 * (vpmaddubsw of the unsigned codes by its broadcast activation dwords, summed exactly) onto −8·Σx of its block, so the
 * int32 is Σ (q − 8)·x, and one multiply-add by d_w·d_x, in block order. The form depends on the matrix only, never on
 * n, the slice or the lane; the next tile's codes are prefetched as one sequential stream while a tile is read.
 */
#define FP_Q4_0_CHUNK 32

/* The f16 scales at p[0] + o … p[7] + o as eight floats. */
__attribute__((target("avx2,fma,f16c"), always_inline))
static inline __m256 q4_0_scales8(const uint8_t* const* p, int64_t o) {
    __m128i h = _mm_setzero_si128();
    h = _mm_insert_epi16(h, load_u16(p[0] + o), 0);
    h = _mm_insert_epi16(h, load_u16(p[1] + o), 1);
    h = _mm_insert_epi16(h, load_u16(p[2] + o), 2);
    h = _mm_insert_epi16(h, load_u16(p[3] + o), 3);
    h = _mm_insert_epi16(h, load_u16(p[4] + o), 4);
    h = _mm_insert_epi16(h, load_u16(p[5] + o), 5);
    h = _mm_insert_epi16(h, load_u16(p[6] + o), 6);
    h = _mm_insert_epi16(h, load_u16(p[7] + o), 7);
    return _mm256_cvtph_ps(h);
}

__attribute__((target("avx2,fma,f16c")))
static void q4_0_rows16_avx2(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                             const int32_t* nsum, int32_t n, float* out, int32_t out_stride) {
    const int64_t row_bytes = (int64_t)blocks * 18;
    __m256i q[FP_Q4_0_CHUNK][16];
    __m256 dw[FP_Q4_0_CHUNK][2];
    __m256 acc[FP_MAX_TOKENS][2];
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        const uint8_t* code[16];
        fp_tile16_rows(w, row_bytes, r0, rows, code);
        for (int32_t t = 0; t < n; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
        for (int32_t k0 = 0; k0 < blocks; k0 += FP_Q4_0_CHUNK) {
            const int32_t count = blocks - k0 < FP_Q4_0_CHUNK ? blocks - k0 : FP_Q4_0_CHUNK;
            /* rows 0–7, then 8–15: rows whose length is a multiple of 4 KiB share an L1 set, eight of them fit its ways */
            for (int h = 0; h < 2; h++) {
                for (int32_t c = 0; c < count; c++) {
                    const int64_t o = (int64_t)(k0 + c) * 18;
                    if (h == 0 && r0 + 16 < rows) {   /* the next tile (16 contiguous rows) as one stream, 16 blocks' bytes per block */
                        fp_prefetch_tile16(w + (int64_t)(r0 + 16) * row_bytes, o, 18);
                    }
                    fp_nibbles8(code + 8 * h, o + 2, q[c] + 8 * h);
                    dw[c][h] = q4_0_scales8(code + 8 * h, o);   /* lane j: row 8h + j's scale of block k0 + c */
                }
            }
            for (int32_t t = 0; t < n; t++) {
                const int8_t* x = xq + ((int64_t)t * blocks + k0) * 32;
                const float* dx = xd + (int64_t)t * blocks + k0;
                const int32_t* s = nsum + (int64_t)t * blocks + k0;
                __m256 a0 = acc[t][0], a1 = acc[t][1];
                for (int32_t c = 0; c < count; c++) {
                    __m256i lo, hi;
                    fp_dot16_u4(q[c], x + (int64_t)c * 32, _mm256_set1_epi32(s[c]), &lo, &hi);
                    const __m256 sx = _mm256_set1_ps(dx[c]);
                    a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_mul_ps(dw[c][0], sx), a0);
                    a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_mul_ps(dw[c][1], sx), a1);
                }
                acc[t][0] = a0;
                acc[t][1] = a1;
            }
        }
        const int32_t live = rows - r0 < 16 ? rows - r0 : 16;
        for (int32_t t = 0; t < n; t++) fp_store16(out + (int64_t)t * out_stride + r0, acc[t][0], acc[t][1], live);
    }
}

/* Tokens in passes of what the sums hold; rows of more than FP_Q4_0_SUMS blocks take the one-row body. */
__attribute__((target("avx2,fma,f16c")))
FP_EXPORT void fp_q4_0_rows_avx2(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 int32_t n, float* out, int32_t out_stride) {
    if (blocks > FP_Q4_0_SUMS) {
        q4_0_rows1_avx2(w, blocks, rows, xq, xd, n, out, out_stride);
        return;
    }
    int32_t nsum[FP_Q4_0_SUMS];
    const int32_t pass = FP_Q4_0_SUMS / blocks;
    for (int32_t t0 = 0; t0 < n; t0 += pass) {
        const int32_t m = n - t0 < pass ? n - t0 : pass;
        q4_0_neg_sums(xq, blocks, m, nsum);
        q4_0_rows16_avx2(w, blocks, rows, xq, xd, nsum, m, out, out_stride);
        xq += (int64_t)m * blocks * 32;
        xd += (int64_t)m * blocks;
        out += (int64_t)m * out_stride;
    }
}

/* ---- x86: AVX-512 VNNI (two blocks per 512-bit register) ----------------------------------------------------- */

__attribute__((target(FP_VNNI)))
static inline __m512i two_blocks(const uint8_t* a, const uint8_t* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)a)),
                              _mm256_loadu_si256((const __m256i*)b), 1);
}

/*
 * The VNNI kernels take one row at a time and, within it, one pair of blocks at a time for all n tokens: what depends
 * only on the weights (the codes in dot-product order, their correction, the two blocks' scales) is formed once per
 * pair, and per token a pair costs a load, a dot product (accumulated onto the negated correction, so no subtraction),
 * a conversion and two multiply-adds.
 * vpdpbusd multiplies unsigned bytes by signed ones, so the activations are biased to x + 128 (x ^ 0x80, unsigned) and
 * Σ w·x = Σ w·(x + 128) − 128·Σ w, where 128·Σ w is the weights' own correction: exact in int32, for any weight code
 * (Q8_0's −128 too). Lanes 0–7 of a 512-bit register belong to the first block of the pair, 8–15 to the second.
 */
static const int32_t FP_PAIR_SCALES[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

/* The scales of blocks b and b+1 (two consecutive floats) spread to lanes 0–7 and 8–15. */
__attribute__((target(FP_VNNI)))
static inline __m512 pair_scales(const float* two) {
    return _mm512_permutexvar_ps(_mm512_loadu_si512((const void*)FP_PAIR_SCALES),
                                 _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd((const double*)two))));
}

/* Per token of a row: n accumulators and the odd last block's sum, then the sums written out. */
#define FP_VNNI_TOKENS 16

/* The one-row Q8_0 body, left to rows of more than FP_Q4_0_SUMS blocks (every token count; see q8_0_rows16_vnni below). */
__attribute__((target(FP_VNNI), always_inline))
static inline void q8_0_rows_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                       const int32_t n, float* out, int32_t out_stride) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * 34;
        __m512 acc[FP_VNNI_TOKENS];
        float tail[FP_VNNI_TOKENS] = {0};
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) { acc[t] = _mm512_setzero_ps(); tail[t] = 0.0f; }
        int32_t b = 0;
        for (; b + 1 < blocks; b += 2) {
            const uint8_t* k0 = row + (int64_t)b * 34;
            const uint8_t* k1 = k0 + 34;
            FP_PREFETCH(k0);
            __m512i wv = two_blocks(k0 + 2, k1 + 2);
            __m512i correction = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, bias, wv));   /* −128 · Σ w per lane */
            __m512 dw = _mm512_mask_blend_ps((__mmask16)0xff00, _mm512_set1_ps(half_x86(k0)), _mm512_set1_ps(half_x86(k1)));
#pragma GCC unroll 16
            for (int32_t t = 0; t < n; t++) {
                __m512i xv = _mm512_xor_si512(_mm512_loadu_si512((const void*)(xq + (int64_t)t * blocks * 32 + b * 32)), bias);
                __m512i s = _mm512_dpbusd_epi32(correction, xv, wv);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, pair_scales(xd + (int64_t)t * blocks + b)), acc[t]);
            }
        }
        if (b < blocks) {
            const uint8_t* k0 = row + (int64_t)b * 34;
            __m256i wv = _mm256_loadu_si256((const __m256i*)(k0 + 2));
            __m256i correction = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), wv);
            float dw = half_x86(k0);
#pragma GCC unroll 16
            for (int32_t t = 0; t < n; t++) {
                __m256i xv = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(xq + (int64_t)t * blocks * 32 + b * 32)), _mm256_set1_epi8((char)0x80));
                __m256i s = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), xv, wv), correction);
                tail[t] = hsum256(_mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(dw * xd[(int64_t)t * blocks + b])));
            }
        }
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = hsum512(acc[t]) + tail[t];
    }
}

/*
 * Q4_0: the two blocks' 16 code bytes become, in one register, [low nibbles b | high nibbles b | low b+1 | high b+1]
 * (element order, matching the activations' 64 bytes), minus 8: signed codes −8 … 7.
 */
/* The one-row body, left to rows of more than FP_Q4_0_SUMS blocks (every token count; see q4_0_rows16_vnni below). */
__attribute__((target(FP_VNNI), always_inline))
static inline void q4_0_rows_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                       const int32_t n, float* out, int32_t out_stride) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const __m512i low = _mm512_set1_epi8(0x0f);
    const __m512i eight = _mm512_set1_epi8(8);
    const __m512i nibble_shift = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);   /* 64-bit lanes 0–7: 0, 0, 4, 4, 0, 0, 4, 4 */
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * 18;
        __m512 acc[FP_VNNI_TOKENS];
        float tail[FP_VNNI_TOKENS] = {0};
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) { acc[t] = _mm512_setzero_ps(); tail[t] = 0.0f; }
        int32_t b = 0;
        for (; b + 1 < blocks; b += 2) {
            const uint8_t* k0 = row + (int64_t)b * 18;
            const uint8_t* k1 = k0 + 18;
            FP_PREFETCH(k0);
            /* [b | b | b+1 | b+1] (each block's 16 code bytes twice), then shifted by 0 or 4 per 128-bit lane and masked:
               [lo b | hi b | lo b+1 | hi b+1], the activations' element order, in five instructions */
            __m512i twice = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(k0 + 2)))),
                                               _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(k1 + 2))), 1);
            __m512i q = _mm512_sub_epi8(_mm512_and_si512(_mm512_srlv_epi64(twice, nibble_shift), low), eight);
            __m512i correction = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, bias, q));   /* −128 · Σ q per lane */
            __m512 dw = _mm512_mask_blend_ps((__mmask16)0xff00, _mm512_set1_ps(half_x86(k0)), _mm512_set1_ps(half_x86(k1)));
#pragma GCC unroll 16
            for (int32_t t = 0; t < n; t++) {
                __m512i xv = _mm512_xor_si512(_mm512_loadu_si512((const void*)(xq + (int64_t)t * blocks * 32 + b * 32)), bias);
                __m512i s = _mm512_dpbusd_epi32(correction, xv, q);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, pair_scales(xd + (int64_t)t * blocks + b)), acc[t]);
            }
        }
        if (b < blocks) {
            const uint8_t* k0 = row + (int64_t)b * 18;
            __m256i q = _mm256_sub_epi8(nibbles_avx2(k0 + 2), _mm256_set1_epi8(8));
            __m256i correction = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), q);
            float dw = half_x86(k0);
#pragma GCC unroll 16
            for (int32_t t = 0; t < n; t++) {
                __m256i xv = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(xq + (int64_t)t * blocks * 32 + b * 32)), _mm256_set1_epi8((char)0x80));
                __m256i s = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), xv, q), correction);
                tail[t] = hsum256(_mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(dw * xd[(int64_t)t * blocks + b])));
            }
        }
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = hsum512(acc[t]) + tail[t];
    }
}

/*
 * The f16 scales at byte offsets at[j] from p (sixteen rows' scales of one block: lane j = row j) as floats, by one
 * gather: the sixteen-rows kernels' scales where the 64-byte loads of several blocks do not reach (a row's last blocks).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512 fp_scales16_gather(__m512i at, const uint8_t* p) {
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(at, (const void*)p, 1)));
}

/*
 * Block k of a sixteen-rows tile for every token of the call (Q4_0, Q8_0): q[0 … 7] the tile's unsigned codes as the
 * eight activation dwords of a block meet them (lane j = row j), dw the rows' scales; token t's int32 starts from
 * nsum[t·blocks + k] (the kind's correction, so the sum is exact), takes eight vpdpbusd by its broadcast activation
 * dwords and goes into acc[t] by one multiply-add (d_w·d_x): the block order of every (row, token).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void fp_block16_tokens(const __m512i q[8], __m512 dw, const int8_t* xq, const float* xd, const int32_t* nsum,
                                     int32_t blocks, int32_t k, const int32_t n, __m512* acc) {
#pragma GCC unroll 16
    for (int32_t t = 0; t < n; t++) {
        const int8_t* x = xq + ((int64_t)t * blocks + k) * 32;
        int32_t v;
        __m512i dot = _mm512_set1_epi32(nsum[(int64_t)t * blocks + k]);
        for (int i = 0; i < 8; i++) {
            memcpy(&v, x + 4 * i, sizeof v);
            dot = _mm512_dpbusd_epi32(dot, q[i], _mm512_set1_epi32(v));
        }
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_set1_ps(xd[(int64_t)t * blocks + k])), acc[t]);
    }
}

/*
 * Q4_0 with sixteen rows in the sixteen int32 lanes (as the 4-bit affine kernel, forkpoint_affine.c): per tile of
 * sixteen rows (the last one's missing rows read the slice's last row, and their lanes are not stored) and per block,
 * the sixteen rows' 16 code bytes transposed once into four dword registers (lane j = row j), split into the low
 * nibbles (elements 0–15, meeting activation bytes 0–15) and high nibbles (elements 16–31, bytes 16–31), and the
 * sixteen scales gathered and converted once; every token of the call then takes eight vpdpbusd of the unsigned codes
 * by its broadcast activation dwords, starting from −8·Σx of its block (so the int32 is Σ (q − 8)·x, exact), and one
 * multiply-add (d_w·d_x) into its accumulator, in block order. Σx per token and block is formed once per call in
 * q4_0_neg_sums. While a tile is read, the next tile's codes are prefetched into L2 as one sequential stream.
 * The scales come four blocks at a time from one 64-byte load per row (q4_0_scales16x4: a few permutes, no gather;
 * the gather, 16 loads of its own that nothing amortises at one token, was a quarter of a decode's kernel time);
 * the last blocks % 4 blocks of a row take the gather. Both give the same sixteen f16 values, so the same bits.
 */
/* Dwords 0, 4, 9, 13 of two 64-byte rows: each holds one of four consecutive blocks' f16 scale (bytes 0, 18, 36, 54). */
static const int32_t FP_Q4_0_SCALE_DWORDS[16] = {0, 4, 9, 13, 16, 20, 25, 29};
/* The even words of one register, then the odd words of another: the scales of two blocks, sixteen rows each. */
static const int16_t FP_Q4_0_SCALE_WORDS[32] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
                                                33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};

/*
 * The f16 scales of blocks at byte offset o … o + 71 (four blocks) of sixteen rows (p[j]: row j), as floats: dw[i]
 * lane j = row j's scale of block i. One 64-byte load per row (blocks i start at bytes 18·i: scales in dwords 0 and 9
 * (low halves) and 4 and 13 (high halves)), the four dwords of rows m, 4 + m, 8 + m, 12 + m picked into z[m] (128-bit
 * lane L = row 4L + m), the in-lane 4 × 4 dword transpose of fp_codes16, then the halves picked into words.
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void q4_0_scales16x4(const uint8_t* const* p, int64_t o, __m512 dw[4]) {
    const __m512i pick = _mm512_loadu_si512((const void*)FP_Q4_0_SCALE_DWORDS);
    __m512i z[4];
    for (int m = 0; m < 4; m++) {
        __m512i a = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void*)(p[m] + o)), pick,
                                              _mm512_loadu_si512((const void*)(p[4 + m] + o)));
        __m512i b = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void*)(p[8 + m] + o)), pick,
                                              _mm512_loadu_si512((const void*)(p[12 + m] + o)));
        z[m] = _mm512_inserti64x4(a, _mm512_castsi512_si256(b), 1);
    }
    __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a1 = _mm512_unpackhi_epi32(z[0], z[1]);
    __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]), a3 = _mm512_unpackhi_epi32(z[2], z[3]);
    const __m512i words = _mm512_loadu_si512((const void*)FP_Q4_0_SCALE_WORDS);
    __m512i f01 = _mm512_permutex2var_epi16(_mm512_unpacklo_epi64(a0, a2), words, _mm512_unpackhi_epi64(a0, a2));
    __m512i f23 = _mm512_permutex2var_epi16(_mm512_unpacklo_epi64(a1, a3), words, _mm512_unpackhi_epi64(a1, a3));
    dw[0] = _mm512_cvtph_ps(_mm512_castsi512_si256(f01));
    dw[1] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(f01, 1));
    dw[2] = _mm512_cvtph_ps(_mm512_castsi512_si256(f23));
    dw[3] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(f23, 1));
}

__attribute__((target(FP_VNNI), always_inline))
static inline void q4_0_rows16_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const int32_t* nsum, const int32_t n, float* out, int32_t out_stride) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    const int64_t row_bytes = (int64_t)blocks * 18;
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        const uint8_t* code[16];
        fp_tile16_rows(w, row_bytes, r0, rows, code);
        int32_t index[16];
        for (int j = 0; j < 16; j++) index[j] = (int32_t)(code[j] - code[0]);
        const __m512i at = _mm512_loadu_si512((const void*)index);
        const __mmask16 live = fp_tile16_live(r0, rows);
        __m512 acc[FP_MAX_TOKENS];
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        const int32_t whole = blocks & ~3;   /* blocks whose scales come four at a time */
        __m512 four[4];
        for (int32_t k = 0; k < blocks; k++) {
            const int64_t o = (int64_t)k * 18;
            if (r0 + 16 < rows) {   /* the next tile (16 contiguous rows) as one stream, 16 blocks' bytes per block */
                fp_prefetch_tile16(w + (int64_t)(r0 + 16) * row_bytes, o, 18);
            }
            __m512i d[4], q[8];
            fp_codes16(code, o + 2, d);
            for (int i = 0; i < 4; i++) {
                q[i] = _mm512_and_si512(d[i], low);
                q[4 + i] = _mm512_and_si512(_mm512_srli_epi32(d[i], 4), low);
            }
            if ((k & 3) == 0 && k < whole) q4_0_scales16x4(code, o, four);
            __m512 dw;   /* lane j: row j's scale of block k */
            if (k < whole) {
                dw = four[k & 3];
            } else {
                dw = fp_scales16_gather(at, code[0] + o);
            }
            fp_block16_tokens(q, dw, xq, xd, nsum, blocks, k, n, acc);
        }
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) _mm512_mask_storeu_ps(out + (int64_t)t * out_stride + r0, live, acc[t]);
    }
}

/*
 * One token (a decode step), the whole tiles of sixteen rows: the same integers and the same multiply-adds per row
 * and block as q4_0_rows16_vnni (so the same bits), formed without the code transpose that nothing amortises at one
 * token. Per block, each row's 16 code bytes stay in a 128-bit lane (z[m] lane L = row 4L + m, as fp_codes16 loads
 * them), meet the token's activation bytes 0–15 (low nibbles) and 16–31 (high nibbles) broadcast to every lane, and
 * each lane's four partial dwords are then summed into lane 4L + m (two unpack-and-add steps): Σ (q − 8)·x with
 * the −8·Σx added last, exact in int32. The rows are addressed from four pointers and the strides 4, 8 and 12 rows
 * (not sixteen pointers, which spill: every code load then waited on a reload of its pointer). While a tile is read,
 * the tile at least FP_TILE_AHEAD_BYTES on (fp_tile16_ahead: two tiles on at 2048 columns) is prefetched into L2 as
 * one stream. Returns the rows done.
 */
__attribute__((target(FP_VNNI)))
static int32_t q4_0_tiles16_one_token_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq,
                                           const float* xd, const int32_t* nsum, float* out) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    const int64_t rb = (int64_t)blocks * 18, rb4 = 4 * rb, rb8 = 8 * rb, rb12 = 12 * rb, ahead = fp_tile16_ahead(rb);
    const int32_t whole = blocks & ~3;
    int32_t index[16];
    for (int j = 0; j < 16; j++) index[j] = (int32_t)(j * rb);
    const __m512i at = _mm512_loadu_si512((const void*)index);
    int32_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        const uint8_t* tile = w + (int64_t)r0 * rb;
        __m512 acc = _mm512_setzero_ps();
        __m512 four[4];
        for (int32_t k = 0; k < blocks; k++) {
            const int64_t o = (int64_t)k * 18;
            const uint8_t* p[4] = {tile + o, tile + rb + o, tile + 2 * rb + o, tile + 3 * rb + o};
            if (r0 + 16 < rows) {   /* a later tile as one stream, as q4_0_rows16_vnni, at least 32 KiB ahead */
                fp_prefetch_tile16(tile + ahead, o, 18);
            }
            __m512 dw;   /* lane j: row j's scale of block k */
            if (k < whole) {
                if ((k & 3) == 0) {
                    const uint8_t* code[16] = {p[0], p[1], p[2], p[3], p[0] + rb4, p[1] + rb4, p[2] + rb4, p[3] + rb4,
                                               p[0] + rb8, p[1] + rb8, p[2] + rb8, p[3] + rb8,
                                               p[0] + rb12, p[1] + rb12, p[2] + rb12, p[3] + rb12};
                    q4_0_scales16x4(code, 0, four);
                }
                dw = four[k & 3];
            } else {
                dw = fp_scales16_gather(at, p[0]);
            }
            const int8_t* x = xq + (int64_t)k * 32;
            const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)x));
            const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)(x + 16)));
            __m512i e[4];
            for (int m = 0; m < 4; m++) {
                const __m512i z = fp_rows4(p[m] + 2, rb4, rb8, rb12);
                e[m] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(z, low), xlo),
                                           _mm512_and_si512(_mm512_srli_epi32(z, 4), low), xhi);
            }
            const __m512i dot = _mm512_add_epi32(fp_row_sums16(e), _mm512_set1_epi32(nsum[k]));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_set1_ps(xd[k])), acc);
        }
        _mm512_storeu_ps(out + r0, acc);
    }
    return r0;
}

/*
 * Bytes [2, 18) of one block (the codes) of sixteen rows from row 0's block at p and the row stride rb (not sixteen
 * pointers, which spill; see q4_0_tiles16_one_token_vnni) as the eight unsigned nibble registers of q4_0_rows16_vnni:
 * q[i] lane j = the low nibbles of row j's code dword i, q[4 + i] its high nibbles. Four rows per register by fp_rows4
 * (256-bit inserts, fewer 512-bit shuffle slots on cores that split them), then the in-lane dword transpose of
 * fp_codes16: the same bytes in the same lanes.
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void q4_0_nibbles16(const uint8_t* p, int64_t rb, __m512i q[8]) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    __m512i z[4], d[4];
    for (int m = 0; m < 4; m++) z[m] = fp_rows4(p + m * rb + 2, 4 * rb, 8 * rb, 12 * rb);
    fp_dwords16(z, d);
    for (int i = 0; i < 4; i++) {
        q[i] = _mm512_and_si512(d[i], low);
        q[4 + i] = _mm512_and_si512(_mm512_srli_epi32(d[i], 4), low);
    }
}

/*
 * Block k of a sixteen-rows tile for two to eight tokens (the few-tokens forms of Q4_0 and Q8_0): the integers and the
 * multiply-adds of fp_block16_tokens (so the same bits) in another order: the tokens' dot products advance together,
 * one code register at a time (n independent vpdpbusd chains in flight rather than one chain of eight after another),
 * and at two or three tokens each token's first and last four activation dwords take a chain of their own (added
 * once: exact).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void fp_block16_few_tokens(const __m512i q[8], __m512 dw, const int8_t* xq, const float* xd, const int32_t* nsum,
                                         int32_t blocks, int32_t k, const int32_t n, __m512* acc) {
    __m512i dot[FP_MAX_TOKENS];
#pragma GCC unroll 8
    for (int32_t t = 0; t < n; t++) dot[t] = _mm512_set1_epi32(nsum[(int64_t)t * blocks + k]);
    if (n <= 3) {
        __m512i high[FP_MAX_TOKENS];
#pragma GCC unroll 8
        for (int32_t t = 0; t < n; t++) high[t] = _mm512_setzero_si512();
        for (int i = 0; i < 4; i++) {
#pragma GCC unroll 8
            for (int32_t t = 0; t < n; t++) {
                const int8_t* x = xq + ((int64_t)t * blocks + k) * 32;
                int32_t v, u;
                memcpy(&v, x + 4 * i, sizeof v);
                memcpy(&u, x + 16 + 4 * i, sizeof u);
                dot[t] = _mm512_dpbusd_epi32(dot[t], q[i], _mm512_set1_epi32(v));
                high[t] = _mm512_dpbusd_epi32(high[t], q[4 + i], _mm512_set1_epi32(u));
            }
        }
#pragma GCC unroll 8
        for (int32_t t = 0; t < n; t++) dot[t] = _mm512_add_epi32(dot[t], high[t]);
    } else {
        for (int i = 0; i < 8; i++) {
#pragma GCC unroll 8
            for (int32_t t = 0; t < n; t++) {
                int32_t v;
                memcpy(&v, xq + ((int64_t)t * blocks + k) * 32 + 4 * i, sizeof v);
                dot[t] = _mm512_dpbusd_epi32(dot[t], q[i], _mm512_set1_epi32(v));
            }
        }
    }
#pragma GCC unroll 8
    for (int32_t t = 0; t < n; t++)
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[t]), _mm512_mul_ps(dw, _mm512_set1_ps(xd[(int64_t)t * blocks + k])), acc[t]);
}

/*
 * Two to eight tokens (a decode step of a few streams), the whole tiles of sixteen rows: per block the codes and
 * scales of q4_0_rows16_vnni and, per token, the same int32 (the −8·Σx start and eight vpdpbusd: exact, so their order
 * does not matter) and the same multiply-add into its accumulator, in block order: the same bits. What differs is the
 * order of the instructions (fp_block16_few_tokens) and that the rows are addressed from one pointer and the row
 * stride (q4_0_nibbles16). Measured on an AMD EPYC (Zen 4), one thread, CPU time: 4 tokens 0.88x the time of
 * q4_0_rows16_vnni with the weights in cache, 0.91x streamed from memory; 8 tokens 0.93x; 2 tokens 0.99x. At sixteen
 * tokens the chains spill (1.4x), so more than eight take q4_0_rows16_vnni. The alternatives measured slower: the
 * one-token form run per token (no transpose; per token the row sums) 1.06x at 4 tokens, 1.13x at 8; loading the four
 * rows of a register by masked 128-bit broadcasts, gathering every block's scales, converting the next four blocks'
 * scales a group ahead: no better. Returns the rows done.
 */
__attribute__((target(FP_VNNI), always_inline))
static inline int32_t q4_0_tiles16_few_tokens_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq,
                                                   const float* xd, const int32_t* nsum, const int32_t n, float* out,
                                                   int32_t out_stride) {
    const int64_t rb = (int64_t)blocks * 18;
    const int32_t whole = blocks & ~3;   /* blocks whose scales come four at a time */
    int32_t index[16];
    for (int j = 0; j < 16; j++) index[j] = (int32_t)(j * rb);
    const __m512i at = _mm512_loadu_si512((const void*)index);
    int32_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        const uint8_t* tile = w + (int64_t)r0 * rb;
        __m512 acc[FP_MAX_TOKENS];
#pragma GCC unroll 8
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        __m512 four[4];
        for (int32_t k = 0; k < blocks; k++) {
            const uint8_t* p = tile + (int64_t)k * 18;
            if (r0 + 16 < rows) {   /* the next tile as one stream, as q4_0_rows16_vnni */
                fp_prefetch_tile16(tile + 16 * rb, (int64_t)k * 18, 18);
            }
            __m512i q[8];
            q4_0_nibbles16(p, rb, q);
            __m512 dw;   /* lane j: row j's scale of block k */
            if (k < whole) {
                if ((k & 3) == 0) {
                    const uint8_t* code[16];
                    for (int j = 0; j < 16; j++) code[j] = p + j * rb;
                    q4_0_scales16x4(code, 0, four);
                }
                dw = four[k & 3];
            } else {
                dw = fp_scales16_gather(at, p);
            }
            fp_block16_few_tokens(q, dw, xq, xd, nsum, blocks, k, n, acc);
        }
#pragma GCC unroll 8
        for (int32_t t = 0; t < n; t++) _mm512_storeu_ps(out + (int64_t)t * out_stride + r0, acc[t]);
    }
    return r0;
}

/*
 * Two to eight tokens of a sixteen-rows VNNI kernel (Q4_0, Q8_0; blocks of BYTES bytes): the whole tiles by
 * KIND##_tiles16_few_tokens_vnni (one copy per count, in a function of its own: inlined into the entry with every other
 * copy, its registers were allocated worse), the last rows by KIND##_rows16_vnni.
 */
#define FP_FEW_TILES_CASE(KIND, N) case N: done = KIND##_tiles16_few_tokens_vnni(w, blocks, rows, xq, xd, nsum, N, out, out_stride); break;
#define FP_FEW_TOKENS_VNNI(KIND, BYTES)                                                                                \
    __attribute__((target(FP_VNNI), noinline))                                                                        \
    static void KIND##_few_tokens_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq,              \
                                       const float* xd, const int32_t* nsum, const int32_t n, float* out,             \
                                       int32_t out_stride) {                                                          \
        int32_t done = 0;                                                                                             \
        switch (n) {                                                                                                  \
            FP_FEW_TILES_CASE(KIND, 2) FP_FEW_TILES_CASE(KIND, 3) FP_FEW_TILES_CASE(KIND, 4) FP_FEW_TILES_CASE(KIND, 5)     \
            FP_FEW_TILES_CASE(KIND, 6) FP_FEW_TILES_CASE(KIND, 7) FP_FEW_TILES_CASE(KIND, 8)                          \
            default: break;                                                                                           \
        }                                                                                                             \
        if (done < rows) KIND##_rows16_vnni(w + (int64_t)done * blocks * (BYTES), blocks, rows - done, xq, xd, nsum,  \
                                            n, out + done, out_stride);                                               \
    }
FP_FEW_TOKENS_VNNI(q4_0, 18)

/*
 * The entry of a sixteen-rows VNNI kernel (Q4_0, Q8_0: KIND##_rows16_vnni, KIND##_tiles16_one_token_vnni,
 * KIND##_few_tokens_vnni, KIND##_neg_sums, the one-row KIND##_rows_vnni; blocks of BYTES bytes): one copy per token
 * count 2 … 8 (KIND##_few_tokens_vnni) and 16, the general body for the rest, one token on its own path (whole tiles
 * without the transpose, the last rows as any other count); tokens in passes of what the sums hold; rows of more than FP_Q4_0_SUMS blocks (262144 columns) take the
 * one-row body for every token count, so the form still depends on the matrix only.
 */
#define FP_ROWS16_CASE(KIND, N) case N: KIND##_rows16_vnni(w, blocks, rows, xq, xd, nsum, N, out, out_stride); break;
#define FP_FEW_CASE(KIND, N) case N: KIND##_few_tokens_vnni(w, blocks, rows, xq, xd, nsum, N, out, out_stride); break;
#define FP_ROWS16_VNNI_ENTRY(KIND, BYTES)                                                                               \
    __attribute__((target(FP_VNNI)))                                                                                  \
    FP_EXPORT void fp_##KIND##_rows_avx512vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq,      \
                                               const float* xd, int32_t n, float* out, int32_t out_stride) {          \
        if (blocks > FP_Q4_0_SUMS) {                                                                                  \
            KIND##_rows_vnni(w, blocks, rows, xq, xd, n, out, out_stride);                                            \
            return;                                                                                                   \
        }                                                                                                             \
        int32_t nsum[FP_Q4_0_SUMS];                                                                                   \
        const int32_t pass = FP_Q4_0_SUMS / blocks;                                                                   \
        for (int32_t t0 = 0; t0 < n; t0 += pass) {                                                                    \
            const int32_t m = n - t0 < pass ? n - t0 : pass;                                                          \
            KIND##_neg_sums(xq, blocks, m, nsum);                                                                     \
            if (m == 1) {                                                                                             \
                const int32_t done = KIND##_tiles16_one_token_vnni(w, blocks, rows, xq, xd, nsum, out);               \
                if (done < rows) KIND##_rows16_vnni(w + (int64_t)done * blocks * (BYTES), blocks, rows - done, xq, xd, \
                                                    nsum, 1, out + done, out_stride);                                 \
            } else switch (m) {                                                                                       \
                FP_FEW_CASE(KIND, 2) FP_FEW_CASE(KIND, 3) FP_FEW_CASE(KIND, 4) FP_FEW_CASE(KIND, 5)                   \
                FP_FEW_CASE(KIND, 6) FP_FEW_CASE(KIND, 7) FP_FEW_CASE(KIND, 8) FP_ROWS16_CASE(KIND, 16)               \
                default: KIND##_rows16_vnni(w, blocks, rows, xq, xd, nsum, m, out, out_stride); break;                \
            }                                                                                                         \
            xq += (int64_t)m * blocks * 32;                                                                           \
            xd += (int64_t)m * blocks;                                                                                \
            out += (int64_t)m * out_stride;                                                                           \
        }                                                                                                             \
    }

FP_ROWS16_VNNI_ENTRY(q4_0, 18)

/*
 * Q8_0 with sixteen rows in the sixteen int32 lanes (the form of q4_0_rows16_vnni): per tile of sixteen rows (the
 * last one's missing rows read the slice's last row, and their lanes are not stored) and per block, the sixteen rows'
 * 32 code bytes transposed once (fp_codes16 at bytes 2 and 18) into eight dword registers (lane j = row j) and biased
 * to q + 128 (xor 0x80, unsigned); every token of the call then takes eight vpdpbusd of them by its broadcast
 * activation dwords, starting from −128·Σx of its block, so the int32 is Σ q·x, exact (|Σ (q + 128)·x| ≤ 32·255·128),
 * and one multiply-add (d_w·d_x) into its accumulator, in block order. The scales of two blocks come from one 64-byte
 * load per row (q8_0_scales16x2, the permutes of q4_0_scales16x4; the gather for an odd last block: the same f16
 * values, so the same bits). While a tile is read, the next tile's codes are prefetched into L2 as one stream.
 */
/* s[t·blocks + k] = −128 · Σ of token t's 32 activation codes of block k (|Σ| ≤ 32·128: exact). */
__attribute__((target(FP_VNNI)))
static void q8_0_neg_sums(const int8_t* xq, int32_t blocks, int32_t n, int32_t* s) {
    q4_0_neg_sums(xq, blocks, n, s);
    for (int64_t i = 0; i < (int64_t)n * blocks; i++) s[i] *= 16;   /* −8·Σ · 16, exact */
}

/* Dwords 0 and 8 of two 64-byte rows: the f16 scales of two consecutive Q8_0 blocks (bytes 0 and 34: the low half of
   dword 0, the high half of dword 8). */
static const int32_t FP_Q8_0_SCALE_DWORDS[16] = {0, 8, 0, 8, 16, 24, 16, 24};

/*
 * The f16 scales of the blocks at byte offsets o and o + 34 of sixteen rows (p[j]: row j), as floats: dw[i] lane j =
 * row j's scale of block i. One 64-byte load per row, dwords 0 and 8 of rows m and 4 + m picked into z[m] (128-bit
 * lane L = row 4L + m), the in-lane dword transpose of fp_codes16 (its first two results), then the halves picked
 * into words (FP_Q4_0_SCALE_WORDS: low halves of dword 0, high halves of dword 8).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void q8_0_scales16x2(const uint8_t* const* p, int64_t o, __m512 dw[2]) {
    const __m512i pick = _mm512_loadu_si512((const void*)FP_Q8_0_SCALE_DWORDS);
    __m512i z[4];
    for (int m = 0; m < 4; m++) {
        __m512i a = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void*)(p[m] + o)), pick,
                                              _mm512_loadu_si512((const void*)(p[4 + m] + o)));
        __m512i b = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void*)(p[8 + m] + o)), pick,
                                              _mm512_loadu_si512((const void*)(p[12 + m] + o)));
        z[m] = _mm512_inserti64x4(a, _mm512_castsi512_si256(b), 1);
    }
    __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a2 = _mm512_unpacklo_epi32(z[2], z[3]);
    const __m512i words = _mm512_loadu_si512((const void*)FP_Q4_0_SCALE_WORDS);
    __m512i f01 = _mm512_permutex2var_epi16(_mm512_unpacklo_epi64(a0, a2), words, _mm512_unpackhi_epi64(a0, a2));
    dw[0] = _mm512_cvtph_ps(_mm512_castsi512_si256(f01));
    dw[1] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(f01, 1));
}

__attribute__((target(FP_VNNI), always_inline))
static inline void q8_0_rows16_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const int32_t* nsum, const int32_t n, float* out, int32_t out_stride) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const int64_t row_bytes = (int64_t)blocks * 34;
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        const uint8_t* code[16];
        fp_tile16_rows(w, row_bytes, r0, rows, code);
        int32_t index[16];
        for (int j = 0; j < 16; j++) index[j] = (int32_t)(code[j] - code[0]);
        const __m512i at = _mm512_loadu_si512((const void*)index);
        const __mmask16 live = fp_tile16_live(r0, rows);
        __m512 acc[FP_MAX_TOKENS];
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        const int32_t whole = blocks & ~1;   /* blocks whose scales come two at a time */
        __m512 two[2];
        for (int32_t k = 0; k < blocks; k++) {
            const int64_t o = (int64_t)k * 34;
            if (r0 + 16 < rows) {   /* the next tile (16 contiguous rows) as one stream, 16 blocks' bytes per block */
                fp_prefetch_tile16(w + (int64_t)(r0 + 16) * row_bytes, o, 34);
            }
            __m512i q[8];
            fp_codes16(code, o + 2, q);
            fp_codes16(code, o + 18, q + 4);
            for (int i = 0; i < 8; i++) q[i] = _mm512_xor_si512(q[i], bias);
            if ((k & 1) == 0 && k < whole) q8_0_scales16x2(code, o, two);
            __m512 dw;   /* lane j: row j's scale of block k */
            if (k < whole) {
                dw = two[k & 1];
            } else {
                dw = fp_scales16_gather(at, code[0] + o);
            }
            fp_block16_tokens(q, dw, xq, xd, nsum, blocks, k, n, acc);
        }
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) _mm512_mask_storeu_ps(out + (int64_t)t * out_stride + r0, live, acc[t]);
    }
}

/*
 * One token (a decode step), the whole tiles of sixteen rows: the same integers and multiply-adds per row and block as
 * q8_0_rows16_vnni (so the same bits), without the code transpose (as q4_0_tiles16_one_token_vnni): each row's code
 * bytes 0–15 and 16–31 stay in a 128-bit lane (lane L of z[m] = row 4L + m), meet the token's activation bytes
 * broadcast to every lane, and each lane's four partial dwords are summed into lane 4L + m; −128·Σx added last,
 * exact in int32. Returns the rows done. Not inlined: inlined into the entry beside q8_0_few_tokens_vnni it ran 1.12x
 * slower (the same code, compiled otherwise; measured on an AMD EPYC).
 */
__attribute__((target(FP_VNNI), noinline))
static int32_t q8_0_tiles16_one_token_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq,
                                           const float* xd, const int32_t* nsum, float* out) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const int64_t rb = (int64_t)blocks * 34, rb4 = 4 * rb, rb8 = 8 * rb, rb12 = 12 * rb;
    const int32_t whole = blocks & ~1;
    const int far = blocks > 64;   /* a tile larger than L1 (sixteen rows of more than 2048 columns) */
    int32_t index[16];
    for (int j = 0; j < 16; j++) index[j] = (int32_t)(j * rb);
    const __m512i at = _mm512_loadu_si512((const void*)index);
    int32_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        const uint8_t* tile = w + (int64_t)r0 * rb;
        __m512 acc = _mm512_setzero_ps();
        __m512 two[2];
        for (int32_t k = 0; k < blocks; k++) {
            const int64_t o = (int64_t)k * 34;
            const uint8_t* p[4] = {tile + o, tile + rb + o, tile + 2 * rb + o, tile + 3 * rb + o};
            if (r0 + 16 < rows) {   /* the next tile as one stream, as q8_0_rows16_vnni */
                fp_prefetch_tile16(tile + 16 * rb, o, 34);
            }
            if (far && (k & 1) == 0 && k + 8 < blocks) {   /* this tile's rows into L1, eight blocks ahead */
                for (int j = 0; j < 16; j++) __builtin_prefetch(tile + j * rb + o + 8 * 34, 0, 3);
            }
            __m512 dw;   /* lane j: row j's scale of block k */
            if (k < whole) {
                if ((k & 1) == 0) {
                    const uint8_t* code[16] = {p[0], p[1], p[2], p[3], p[0] + rb4, p[1] + rb4, p[2] + rb4, p[3] + rb4,
                                               p[0] + rb8, p[1] + rb8, p[2] + rb8, p[3] + rb8,
                                               p[0] + rb12, p[1] + rb12, p[2] + rb12, p[3] + rb12};
                    q8_0_scales16x2(code, 0, two);
                }
                dw = two[k & 1];
            } else {
                dw = fp_scales16_gather(at, p[0]);
            }
            const int8_t* x = xq + (int64_t)k * 32;
            const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)x));
            const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)(x + 16)));
            __m512i e[4];
            for (int m = 0; m < 4; m++) {
                const __m512i lo = _mm512_xor_si512(fp_rows4(p[m] + 2, rb4, rb8, rb12), bias);
                const __m512i hi = _mm512_xor_si512(fp_rows4(p[m] + 18, rb4, rb8, rb12), bias);
                e[m] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo), hi, xhi);
            }
            const __m512i dot = _mm512_add_epi32(fp_row_sums16(e), _mm512_set1_epi32(nsum[k]));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_set1_ps(xd[k])), acc);
        }
        _mm512_storeu_ps(out + r0, acc);
    }
    return r0;
}

/*
 * Two to eight tokens of Q8_0, the whole tiles of sixteen rows: the codes (biased), scales and per-token work of
 * q8_0_rows16_vnni, so the same bits, in the order of q4_0_tiles16_few_tokens_vnni (fp_block16_few_tokens; the rows
 * from one pointer and the row stride, each half of a block's codes by fp_rows4 and the in-lane dword transpose).
 * Returns the rows done.
 */
__attribute__((target(FP_VNNI), always_inline))
static inline int32_t q8_0_tiles16_few_tokens_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq,
                                                   const float* xd, const int32_t* nsum, const int32_t n, float* out,
                                                   int32_t out_stride) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const int64_t rb = (int64_t)blocks * 34;
    const int32_t whole = blocks & ~1;   /* blocks whose scales come two at a time */
    int32_t index[16];
    for (int j = 0; j < 16; j++) index[j] = (int32_t)(j * rb);
    const __m512i at = _mm512_loadu_si512((const void*)index);
    int32_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        const uint8_t* tile = w + (int64_t)r0 * rb;
        __m512 acc[FP_MAX_TOKENS];
#pragma GCC unroll 8
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        __m512 two[2];
        for (int32_t k = 0; k < blocks; k++) {
            const uint8_t* p = tile + (int64_t)k * 34;
            if (r0 + 16 < rows) {   /* the next tile as one stream, as q8_0_rows16_vnni */
                fp_prefetch_tile16(tile + 16 * rb, (int64_t)k * 34, 34);
            }
            __m512i q[8];
            for (int h = 0; h < 2; h++) {
                __m512i z[4], d[4];
                for (int m = 0; m < 4; m++) z[m] = fp_rows4(p + m * rb + 2 + 16 * h, 4 * rb, 8 * rb, 12 * rb);
                fp_dwords16(z, d);
                for (int i = 0; i < 4; i++) q[4 * h + i] = _mm512_xor_si512(d[i], bias);
            }
            __m512 dw;   /* lane j: row j's scale of block k */
            if (k < whole) {
                if ((k & 1) == 0) {
                    const uint8_t* code[16];
                    for (int j = 0; j < 16; j++) code[j] = p + j * rb;
                    q8_0_scales16x2(code, 0, two);
                }
                dw = two[k & 1];
            } else {
                dw = fp_scales16_gather(at, p);
            }
            fp_block16_few_tokens(q, dw, xq, xd, nsum, blocks, k, n, acc);
        }
#pragma GCC unroll 8
        for (int32_t t = 0; t < n; t++) _mm512_storeu_ps(out + (int64_t)t * out_stride + r0, acc[t]);
    }
    return r0;
}

FP_FEW_TOKENS_VNNI(q8_0, 34)

FP_ROWS16_VNNI_ENTRY(q8_0, 34)
#endif /* FP_X86 */

/* ---- arm64: NEON ----------------------------------------------------------------------------------------------- */
#ifdef FP_ARM

/* Σ w·x over 32 int8 pairs, exact: widening multiplies to 16 bits (|w·x| ≤ 128·128), pairwise-added into 32 bits. */
static inline int32_t dot32_s8_neon(const int8_t* w, const int8_t* x) {
    int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
    int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)));
    s = vpadalq_s16(s, vmull_s8(vget_high_s8(w0), vget_high_s8(x0)));
    s = vpadalq_s16(s, vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
    s = vpadalq_s16(s, vmull_s8(vget_high_s8(w1), vget_high_s8(x1)));
    return vaddvq_s32(s);
}

FP_EXPORT void fp_q8_0_rows_neon(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 int32_t n, float* out, int32_t out_stride) {
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * 34;
        for (int32_t t = 0; t < n; t++) {
            const int8_t* x = xq + (int64_t)t * blocks * 32;
            const float* dx = xd + (int64_t)t * blocks;
            float acc = 0.0f;
            for (int32_t b = 0; b < blocks; b++) {
                const uint8_t* k = row + (int64_t)b * 34;
                if (t == 0) FP_PREFETCH(k);
                acc += (float)dot32_s8_neon((const int8_t*)(k + 2), x + b * 32) * (fp16_to_f32(load_u16(k)) * dx[b]);
            }
            out[(int64_t)t * out_stride + r] = acc;
        }
    }
}

FP_EXPORT void fp_q4_0_rows_neon(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 int32_t n, float* out, int32_t out_stride) {
    const uint8x16_t m = vdupq_n_u8(0x0f);
    const int8x16_t eight = vdupq_n_s8(8);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * 18;
        for (int32_t t = 0; t < n; t++) {
            const int8_t* x = xq + (int64_t)t * blocks * 32;
            const float* dx = xd + (int64_t)t * blocks;
            float acc = 0.0f;
            for (int32_t b = 0; b < blocks; b++) {
                const uint8_t* k = row + (int64_t)b * 18;
                if (t == 0) FP_PREFETCH(k);
                uint8x16_t packed = vld1q_u8(k + 2);
                int8_t q[32];
                vst1q_s8(q, vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, m)), eight));
                vst1q_s8(q + 16, vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), eight));
                acc += (float)dot32_s8_neon(q, x + b * 32) * (fp16_to_f32(load_u16(k)) * dx[b]);
            }
            out[(int64_t)t * out_stride + r] = acc;
        }
    }
}
#endif /* FP_ARM */
