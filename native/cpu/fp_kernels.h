/*
 * What Forkpoint's native CPU kernels share (forkpoint_kernels.c: Q8_0, Q4_0; forkpoint_kquants.c: Q4_K, Q6_K): the
 * platform tests, the export marker, the IEEE half → float conversion and the little-endian loads of GGML block
 * headers, the token limit of one call, the x86 f16 scale load and the AVX2 / AVX-512 horizontal sums, and the pieces of
 * the rows-in-the-lanes kernels (Q4_0, MLX affine 4-bit): the code transposes and, for AVX2, the exact 4-bit dot product.
 */
#ifndef FP_KERNELS_H
#define FP_KERNELS_H

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define FP_X86 1
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#define FP_ARM 1
#include <arm_neon.h>
#endif

#define FP_EXPORT __attribute__((visibility("default")))

/*
 * How far ahead of the block being read the weights are prefetched. The hardware prefetchers stop at each 4 KiB page
 * of a file mapping, and one core's streaming read of a quantised matrix from memory then runs at about half its
 * bandwidth (measured on a Xeon: Q4_0 decode over a mapped 0.7 GB file, 4.4 GB/s without, 9.3 GB/s at 4 KiB ahead).
 * A prefetch is a hint: past the end of the mapping it does nothing.
 */
#define FP_PREFETCH_BYTES 4096
#define FP_PREFETCH(p) __builtin_prefetch((const char*)(p) + FP_PREFETCH_BYTES, 0, 3)

/*
 * How far ahead the kernels that read a tile's rows one after another as one stream (the MLX 4-bit one-token tiles,
 * the K-quants' row form) prefetch it, into L2. Measured on an AMD EPYC, one core, from memory: the affine tiles over a
 * decode step's matrices of a mapped 0.7 GB file, 8–24 KiB into L2 within 1 %, 4 or 8 KiB into L1 1.25–1.5x the time;
 * the K-quant row form over 75–110 MB matrices, 8 or 16 KiB into L2 at 15–19 GB/s, 4 KiB into L1 at 12–13.
 */
#define FP_STREAM_PREFETCH_BYTES 16384
#define FP_STREAM_PREFETCH(p) __builtin_prefetch((const char*)(p) + FP_STREAM_PREFETCH_BYTES, 0, 2)

/* IEEE half → float, exact for every value (normals, subnormals, infinities, NaNs). */
static inline float fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1fu) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {   /* subnormal: normalise */
        int shift = 0;
        while ((mantissa & 0x400u) == 0) { mantissa <<= 1; shift++; }
        mantissa &= 0x3ffu;
        bits = sign | ((uint32_t)(113 - shift) << 23) | (mantissa << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t load_u16(const uint8_t* p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

/* Tokens one call takes at most (the Java side calls again for more): the kernels keep one accumulator per token. */
#define FP_MAX_TOKENS 16

/*
 * Tiles of sixteen rows (the sixteen-rows kernels of every type): the rows of the tile at r0 (p[j]: row j's first
 * byte; a last tile's missing rows read the slice's last row, and are not stored), the bits of the rows it has (the
 * lanes to store), and, while a tile is read block by block, the next tile's bytes of the same block offset o (blocks
 * of `bytes` bytes: the next tile's sixteen contiguous rows hold them at o·16 … o·16 + 16·bytes) into L2 as one stream.
 */
static inline void fp_tile16_rows(const uint8_t* w, int64_t row_bytes, int32_t r0, int32_t rows, const uint8_t* p[16]) {
    for (int j = 0; j < 16; j++) p[j] = w + (int64_t)(r0 + j < rows ? r0 + j : rows - 1) * row_bytes;
}

static inline uint16_t fp_tile16_live(int32_t r0, int32_t rows) {
    return rows - r0 >= 16 ? (uint16_t)0xffff : (uint16_t)((1u << (rows - r0)) - 1);
}

/* How far ahead of a tile the Q4_0 one-token tiles prefetch: whole tiles, at least FP_TILE_AHEAD_BYTES (the next tile
 * when it is that long; two at 2048 columns). Measured on an AMD EPYC, one thread, Q4_0 decode of a mapped 0.7 GB file,
 * builds alternating: the next tile (18 KiB ahead) 21.9–22.2 tok/s against 23.3–23.9 at 32 KiB; in another
 * alternation 64 KiB gave 22.5–22.7 against 22.9–23.3 at 32 KiB. */
#define FP_TILE_AHEAD_BYTES 32768
static inline int64_t fp_tile16_ahead(int64_t row_bytes) {
    const int64_t tile = 16 * row_bytes;
    return tile * ((FP_TILE_AHEAD_BYTES + tile - 1) / tile);
}

static inline void fp_prefetch_tile16(const uint8_t* next_tile, int64_t o, int64_t bytes) {
    for (int64_t l = 0; l < bytes * 16; l += 64) __builtin_prefetch(next_tile + o * 16 + l, 0, 2);
}

#ifdef FP_X86
/* The instruction sets of the AVX-512 VNNI variants. */
#define FP_VNNI "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"

/* A block's f16 scale (little-endian at p) as a float: one F16C instruction. */
__attribute__((target("avx2,fma,f16c")))
static inline float half_x86(const uint8_t* p) {
    return _cvtsh_ss(load_u16(p));
}

__attribute__((target("avx2,fma,f16c")))
static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

__attribute__((target(FP_VNNI)))
static inline float hsum512(__m512 v) {
    __m256 s = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* The 4 × 4 dword transpose inside each 128-bit lane: 128-bit lane L of z[m] = row 4L + m's four dwords gives d[i]
 * lane j = dword i of row j. */
__attribute__((target(FP_VNNI), always_inline))
static inline void fp_dwords16(const __m512i z[4], __m512i d[4]) {
    const __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]), a3 = _mm512_unpackhi_epi32(z[2], z[3]);
    d[0] = _mm512_unpacklo_epi64(a0, a2);
    d[1] = _mm512_unpackhi_epi64(a0, a2);
    d[2] = _mm512_unpacklo_epi64(a1, a3);
    d[3] = _mm512_unpackhi_epi64(a1, a3);
}

/*
 * Bytes [o, o + 16) of sixteen rows (p[j]: row j's bytes) as four registers, d[i] lane j = dword i of row j: the
 * sixteen-rows-in-the-lanes kernels' (Q4_0, MLX affine) transpose of one block's codes. Four rows per register first
 * (128-bit lane L of z[m] = row 4L + m), then fp_dwords16.
 */
__attribute__((target(FP_VNNI), always_inline))
static inline void fp_codes16(const uint8_t* const* p, int64_t o, __m512i d[4]) {
    __m512i z[4];
    for (int m = 0; m < 4; m++) {
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)(p[m] + o)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p[4 + m] + o)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p[8 + m] + o)), 2);
        z[m] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p[12 + m] + o)), 3);
    }
    fp_dwords16(z, d);
}


/*
 * Bytes [o, o + 16) of eight rows (p[j]: row j's bytes) as four registers, d[i] lane j = dword i of row j: the AVX2
 * eight-rows-in-the-lanes kernels' (Q4_0, MLX affine) transpose of one block's codes. Rows m and 4 + m in one register
 * (128-bit lane L of z[m] = row 4L + m), then a 4 × 4 dword transpose inside each 128-bit lane.
 */
__attribute__((target("avx2,fma,f16c"), always_inline))
static inline void fp_codes8(const uint8_t* const* p, int64_t o, __m256i d[4]) {
    __m256i z[4];
    for (int m = 0; m < 4; m++) {
        z[m] = _mm256_set_m128i(_mm_loadu_si128((const __m128i*)(p[4 + m] + o)), _mm_loadu_si128((const __m128i*)(p[m] + o)));
    }
    __m256i a0 = _mm256_unpacklo_epi32(z[0], z[1]), a1 = _mm256_unpackhi_epi32(z[0], z[1]);
    __m256i a2 = _mm256_unpacklo_epi32(z[2], z[3]), a3 = _mm256_unpackhi_epi32(z[2], z[3]);
    d[0] = _mm256_unpacklo_epi64(a0, a2);
    d[1] = _mm256_unpackhi_epi64(a0, a2);
    d[2] = _mm256_unpacklo_epi64(a1, a3);
    d[3] = _mm256_unpackhi_epi64(a1, a3);
}

/*
 * Σ over one 32-element block of sixteen rows' 4-bit codes times one token's int8 activations x, in two registers of
 * eight int32 lanes (lo lane j = row j, hi lane j = row 8 + j), each added to start: q[0 … 3] the low nibbles of rows
 * 0–7's code dwords 0 … 3 (meeting x bytes 0 … 15), q[4 … 7] their high nibbles (bytes 16 … 31), q[8 … 15] the same of
 * rows 8–15, as fp_codes8 and a mask or shift leave them. vpmaddubsw of the unsigned codes by a broadcast activation
 * dword gives per 16-bit half of a lane a sum of two products, |·| ≤ 2·15·128; the eight of a row are added in 16 bits
 * (|Σ| ≤ 8·2·15·128 = 30720 < 2^15: exact, no saturation) and vpmaddwd by ones adds a lane's two halves into int32: the
 * same exact sum vpdpbusd gives. Each broadcast serves both halves.
 */
__attribute__((target("avx2,fma,f16c"), always_inline))
static inline void fp_dot16_u4(const __m256i* q, const int8_t* x, __m256i start, __m256i* lo, __m256i* hi) {
    int32_t v[8];
    memcpy(v, x, sizeof v);
    __m256i b[8];
    for (int i = 0; i < 8; i++) b[i] = _mm256_set1_epi32(v[i]);
    __m256i s[4], t[4];
    for (int i = 0; i < 4; i++) {
        s[i] = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_load_si256(q + i), b[i]), _mm256_maddubs_epi16(_mm256_load_si256(q + 4 + i), b[4 + i]));
        t[i] = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_load_si256(q + 8 + i), b[i]), _mm256_maddubs_epi16(_mm256_load_si256(q + 12 + i), b[4 + i]));
    }
    const __m256i ones = _mm256_set1_epi16(1);
    *lo = _mm256_add_epi32(start, _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(s[0], s[1]), _mm256_add_epi16(s[2], s[3])), ones));
    *hi = _mm256_add_epi32(start, _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(t[0], t[1]), _mm256_add_epi16(t[2], t[3])), ones));
}

/* A block's codes of eight rows (p[j]: row j's, bytes [o, o + 16)) as the eight nibble registers of one half of what
 * fp_dot16_u4 takes: q[0 … 3] the low nibbles of dwords 0 … 3, q[4 … 7] their high nibbles. */
__attribute__((target("avx2,fma,f16c"), always_inline))
static inline void fp_nibbles8(const uint8_t* const* p, int64_t o, __m256i* q) {
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256i d[4];
    fp_codes8(p, o, d);
    for (int i = 0; i < 4; i++) {
        _mm256_store_si256(q + i, _mm256_and_si256(d[i], low));
        _mm256_store_si256(q + 4 + i, _mm256_and_si256(_mm256_srli_epi32(d[i], 4), low));
    }
}

/* Stores the live lanes (the first `live`, 1 … 16) of lo (rows 0–7) and hi (rows 8–15) at out. */
__attribute__((target("avx2,fma,f16c"), always_inline))
static inline void fp_store16(float* out, __m256 lo, __m256 hi, int32_t live) {
    if (live >= 16) {
        _mm256_storeu_ps(out, lo);
        _mm256_storeu_ps(out + 8, hi);
    } else {
        float lane[16];
        _mm256_storeu_ps(lane, lo);
        _mm256_storeu_ps(lane + 8, hi);
        for (int32_t j = 0; j < live; j++) out[j] = lane[j];
    }
}

/*
 * The 16 bytes at p, p + s4, p + s8 and p + s12 (four rows, s4 = four rows' stride) in 128-bit lanes 0–3: the
 * one-token kernels' load of four rows of one block (lane L = row 4L + m when p is row m). Two 256-bit pairs joined
 * once: on cores that split 512-bit shuffles in two, fewer shuffle slots than three 512-bit inserts (measured on an
 * AMD EPYC: Q4_0 one-token kernel 1.06x).
 */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512i fp_rows4(const uint8_t* p, int64_t s4, int64_t s8, int64_t s12) {
    __m256i a = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)p)),
                                        _mm_loadu_si128((const __m128i*)(p + s4)), 1);
    __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(p + s8))),
                                        _mm_loadu_si128((const __m128i*)(p + s12)), 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

/*
 * The one-token kernels' row sums: e[m] 128-bit lane L holds four partial dwords of row 4L + m (fp_rows4's layout);
 * two unpack-and-add steps give lane j the sum of row j's four, in a fixed order (exact in int32). In general: dword m
 * of the result's 128-bit lane L is the sum of e[m]'s four dwords in lane L.
 */
__attribute__((target(FP_VNNI), always_inline))
static inline __m512i fp_row_sums16(const __m512i e[4]) {
    const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(e[0], e[1]), _mm512_unpackhi_epi32(e[0], e[1]));
    const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(e[2], e[3]), _mm512_unpackhi_epi32(e[2], e[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

#endif

#endif
