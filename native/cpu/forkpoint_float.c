/*
 * Forkpoint's native CPU kernels for unquantised weight matrices: F32, F16 and BF16 rows times float activations
 * (issue 15; one concept per file: forkpoint_kernels.c holds Q8_0 and Q4_0, fp_cpu_features() and the ABI version).
 * Written for this project; compiled into the same library and called from backend.cpu.NativeKernels for
 * F32Matrix, F16Matrix and BF16Matrix, decode and prefill alike.
 *
 * One call computes one slice of rows: out[t·out_stride + r] = Σ_c w[r][c] · x[t·cols + c] for the `rows` rows at w
 * (row-major, `cols` values of the weight kind a row, little-endian) and every token t < n (float activations,
 * token-major). Weights are converted to float as they are loaded (F16: the IEEE half value, exact for every finite
 * code, subnormals included; BF16: the bits shifted into a float's top half; F32 as stored); activations and sums
 * are float. Invariants (tested by NativeFloatKernelTest; the Java side relies on them):
 *   - the arithmetic of one (row, token) pair is fixed per variant and depends on nothing else: lane l of a W-lane
 *     accumulator (W = 16 AVX-512, 8 AVX2 and portable C, 4 NEON) starts at +0 and takes the products of columns
 *     c ≡ l (mod W) in increasing c, each added by one fused multiply-add (portable C: a rounded product, then a
 *     rounded add); the last, partial vector is zero-padded (0·0 adds nothing); the W lanes are then summed in a
 *     fixed tree (hsum512 / hsum256 of fp_kernels.h, vaddvq_f32 on NEON, the hsum256 tree in portable C). So a
 *     token's result does not depend on n, on the other tokens, on the slice or on the row's place in it: a decode
 *     batch equals its rows run alone and a prefill's rows equal decode's, bit for bit. The register tiles (R rows
 *     × T tokens sharing each load) only choose which pairs run together, never how a pair is summed;
 *   - the float error of a pair is that of a sum of ⌈cols/W⌉ + log2 W terms in sequence: |error| ≤ γ_k·Σ|w·x| with
 *     k = ⌈cols/W⌉ + log2 W (+1 in portable C for the rounded product);
 *   - nothing is allocated (the stack holds the padded last vector and, for the prefill GEMM, a scratch of
 *     converted weights and kept accumulators: 24 KiB at most), nothing is kept between calls, no thread is started:
 *     the Java worker pool splits the rows; the weights are read as streams prefetched FP_PREFETCH_BYTES ahead
 *     (fp_kernels.h) on the first pass over them; the Java side passes at most NativeKernels.FLOAT_TOKENS tokens per
 *     call, so later passes find the slice's rows in cache.
 *
 * Two loops give those sums. Decode (n < FP_GEMM_MIN_TOKENS, and every n on NEON and portable C): register tiles of
 * up to 4 rows × 4 tokens (x86: 4 rows × 1 token, token after token) over all the columns, weights converted in
 * registers as loaded. Prefill
 * (AVX-512, AVX2): per 4 rows, the columns in chunks of FP_GEMM_COLS converted once into an L1 scratch and met by
 * every token of the call, 4 (AVX2: 3) at a time; a pair's accumulator is stored between chunks and reloaded
 * (exact), so the GEMM's sums are decode's, bit for bit.
 */
#include "fp_kernels.h"

enum { FP_FLOAT_F32 = 0, FP_FLOAT_F16 = 1, FP_FLOAT_BF16 = 2 };

/* From this many tokens a call takes the chunked GEMM (same per-pair arithmetic, weights converted once per chunk). */
#define FP_GEMM_MIN_TOKENS 8

/* Bytes of one weight of `kind`. */
static inline int64_t float_kind_bytes(int kind) { return kind == FP_FLOAT_F32 ? 4 : 2; }

/* Weight c of a row as a float, in scalar code (the padded last vector and portable C). */
static inline float float_weight(const uint8_t* row, int kind, int64_t c) {
    if (kind == FP_FLOAT_F16) return fp16_to_f32(load_u16(row + 2 * c));
    uint32_t bits;
    if (kind == FP_FLOAT_BF16) {
        bits = (uint32_t)load_u16(row + 2 * c) << 16;
    } else {
        memcpy(&bits, row + 4 * c, sizeof bits);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Columns [from, cols) of a row (fewer than a vector's lanes) as floats into dst[0 … lanes), zero-padded. */
static inline void float_weights_padded(const uint8_t* row, int kind, int32_t from, int32_t cols, float* dst, int lanes) {
    for (int l = 0; l < lanes; l++) dst[l] = from + l < cols ? float_weight(row, kind, from + l) : 0.0f;
}

static inline void floats_padded(const float* x, int32_t from, int32_t cols, float* dst, int lanes) {
    for (int l = 0; l < lanes; l++) dst[l] = from + l < cols ? x[from + l] : 0.0f;
}

/* ---- portable C (8 lanes in arrays; gcc vectorises them where it can) ----------------------------------------- */

#define FP_C_LANES 8

static inline float hsum8_c(const float* a) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

FP_EXPORT void fp_float_rows_c(const uint8_t* w, int32_t kind, int32_t cols, int32_t rows, const float* x, int32_t n,
                               float* out, int32_t out_stride) {
    int64_t row_bytes = (int64_t)cols * float_kind_bytes(kind);
    int32_t full = cols / FP_C_LANES * FP_C_LANES;
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t* row = w + r * row_bytes;
        for (int32_t t = 0; t < n; t++) {
            const float* xt = x + (int64_t)t * cols;
            float acc[FP_C_LANES] = {0};
            float wv[FP_C_LANES], xv[FP_C_LANES];
            for (int32_t c = 0; c < full; c += FP_C_LANES) {
                if (t == 0) FP_PREFETCH(row + c * float_kind_bytes(kind));
                for (int l = 0; l < FP_C_LANES; l++) acc[l] += float_weight(row, kind, c + l) * xt[c + l];
            }
            if (full < cols) {
                float_weights_padded(row, kind, full, cols, wv, FP_C_LANES);
                floats_padded(xt, full, cols, xv, FP_C_LANES);
                for (int l = 0; l < FP_C_LANES; l++) acc[l] += wv[l] * xv[l];
            }
            out[(int64_t)t * out_stride + r] = hsum8_c(acc);
        }
    }
}

/* ---- x86: AVX-512 (the avx512vnni variant; only AVX-512F is used here) and AVX2 + FMA + F16C ----------------- */
#ifdef FP_X86

/*
 * Prefill's chunking (both variants): FP_GEMM_COLS columns of GEMM_R rows converted into the scratch per chunk, at most
 * FP_GEMM_TOKENS tokens of the call kept (one accumulator per row and token) between chunks. The decode tiles and the
 * GEMM are written once in fp_float_body.h over the vocabulary each variant defines here.
 */
#define FP_GEMM_COLS 512
#define FP_GEMM_TOKENS 64

/* AVX-512: 16 lanes, GEMM 4 rows × 4 tokens. */
#define FF_SUFFIX avx512vnni
#define FF_TARGET FP_VNNI
#define W 16
#define V __m512
#define VZERO() _mm512_setzero_ps()
#define VLOADU(p) _mm512_loadu_ps(p)
#define VLOAD(p) _mm512_load_ps(p)
#define VSTORE(p, v) _mm512_store_ps((p), (v))
#define VLOADH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p)))
#define VLOADBF(p) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(p))), 16))
#define VMASK __mmask16
#define VTAILMASK(n) ((__mmask16)((1u << (n)) - 1))
#define VLOADM(p, m) _mm512_maskz_loadu_ps((m), (p))
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VHSUM(v) hsum512(v)
#define GEMM_R 4
#define GEMM_T 4
#include "fp_float_body.h"

/* AVX2: 8 lanes, GEMM 4 rows × 3 tokens (12 accumulators, an activation and the weights as memory operands). */
#define FF_SUFFIX avx2
#define FF_TARGET "avx2,fma,f16c"
#define W 8
#define V __m256
#define VZERO() _mm256_setzero_ps()
#define VLOADU(p) _mm256_loadu_ps(p)
#define VLOAD(p) _mm256_load_ps(p)
#define VSTORE(p, v) _mm256_store_ps((p), (v))
#define VLOADH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p)))
#define VLOADBF(p) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(p))), 16))
#define VMASK __m256i
#define VTAILMASK(n) _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define VLOADM(p, m) _mm256_maskload_ps((p), (m))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VHSUM(v) hsum256(v)
#define GEMM_R 4
#define GEMM_T 3
#include "fp_float_body.h"

#endif

/* ---- arm64: NEON (4 lanes; F16 through the fp16 → fp32 conversion instruction) ------------------------------- */
#ifdef FP_ARM

__attribute__((always_inline))
static inline float32x4_t load4_neon(const uint8_t* row, int kind, int32_t c) {
    if (kind == FP_FLOAT_F16) return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t*)(row + 2 * (int64_t)c))));
    if (kind == FP_FLOAT_BF16) return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t*)(row + 2 * (int64_t)c)), 16));
    return vld1q_f32((const float*)(row + 4 * (int64_t)c));
}

/* A decode register tile with 4 lanes: R rows × T tokens (at most 4 × 4: 16 accumulators, 4 weights and an activation of 32 registers), for every n. */
__attribute__((always_inline))
static inline void tile_neon(const uint8_t* w, int64_t row_bytes, int kind, int32_t cols, const float* x, int R, int T,
                             float* out, int32_t out_stride, int prefetch) {
    float32x4_t acc[4][4];
    for (int i = 0; i < R; i++) for (int j = 0; j < T; j++) acc[i][j] = vdupq_n_f32(0.0f);
    int32_t full = cols / 4 * 4;
    int64_t step_bytes = 4 * float_kind_bytes(kind);
    for (int32_t c = 0; c < full; c += 4) {
        float32x4_t wv[4];
        for (int i = 0; i < R; i++) {
            if (prefetch) FP_PREFETCH(w + i * row_bytes + c / 4 * step_bytes);
            wv[i] = load4_neon(w + i * row_bytes, kind, c);
        }
        for (int j = 0; j < T; j++) {
            float32x4_t xv = vld1q_f32(x + (int64_t)j * cols + c);
            for (int i = 0; i < R; i++) acc[i][j] = vfmaq_f32(acc[i][j], wv[i], xv);
        }
    }
    if (full < cols) {
        float wp[4], xp[4];
        for (int i = 0; i < R; i++) {
            float_weights_padded(w + i * row_bytes, kind, full, cols, wp, 4);
            float32x4_t wv = vld1q_f32(wp);
            for (int j = 0; j < T; j++) {
                floats_padded(x + (int64_t)j * cols, full, cols, xp, 4);
                acc[i][j] = vfmaq_f32(acc[i][j], wv, vld1q_f32(xp));
            }
        }
    }
    for (int i = 0; i < R; i++) for (int j = 0; j < T; j++) out[(int64_t)j * out_stride + i] = vaddvq_f32(acc[i][j]);
}

__attribute__((always_inline))
static inline void rows_neon(const uint8_t* w, int kind, int32_t cols, int32_t rows, const float* x, int32_t n,
                             float* out, int32_t out_stride) {
    int64_t row_bytes = (int64_t)cols * float_kind_bytes(kind);
    for (int32_t r = 0; r < rows;) {
        int R = rows - r >= 4 ? 4 : 1;
        const uint8_t* wr = w + r * row_bytes;
        for (int32_t t = 0; t < n;) {
            int T = n - t >= 4 ? 4 : 1;
            const float* xt = x + (int64_t)t * cols;
            float* o = out + (int64_t)t * out_stride + r;
            int first = t == 0;
            if (R == 4 && T == 4) tile_neon(wr, row_bytes, kind, cols, xt, 4, 4, o, out_stride, first);
            else if (R == 4) tile_neon(wr, row_bytes, kind, cols, xt, 4, 1, o, out_stride, first);
            else if (T == 4) tile_neon(wr, row_bytes, kind, cols, xt, 1, 4, o, out_stride, first);
            else tile_neon(wr, row_bytes, kind, cols, xt, 1, 1, o, out_stride, first);
            t += T;
        }
        r += R;
    }
}

FP_EXPORT void fp_float_rows_neon(const uint8_t* w, int32_t kind, int32_t cols, int32_t rows, const float* x,
                                  int32_t n, float* out, int32_t out_stride) {
    if (kind == FP_FLOAT_F16) rows_neon(w, FP_FLOAT_F16, cols, rows, x, n, out, out_stride);
    else if (kind == FP_FLOAT_BF16) rows_neon(w, FP_FLOAT_BF16, cols, rows, x, n, out, out_stride);
    else rows_neon(w, FP_FLOAT_F32, cols, rows, x, n, out, out_stride);
}

#endif
