/*
 * Forkpoint's native CPU kernels for the GGUF K-quant weight types Q4_K and Q6_K (issue 15's kernels, one concept per
 * file: forkpoint_kernels.c holds Q8_0 and Q4_0, fp_cpu_features() and the ABI version). Written for this project;
 * compiled into the same library, under the same invariants (see the top of forkpoint_kernels.c): a (row, token)
 * result depends only on that row's and that token's bytes, never on n, the slice or the row's place in it; every
 * integer inner sum is exact; nothing is allocated or kept between calls; at most FP_MAX_TOKENS tokens per call; the
 * weights are read from memory once per call as one stream, every cache line of it prefetched ahead (FP_PREFETCH_BYTES
 * into L1; the AVX-512 row form FP_STREAM_PREFETCH_BYTES into L2, its later token groups reading a tile again from L2).
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
 * order, so they differ from each other and from the Java kernels only by float rounding. The AVX-512 VNNI variant
 * keeps one float lane per row (sixteen rows in a register's lanes): per super-block one multiply-add of S (Q4_K, then
 * one of −M) or T (Q6_K), whatever the token count; its weights are read once per tile of sixteen rows, the next
 * tile prefetched as one stream (see its section).
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

/* ---- x86: AVX-512 VNNI (sixteen rows in the lanes) ------------------------------------------------------------ */

/*
 * The VNNI kernels hold sixteen rows in the sixteen int32 lanes (the form of the Q4_0 / Q8_0 kernels in
 * forkpoint_kernels.c): per tile of sixteen rows (the last one's missing rows read the slice's last row, and their
 * lanes are not stored) and per super-block, the rows' code bytes are transposed once (fp_codes16) into 64 registers
 * of unsigned codes, register i lane j = row j's codes of values 4i … 4i+3 (the ones activation dword i meets), kept in
 * an L1 scratch with the rows' scales and mins spread to the lanes. Every token of the call then takes, per sub-block
 * (Q4_K: 32 values, 8 registers) or group (Q6_K: 16 values, 4 registers), vpdpbusd of the codes by its broadcast
 * activation dwords into a fresh int32 (exact: |Σ| ≤ 32·15·128, 16·63·128), one vpmulld by the sub-block's scale (lane
 * j = row j's) added into the super-block's integer, and the mins (Q4_K) or the −32 offset (Q6_K) by vpdpwssd of the
 * rows' int16 pairs (a min twice; two group scales) by the broadcast dword of two of the token's 16-code sums: the same
 * exact S and M (Q4_K) or T (Q6_K) as every other variant. Then per row and super-block, in super-block order, one lane
 * per row:
 *   Q4_K: acc = fma(S, d·d_x, acc), then acc = fma(−M, dmin·d_x, acc);   Q6_K: acc = fma(T, d·d_x, acc)
 * which depends on the row's and the token's bytes only: every token count, slice and lane gives the same bits. While
 * a tile is read, the next tile's bytes (sixteen contiguous rows) are prefetched into L2 as one stream.
 */

/* Byte-select controls for vpshufb: `pattern` is the control of a 128-bit lane's first dword (0x80: a zero byte), the
 * other three dwords read the same bytes of their own dword (4p added to each byte: 0x80 + 4p still selects zero). */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512i kq_dword_control(uint32_t pattern) {
    const __m512i pos = _mm512_set_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0, 0x0c0c0c0c, 0x08080808, 0x04040404, 0,
                                         0x0c0c0c0c, 0x08080808, 0x04040404, 0, 0x0c0c0c0c, 0x08080808, 0x04040404, 0);
    return _mm512_add_epi32(_mm512_set1_epi32((int)pattern), pos);
}

/* Broadcast of the 4 bytes at p (an activation dword, or two int16 sums). */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512i kq_dword(const void* p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/*
 * acc + the vpdpbusd of the unsigned codes c by the activation dword at p broadcast to every lane. GCC (12) does not
 * fold the broadcast into the instruction's memory operand ({1to16}); the folded form saves a shuffle slot per
 * vpdpbusd on cores that split 512-bit operations (measured on an AMD EPYC: six tokens 1.3x, sixteen 1.05-1.1x). The
 * same integers either way; other compilers take the intrinsics.
 */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512i kq_dpbusd_bcast(__m512i acc, __m512i c, const int8_t* p) {
#if defined(__GNUC__) && !defined(__clang__)
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(c), "m"(*(const int32_t*)p));
    return acc;
#else
    return _mm512_dpbusd_epi32(acc, c, kq_dword(p));
#endif
}

/* The tokens of a call in groups of up to four (GROUP, a constant in each copy), so that the four share each code
 * register and their dot products run as independent chains: `call` for group t … t + GROUP − 1. */
#define KQ_TOKENS(call)                                                                                               \
    do {                                                                                                              \
        int32_t t = 0;                                                                                                \
        for (; t + 4 <= n; t += 4) { enum { GROUP = 4 }; call; }                                                      \
        switch (n - t) {                                                                                              \
            case 3: { enum { GROUP = 3 }; call; break; }                                                              \
            case 2: { enum { GROUP = 2 }; call; break; }                                                              \
            case 1: { enum { GROUP = 1 }; call; break; }                                                              \
            default: break;                                                                                           \
        }                                                                                                             \
    } while (0)

/* Q4_K, super-block b of a tile for tokens t … t + count − 1 (acc: theirs): S by vpdpbusd and vpmulld per sub-block,
 * M by vpdpwssd, then the two multiply-adds. */
__attribute__((target(FP_VNNI), always_inline))
static inline void q4_k_tokens(const __m512i* q, const __m512i* scale, const __m512i* mins, __m512 d, __m512 dmin,
                               const int8_t* xq, const float* xd, const int16_t* xs, int32_t blocks, int32_t b, int32_t t,
                               const int count, __m512* acc) {
    const int8_t* x[4];
    const int16_t* sums[4];
    __m512i s[4], m[4];
    for (int u = 0; u < count; u++) {
        const int64_t at = (int64_t)(t + u) * blocks + b;
        x[u] = xq + at * 256;
        sums[u] = xs + at * 16;
        s[u] = m[u] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        __m512i dot[4];
        for (int u = 0; u < count; u++) dot[u] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            const __m512i c = q[8 * j + i];
            for (int u = 0; u < count; u++) dot[u] = kq_dpbusd_bcast(dot[u], c, x[u] + 32 * j + 4 * i);
        }
        for (int u = 0; u < count; u++) {
            s[u] = _mm512_add_epi32(s[u], _mm512_mullo_epi32(dot[u], scale[j]));
            m[u] = _mm512_dpwssd_epi32(m[u], mins[j], kq_dword(sums[u] + 2 * j));
        }
    }
    for (int u = 0; u < count; u++) {
        const __m512 dx = _mm512_set1_ps(xd[(int64_t)(t + u) * blocks + b]);
        const __m512 a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[u]), _mm512_mul_ps(d, dx), acc[u]);
        acc[u] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m[u]), _mm512_mul_ps(dmin, dx), a);
    }
}

/* Q6_K, super-block b of a tile for tokens t … t + count − 1: per group vpdpbusd and vpmulld, the offset by vpdpwssd. */
__attribute__((target(FP_VNNI), always_inline))
static inline void q6_k_tokens(const __m512i* q, const __m512i* scale, const __m512i* pairs, __m512 d, const int8_t* xq,
                               const float* xd, const int16_t* xs, int32_t blocks, int32_t b, int32_t t, const int count,
                               __m512* acc) {
    const int8_t* x[4];
    const int16_t* sums[4];
    __m512i s[4], offset[4];
    for (int u = 0; u < count; u++) {
        const int64_t at = (int64_t)(t + u) * blocks + b;
        x[u] = xq + at * 256;
        sums[u] = xs + at * 16;
        s[u] = offset[u] = _mm512_setzero_si512();
    }
#pragma GCC unroll 16
    for (int g = 0; g < 16; g++) {
        __m512i dot[4];
        for (int u = 0; u < count; u++) dot[u] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            const __m512i c = q[4 * g + i];
            for (int u = 0; u < count; u++) dot[u] = kq_dpbusd_bcast(dot[u], c, x[u] + 16 * g + 4 * i);
        }
        for (int u = 0; u < count; u++) s[u] = _mm512_add_epi32(s[u], _mm512_mullo_epi32(dot[u], scale[g]));
    }
    for (int u = 0; u < count; u++) {
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) offset[u] = _mm512_dpwssd_epi32(offset[u], pairs[i], kq_dword(sums[u] + 2 * i));
        const __m512i total = _mm512_sub_epi32(s[u], _mm512_slli_epi32(offset[u], 5));
        acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(d, _mm512_set1_ps(xd[(int64_t)(t + u) * blocks + b])), acc[u]);
    }
}

/*
 * Q4_K: bytes 0–15 of the sixteen rows' super-block transposed give d | dmin, scale bytes 0–3, 4–7, 8–11 per lane, so
 * q4k_scales's rule runs on all rows at once (on dwords, bytes masked), then each sub-block's scale is picked into an
 * int32 lane and each min into both int16 halves (vpshufb). Packed byte 32k + i holds value 64k + i (low nibble) and
 * 64k + 32 + i (high): the transposed dword of bytes 32k + 4c … is register 16k + c (low nibbles) and 16k + 8 + c (high).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void q4_k_rows16_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const int16_t* xs, const int32_t n, float* out, int32_t out_stride) {
    const __m512i low = _mm512_set1_epi8(0x0f), six = _mm512_set1_epi8(0x3f), top = _mm512_set1_epi8(0x30);
    const int64_t row_bytes = (int64_t)blocks * Q4K_BYTES;
    __m512i q[64];
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        const uint8_t* code[16];
        fp_tile16_rows(w, row_bytes, r0, rows, code);
        const __mmask16 live = fp_tile16_live(r0, rows);
        __m512 acc[FP_MAX_TOKENS];
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        for (int32_t b = 0; b < blocks; b++) {
            const int64_t o = (int64_t)b * Q4K_BYTES;
            if (r0 + 16 < rows) fp_prefetch_tile16(w + (int64_t)(r0 + 16) * row_bytes, o, Q4K_BYTES);
            __m512i head[4];
            fp_codes16(code, o, head);
            const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head[0]));
            const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head[0], 16)));
            const __m512i sa = head[1], sb = head[2], sc = head[3];
            const __m512i sc_lo = _mm512_and_si512(sa, six);
            const __m512i sc_hi = _mm512_or_si512(_mm512_and_si512(sc, low), _mm512_and_si512(_mm512_srli_epi32(sa, 2), top));
            const __m512i mn_lo = _mm512_and_si512(sb, six);
            const __m512i mn_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sc, 4), low), _mm512_and_si512(_mm512_srli_epi32(sb, 2), top));
            __m512i scale[8], mins[8];
            for (uint32_t k = 0; k < 4; k++) {
                const __m512i one = kq_dword_control(0x80808000u | k), twice = kq_dword_control(0x80008000u | k | k << 16);
                scale[k] = _mm512_shuffle_epi8(sc_lo, one);
                scale[k + 4] = _mm512_shuffle_epi8(sc_hi, one);
                mins[k] = _mm512_shuffle_epi8(mn_lo, twice);
                mins[k + 4] = _mm512_shuffle_epi8(mn_hi, twice);
            }
            for (int c8 = 0; c8 < 8; c8++) {
                __m512i p[4];
                fp_codes16(code, o + 16 + 16 * c8, p);
                for (int i = 0; i < 4; i++) {
                    const int at = 16 * (c8 >> 1) + 4 * (c8 & 1) + i;
                    q[at] = _mm512_and_si512(p[i], low);
                    q[at + 8] = _mm512_and_si512(_mm512_srli_epi32(p[i], 4), low);
                }
            }
            KQ_TOKENS(q4_k_tokens(q, scale, mins, d, dmin, xq, xd, xs, blocks, b, t, GROUP, acc + t));
        }
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) _mm512_mask_storeu_ps(out + (int64_t)t * out_stride + r0, live, acc[t]);
    }
}

/*
 * Q6_K: ql (bytes 0–127), qh (128–191) and the scales (192–207) transposed; the codes formed from them on dwords as
 * q6k_half_avx2 does on bytes (ql dword 16h + c and 16h + 8 + c, qh dword 8h + c give registers 32h + c, + 8, + 16,
 * + 24); each group's scale sign-extended into an int32 lane, the pairs of groups 2i, 2i + 1 into int16 halves; the
 * rows' f16 d by one gather (the dword at byte 206, in every block).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void q6_k_rows16_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                    const int16_t* xs, const int32_t n, float* out, int32_t out_stride) {
    const __m512i low = _mm512_set1_epi8(0x0f), top = _mm512_set1_epi8(0x30);
    const int64_t row_bytes = (int64_t)blocks * Q6K_BYTES;
    __m512i q[64];
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        const uint8_t* code[16];
        fp_tile16_rows(w, row_bytes, r0, rows, code);
        const __mmask16 live = fp_tile16_live(r0, rows);
        int32_t index[16];
        for (int j = 0; j < 16; j++) index[j] = (int32_t)(code[j] - code[0]);
        const __m512i gather_at = _mm512_loadu_si512((const void*)index);
        __m512 acc[FP_MAX_TOKENS];
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
        for (int32_t b = 0; b < blocks; b++) {
            const int64_t o = (int64_t)b * Q6K_BYTES;
            if (r0 + 16 < rows) fp_prefetch_tile16(w + (int64_t)(r0 + 16) * row_bytes, o, Q6K_BYTES);
            for (int h = 0; h < 2; h++) {
                __m512i ql[16], qh[8];
                for (int c = 0; c < 4; c++) fp_codes16(code, o + 64 * h + 16 * c, ql + 4 * c);
                for (int c = 0; c < 2; c++) fp_codes16(code, o + 128 + 32 * h + 16 * c, qh + 4 * c);
                for (int c = 0; c < 8; c++) {
                    const __m512i l0 = ql[c], l1 = ql[8 + c], hb = qh[c];
                    /* 32-bit shifts move bits across the bytes of a dword; each mask keeps only the byte's own bits */
                    q[32 * h + c] = _mm512_or_si512(_mm512_and_si512(l0, low), _mm512_and_si512(_mm512_slli_epi32(hb, 4), top));
                    q[32 * h + 8 + c] = _mm512_or_si512(_mm512_and_si512(l1, low), _mm512_and_si512(_mm512_slli_epi32(hb, 2), top));
                    q[32 * h + 16 + c] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(l0, 4), low), _mm512_and_si512(hb, top));
                    q[32 * h + 24 + c] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(l1, 4), low),
                                                         _mm512_and_si512(_mm512_srli_epi32(hb, 2), top));
                }
            }
            __m512i sc4[4], scale[16], pairs[8];
            fp_codes16(code, o + 192, sc4);   /* lane j: row j's scales 4i … 4i+3 in sc4[i] */
            for (int g = 0; g < 16; g++) scale[g] = _mm512_srai_epi32(_mm512_slli_epi32(sc4[g >> 2], 24 - 8 * (g & 3)), 24);
            for (int i = 0; i < 8; i++) {   /* scales 2i, 2i+1 in the high bytes of the int16 halves, then shifted down */
                const uint32_t k = 2u * (uint32_t)(i & 1);
                pairs[i] = _mm512_srai_epi16(_mm512_shuffle_epi8(sc4[i >> 1], kq_dword_control(0x00800080u | k << 8 | (k + 1) << 24)), 8);
            }
            const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
                    _mm512_srli_epi32(_mm512_i32gather_epi32(gather_at, (const void*)(code[0] + o + 206), 1), 16)));
            KQ_TOKENS(q6_k_tokens(q, scale, pairs, d, xq, xd, xs, blocks, b, t, GROUP, acc + t));
        }
#pragma GCC unroll 16
        for (int32_t t = 0; t < n; t++) _mm512_mask_storeu_ps(out + (int64_t)t * out_stride + r0, live, acc[t]);
    }
}

/*
 * A few tokens (a decode step, a small batch of them: the row form), the whole tiles of sixteen rows: the same
 * integers S and M (Q4_K) or T (Q6_K) per row and super-block and the same multiply-adds in the same lanes as the
 * sixteen-rows bodies (so the same bits), formed without the code transpose that a few tokens do not amortise and with
 * the rows read one after another: a tile is one sequential stream, prefetched FP_STREAM_PREFETCH_BYTES ahead into L2
 * (a tile's sixteen rows read side by side streamed from memory at a third of that rate, and 4 KiB ahead into L1 at
 * about 0.8x, measured on an AMD EPYC). Per row, super-block and token, 64 codes per register meet 64 activations (four
 * vpdpbusd for 256), the lane sums packed to int16 and multiplied by their scales with vpmaddwd / vpdpwssd (lanes spread
 * by vpermw to where the pack puts each sum: 128-bit chunk i of vpackssdw(a, b) is int32 lanes 4i … 4i+3 of a, then of
 * b). The sixteen int32 lanes are folded to eight (exact) and kept unsummed in an L1 scratch, two super-blocks' to a
 * slot; after the tile's sixteen rows, kq_fold16 sums them for sixteen rows at once (lane j = row j; 44 instructions
 * for the sixteen rows' two super-blocks, where each row's own sum took nine), and per token the sixteen rows' float
 * steps run in a register, super-block by super-block. Several tokens go in groups whose lanes fit KQ_ROW_FORM_SLOTS
 * slots (at 8192 columns two tokens), a later group reading the tile again from L2; one token takes the row form up to
 * KQ_ROW_FORM_BLOCKS super-blocks (the wide down projections of 7–14B models: 12288–18944 columns), several up to
 * KQ_ROW_FORM_BLOCKS_FEW (wider, their lanes would not stay in L1); other calls take the sixteen-rows body. Returns the
 * rows done.
 */

/* Token counts up to these take the row form for the whole tiles. */
#ifndef q4_k_ROW_FORM
#define q4_k_ROW_FORM 8
#endif
#ifndef q6_k_ROW_FORM
#define q6_k_ROW_FORM 8
#endif

/* Row-form limits: super-blocks per row for one token (32768 columns) and for several, and slots of lanes per group of
 * several tokens (a token's two super-blocks, sixteen rows: 1 KiB each; 32 KiB, in L1: at 64 a group of eight tokens
 * spilled to L2 and took 1.1x the time; rows of 56 super-blocks, with 64 slots, at two to eight tokens took 1.4–1.7x
 * the sixteen-rows body's time for Q4_K and 0.9–1.3x for Q6_K, at one token 0.8–1.0x; measured on an AMD EPYC). One
 * token's lanes take up to KQ_ROW_FORM_BLOCKS / 2 slots (64 KiB); with the activations and scales kept beside them a
 * call's arrays take 138 KiB of stack at most. */
#define KQ_ROW_FORM_BLOCKS 128
#define KQ_ROW_FORM_BLOCKS_FEW 32
#define KQ_ROW_FORM_SLOTS 32

/* Tokens per group of the row form for rows of `blocks` super-blocks and n tokens; 0: the sixteen-rows body instead. */
static inline int32_t kq_row_form_group(int32_t blocks, int32_t n) {
    if (blocks > KQ_ROW_FORM_BLOCKS || (n > 1 && blocks > KQ_ROW_FORM_BLOCKS_FEW)) return 0;
    const int32_t fit = KQ_ROW_FORM_SLOTS / ((blocks + 1) / 2);
    return n == 1 ? 1 : fit < n ? fit : n;
}

/* Every 64-byte line of a block, FP_STREAM_PREFETCH_BYTES ahead into L2. */
static inline void kq_prefetch_stream(const uint8_t* blk, int bytes) {
    for (int o = 0; o < bytes; o += 64) FP_STREAM_PREFETCH(blk + o);
}

/* Row j's slot of lanes in the row form's scratch: token u of the group, super-block b (two to a slot, even b first). */
static inline int32_t* kq_slot(int32_t* lanes, int32_t pairs, int32_t u, int32_t b, int j) {
    return lanes + ((int64_t)(u * pairs + (b >> 1)) * 16 + j) * 16 + 8 * (b & 1);
}

/* Sixteen rows' lanes (v + 16·j: row j's eight lanes of A, then eight of B) summed: lane j of *a = Σ A of row j, of
 * *b = Σ B of row j (exact in int32). Four rows at a time by fp_row_sums16 (each 128-bit chunk then holds four rows'
 * partial sums of A or B), and two 128-bit shuffle rounds add the chunks and put rows in order. */
__attribute__((target(FP_VNNI), always_inline))
static inline void kq_fold16(const int32_t* v, __m512i* a, __m512i* b) {
    __m512i u[4];
    for (int k = 0; k < 4; k++) {
        __m512i rows4[4];
        for (int m = 0; m < 4; m++) rows4[m] = _mm512_load_si512((const void*)(v + 64 * k + 16 * m));
        u[k] = fp_row_sums16(rows4);
    }
    const __m512i w0 = _mm512_add_epi32(_mm512_shuffle_i64x2(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_i64x2(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i w1 = _mm512_add_epi32(_mm512_shuffle_i64x2(u[2], u[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_i64x2(u[2], u[3], _MM_SHUFFLE(3, 1, 3, 1)));
    *a = _mm512_shuffle_i64x2(w0, w1, _MM_SHUFFLE(2, 0, 2, 0));
    *b = _mm512_shuffle_i64x2(w0, w1, _MM_SHUFFLE(3, 1, 3, 1));
}

/* A 512-bit register's sixteen int32 lanes added to eight (lane i + lane i + 8: exact). */
__attribute__((target(FP_VNNI), always_inline))
static inline __m256i kq_lanes8(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

/*
 * Q4_K's codes are read as they lie: the 64 bytes at 16 hold sub-blocks 0 and 2 in their low nibbles and 1 and 3 in
 * their high ones (the 64 at 80: 4–7 alike), so a token's activations are put in that order (q4_k_row_activations),
 * once per call or per tile and group. vpermw indices: int16 lane L of scale vector p takes sub-block
 * 4p + 2·(L ≥ 16) + (L mod 8 ≥ 4), for the pack of the low-nibble sums (sub-blocks 4p: int32 lanes 0–7, 4p + 2: 8–15)
 * and the high-nibble ones (4p + 1, 4p + 3).
 */
static const int16_t FP_Q4K_SCALE_LANES[2][32] = {
    {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 3, 3},
    {4, 4, 4, 4, 5, 5, 5, 5, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 6, 6, 6, 6, 7, 7, 7, 7},
};

/* Super-block `at` of the activations in the nibble loads' order (x[0]: values 0–31 and 64–95, x[1]: 32–63 and
 * 96–127, x[2] and x[3] the same 128 on), and the sums of its sub-blocks' two 16-code halves (each min's weight: |Σ| ≤
 * 4064, an int16) as four dwords, sub-blocks 2p and 2p + 1 in dword p. */
__attribute__((target(FP_VNNI), always_inline))
static inline void q4_k_row_activations(const int8_t* xq, const int16_t* xs, int64_t at, __m512i x[4], int32_t weights[4]) {
    const int8_t* p = xq + at * 256;
    const __m512i x0 = _mm512_loadu_si512((const void*)p), x1 = _mm512_loadu_si512((const void*)(p + 64));
    const __m512i x2 = _mm512_loadu_si512((const void*)(p + 128)), x3 = _mm512_loadu_si512((const void*)(p + 192));
    x[0] = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(1, 0, 1, 0));
    x[1] = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(3, 2, 3, 2));
    x[2] = _mm512_shuffle_i64x2(x2, x3, _MM_SHUFFLE(1, 0, 1, 0));
    x[3] = _mm512_shuffle_i64x2(x2, x3, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256i pairs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i*)(xs + at * 16)), _mm256_set1_epi16(1));
    _mm_storeu_si128((__m128i*)weights, _mm_packs_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1)));
}

/* Q4_K: a row's S of super-blocks b and b + 1 share a slot (even b in lanes 0–7); its eight mins (int16) are kept once
 * per row and super-block, at the place of row j in fp_codes16's layout (16-byte lane L of register m is row
 * 4L + m), so that after the tile one in-lane transpose per super-block gives register p lane j = row j's mins 2p,
 * 2p + 1, and per token M is four vpdpwssd of those by the token's weights of sub-blocks 2p, 2p + 1: the same integer
 * M as the sixteen-rows body's. */
__attribute__((target(FP_VNNI), noinline))
static int32_t q4_k_tiles16_rows_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                      const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    const int32_t pairs = (blocks + 1) / 2, group = kq_row_form_group(blocks, n);
    if (group == 0) return 0;
    const __m512i low = _mm512_set1_epi8(0x0f), zero = _mm512_setzero_si512();
    const __m512i lanes0 = _mm512_loadu_si512((const void*)FP_Q4K_SCALE_LANES[0]), lanes1 = _mm512_loadu_si512((const void*)FP_Q4K_SCALE_LANES[1]);
    /* q4k_scales's rule on the dwords a, b, c of the 12 scale bytes: [a & 3f, c & 0f | a >> 2 & 30, b & 3f, c >> 4 & 0f | b >> 2 & 30] */
    const __m128i keep = _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f);
    const __m128i tops = _mm_setr_epi32(0, 0x30303030, 0, 0x30303030), shifts = _mm_setr_epi32(0, 0, 0, 4);
    const int64_t row_bytes = (int64_t)blocks * Q4K_BYTES;
    int32_t lanes[KQ_ROW_FORM_BLOCKS / 2 * 256] __attribute__((aligned(64)));   /* slot u·pairs + b/2, row j: S's 8 lanes of b, b + 1 */
    int32_t halves[KQ_ROW_FORM_BLOCKS * 16] __attribute__((aligned(64)));   /* b·16 + j: row j's f16 d | dmin << 16 */
    /* b·128 + 8·(4·(j mod 4) + j/4): row j's mins; after the tile's rows, transposed in place: register 4b + p lane j =
     * row j's mins 2p, 2p + 1 */
    __m512i mins[KQ_ROW_FORM_BLOCKS * 4];
    __m512i x[KQ_ROW_FORM_BLOCKS * 4];   /* a group's g·blocks super-blocks: at most KQ_ROW_FORM_BLOCKS, or 2·SLOTS */
    int32_t weights[KQ_ROW_FORM_BLOCKS * 4];
    int32_t ready = -1;   /* the first token of the group whose activations x and weights hold */
    int32_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        for (int32_t t0 = 0; t0 < n; t0 += group) {
            const int32_t g = n - t0 < group ? n - t0 : group;
            if (ready != t0) {
                for (int32_t s = 0; s < g * blocks; s++) q4_k_row_activations(xq, xs, (int64_t)t0 * blocks + s, x + 4 * s, weights + 4 * s);
                ready = t0;
            }
            for (int j = 0; j < 16; j++) {   /* row by row, the tile one sequential stream */
                const uint8_t* row = w + (int64_t)(r0 + j) * row_bytes;
                for (int32_t b = 0; b < blocks; b++) {
                    const uint8_t* blk = row + (int64_t)b * Q4K_BYTES;
                    kq_prefetch_stream(blk, Q4K_BYTES);
                    const __m512i p0 = _mm512_loadu_si512((const void*)(blk + 16)), p1 = _mm512_loadu_si512((const void*)(blk + 80));
                    const __m512i lo0 = _mm512_and_si512(p0, low), hi0 = _mm512_and_si512(_mm512_srli_epi16(p0, 4), low);
                    const __m512i lo1 = _mm512_and_si512(p1, low), hi1 = _mm512_and_si512(_mm512_srli_epi16(p1, 4), low);
                    const __m128i abc = _mm_loadu_si128((const __m128i*)(blk + 4));   /* the 12 scale bytes and 4 code bytes */
                    const __m128i sm = _mm_or_si128(
                            _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(abc, _MM_SHUFFLE(2, 1, 2, 0)), shifts), keep),
                            _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(abc, _MM_SHUFFLE(1, 0, 0, 0)), 2), tops));
                    const __m256i sm16 = _mm256_cvtepu8_epi16(sm);   /* scales 0–7, mins 0–7 as int16 */
                    const __m512i scale0 = _mm512_permutexvar_epi16(lanes0, _mm512_castsi256_si512(sm16));
                    const __m512i scale1 = _mm512_permutexvar_epi16(lanes1, _mm512_castsi256_si512(sm16));
                    if (t0 == 0) {   /* a later group of tokens reads the same rows again: these are kept */
                        memcpy(halves + b * 16 + j, blk, 4);
                        _mm_store_si128((__m128i*)((int16_t*)(mins + 4 * b) + 8 * (4 * (j & 3) + (j >> 2))), _mm256_extracti128_si256(sm16, 1));
                    }
                    for (int32_t u = 0; u < g; u++) {
                        const __m512i* xs4 = x + 4 * (u * blocks + b);
                        const __m512i r01 = _mm512_packs_epi32(_mm512_dpbusd_epi32(zero, lo0, xs4[0]), _mm512_dpbusd_epi32(zero, hi0, xs4[1]));
                        const __m512i r23 = _mm512_packs_epi32(_mm512_dpbusd_epi32(zero, lo1, xs4[2]), _mm512_dpbusd_epi32(zero, hi1, xs4[3]));
                        _mm256_store_si256((__m256i*)kq_slot(lanes, pairs, u, b, j), kq_lanes8(_mm512_dpwssd_epi32(_mm512_madd_epi16(r01, scale0), r23, scale1)));
                    }
                }
                if (blocks & 1)   /* the last slot's second half: no super-block, zeros (summed, never used) */
                    for (int32_t u = 0; u < g; u++)
                        _mm256_store_si256((__m256i*)kq_slot(lanes, pairs, u, blocks, j), _mm256_setzero_si256());
            }
            if (t0 == 0) {
                for (int32_t b = 0; b < blocks; b++) fp_dwords16(mins + 4 * b, mins + 4 * b);   /* the rows' mins, in place */
            }
            for (int32_t u = 0; u < g; u++) {   /* the sixteen-rows bodies' multiply-adds, lane j = row j */
                const int64_t t = t0 + u;
                __m512 acc = _mm512_setzero_ps();
                __m512i S[2];
                for (int32_t b = 0; b < blocks; b++) {
                    if ((b & 1) == 0) kq_fold16(lanes + (int64_t)(u * pairs + (b >> 1)) * 256, S, S + 1);
                    const int32_t* wt = weights + 4 * (u * blocks + b);
                    __m512i M = _mm512_setzero_si512();
                    for (int p = 0; p < 4; p++) M = _mm512_dpwssd_epi32(M, mins[4 * b + p], _mm512_set1_epi32(wt[p]));
                    const __m512i h = _mm512_load_si512((const void*)(halves + b * 16));
                    const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
                    const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16)));
                    const __m512 dx = _mm512_set1_ps(xd[t * blocks + b]);
                    const __m512 a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[b & 1]), _mm512_mul_ps(d, dx), acc);
                    acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dmin, dx), a);
                }
                _mm512_storeu_ps(out + t * out_stride + r0, acc);
            }
        }
    }
    return r0;
}

/* Q6_K: a row's T of super-blocks b and b + 1 share a slot (even b in lanes 0–7), the −32 offset taken off its lanes
 * before they are kept. vpermw indices: int16 lane L of scale vector p takes group 8p + 4·(L mod 8 ≥ 4) + L/8, for the
 * pack of registers 2p (groups 8p … 8p+3, four int32 lanes each) and 2p+1 (8p+4 … 8p+7). */
static const int16_t FP_Q6K_SCALE_LANES[2][32] = {
    {0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5, 2, 2, 2, 2, 6, 6, 6, 6, 3, 3, 3, 3, 7, 7, 7, 7},
    {8, 8, 8, 8, 12, 12, 12, 12, 9, 9, 9, 9, 13, 13, 13, 13, 10, 10, 10, 10, 14, 14, 14, 14, 11, 11, 11, 11, 15, 15, 15, 15},
};

__attribute__((target(FP_VNNI), noinline))
static int32_t q6_k_tiles16_rows_vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq, const float* xd,
                                      const int16_t* xs, int32_t n, float* out, int32_t out_stride) {
    const int32_t pairs = (blocks + 1) / 2, group = kq_row_form_group(blocks, n);
    if (group == 0) return 0;
    const __m512i zero = _mm512_setzero_si512();
    const __m512i lanes0 = _mm512_loadu_si512((const void*)FP_Q6K_SCALE_LANES[0]), lanes1 = _mm512_loadu_si512((const void*)FP_Q6K_SCALE_LANES[1]);
    const int64_t row_bytes = (int64_t)blocks * Q6K_BYTES;
    int32_t lanes[KQ_ROW_FORM_BLOCKS / 2 * 256] __attribute__((aligned(64)));   /* slot u·pairs + b/2, row j: T's 8 lanes of b, b + 1 */
    uint16_t halves[KQ_ROW_FORM_BLOCKS * 16] __attribute__((aligned(64)));   /* b·16 + j: row j's f16 d */
    int32_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        for (int32_t t0 = 0; t0 < n; t0 += group) {
            const int32_t g = n - t0 < group ? n - t0 : group;
            for (int j = 0; j < 16; j++) {   /* row by row, the tile one sequential stream */
                const uint8_t* row = w + (int64_t)(r0 + j) * row_bytes;
                for (int32_t b = 0; b < blocks; b++) {
                    const uint8_t* blk = row + (int64_t)b * Q6K_BYTES;
                    kq_prefetch_stream(blk, Q6K_BYTES);
                    __m256i e[8];
                    q6k_half_avx2(blk, 0, e);
                    q6k_half_avx2(blk, 1, e + 4);
                    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(blk + 192)));
                    __m512i q[4];
                    for (int k = 0; k < 4; k++) q[k] = _mm512_inserti64x4(_mm512_castsi256_si512(e[2 * k]), e[2 * k + 1], 1);
                    const __m512i scale0 = _mm512_permutexvar_epi16(lanes0, _mm512_castsi256_si512(sc16));
                    const __m512i scale1 = _mm512_permutexvar_epi16(lanes1, _mm512_castsi256_si512(sc16));
                    if (t0 == 0) halves[b * 16 + j] = load_u16(blk + 208);   /* a later group reads the same rows again */
                    for (int32_t u = 0; u < g; u++) {
                        const int64_t at = (int64_t)(t0 + u) * blocks + b;
                        const int8_t* x = xq + at * 256;
                        const __m512i r01 = _mm512_packs_epi32(_mm512_dpbusd_epi32(zero, q[0], _mm512_loadu_si512((const void*)x)),
                                                               _mm512_dpbusd_epi32(zero, q[1], _mm512_loadu_si512((const void*)(x + 64))));
                        const __m512i r23 = _mm512_packs_epi32(_mm512_dpbusd_epi32(zero, q[2], _mm512_loadu_si512((const void*)(x + 128))),
                                                               _mm512_dpbusd_epi32(zero, q[3], _mm512_loadu_si512((const void*)(x + 192))));
                        const __m256i v = kq_lanes8(_mm512_dpwssd_epi32(_mm512_madd_epi16(r01, scale0), r23, scale1));
                        const __m256i offset = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i*)(xs + at * 16)), sc16);
                        _mm256_store_si256((__m256i*)kq_slot(lanes, pairs, u, b, j), _mm256_sub_epi32(v, _mm256_slli_epi32(offset, 5)));
                    }
                }
                if (blocks & 1)   /* the last slot's second half: no super-block, zeros (summed, never used) */
                    for (int32_t u = 0; u < g; u++)
                        _mm256_store_si256((__m256i*)kq_slot(lanes, pairs, u, blocks, j), _mm256_setzero_si256());
            }
            for (int32_t u = 0; u < g; u++) {
                const int64_t t = t0 + u;
                __m512 acc = _mm512_setzero_ps();
                for (int32_t b = 0; b < blocks; b += 2) {
                    __m512i T0, T1;
                    kq_fold16(lanes + (int64_t)(u * pairs + (b >> 1)) * 256, &T0, &T1);
                    const __m512 d0 = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(halves + b * 16)));
                    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(T0), _mm512_mul_ps(d0, _mm512_set1_ps(xd[t * blocks + b])), acc);
                    if (b + 1 < blocks) {
                        const __m512 d1 = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(halves + b * 16 + 16)));
                        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(T1), _mm512_mul_ps(d1, _mm512_set1_ps(xd[t * blocks + b + 1])), acc);
                    }
                }
                _mm512_storeu_ps(out + t * out_stride + r0, acc);
            }
        }
    }
    return r0;
}

/* The entries: up to KIND##_ROW_FORM tokens the whole tiles in the row form and the last rows in the sixteen-rows body;
 * more tokens the sixteen-rows body, one copy per token count 2 … 8 and 16, the general body for the rest. Measured on
 * an AMD EPYC (one thread, 32768 × 2048): streaming a matrix from memory, the sixteen-rows body is 1.5-3x slower than
 * the row form at 2 … 8 tokens and on par at 16; from L2 / L3 it is 1.2-1.5x faster above 4 tokens. */
#define KQ_ROWS16_CASE(KIND, N) case N: KIND##_rows16_vnni(w, blocks, rows, xq, xd, xs, N, out, out_stride); break;
#define KQ_ROWS16_ENTRY(KIND)                                                                                          \
    __attribute__((target(FP_VNNI)))                                                                                  \
    FP_EXPORT void fp_##KIND##_rows_avx512vnni(const uint8_t* w, int32_t blocks, int32_t rows, const int8_t* xq,      \
                                               const float* xd, const int16_t* xs, int32_t n, float* out,             \
                                               int32_t out_stride) {                                                  \
        if (n <= KIND##_ROW_FORM) {                                                                                   \
            const int32_t done = KIND##_tiles16_rows_vnni(w, blocks, rows, xq, xd, xs, n, out, out_stride);           \
            if (done < rows) KIND##_rows16_vnni(w + (int64_t)done * blocks * KIND##_BYTES, blocks, rows - done, xq,    \
                                                xd, xs, n, out + done, out_stride);                                   \
            return;                                                                                                   \
        }                                                                                                             \
        switch (n) {                                                                                                  \
            KQ_ROWS16_CASE(KIND, 2) KQ_ROWS16_CASE(KIND, 3) KQ_ROWS16_CASE(KIND, 4)                                   \
            KQ_ROWS16_CASE(KIND, 5) KQ_ROWS16_CASE(KIND, 6) KQ_ROWS16_CASE(KIND, 7) KQ_ROWS16_CASE(KIND, 8)           \
            KQ_ROWS16_CASE(KIND, 16)                                                                                  \
            default: KIND##_rows16_vnni(w, blocks, rows, xq, xd, xs, n, out, out_stride); break;                      \
        }                                                                                                             \
    }

#define q4_k_BYTES Q4K_BYTES
#define q6_k_BYTES Q6K_BYTES
KQ_ROWS16_ENTRY(q4_k)
KQ_ROWS16_ENTRY(q6_k)
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
