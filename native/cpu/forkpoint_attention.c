/*
 * Forkpoint's native CPU attention (issue 15): causal grouped-query attention of query rows over the paged KV cache,
 * called from runner-core through FFM (backend.cpu.NativeAttention, the Java CpuAttention is its fallback and oracle).
 * Written for this project. The body is written once (fp_attention_body.h) over a few vector operations and compiled
 * here once per variant: AVX-512 (x86, the FP_VNNI set), AVX2 + FMA + F16C (x86), NEON (arm64), portable C.
 *
 * Layout (kv-cache's PagePool): position p of a sequence is row p % P of page p / P; a page's K (or V) slab for the
 * layer is P rows of kv_dim = kv_heads · head_dim elements, native order, of one element kind (the `kind` argument):
 * FA_F32, FA_F16 (IEEE half), FA_Q8_0 (blocks of 32: a half scale d, 32 int8 q; element = d·q) or FA_Q4_0 (blocks of
 * 32: a half scale d, 16 bytes, byte j = element j in the low nibble and element j + 16 in the high one, each q + 8;
 * element = d·q) — kv-cache's KvRowCodec writes them; head_dim is then a multiple of 32, so a head is whole blocks.
 * Quantised rows are converted in the loads, a vector of W elements at a time (within one block): d·q is exact in
 * float, so the kernel computes with the same floats as the Java kernel and as an F32 cache holding the dequantised
 * values, bit for bit.
 * The Java side passes the slabs' addresses (one array for K, one for V) and has checked that every position a call
 * reads lies in them.
 *
 * What a call computes. Positions are cut into blocks of FA_KEY_BLOCK = 128, fixed by position (block b holds
 * [128 b, 128 b + 128)). For each query row r of the call (q row rows[r], visible positions [0, lengths[r])) and
 * each query head h (KV head h / (heads / kv_heads)), block b gives a softmax partial: m = the block's maximum score,
 * s = Σ exp(score − m), acc = Σ exp(score − m) · V. Either fp_attn folds the partials of blocks b0 … b1 − 1 in block
 * order and writes softmax · V (a prefill tile, or a decode row on one thread), or it writes each block's partial
 * (a decode row whose blocks run on several threads) and fp_attn_fold folds them afterwards, in block order, with the
 * same merge. Every quantity is formed by the same operations in the same order whatever else the call holds:
 *   - score(r, h, p) = (Σ_d q·k) · scale, where the sum is one FMA chain per vector lane over the head's vectors
 *     (a last partial vector is loaded with zeros past the head) and then the lanes' halving tree (lane j + lane
 *     j + W/2, then + W/4, …, 1);
 *   - exp(x) = 2^k · P6(r) with k = round(x · log2 e), r = x − k · ln 2 in two steps (Cody–Waite), P6 the Taylor
 *     polynomial in Horner form, 0 below −87 — the same definition as CpuAttention's (with FMA it is the same
 *     bits); s is a per-lane sum over the block's vectors in order, then the halving tree;
 *   - acc = one FMA per element per position, in position order;
 *   - the merge: m = max(m1, m2), α = exp(m1 − m), β = exp(m2 − m), s = s1·α + s2·β, acc = acc1·α + acc2·β (the
 *     first block a row sees is copied); the result acc · (1 / s).
 * So a row's result depends only on its query, its sequence's K/V, its length and the variant: not on the other rows of
 * the call, on the call's block range, on the thread count or on whether its blocks were folded in the call or
 * afterwards (a row alone = batched = tiled = split across threads, bit for bit). Variants differ from each other and
 * from the Java kernel only by float rounding (the tests state the bound).
 *
 * Speed: the K and V rows of a block are read FA_KC = 16 positions at a time, each row whole and once per call for
 * every row and head of the call (GQA heads share the read); 16 scores are formed at once (16 FMA chains, one
 * shuffle tree for all of them); up to 4 (row, head) slots of a KV head accumulate Σ e·V together from one load of
 * each V vector; F16 rows are converted in the loads with F16C / vcvt, Q8_0 / Q4_0 rows by widening
 * their codes and multiplying by the block's scale; the next 16 rows are prefetched while these are
 * used; blocks a row does not see are skipped and the causal mask costs nothing beyond the row's own length.
 *
 * Nothing is allocated (the caller passes a scratch area of fp_attn's size, see NativeAttention), nothing is kept
 * between calls, no thread is started: the Java worker pool gives each thread its tiles or blocks.
 */
#include "fp_kernels.h"
#include <math.h>

#define FA_KEY_BLOCK 128
#define FA_KC 16
#define FA_MAX_ROWS 64
/* Element kinds of the stored rows (NativeAttention's numbering). */
#define FA_F32 0
#define FA_F16 1
#define FA_Q8_0 2
#define FA_Q4_0 3

typedef struct {
    const float* q;
    const int32_t* rows;
    const int32_t* lengths;
    int count;
    const int64_t* kpages;
    const int64_t* vpages;
    int page_tokens, kind, heads, kvh, hd, hdp, group, kvdim, next_block_end, max_length;
    int64_t row_bytes, head_bytes;
    float scale;
} fa_args;

/* Head size padded to 16 floats: the accumulators' stride (whole vectors of every variant). */
static inline int fa_pad(int head_dim) { return (head_dim + 15) & ~15; }

/* Floats of one row's partial record: seen flag, max[heads], sum[heads], acc[heads][hdp]. */
static inline int fa_row_floats(int heads, int hdp) { return 1 + heads * (2 + hdp); }

static inline void fa_init(fa_args* a, const float* q, const int32_t* rows, const int32_t* lengths, int count,
                           const int64_t* kpages, const int64_t* vpages, int page_tokens, int kind, int heads, int kvh,
                           int hd, float scale, int next_block_end) {
    a->q = q;
    a->rows = rows;
    a->lengths = lengths;
    a->count = count;
    a->kpages = kpages;
    a->vpages = vpages;
    a->page_tokens = page_tokens;
    a->kind = kind;
    a->heads = heads;
    a->kvh = kvh;
    a->hd = hd;
    a->hdp = fa_pad(hd);
    a->group = heads / kvh;
    a->kvdim = kvh * hd;
    a->head_bytes = kind == FA_Q8_0 ? (int64_t)hd / 32 * 34
                  : kind == FA_Q4_0 ? (int64_t)hd / 32 * 18
                  : (int64_t)hd * (kind == FA_F16 ? 2 : 4);
    a->row_bytes = a->head_bytes * kvh;
    a->scale = scale;
    a->next_block_end = next_block_end;
    a->max_length = 0;
    for (int r = 0; r < count; r++) if (lengths[r] > a->max_length) a->max_length = lengths[r];
}

/* The stored row of position p. */
static inline const char* fa_row(const fa_args* a, const int64_t* pages, int p) {
    return (const char*)(intptr_t)pages[p / a->page_tokens] + (int64_t)(p % a->page_tokens) * a->row_bytes;
}

/* The IEEE half at p (a quantised block's scale) as a float, exactly. */
static inline float fa_half(const uint8_t* p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return fp16_to_f32(h);
}

/* Prefetches (to L2) the stored rows of positions [p, p + kn). */
static inline void fa_prefetch(const fa_args* a, const int64_t* pages, int p, int kn) {
    for (int j = 0; j < kn; j++) {
        const char* row = fa_row(a, pages, p + j);
        for (int64_t off = 0; off < a->row_bytes; off += 64) __builtin_prefetch(row + off, 0, 2);
    }
}

/* The exponential's constants (CpuAttention's): ln 2 split in two, 1.5 · 2^23 to round to an integer, 1/n!. */
#define FA_LOG2E 1.44269504f
#define FA_LN2_HI 0.693145752f
#define FA_LN2_LO 1.42860677e-6f
#define FA_ROUNDER 12582912.0f
#define FA_C2 (1.0f / 2)
#define FA_C3 (1.0f / 6)
#define FA_C4 (1.0f / 24)
#define FA_C5 (1.0f / 120)
#define FA_C6 (1.0f / 720)
#define FA_FLOOR -87.0f

/* The exponential in scalar form for the merge (x ≤ 0), multiplies and adds rounded separately in every variant. */
static inline float fa_exp1(float x) {
    if (x < FA_FLOOR) return 0.0f;
    float k = (x * FA_LOG2E + FA_ROUNDER) - FA_ROUNDER;
    float r = x - k * FA_LN2_HI;
    r = r - k * FA_LN2_LO;
    float p = r * FA_C6 + FA_C5;
    p = p * r + FA_C4;
    p = p * r + FA_C3;
    p = p * r + FA_C2;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)k + 127) << 23;
    float two;
    memcpy(&two, &bits, sizeof two);
    return p * two;
}

/* ---- AVX-512 -------------------------------------------------------------------------------------------------- */
#ifdef FP_X86

__attribute__((target(FP_VNNI)))
static inline __m512 fa_exp512(__m512 x) {
    __m512 k = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(FA_LOG2E), _mm512_set1_ps(FA_ROUNDER)), _mm512_set1_ps(FA_ROUNDER));
    __m512 r = _mm512_fmadd_ps(k, _mm512_set1_ps(-FA_LN2_HI), x);
    r = _mm512_fmadd_ps(k, _mm512_set1_ps(-FA_LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(r, _mm512_set1_ps(FA_C6), _mm512_set1_ps(FA_C5));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(FA_C4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(FA_C3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(FA_C2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23);
    __m512 e = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
    return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, _mm512_set1_ps(FA_FLOOR), _CMP_LT_OQ), _mm512_setzero_ps());
}

/* out[j] = hsum512(acc[j]) for 16 vectors: the halving tree for all of them at once (30 shuffles, 15 adds). */
__attribute__((target(FP_VNNI)))
static inline void fa_reduce16(const __m512* acc, float* out) {
    __m512 c[8], e[4], g[2];
    for (int i = 0; i < 8; i++) {   /* lane j + lane j + 8: 128-bit units [a.0, a.1, b.0, b.1] + [a.2, a.3, b.2, b.3] */
        __m512 a = acc[2 * i], b = acc[2 * i + 1];
        c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    }
    for (int i = 0; i < 4; i++) {   /* + 4 lanes: units [c.0, c.2, d.0, d.2] + [c.1, c.3, d.1, d.3] */
        __m512 a = c[2 * i], b = c[2 * i + 1];
        e[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
    }
    for (int i = 0; i < 2; i++) {   /* + 2 lanes within each unit */
        __m512 a = e[2 * i], b = e[2 * i + 1];
        g[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b))),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b))));
    }
    /* + 1 lane; lane 4u + t then holds key u + 4t */
    __m512 s = _mm512_add_ps(_mm512_shuffle_ps(g[0], g[1], 0x88), _mm512_shuffle_ps(g[0], g[1], 0xDD));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_ps(out, _mm512_permutexvar_ps(order, s));
}

#define FA_M16(n) ((__mmask16)((1u << (n)) - 1u))

/* 16 nibbles (the low ones, or with hi the high ones) of 16 bytes at p, minus 8, as floats. */
__attribute__((target(FP_VNNI)))
static inline __m512 fa_q4_512(const uint8_t* p, int hi) {
    __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p));
    if (hi) x = _mm512_srli_epi32(x, 4);
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(x, _mm512_set1_epi32(15)), _mm512_set1_epi32(8)));
}
#define FA_SUFFIX avx512vnni
#define FA_TARGET __attribute__((target(FP_VNNI)))
#define W 16
#define V __m512
#define VZERO() _mm512_setzero_ps()
#define VSET1(x) _mm512_set1_ps(x)
#define VLOAD(p) _mm512_loadu_ps(p)
#define VLOADM(p, n) _mm512_maskz_loadu_ps(FA_M16(n), (p))
#define VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define VLOADH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p)))
#define VLOADHM(p, n) _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(FA_M16(n), (p)))
#define VLOADQ8(p) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(p))))
#define VLOADQ4(p, hi) fa_q4_512((p), (hi))
#define SHALF(p) half_x86((const uint8_t*)(p))
#define VADD _mm512_add_ps
#define VSUB _mm512_sub_ps
#define VMUL _mm512_mul_ps
#define VMAX _mm512_max_ps
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VEXP(x) fa_exp512(x)
#define VKEEP(v, n) _mm512_maskz_mov_ps(FA_M16(n), (v))
#define VKEEPMAX(v, n) _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), FA_M16(n), (v))
#define VHSUM(v) hsum512(v)
#define VHMAX(v) _mm512_reduce_max_ps(v)
#define REDUCE(acc, out) fa_reduce16((acc), (out))
#include "fp_attention_body.h"

/* ---- AVX2 + FMA + F16C ---------------------------------------------------------------------------------------- */
#define FA_AVX2 "avx2,fma,f16c"

__attribute__((target(FA_AVX2)))
static inline __m256i fa_mask8(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__attribute__((target(FA_AVX2)))
static inline __m256 fa_loadhm8(const uint16_t* p, int n) {
    uint16_t t[8] = {0};
    for (int i = 0; i < n; i++) t[i] = p[i];
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)t));
}

/* 8 nibbles (the low ones, or with hi the high ones) of 8 bytes at p, minus 8, as floats. */
__attribute__((target(FA_AVX2)))
static inline __m256 fa_q4_256(const uint8_t* p, int hi) {
    __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p));
    if (hi) x = _mm256_srli_epi32(x, 4);
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(x, _mm256_set1_epi32(15)), _mm256_set1_epi32(8)));
}

__attribute__((target(FA_AVX2)))
static inline float fa_hmax256(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

__attribute__((target(FA_AVX2)))
static inline __m256 fa_exp256(__m256 x) {
    __m256 k = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(FA_LOG2E), _mm256_set1_ps(FA_ROUNDER)), _mm256_set1_ps(FA_ROUNDER));
    __m256 r = _mm256_fmadd_ps(k, _mm256_set1_ps(-FA_LN2_HI), x);
    r = _mm256_fmadd_ps(k, _mm256_set1_ps(-FA_LN2_LO), r);
    __m256 p = _mm256_fmadd_ps(r, _mm256_set1_ps(FA_C6), _mm256_set1_ps(FA_C5));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FA_C4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FA_C3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FA_C2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(FA_FLOOR), _CMP_LT_OQ), e);
}

/* out[j] = hsum256(acc[j]) for 8 vectors: the halving tree for all of them at once. */
__attribute__((target(FA_AVX2)))
static inline void fa_reduce8(const __m256* acc, float* out) {
    __m256 c[4], g[2];
    for (int i = 0; i < 4; i++) {   /* lane j + lane j + 4: halves [a.lo, b.lo] + [a.hi, b.hi] */
        __m256 a = acc[2 * i], b = acc[2 * i + 1];
        c[i] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
    }
    for (int i = 0; i < 2; i++) {   /* + 2 lanes within each half */
        __m256 a = c[2 * i], b = c[2 * i + 1];
        g[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(a), _mm256_castps_pd(b))),
                             _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(a), _mm256_castps_pd(b))));
    }
    /* + 1 lane; lane 4u + t then holds key u + 2t */
    __m256 s = _mm256_add_ps(_mm256_shuffle_ps(g[0], g[1], 0x88), _mm256_shuffle_ps(g[0], g[1], 0xDD));
    _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

#define FA_SUFFIX avx2
#define FA_TARGET __attribute__((target(FA_AVX2)))
#define W 8
#define V __m256
#define VZERO() _mm256_setzero_ps()
#define VSET1(x) _mm256_set1_ps(x)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VLOADM(p, n) _mm256_maskload_ps((p), fa_mask8(n))
#define VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define VLOADH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p)))
#define VLOADHM(p, n) fa_loadhm8((p), (n))
#define VLOADQ8(p) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p))))
#define VLOADQ4(p, hi) fa_q4_256((p), (hi))
#define SHALF(p) half_x86((const uint8_t*)(p))
#define VADD _mm256_add_ps
#define VSUB _mm256_sub_ps
#define VMUL _mm256_mul_ps
#define VMAX _mm256_max_ps
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VEXP(x) fa_exp256(x)
#define VKEEP(v, n) _mm256_and_ps((v), _mm256_castsi256_ps(fa_mask8(n)))
#define VKEEPMAX(v, n) _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), (v), _mm256_castsi256_ps(fa_mask8(n)))
#define VHSUM(v) hsum256(v)
#define VHMAX(v) fa_hmax256(v)
#define REDUCE(acc, out) fa_reduce8((acc), (out))
#include "fp_attention_body.h"

#endif /* FP_X86 */

/* ---- NEON ------------------------------------------------------------------------------------------------------ */
#ifdef FP_ARM

static inline float32x4_t fa_loadm4(const float* p, int n) {
    float t[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) t[i] = p[i];
    return vld1q_f32(t);
}

static inline float32x4_t fa_loadh4(const uint16_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

static inline float32x4_t fa_loadhm4(const uint16_t* p, int n) {
    uint16_t t[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) t[i] = p[i];
    return fa_loadh4(t);
}

static inline float32x4_t fa_q8_4(const int8_t* p) {
    float t[4];
    for (int i = 0; i < 4; i++) t[i] = (float)p[i];
    return vld1q_f32(t);
}

static inline float32x4_t fa_q4_4(const uint8_t* p, int hi) {
    float t[4];
    for (int i = 0; i < 4; i++) t[i] = (float)((int)((hi ? p[i] >> 4 : p[i]) & 15) - 8);
    return vld1q_f32(t);
}

static inline uint32x4_t fa_mask4(int n) {
    const uint32_t lanes[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(lanes), vdupq_n_u32((uint32_t)n));
}

static inline float32x4_t fa_exp4(float32x4_t x) {
    float32x4_t k = vsubq_f32(vfmaq_f32(vdupq_n_f32(FA_ROUNDER), x, vdupq_n_f32(FA_LOG2E)), vdupq_n_f32(FA_ROUNDER));
    float32x4_t r = vfmaq_f32(x, k, vdupq_n_f32(-FA_LN2_HI));
    r = vfmaq_f32(r, k, vdupq_n_f32(-FA_LN2_LO));
    float32x4_t p = vfmaq_f32(vdupq_n_f32(FA_C5), r, vdupq_n_f32(FA_C6));
    p = vfmaq_f32(vdupq_n_f32(FA_C4), p, r);
    p = vfmaq_f32(vdupq_n_f32(FA_C3), p, r);
    p = vfmaq_f32(vdupq_n_f32(FA_C2), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23);
    float32x4_t e = vmulq_f32(p, vreinterpretq_f32_s32(bits));
    return vbslq_f32(vcltq_f32(x, vdupq_n_f32(FA_FLOOR)), vdupq_n_f32(0.0f), e);
}

/* The halving tree: lane j + lane j + 2, then + 1. */
static inline float fa_hsum4(float32x4_t v) {
    float32x2_t s = vadd_f32(vget_low_f32(v), vget_high_f32(v));
    return vget_lane_f32(s, 0) + vget_lane_f32(s, 1);
}

static inline void fa_reduce4(const float32x4_t* acc, float* out) {
    float32x4_t x = vcombine_f32(vadd_f32(vget_low_f32(acc[0]), vget_high_f32(acc[0])), vadd_f32(vget_low_f32(acc[1]), vget_high_f32(acc[1])));
    float32x4_t y = vcombine_f32(vadd_f32(vget_low_f32(acc[2]), vget_high_f32(acc[2])), vadd_f32(vget_low_f32(acc[3]), vget_high_f32(acc[3])));
    vst1q_f32(out, vpaddq_f32(x, y));
}

#define FA_SUFFIX neon
#define FA_TARGET
#define W 4
#define V float32x4_t
#define VZERO() vdupq_n_f32(0.0f)
#define VSET1(x) vdupq_n_f32(x)
#define VLOAD(p) vld1q_f32(p)
#define VLOADM(p, n) fa_loadm4((p), (n))
#define VSTORE(p, v) vst1q_f32((p), (v))
#define VLOADH(p) fa_loadh4(p)
#define VLOADHM(p, n) fa_loadhm4((p), (n))
#define VLOADQ8(p) fa_q8_4(p)
#define VLOADQ4(p, hi) fa_q4_4((p), (hi))
#define SHALF(p) fa_half((const uint8_t*)(p))
#define VADD vaddq_f32
#define VSUB vsubq_f32
#define VMUL vmulq_f32
#define VMAX vmaxq_f32
#define VFMA(a, b, c) vfmaq_f32((c), (a), (b))
#define VEXP(x) fa_exp4(x)
#define VKEEP(v, n) vbslq_f32(fa_mask4(n), (v), vdupq_n_f32(0.0f))
#define VKEEPMAX(v, n) vbslq_f32(fa_mask4(n), (v), vdupq_n_f32(-INFINITY))
#define VHSUM(v) fa_hsum4(v)
#define VHMAX(v) vmaxvq_f32(v)
#define REDUCE(acc, out) fa_reduce4((acc), (out))
#include "fp_attention_body.h"

#endif /* FP_ARM */

/* ---- portable C: a "vector" of 4 floats, multiplies and adds rounded separately ------------------------------- */

typedef struct { float x[4]; } fa_v4;

static inline fa_v4 fa_c_set1(float v) { fa_v4 r = {{v, v, v, v}}; return r; }
static inline fa_v4 fa_c_load(const float* p) { fa_v4 r; for (int i = 0; i < 4; i++) r.x[i] = p[i]; return r; }
static inline fa_v4 fa_c_loadm(const float* p, int n) { fa_v4 r = {{0, 0, 0, 0}}; for (int i = 0; i < n; i++) r.x[i] = p[i]; return r; }
static inline void fa_c_store(float* p, fa_v4 v) { for (int i = 0; i < 4; i++) p[i] = v.x[i]; }
static inline fa_v4 fa_c_loadh(const uint16_t* p) { fa_v4 r; for (int i = 0; i < 4; i++) r.x[i] = fp16_to_f32(p[i]); return r; }
static inline fa_v4 fa_c_loadhm(const uint16_t* p, int n) { fa_v4 r = {{0, 0, 0, 0}}; for (int i = 0; i < n; i++) r.x[i] = fp16_to_f32(p[i]); return r; }
static inline fa_v4 fa_c_add(fa_v4 a, fa_v4 b) { for (int i = 0; i < 4; i++) a.x[i] = a.x[i] + b.x[i]; return a; }
static inline fa_v4 fa_c_sub(fa_v4 a, fa_v4 b) { for (int i = 0; i < 4; i++) a.x[i] = a.x[i] - b.x[i]; return a; }
static inline fa_v4 fa_c_mul(fa_v4 a, fa_v4 b) { for (int i = 0; i < 4; i++) a.x[i] = a.x[i] * b.x[i]; return a; }
static inline fa_v4 fa_c_q8(const int8_t* p) { fa_v4 r; for (int i = 0; i < 4; i++) r.x[i] = (float)p[i]; return r; }
static inline fa_v4 fa_c_q4(const uint8_t* p, int hi) {
    fa_v4 r;
    for (int i = 0; i < 4; i++) r.x[i] = (float)((int)((hi ? p[i] >> 4 : p[i]) & 15) - 8);
    return r;
}
static inline fa_v4 fa_c_max(fa_v4 a, fa_v4 b) { for (int i = 0; i < 4; i++) a.x[i] = a.x[i] > b.x[i] ? a.x[i] : b.x[i]; return a; }
static inline fa_v4 fa_c_madd(fa_v4 a, fa_v4 b, fa_v4 c) {
    for (int i = 0; i < 4; i++) c.x[i] = a.x[i] * b.x[i] + c.x[i];
    return c;
}
static inline fa_v4 fa_c_exp(fa_v4 x) { for (int i = 0; i < 4; i++) x.x[i] = fa_exp1(x.x[i]); return x; }
static inline fa_v4 fa_c_keep(fa_v4 v, int n, float other) { for (int i = n; i < 4; i++) v.x[i] = other; return v; }
static inline float fa_c_hsum(fa_v4 v) { return (v.x[0] + v.x[2]) + (v.x[1] + v.x[3]); }
static inline float fa_c_hmax(fa_v4 v) { float m = v.x[0]; for (int i = 1; i < 4; i++) m = v.x[i] > m ? v.x[i] : m; return m; }
static inline void fa_c_reduce(const fa_v4* acc, float* out) { for (int j = 0; j < 4; j++) out[j] = fa_c_hsum(acc[j]); }

#define FA_SUFFIX c
#define FA_TARGET
#define W 4
#define V fa_v4
#define VZERO() fa_c_set1(0.0f)
#define VSET1(x) fa_c_set1(x)
#define VLOAD(p) fa_c_load(p)
#define VLOADM(p, n) fa_c_loadm((p), (n))
#define VSTORE(p, v) fa_c_store((p), (v))
#define VLOADH(p) fa_c_loadh(p)
#define VLOADHM(p, n) fa_c_loadhm((p), (n))
#define VLOADQ8(p) fa_c_q8(p)
#define VLOADQ4(p, hi) fa_c_q4((p), (hi))
#define SHALF(p) fa_half((const uint8_t*)(p))
#define VADD fa_c_add
#define VSUB fa_c_sub
#define VMUL fa_c_mul
#define VMAX fa_c_max
#define VFMA(a, b, c) fa_c_madd((a), (b), (c))
#define VEXP(x) fa_c_exp(x)
#define VKEEP(v, n) fa_c_keep((v), (n), 0.0f)
#define VKEEPMAX(v, n) fa_c_keep((v), (n), -INFINITY)
#define VHSUM(v) fa_c_hsum(v)
#define VHMAX(v) fa_c_hmax(v)
#define REDUCE(acc, out) fa_c_reduce((acc), (out))
#include "fp_attention_body.h"
