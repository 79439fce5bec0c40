/*
 * Forkpoint's native CPU kernels for the GGUF K-quant weight types Q4_K and Q6_K (issue 15's kernels, one concept per
 * file: forkpoint_kernels.c holds Q8_0 and Q4_0, fp_cpu_features() and the ABI version). Written for this project;
 * compiled into the same library, under the same invariants (see the top of forkpoint_kernels.c): a (row, token)
 * result depends only on that row's and that token's bytes, never on n, the slice or the row's place in it; every
 * integer inner sum is exact; nothing is allocated or kept between calls; at most FP_MAX_TOKENS tokens per call; the
 * weights are read once per call as one stream, every cache line of it prefetched FP_PREFETCH_BYTES ahead.
 *
 * Activations are Q8_K, quantised on the Java side (backend.cpu.Q8Activations.q8_K): per super-block of 256 values
 * 256 int8 codes x (|x| ≤ 127), one float scale d_x and the 16 sums of 16 consecutive codes (int16, |Σ| ≤ 2032).
 * For token t and super-block b of a row of `blocks` super-blocks: codes at xq[(t·blocks + b)·256], scale at
 * xd[t·blocks + b], sums at xs[(t·blocks + b)·16].
 *
 * GGML super-block layouts (256 values each):
 *   Q4_K, 144 bytes: f16 d, f16 dmin, 12 bytes of eight 6-bit scales sc_j and eight 6-bit mins m_j (below), 128 bytes
 *     of nibbles: byte 32k + i holds value 64k + i in its low nibble (sub-block j = 2k) and value 64k + 32 + i in its
 *     high nibble (j = 2k + 1). Value: d·sc_j·q − dmin·m_j, q = 0 … 15.
 *   Q6_K, 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales sc_g, f16 d. In half h
 *     (values 128h …), for l < 32, with L = ql + 64h and H = qh + 32h: value 128h + l is L[l] & 15 | (H[l] & 3) << 4,
 *     +32 is L[l+32] & 15 | (H[l] >> 2 & 3) << 4, +64 is L[l] >> 4 | (H[l] >> 4 & 3) << 4, +96 is
 *     L[l+32] >> 4 | (H[l] >> 6) << 4. Value: d·sc_g·(q − 32), q = 0 … 63, g = value / 16.
 *
 * Per super-block, in exact int32 (the bounds hold for any codes |x| ≤ 128):
 *   Q4_K: S = Σ_j sc_j·Σ_{i∈j} q_i·x_i (|S| ≤ 256·63·15·128 < 2^25) and M = Σ_j m_j·(sums of j's two 16-code halves)
 *     (|M| < 2^21); the row's result is Σ_b (d·d_x)·S − (dmin·d_x)·M in float.
 *   Q6_K: T = Σ_g sc_g·Σ_{i∈g} (q_i − 32)·x_i = Σ_g sc_g·Σ q_i·x_i − 32·Σ_g sc_g·sum_g (|T| ≤ 256·128·32·128 = 2^27;
 *     either part < 2^29); the row's result is Σ_b (d·d_x)·T in float.
 * The variants split these integers into lanes differently (exactly) and add the float terms in their own fixed lane
 * order, so they differ from each other and from the Java kernels only by float rounding.
 */
#include "fp_kernels.h"

#define Q4K_BYTES 144
#define Q6K_BYTES 210

/* Every 64-byte line of a block, FP_PREFETCH_BYTES ahead (blocks are longer than a line and not aligned to one:
 * one prefetch per 64 bytes from the block's start leaves no line of the stream untouched). */
static inline void kq_prefetch(const uint8_t* blk, int bytes) {
    for (int o = 0; o < bytes; o += 64) FP_PREFETCH(blk + o);
}

/* A Q4_K super-block's 12 scale bytes as eight 6-bit scales and eight 6-bit mins: sub-blocks 0–3 in the low 6 bits of
 * bytes 0–3 (scales) and 4–7 (mins); sub-blocks 4–7 in the nibbles of bytes 8–11 (scale low, min high) with their
 * top 2 bits in the top 2 bits of bytes 0–3 (scales) and 4–7 (mins). */
static inline void q4k_scales(const uint8_t* s, uint8_t sc[8], uint8_t m[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        m[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 0x0f) | ((s[j] >> 6) << 4));
        m[j + 4] = (uint8_t)((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
    }
}

/* A Q4_K super-block's 128 nibble bytes as 256 codes 0 … 15 in value order. */
static inline void q4k_codes(const uint8_t* qs, uint8_t q[256]) {
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 32; i++) {
            q[64 * k + i] = qs[32 * k + i] & 0x0f;
            q[64 * k + 32 + i] = qs[32 * k + i] >> 4;
        }
    }
}

/* A Q6_K super-block's ql and qh as 256 codes 0 … 63 in value order. */
static inline void q6k_codes(const uint8_t* blk, uint8_t q[256]) {
    for (int h = 0; h < 2; h++) {
        const uint8_t* ql = blk + 64 * h;
        const uint8_t* qh = blk + 128 + 32 * h;
        uint8_t* e = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            e[l] = (uint8_t)((ql[l] & 0x0f) | ((qh[l] & 0x03) << 4));
            e[l + 32] = (uint8_t)((ql[l + 32] & 0x0f) | ((qh[l] & 0x0c) << 2));
            e[l + 64] = (uint8_t)((ql[l] >> 4) | (qh[l] & 0x30));
            e[l + 96] = (uint8_t)((ql[l + 32] >> 4) | ((qh[l] & 0xc0) >> 2));
        }
    }
}

/* Σ_j m_j·(sum of sub-block j's 32 codes): the Q4_K mins' integer part, from the activations' 16-code sums. */
static inline int32_t q4k_min_sum(const uint8_t m[8], const int16_t* bs) {
    int32_t s = 0;
    for (int j = 0; j < 8; j++) s += (int32_t)m[j] * (bs[2 * j] + bs[2 * j + 1]);
    return s;
}

/* ---- portable C (and the scalar float steps NEON shares) ----------------------------------------------------- */

FP_EXPORT void fp_q4_k_rows_c(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                              const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * Q4K_BYTES;
        float acc[FP_MAX_TOKENS];
        for (int32_t t = 0; t < n; t++) acc[t] = 0.0f;
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t* blk = row + (int64_t)b * Q4K_BYTES;
            kq_prefetch(blk, Q4K_BYTES);
            uint8_t sc[8], m[8], q[256];
            q4k_scales(blk + 4, sc, m);
            q4k_codes(blk + 16, q);
            float d = fp16_to_f32(load_u16(blk)), dmin = fp16_to_f32(load_u16(blk + 2));
            for (int32_t t = 0; t < n; t++) {
                int64_t at = (int64_t)t * blocks + b;
                const int8_t* x = xq + at * 256;
                int32_t s = 0;
                for (int j = 0; j < 8; j++) {
                    int32_t g = 0;
                    for (int i = 0; i < 32; i++) g += (int32_t)q[32 * j + i] * x[32 * j + i];
                    s += (int32_t)sc[j] * g;
                }
                int32_t mins = q4k_min_sum(m, xs + at * 16);
                acc[t] += (float)s * (d * xd[at]);
                acc[t] -= (float)mins * (dmin * xd[at]);
            }
        }
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = acc[t];
    }
}

/* Q6_K in C: T from the codes minus 32 directly (the same integer as the SIMD variants' Σ q·x − 32·Σ sc·sum). */
FP_EXPORT void fp_q6_k_rows_c(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                              const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    (void)xs;
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * Q6K_BYTES;
        float acc[FP_MAX_TOKENS];
        for (int32_t t = 0; t < n; t++) acc[t] = 0.0f;
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t* blk = row + (int64_t)b * Q6K_BYTES;
            kq_prefetch(blk, Q6K_BYTES);
            uint8_t q[256];
            q6k_codes(blk, q);
            const int8_t* sc = (const int8_t*)(blk + 192);
            float d = fp16_to_f32(load_u16(blk + 208));
            for (int32_t t = 0; t < n; t++) {
                int64_t at = (int64_t)t * blocks + b;
                const int8_t* x = xq + at * 256;
                int32_t s = 0;
                for (int g = 0; g < 16; g++) {
                    int32_t p = 0;
                    for (int i = 0; i < 16; i++) p += ((int32_t)q[16 * g + i] - 32) * x[16 * g + i];
                    s += (int32_t)sc[g] * p;
                }
                acc[t] += (float)s * (d * xd[at]);
            }
        }
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = acc[t];
    }
}

/* ---- x86: AVX2 + FMA ------------------------------------------------------------------------------------------ */
#ifdef FP_X86

/*
 * The x86 kernels form a super-block's weight side once for all n tokens: the codes in value order, 32 to a 256-bit
 * register, and the scales as int16 lanes matching vpmaddubsw's output (pair j of a register belongs to value 2j,
 * 2j+1). Per token and register: vpmaddubsw (unsigned codes × signed activations, pairs summed to int16, exact:
 * Q4_K ≤ 2·15·128, Q6_K ≤ 2·63·128 < 2^15) and vpmaddwd by the scales (int16 pairs to int32, exact).
 */

/* Q4_K's 8 scales (bytes 0–7 of the result) and 8 mins (bytes 8–15) from the 12 scale bytes: q4k_scales's byte-wise
 * rule on 32-bit words (little-endian). */
__attribute__((target("avx2,fma,f16c")))
static inline __m128i q4k_scales_x86(const uint8_t* s) {
    uint32_t a, b, c;
    memcpy(&a, s, 4);
    memcpy(&b, s + 4, 4);
    memcpy(&c, s + 8, 4);
    uint32_t sc_hi = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u), m_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
    return _mm_setr_epi32((int)(a & 0x3f3f3f3fu), (int)sc_hi, (int)(b & 0x3f3f3f3fu), (int)m_hi);
}

/* Row j: the vpshufb byte indices that copy int16 lane j of a 128-bit half to all 8 lanes of that half. */
static const uint8_t FP_SPREAD16[8][16] = {
    {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}, {2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3},
    {4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5}, {6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7},
    {8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9}, {10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11},
    {12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13}, {14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15},
};

/* int16 lane i of v's low half in every lane of the low half, lane k of its high half in every lane of the high half. */
__attribute__((target("avx2,fma,f16c")))
static inline __m256i spread16(__m256i v, int i, int k) {
    __m256i idx = _mm256_set_m128i(_mm_loadu_si128((const __m128i*)FP_SPREAD16[k]), _mm_loadu_si128((const __m128i*)FP_SPREAD16[i]));
    return _mm256_shuffle_epi8(v, idx);
}

/* Q4_K: the 8 registers of codes (register j = sub-block j), their scales, and the mins as [m0 m0 m1 m1 … m7 m7]. */
__attribute__((target("avx2,fma,f16c")))
FP_EXPORT void fp_q4_k_rows_avx2(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    const __m256i low = _mm256_set1_epi8(0x0f);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * Q4K_BYTES;
        __m256 acc[FP_MAX_TOKENS];
        for (int32_t t = 0; t < n; t++) acc[t] = _mm256_setzero_ps();
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t* blk = row + (int64_t)b * Q4K_BYTES;
            kq_prefetch(blk, Q4K_BYTES);
            __m256i q[8], scale[8];
            for (int k = 0; k < 4; k++) {
                __m256i packed = _mm256_loadu_si256((const __m256i*)(blk + 16 + 32 * k));
                q[2 * k] = _mm256_and_si256(packed, low);
                q[2 * k + 1] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
            }
            __m128i sm = q4k_scales_x86(blk + 4);
            __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));   /* the 8 scales as int16, both halves */
            for (int j = 0; j < 8; j++) scale[j] = spread16(sc16, j, j);
            __m128i m8 = _mm_unpackhi_epi64(sm, sm);
            __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));   /* m0 m0 m1 m1 … m7 m7 */
            float d = half_x86(blk), dmin = half_x86(blk + 2);
            for (int32_t t = 0; t < n; t++) {
                int64_t at = (int64_t)t * blocks + b;
                const int8_t* x = xq + at * 256;
                __m256i s = _mm256_setzero_si256();
                for (int j = 0; j < 8; j++) {
                    __m256i p = _mm256_maddubs_epi16(q[j], _mm256_loadu_si256((const __m256i*)(x + 32 * j)));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scale[j]));
                }
                __m256i mv = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i*)(xs + at * 16)), mins);
                float dx = xd[at];
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * dx), acc[t]);
                acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mv), _mm256_set1_ps(dmin * dx), acc[t]);
            }
        }
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = hsum256(acc[t]);
    }
}

/* A Q6_K half's 96 bytes (ql 64, qh 32) as 4 registers of codes 0 … 63: values 128h + 32i …, i = 0 … 3. */
__attribute__((target("avx2,fma,f16c")))
static inline void q6k_half_avx2(const uint8_t* blk, int h, __m256i e[4]) {
    const __m256i low = _mm256_set1_epi8(0x0f), top = _mm256_set1_epi8(0x30);
    __m256i l0 = _mm256_loadu_si256((const __m256i*)(blk + 64 * h));
    __m256i l1 = _mm256_loadu_si256((const __m256i*)(blk + 64 * h + 32));
    __m256i hb = _mm256_loadu_si256((const __m256i*)(blk + 128 + 32 * h));
    /* 16-bit shifts move bits across the two bytes of a lane; each mask keeps only the byte's own bits */
    e[0] = _mm256_or_si256(_mm256_and_si256(l0, low), _mm256_and_si256(_mm256_slli_epi16(hb, 4), top));
    e[1] = _mm256_or_si256(_mm256_and_si256(l1, low), _mm256_and_si256(_mm256_slli_epi16(hb, 2), top));
    e[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low), _mm256_and_si256(hb, top));
    e[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low), _mm256_and_si256(_mm256_srli_epi16(hb, 2), top));
}

/* Q6_K: register j holds groups 2j and 2j+1 (its scale lanes 0–7 and 8–15); the −32 offset is 32·Σ_g sc_g·sum_g,
 * one vpmaddwd of the sums by the scales. */
__attribute__((target("avx2,fma,f16c")))
FP_EXPORT void fp_q6_k_rows_avx2(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * Q6K_BYTES;
        __m256 acc[FP_MAX_TOKENS];
        for (int32_t t = 0; t < n; t++) acc[t] = _mm256_setzero_ps();
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t* blk = row + (int64_t)b * Q6K_BYTES;
            kq_prefetch(blk, Q6K_BYTES);
            __m256i q[8], scale[8];
            q6k_half_avx2(blk, 0, q);
            q6k_half_avx2(blk, 1, q + 4);
            __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(blk + 192)));
            __m256i lo = _mm256_permute4x64_epi64(sc16, _MM_SHUFFLE(1, 0, 1, 0)), hi = _mm256_permute4x64_epi64(sc16, _MM_SHUFFLE(3, 2, 3, 2));
            for (int j = 0; j < 4; j++) {
                scale[j] = spread16(lo, 2 * j, 2 * j + 1);
                scale[j + 4] = spread16(hi, 2 * j, 2 * j + 1);
            }
            float d = half_x86(blk + 208);
            for (int32_t t = 0; t < n; t++) {
                int64_t at = (int64_t)t * blocks + b;
                const int8_t* x = xq + at * 256;
                __m256i s = _mm256_setzero_si256();
                for (int j = 0; j < 8; j++) {
                    __m256i p = _mm256_maddubs_epi16(q[j], _mm256_loadu_si256((const __m256i*)(x + 32 * j)));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scale[j]));
                }
                __m256i offset = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i*)(xs + at * 16)), sc16);
                s = _mm256_sub_epi32(s, _mm256_slli_epi32(offset, 5));
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * xd[at]), acc[t]);
            }
        }
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = hsum256(acc[t]);
    }
}

/* ---- x86: AVX-512 VNNI (64 codes per register) --------------------------------------------------------------- */

/*
 * Per token and register of 64 codes one vpdpbusd (unsigned codes × signed activations, four products summed into each
 * int32 lane: |Σ| ≤ 4·63·128 = 32256, so it fits int16 too). Two registers' lane sums are packed to int16 (vpackssdw,
 * never saturating) and multiplied by their scales with one vpdpwssd (int16 pairs to int32, added, no saturation): per
 * 128 values two multiplies and a pack instead of the AVX2 kernels' four multiplies. The scales are spread once per
 * super-block, by vpermw, to the lanes the pack puts each sum in: 128-bit chunk i of vpackssdw(a, b) holds int32
 * lanes 4i … 4i+3 of a, then those of b. The 8-lane mins (Q4_K) and offsets (Q6_K) go to lanes 0–7 under a mask.
 */

/*
 * vpermw indices: int16 lane L of Q4_K scale vector p takes sub-block 4p + 2·(L mod 8 ≥ 4) + (L ≥ 16), for the pack of
 * registers 2p (sub-blocks 4p, 4p+1: int32 lanes 0–7, 8–15) and 2p+1 (4p+2, 4p+3).
 */
static const int16_t FP_Q4K_SCALE_LANES[2][32] = {
    {0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3},
    {4, 4, 4, 4, 6, 6, 6, 6, 4, 4, 4, 4, 6, 6, 6, 6, 5, 5, 5, 5, 7, 7, 7, 7, 5, 5, 5, 5, 7, 7, 7, 7},
};

/* Q4_K: register k = sub-blocks 2k (its first 32 codes) and 2k+1; two 512-bit loads of nibbles make the 4 registers. */
__attribute__((target(FP_VNNI)))
FP_EXPORT void fp_q4_k_rows_avx512vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                       const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    const __m512i low = _mm512_set1_epi8(0x0f), zero = _mm512_setzero_si512();
    const __m512i lanes0 = _mm512_loadu_si512((const void*)FP_Q4K_SCALE_LANES[0]), lanes1 = _mm512_loadu_si512((const void*)FP_Q4K_SCALE_LANES[1]);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * Q4K_BYTES;
        __m512 acc[FP_MAX_TOKENS];
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t* blk = row + (int64_t)b * Q4K_BYTES;
            kq_prefetch(blk, Q4K_BYTES);
            __m512i q[4];
            for (int k = 0; k < 4; k += 2) {
                __m512i packed = _mm512_loadu_si512((const void*)(blk + 16 + 32 * k));   /* sub-blocks' bytes of k, k+1 */
                __m512i lo = _mm512_and_si512(packed, low), hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low);
                q[k] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
                q[k + 1] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
            }
            __m128i sm = q4k_scales_x86(blk + 4);
            __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sm));   /* lanes 0–7 scales, 8–15 mins */
            __m512i scale0 = _mm512_permutexvar_epi16(lanes0, sc16), scale1 = _mm512_permutexvar_epi16(lanes1, sc16);
            __m128i m8 = _mm_unpackhi_epi64(sm, sm);
            __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));   /* m0 m0 m1 m1 … m7 m7 */
            float d = half_x86(blk), dmin = half_x86(blk + 2);
            for (int32_t t = 0; t < n; t++) {
                int64_t at = (int64_t)t * blocks + b;
                const int8_t* x = xq + at * 256;
                __m512i r0 = _mm512_dpbusd_epi32(zero, q[0], _mm512_loadu_si512((const void*)x));
                __m512i r1 = _mm512_dpbusd_epi32(zero, q[1], _mm512_loadu_si512((const void*)(x + 64)));
                __m512i r2 = _mm512_dpbusd_epi32(zero, q[2], _mm512_loadu_si512((const void*)(x + 128)));
                __m512i r3 = _mm512_dpbusd_epi32(zero, q[3], _mm512_loadu_si512((const void*)(x + 192)));
                __m512i s = _mm512_dpwssd_epi32(_mm512_madd_epi16(_mm512_packs_epi32(r0, r1), scale0), _mm512_packs_epi32(r2, r3), scale1);
                __m256i mv = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i*)(xs + at * 16)), mins);
                float dx = xd[at];
                __m512 a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(d * dx), acc[t]);
                acc[t] = _mm512_mask3_fnmadd_ps(_mm512_castps256_ps512(_mm256_cvtepi32_ps(mv)), _mm512_set1_ps(dmin * dx), a,
                                                (__mmask16)0x00ff);
            }
        }
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = hsum512(acc[t]);
    }
}

/*
 * vpermw indices: int16 lane L of Q6_K scale vector p takes group 8p + 4·(L mod 8 ≥ 4) + L/8, for the pack of
 * registers 2p (groups 8p … 8p+3, four int32 lanes each) and 2p+1 (8p+4 … 8p+7).
 */
static const int16_t FP_Q6K_SCALE_LANES[2][32] = {
    {0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5, 2, 2, 2, 2, 6, 6, 6, 6, 3, 3, 3, 3, 7, 7, 7, 7},
    {8, 8, 8, 8, 12, 12, 12, 12, 9, 9, 9, 9, 13, 13, 13, 13, 10, 10, 10, 10, 14, 14, 14, 14, 11, 11, 11, 11, 15, 15, 15, 15},
};

/* Q6_K: register 2h + i = the AVX2 registers 4h + 2i and 4h + 2i + 1 (values 128h + 64i …). */
__attribute__((target(FP_VNNI)))
FP_EXPORT void fp_q6_k_rows_avx512vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                       const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i lanes0 = _mm512_loadu_si512((const void*)FP_Q6K_SCALE_LANES[0]), lanes1 = _mm512_loadu_si512((const void*)FP_Q6K_SCALE_LANES[1]);
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * Q6K_BYTES;
        __m512 acc[FP_MAX_TOKENS];
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t* blk = row + (int64_t)b * Q6K_BYTES;
            kq_prefetch(blk, Q6K_BYTES);
            __m256i e[8];
            q6k_half_avx2(blk, 0, e);
            q6k_half_avx2(blk, 1, e + 4);
            __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(blk + 192)));
            __m512i q[4];
            for (int k = 0; k < 4; k++) q[k] = _mm512_inserti64x4(_mm512_castsi256_si512(e[2 * k]), e[2 * k + 1], 1);
            __m512i scale0 = _mm512_permutexvar_epi16(lanes0, _mm512_castsi256_si512(sc16));
            __m512i scale1 = _mm512_permutexvar_epi16(lanes1, _mm512_castsi256_si512(sc16));
            float d = half_x86(blk + 208);
            for (int32_t t = 0; t < n; t++) {
                int64_t at = (int64_t)t * blocks + b;
                const int8_t* x = xq + at * 256;
                __m512i r0 = _mm512_dpbusd_epi32(zero, q[0], _mm512_loadu_si512((const void*)x));
                __m512i r1 = _mm512_dpbusd_epi32(zero, q[1], _mm512_loadu_si512((const void*)(x + 64)));
                __m512i r2 = _mm512_dpbusd_epi32(zero, q[2], _mm512_loadu_si512((const void*)(x + 128)));
                __m512i r3 = _mm512_dpbusd_epi32(zero, q[3], _mm512_loadu_si512((const void*)(x + 192)));
                __m512i s = _mm512_dpwssd_epi32(_mm512_madd_epi16(_mm512_packs_epi32(r0, r1), scale0), _mm512_packs_epi32(r2, r3), scale1);
                __m256i offset = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i*)(xs + at * 16)), sc16);
                s = _mm512_mask_sub_epi32(s, (__mmask16)0x00ff, s, _mm512_castsi256_si512(_mm256_slli_epi32(offset, 5)));
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(d * xd[at]), acc[t]);
            }
        }
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = hsum512(acc[t]);
    }
}
#endif /* FP_X86 */

/* ---- arm64: NEON ---------------------------------------------------------------------------------------------- */
#ifdef FP_ARM

/* Σ w·x over 16 int8 pairs, exact: widening multiplies to 16 bits (|w·x| ≤ 128·128), pairwise-added into 32 bits. */
static inline int32_t dot16_s8_neon(const int8_t* w, const int8_t* x) {
    int8x16_t a = vld1q_s8(w), v = vld1q_s8(x);
    int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(v)));
    s = vpadalq_s16(s, vmull_s8(vget_high_s8(a), vget_high_s8(v)));
    return vaddvq_s32(s);
}

/* The C kernels' loops with the integer dot products in NEON: the codes (as int8: Q4_K 0 … 15, Q6_K q − 32) are
 * unpacked once per super-block for all n tokens; the float steps are the C kernels'. */
FP_EXPORT void fp_q4_k_rows_neon(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * Q4K_BYTES;
        float acc[FP_MAX_TOKENS];
        for (int32_t t = 0; t < n; t++) acc[t] = 0.0f;
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t* blk = row + (int64_t)b * Q4K_BYTES;
            kq_prefetch(blk, Q4K_BYTES);
            uint8_t sc[8], m[8];
            int8_t q[256];
            q4k_scales(blk + 4, sc, m);
            const uint8x16_t low = vdupq_n_u8(0x0f);
            for (int k = 0; k < 4; k++) {
                for (int i = 0; i < 32; i += 16) {
                    uint8x16_t packed = vld1q_u8(blk + 16 + 32 * k + i);
                    vst1q_s8(q + 64 * k + i, vreinterpretq_s8_u8(vandq_u8(packed, low)));
                    vst1q_s8(q + 64 * k + 32 + i, vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)));
                }
            }
            float d = fp16_to_f32(load_u16(blk)), dmin = fp16_to_f32(load_u16(blk + 2));
            for (int32_t t = 0; t < n; t++) {
                int64_t at = (int64_t)t * blocks + b;
                const int8_t* x = xq + at * 256;
                int32_t s = 0;
                for (int j = 0; j < 8; j++) s += (int32_t)sc[j] * (dot16_s8_neon(q + 32 * j, x + 32 * j) + dot16_s8_neon(q + 32 * j + 16, x + 32 * j + 16));
                int32_t mins = q4k_min_sum(m, xs + at * 16);
                acc[t] += (float)s * (d * xd[at]);
                acc[t] -= (float)mins * (dmin * xd[at]);
            }
        }
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = acc[t];
    }
}

FP_EXPORT void fp_q6_k_rows_neon(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                 const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    (void)xs;
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + (int64_t)r * blocks * Q6K_BYTES;
        float acc[FP_MAX_TOKENS];
        for (int32_t t = 0; t < n; t++) acc[t] = 0.0f;
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t* blk = row + (int64_t)b * Q6K_BYTES;
            kq_prefetch(blk, Q6K_BYTES);
            uint8_t u[256];
            int8_t q[256];
            q6k_codes(blk, u);
            const int8x16_t offset = vdupq_n_s8(32);
            for (int i = 0; i < 256; i += 16) vst1q_s8(q + i, vsubq_s8(vreinterpretq_s8_u8(vld1q_u8(u + i)), offset));
            const int8_t* sc = (const int8_t*)(blk + 192);
            float d = fp16_to_f32(load_u16(blk + 208));
            for (int32_t t = 0; t < n; t++) {
                int64_t at = (int64_t)t * blocks + b;
                const int8_t* x = xq + at * 256;
                int32_t s = 0;
                for (int g = 0; g < 16; g++) s += (int32_t)sc[g] * dot16_s8_neon(q + 16 * g, x + 16 * g);
                acc[t] += (float)s * (d * xd[at]);
            }
        }
        for (int32_t t = 0; t < n; t++) out[(int64_t)t * out_stride + r] = acc[t];
    }
}
#endif /* FP_ARM */
