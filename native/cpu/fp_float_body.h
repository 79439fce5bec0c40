/*
 * The x86 float kernels' body (decode register tiles and the prefill GEMM), written once over a small vector vocabulary
 * and included by forkpoint_float.c once per instruction-set variant (written for this project). Before each inclusion
 * the includer defines (the body #undefs them at its end):
 *   FF_SUFFIX            the variant's symbol suffix (avx512vnni, avx2): fp_float_rows_<suffix> is the entry point
 *   FF_TARGET            the variant's instruction sets, as the string of a target attribute
 *   W, V                 lanes per vector and the vector type
 *   VZERO()              a vector of +0
 *   VLOADU(p) VLOAD(p) VSTORE(p, v)
 *                        W floats loaded from anywhere / loaded from and stored to a W·4-byte aligned address
 *   VLOADH(p) VLOADBF(p) W IEEE halves / W bfloat16 values at the byte address p, as floats
 *   VMASK, VTAILMASK(n), VLOADM(p, m)
 *                        the type of a lane mask, the mask of the first n < W lanes, and the W floats at p under the
 *                        mask m (lanes outside it 0, nothing read past them)
 *   VFMA(a, b, c)        a·b + c rounded once;  VHSUM(v): the sum of the lanes by the variant's fixed tree
 *   GEMM_R, GEMM_T       the prefill register tile: rows × tokens (GEMM_R · GEMM_T accumulators)
 * What is computed, and in what order, is stated in forkpoint_float.c; the per-pair arithmetic depends only on W.
 */

#define FF_CAT2(a, b) a##_##b
#define FF_CAT(a, b) FF_CAT2(a, b)
#define FF(name) FF_CAT(name, FF_SUFFIX)

/* W weights [c, c + W) of a row of `kind` as floats. */
__attribute__((target(FF_TARGET), always_inline))
static inline V FF(load)(const uint8_t* row, int kind, int32_t c) {
    if (kind == FP_FLOAT_F16) return VLOADH(row + 2 * (int64_t)c);
    if (kind == FP_FLOAT_BF16) return VLOADBF(row + 2 * (int64_t)c);
    return VLOADU((const float*)(row + 4 * (int64_t)c));
}

/*
 * One decode register tile: R rows (4, or 1 for a slice's last rows; a constant after inlining) × one token, one
 * W-lane accumulator per row. Called token after token for the fewer than FP_GEMM_MIN_TOKENS tokens of a decode
 * call (the rows' bytes come from L1 after the first), which keeps the instantiations, and the library's build,
 * few; the tile shape never changes a pair's sum.
 */
__attribute__((target(FF_TARGET), always_inline))
static inline void FF(tile)(const uint8_t* w, int64_t row_bytes, int kind, int32_t cols, const float* x, int R,
                            float* out, int prefetch) {
    V acc[4];
    for (int i = 0; i < R; i++) acc[i] = VZERO();
    int32_t full = cols / W * W;
    int64_t step_bytes = W * float_kind_bytes(kind);
    for (int32_t c = 0; c < full; c += W) {
        V xv = VLOADU(x + c);
        for (int i = 0; i < R; i++) {
            if (prefetch) FP_PREFETCH(w + i * row_bytes + c / W * step_bytes);
            acc[i] = VFMA(FF(load)(w + i * row_bytes, kind, c), xv, acc[i]);
        }
    }
    if (full < cols) {
        float wp[W], xp[W];
        floats_padded(x, full, cols, xp, W);
        for (int i = 0; i < R; i++) {
            float_weights_padded(w + i * row_bytes, kind, full, cols, wp, W);
            acc[i] = VFMA(VLOADU(wp), VLOADU(xp), acc[i]);
        }
    }
    for (int i = 0; i < R; i++) out[i] = VHSUM(acc[i]);
}

__attribute__((target(FF_TARGET), always_inline))
static inline void FF(rows)(const uint8_t* w, int kind, int32_t cols, int32_t rows, const float* x, int32_t n,
                            float* out, int32_t out_stride) {
    int64_t row_bytes = (int64_t)cols * float_kind_bytes(kind);
    for (int32_t r = 0; r < rows;) {
        int R = rows - r >= 4 ? 4 : 1;
        const uint8_t* wr = w + r * row_bytes;
        for (int32_t t = 0; t < n; t++) {   /* n < FP_GEMM_MIN_TOKENS: later tokens find the rows in L1 */
            const float* xt = x + (int64_t)t * cols;
            float* o = out + (int64_t)t * out_stride + r;
            if (R == 4) FF(tile)(wr, row_bytes, kind, cols, xt, 4, o, t == 0);
            else FF(tile)(wr, row_bytes, kind, cols, xt, 1, o, t == 0);
        }
        r += R;
    }
}

/*
 * Prefill: GEMM_R rows at a time, their columns in chunks of FP_GEMM_COLS converted once into a float scratch (L1) and
 * met by every token of the block, GEMM_T tokens at a time (the activations stream from L2, each load serving GEMM_R
 * rows); a pair's W-lane accumulator is kept in `keep` between chunks (stored and reloaded: exact), so its sum is
 * formed exactly as FF(tile) forms it. Rows past the slice's end are zeros in the scratch, computed and dropped.
 */
__attribute__((target(FF_TARGET), always_inline))
static inline void FF(gemm_tile)(const float* wbuf, const float* x, int32_t cols, int32_t k0, int32_t kc, int T,
                                 float* keep, int first, int last, float* out, int32_t out_stride, int rr) {
    V acc[GEMM_R][GEMM_T];
    for (int i = 0; i < GEMM_R; i++) for (int j = 0; j < T; j++)
        acc[i][j] = first ? VZERO() : VLOAD(keep + (j * GEMM_R + i) * W);
    int32_t full = kc / W * W;
    for (int32_t c = 0; c < full; c += W) {
        for (int j = 0; j < T; j++) {
            V xv = VLOADU(x + (int64_t)j * cols + k0 + c);
            for (int i = 0; i < GEMM_R; i++) acc[i][j] = VFMA(VLOAD(wbuf + i * FP_GEMM_COLS + c), xv, acc[i][j]);
        }
    }
    if (full < kc) {   /* the row's zero-padded last vector: masked activations, zeros in the scratch */
        VMASK m = VTAILMASK(kc - full);
        for (int j = 0; j < T; j++) {
            V xv = VLOADM(x + (int64_t)j * cols + k0 + full, m);
            for (int i = 0; i < GEMM_R; i++) acc[i][j] = VFMA(VLOAD(wbuf + i * FP_GEMM_COLS + full), xv, acc[i][j]);
        }
    }
    if (last) {
        for (int i = 0; i < rr; i++) for (int j = 0; j < T; j++) out[(int64_t)j * out_stride + i] = VHSUM(acc[i][j]);
    } else {
        for (int i = 0; i < GEMM_R; i++) for (int j = 0; j < T; j++) VSTORE(keep + (j * GEMM_R + i) * W, acc[i][j]);
    }
}

/* Columns [k0, k0 + full) of a row converted into the scratch b (full a multiple of W), prefetched on the first pass. */
__attribute__((target(FF_TARGET), always_inline))
static inline void FF(convert)(const uint8_t* row, int kind, int32_t k0, int32_t full, float* b, int prefetch) {
    for (int32_t c = 0; c < full; c += W) {
        if (prefetch) FP_PREFETCH(row + (k0 + c) * float_kind_bytes(kind));
        VSTORE(b + c, FF(load)(row, kind, k0 + c));
    }
}

/* Not inlined per weight kind: only the conversion into the scratch depends on it. */
__attribute__((target(FF_TARGET), noinline))
static void FF(gemm)(const uint8_t* w, int kind, int32_t cols, int32_t rows, const float* x, int32_t n,
                     float* out, int32_t out_stride) {
    _Alignas(W * 4) float wbuf[GEMM_R * FP_GEMM_COLS];
    _Alignas(W * 4) float keep[FP_GEMM_TOKENS * GEMM_R * W];   /* per token of the block, per row: an accumulator */
    int64_t row_bytes = (int64_t)cols * float_kind_bytes(kind);
    for (int32_t r0 = 0; r0 < rows; r0 += GEMM_R) {
        int rr = rows - r0 < GEMM_R ? rows - r0 : GEMM_R;
        for (int32_t t0 = 0; t0 < n; t0 += FP_GEMM_TOKENS) {
            int32_t tb = n - t0 < FP_GEMM_TOKENS ? n - t0 : FP_GEMM_TOKENS;
            for (int32_t k0 = 0; k0 < cols; k0 += FP_GEMM_COLS) {
                int32_t kc = cols - k0 < FP_GEMM_COLS ? cols - k0 : FP_GEMM_COLS;
                int32_t full = kc / W * W;
                for (int i = 0; i < GEMM_R; i++) {
                    float* b = wbuf + i * FP_GEMM_COLS;
                    if (i >= rr) {
                        for (int32_t c = 0; c < FP_GEMM_COLS; c += W) VSTORE(b + c, VZERO());
                        continue;
                    }
                    const uint8_t* row = w + (r0 + i) * row_bytes;
                    if (kind == FP_FLOAT_F16) FF(convert)(row, FP_FLOAT_F16, k0, full, b, t0 == 0);
                    else if (kind == FP_FLOAT_BF16) FF(convert)(row, FP_FLOAT_BF16, k0, full, b, t0 == 0);
                    else FF(convert)(row, FP_FLOAT_F32, k0, full, b, t0 == 0);
                    if (full < kc) float_weights_padded(row, kind, k0 + full, cols, b + full, W);
                }
                int first = k0 == 0, last = k0 + kc == cols;
                int32_t t = 0;
                for (; t + GEMM_T <= tb; t += GEMM_T) {
                    FF(gemm_tile)(wbuf, x + (int64_t)(t0 + t) * cols, cols, k0, kc, GEMM_T, keep + t * GEMM_R * W,
                                  first, last, out + (int64_t)(t0 + t) * out_stride + r0, out_stride, rr);
                }
                for (; t < tb; t++) {
                    FF(gemm_tile)(wbuf, x + (int64_t)(t0 + t) * cols, cols, k0, kc, 1, keep + t * GEMM_R * W,
                                  first, last, out + (int64_t)(t0 + t) * out_stride + r0, out_stride, rr);
                }
            }
        }
    }
}

__attribute__((target(FF_TARGET)))
FP_EXPORT void FF(fp_float_rows)(const uint8_t* w, int32_t kind, int32_t cols, int32_t rows, const float* x,
                                 int32_t n, float* out, int32_t out_stride) {
    if (n >= FP_GEMM_MIN_TOKENS) {
        FF(gemm)(w, kind, cols, rows, x, n, out, out_stride);
        return;
    }
    if (kind == FP_FLOAT_F16) FF(rows)(w, FP_FLOAT_F16, cols, rows, x, n, out, out_stride);
    else if (kind == FP_FLOAT_BF16) FF(rows)(w, FP_FLOAT_BF16, cols, rows, x, n, out, out_stride);
    else FF(rows)(w, FP_FLOAT_F32, cols, rows, x, n, out, out_stride);
}

#undef FF_CAT2
#undef FF_CAT
#undef FF

/* this variant's vocabulary ends here: the next variant defines its own */
#undef FF_SUFFIX
#undef FF_TARGET
#undef W
#undef V
#undef VZERO
#undef VLOADU
#undef VLOAD
#undef VSTORE
#undef VLOADH
#undef VLOADBF
#undef VMASK
#undef VTAILMASK
#undef VLOADM
#undef VFMA
#undef VHSUM
#undef GEMM_R
#undef GEMM_T
