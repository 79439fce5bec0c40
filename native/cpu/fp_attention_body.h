/*
 * The attention kernels' body, written once over a small vector vocabulary and included by forkpoint_attention.c once
 * per instruction-set variant (written for this project). Before each inclusion the includer defines (the body #undefs
 * them at its end):
 *   FA_SUFFIX            the variant's symbol suffix (avx512vnni, avx2, neon, c)
 *   FA_TARGET            the attribute that marks a function with the variant's instruction set (or nothing)
 *   W, V                 lanes per vector and the vector type
 *   VZERO() VSET1(x) VLOAD(p) VLOADM(p, n) VSTORE(p, v) VLOADH(p) VLOADHM(p, n)
 *                        loads and stores (…M: the first n ≤ W lanes, the others 0, nothing read past them;
 *                        …H: IEEE halves converted to floats)
 *   VLOADQ8(p)           W signed bytes converted to floats;  VLOADQ4(p, hi): the low (hi 0) or high (hi 1) nibbles
 *                        of W bytes, minus 8, as floats;  SHALF(p): the IEEE half at p as a float (scalar)
 *   VADD VSUB VMUL VMAX VFMA(a, b, c) = a·b + c (rounded once where the variant has FMA)
 *   VEXP(x)              the exponential of fp_attention's definition, lane by lane (x ≤ 0)
 *   VKEEP(v, n)          v with lanes ≥ n set to 0;  VKEEPMAX(v, n): lanes ≥ n set to −∞
 *   VHSUM(v) VHMAX(v)    the sum of the lanes by the halving tree (lane j + lane j + W/2, then + W/4, …), the maximum
 *   REDUCE(acc, out)     out[j] = VHSUM(acc[j]) for j < W, by the same tree, stored in key order
 * What every function computes, and in what order, is stated in forkpoint_attention.c.
 */

#define FA_CAT2(a, b) a##_##b
#define FA_CAT(a, b) FA_CAT2(a, b)
#define FA(name) FA_CAT(name, FA_SUFFIX)

/*
 * W floats of elements [c, c + W) of one head's part of a stored row of `kind` (a compile-time constant at every use),
 * all or (F32, F16) the first n. Q8_0 / Q4_0: the block of element c (a head is whole blocks of 32 and W divides 32,
 * so a vector never straddles two blocks and a partial vector never occurs) gives its scale d and W codes q, and the
 * lanes are d·q — a half times an integer of at most 8 bits, exact in float: the same floats as the Java kernel's.
 */
FA_TARGET static inline __attribute__((always_inline)) V FA(ld)(const char* row, int c, const int kind) {
    if (kind == FA_Q8_0) {
        const char* b = row + (c >> 5) * 34;
        return VMUL(VSET1(SHALF(b)), VLOADQ8((const int8_t*)(b + 2 + (c & 31))));
    }
    if (kind == FA_Q4_0) {
        const char* b = row + (c >> 5) * 18;
        int e = c & 31;
        return VMUL(VSET1(SHALF(b)), e < 16 ? VLOADQ4((const uint8_t*)(b + 2 + e), 0) : VLOADQ4((const uint8_t*)(b + 2 + e - 16), 1));
    }
    if (kind == FA_F16) return VLOADH((const uint16_t*)row + c);
    return VLOAD((const float*)row + c);
}

FA_TARGET static inline __attribute__((always_inline)) V FA(ldm)(const char* row, int c, int n, const int kind) {
    if (kind == FA_Q8_0 || kind == FA_Q4_0) return FA(ld)(row, c, kind);   /* n = W: heads are whole blocks */
    if (kind == FA_F16) return VLOADHM((const uint16_t*)row + c, n);
    return VLOADM((const float*)row + c, n);
}

#define FA_LD(row, c, kind) FA(ld)((row), (c), (kind))
#define FA_LDM(row, c, n, kind) FA(ldm)((row), (c), (n), (kind))

/*
 * outs[s][at + k] = (q_s · k_k) · scale for ns slots (row, head) of one KV head and W / ns keys krow[k] (the head's
 * part of each stored row): per (slot, key) one FMA chain over the head's vectors, then the lanes' tree; each K vector
 * loaded serves the ns slots. The bits of a score do not depend on ns.
 */
FA_TARGET static inline __attribute__((always_inline)) void FA(scores_sk)(const float* const* qs, const int ns,
        const char* const* krow, int hd, float scale, const int kind, float* const* outs, int at) {
    const int nk = W / ns;
    V acc[W];
#pragma GCC unroll 16
    for (int j = 0; j < W; j++) acc[j] = VZERO();
    int c = 0;
    for (; c + W <= hd; c += W) {
        V qv[4];
#pragma GCC unroll 4
        for (int s = 0; s < ns; s++) qv[s] = VLOAD(qs[s] + c);
#pragma GCC unroll 16
        for (int k = 0; k < nk; k++) {
            V kv = FA_LD(krow[k], c, kind);
#pragma GCC unroll 4
            for (int s = 0; s < ns; s++) acc[s * nk + k] = VFMA(kv, qv[s], acc[s * nk + k]);
        }
    }
    if (c < hd) {
        int n = hd - c;
        V qv[4];
#pragma GCC unroll 4
        for (int s = 0; s < ns; s++) qv[s] = VLOADM(qs[s] + c, n);
#pragma GCC unroll 16
        for (int k = 0; k < nk; k++) {
            V kv = FA_LDM(krow[k], c, n, kind);
#pragma GCC unroll 4
            for (int s = 0; s < ns; s++) acc[s * nk + k] = VFMA(kv, qv[s], acc[s * nk + k]);
        }
    }
    float res[W];
    REDUCE(acc, res);
    VSTORE(res, VMUL(VLOAD(res), VSET1(scale)));
#pragma GCC unroll 4
    for (int s = 0; s < ns; s++) memcpy(outs[s] + at, res + s * nk, sizeof(float) * nk);
}

/* FA_KC keys for ns = 1 … 4 slots: four at a time, one by one otherwise (each kind its own specialised loop). */
#define FA_SC_KIND(QS, NS, KROW, OUTS, AT)                                                                    \
    switch (kind) {                                                                                           \
        case FA_F16: FA(scores_sk)(QS, NS, KROW, hd, scale, FA_F16, OUTS, AT); break;                          \
        case FA_Q8_0: FA(scores_sk)(QS, NS, KROW, hd, scale, FA_Q8_0, OUTS, AT); break;                        \
        case FA_Q4_0: FA(scores_sk)(QS, NS, KROW, hd, scale, FA_Q4_0, OUTS, AT); break;                        \
        default: FA(scores_sk)(QS, NS, KROW, hd, scale, FA_F32, OUTS, AT); break;                              \
    }

FA_TARGET static void FA(scores)(const float* const* qs, int ns, const char* const* krow, int hd, float scale, int kind, float* const* outs) {
    if (ns == 4) {
        for (int k = 0; k < FA_KC; k += W / 4) FA_SC_KIND(qs, 4, krow + k, outs, k)
        return;
    }
    for (int s = 0; s < ns; s++) {
        for (int k = 0; k < FA_KC; k += W) FA_SC_KIND(qs + s, 1, krow + k, outs + s, k)
    }
}
#undef FA_SC_KIND

/*
 * acc_s += e_s[j] · V_j for j in [j0, j1), for `np` = 1 or 4 slots (row, head) of one KV head: V_j = vrow[j], the
 * head's part of the stored value row; acc_s = accs[s] (hdp floats). One FMA per element per key, in key order.
 */
FA_TARGET static inline __attribute__((always_inline)) void FA(pv_seg)(float* const* accs, const float* const* es, const int np,
        const char* const* vrow, int j0, int j1, int d0, const int nv, int tail, const int kind) {
    V acc[4][4];
#pragma GCC unroll 4
    for (int s = 0; s < np; s++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[s][v] = VLOAD(accs[s] + d0 + v * W);
    for (int j = j0; j < j1; j++) {
        V x[4];
        const char* row = vrow[j];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) x[v] = v == nv - 1 ? FA_LDM(row, d0 + v * W, tail, kind) : FA_LD(row, d0 + v * W, kind);
#pragma GCC unroll 4
        for (int s = 0; s < np; s++) {
            V e = VSET1(es[s][j]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) acc[s][v] = VFMA(x[v], e, acc[s][v]);
        }
    }
#pragma GCC unroll 4
    for (int s = 0; s < np; s++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) VSTORE(accs[s] + d0 + v * W, acc[s][v]);
}

#define FA_PV_NV(NP, KIND)                                                                 \
    switch (nv) {                                                                          \
        case 4: FA(pv_seg)(accs, es, NP, vrow, j0, j1, d0, 4, tail, KIND); break;          \
        case 3: FA(pv_seg)(accs, es, NP, vrow, j0, j1, d0, 3, tail, KIND); break;          \
        case 2: FA(pv_seg)(accs, es, NP, vrow, j0, j1, d0, 2, tail, KIND); break;          \
        default: FA(pv_seg)(accs, es, NP, vrow, j0, j1, d0, 1, tail, KIND); break;         \
    }
/* a quantised head is whole blocks of 32, so a segment is 4 vectors, or (W = 16, a last 32 elements) 2 */
#define FA_PV_QNV(NP, KIND)                                                                \
    if (nv == 4) FA(pv_seg)(accs, es, NP, vrow, j0, j1, d0, 4, tail, KIND);               \
    else FA(pv_seg)(accs, es, NP, vrow, j0, j1, d0, 2, tail, KIND);
#define FA_PV_KIND(NP)                                                                     \
    switch (kind) {                                                                        \
        case FA_F16: { FA_PV_NV(NP, FA_F16) } break;                                       \
        case FA_Q8_0: { FA_PV_QNV(NP, FA_Q8_0) } break;                                    \
        case FA_Q4_0: { FA_PV_QNV(NP, FA_Q4_0) } break;                                    \
        default: { FA_PV_NV(NP, FA_F32) } break;                                           \
    }

FA_TARGET static void FA(pv)(float* const* accs, const float* const* es, int np, const char* const* vrow, int j0, int j1, int hd,
                             int kind) {
    if (np != 4 && np != 1) {
        for (int s = 0; s < np; s++) FA(pv)(accs + s, es + s, 1, vrow, j0, j1, hd, kind);
        return;
    }
    for (int d0 = 0; d0 < hd; d0 += 4 * W) {
        int left = hd - d0, nv = left >= 4 * W ? 4 : (left + W - 1) / W, tail = left - (nv - 1) * W;
        if (tail > W) tail = W;
        if (np == 4) {
            FA_PV_KIND(4)
        } else {
            FA_PV_KIND(1)
        }
    }
}
#undef FA_PV_KIND
#undef FA_PV_QNV
#undef FA_PV_NV

/* Scores of one (row, head) over a block → in place exp(score − max) for i < n; the block's max and Σ exp. */
FA_TARGET static void FA(softmax)(float* sc, int n, float* max_out, float* sum_out) {
    V m = VSET1(-INFINITY);
    int i = 0;
    for (; i + W <= n; i += W) m = VMAX(m, VLOAD(sc + i));
    if (i < n) m = VMAX(m, VKEEPMAX(VLOAD(sc + i), n - i));
    float mx = VHMAX(m);
    V vm = VSET1(mx), sum = VZERO();
    for (i = 0; i + W <= n; i += W) {
        V e = VEXP(VSUB(VLOAD(sc + i), vm));
        VSTORE(sc + i, e);
        sum = VADD(sum, e);
    }
    if (i < n) {
        V e = VKEEP(VEXP(VSUB(VLOAD(sc + i), vm)), n - i);
        VSTORE(sc + i, e);
        sum = VADD(sum, e);
    }
    *max_out = mx;
    *sum_out = VHSUM(sum);
}

/* Row pointers of positions [p, p + kn) of one kind into rowp[0 … FA_KC) (past kn: row p's again). */
static inline void FA(rows)(const fa_args* a, const int64_t* pages, int p, int kn, const char** rowp) {
    for (int j = 0; j < FA_KC; j++) rowp[j] = fa_row(a, pages, p + (j < kn ? j : 0));
}

/*
 * The softmax partial of block b for the call's rows, row r's record at prow[r] (fa_row_floats: seen, max[heads],
 * sum[heads], acc[heads][hdp]).
 */
FA_TARGET static void FA(block)(const fa_args* a, int b, float* const* prow, float* scratch) {
    const int heads = a->heads, hd = a->hd, hdp = a->hdp, group = a->group, count = a->count;
    const int p0 = b * FA_KEY_BLOCK;
    int n[FA_MAX_ROWS], last = 0;
    for (int r = 0; r < count; r++) {
        int v = a->lengths[r] - p0;
        if (v > FA_KEY_BLOCK) v = FA_KEY_BLOCK;
        if (v < 0) v = 0;
        n[r] = v;
        if (v > last) last = v;
        float* rec = prow[r];
        rec[0] = v > 0 ? 1.0f : 0.0f;
        if (v > 0) memset(rec + 1 + 2 * heads, 0, sizeof(float) * (size_t)heads * hdp);
    }
    if (last == 0) return;
    float* sc = scratch;                                        /* [count][heads][KEY_BLOCK] */
    const int kind = a->kind;
    const int64_t head_bytes = a->head_bytes;                   /* one KV head's part of a stored row */
    const char* rowp[FA_KC];
    const char* krow[FA_KC];
    /* scores, FA_KC keys at a time: each K row read once for every row and head, 4 slots of a KV head per K load */
    for (int c0 = 0; c0 < last; c0 += FA_KC) {
        int kn = last - c0 < FA_KC ? last - c0 : FA_KC;
        FA(rows)(a, a->kpages, p0 + c0, kn, rowp);
        for (int g = 0; g < a->kvh; g++) {
            /* the same rows' V, a whole phase ahead of its use, spread over the KV heads' work */
            int pf0 = g * kn / a->kvh, pf1 = (g + 1) * kn / a->kvh;
            if (pf1 > pf0) fa_prefetch(a, a->vpages, p0 + c0 + pf0, pf1 - pf0);
            for (int j = 0; j < FA_KC; j++) krow[j] = rowp[j] + (int64_t)g * head_bytes;
            const float* qs[4];
            float* outs[4];
            int ns = 0;
            for (int r = 0; r < count; r++) {
                if (n[r] <= c0) continue;
                const float* qr = a->q + (int64_t)a->rows[r] * heads * hd;
                for (int h = g * group; h < (g + 1) * group; h++) {
                    qs[ns] = qr + (int64_t)h * hd;
                    outs[ns] = sc + ((int64_t)r * heads + h) * FA_KEY_BLOCK + c0;
                    if (++ns == 4) {
                        FA(scores)(qs, 4, krow, hd, a->scale, kind, outs);
                        ns = 0;
                    }
                }
            }
            if (ns > 0) FA(scores)(qs, ns, krow, hd, a->scale, kind, outs);
        }
    }
    for (int r = 0; r < count; r++) {
        if (n[r] == 0) continue;
        float* rec = prow[r];
        for (int h = 0; h < heads; h++) {
            FA(softmax)(sc + ((int64_t)r * heads + h) * FA_KEY_BLOCK, n[r], rec + 1 + h, rec + 1 + heads + h);
        }
    }
    /* Σ e·V, FA_KC keys at a time: each V row read once; up to 4 (row, head) slots of a KV head share its loads */
    const char* vrow[FA_KC];
    for (int c0 = 0; c0 < last; c0 += FA_KC) {
        int kn = last - c0 < FA_KC ? last - c0 : FA_KC;
        FA(rows)(a, a->vpages, p0 + c0, kn, rowp);
        int pfn = 0;
        if (b + 1 < a->next_block_end) {   /* the next block's K rows, a whole phase ahead */
            int left = a->max_length - (p0 + FA_KEY_BLOCK + c0);
            pfn = left <= 0 ? 0 : left < FA_KC ? left : FA_KC;
        }
        for (int g = 0; g < a->kvh; g++) {
            int pf0 = g * pfn / a->kvh, pf1 = (g + 1) * pfn / a->kvh;
            if (pf1 > pf0) fa_prefetch(a, a->kpages, p0 + FA_KEY_BLOCK + c0 + pf0, pf1 - pf0);
            for (int j = 0; j < FA_KC; j++) vrow[j] = rowp[j] + (int64_t)g * head_bytes;
            float* accs[4];
            const float* es[4];
            int ends[4], np = 0;
            for (int r = 0; r < count; r++) {
                if (n[r] <= c0) continue;
                int end = n[r] - c0 < kn ? n[r] - c0 : kn;
                for (int h = g * group; h < (g + 1) * group; h++) {
                    accs[np] = prow[r] + 1 + 2 * heads + (int64_t)h * hdp;
                    es[np] = sc + ((int64_t)r * heads + h) * FA_KEY_BLOCK + c0;
                    ends[np] = end;
                    if (++np == 4) {
                        int common = ends[0];
                        for (int s = 1; s < 4; s++) if (ends[s] < common) common = ends[s];
                        FA(pv)(accs, es, 4, vrow, 0, common, hd, kind);
                        for (int s = 0; s < 4; s++) if (ends[s] > common) FA(pv)(accs + s, es + s, 1, vrow, common, ends[s], hd, kind);
                        np = 0;
                    }
                }
            }
            for (int s = 0; s < np; s++) FA(pv)(accs + s, es + s, 1, vrow, 0, ends[s], hd, kind);
        }
    }
}

/* The online-softmax merge of block partial b into the running partial run, row by row (a row's first block copied). */
FA_TARGET static void FA(fold)(float* run, const float* blk, int heads, int hdp) {
    if (blk[0] == 0.0f) return;
    int floats = fa_row_floats(heads, hdp);
    if (run[0] == 0.0f) {
        memcpy(run, blk, sizeof(float) * (size_t)floats);
        return;
    }
    for (int h = 0; h < heads; h++) {
        float rm = run[1 + h], bm = blk[1 + h];
        float m = rm > bm ? rm : bm;
        float alpha = fa_exp1(rm - m), beta = fa_exp1(bm - m);
        run[1 + h] = m;
        run[1 + heads + h] = run[1 + heads + h] * alpha + blk[1 + heads + h] * beta;
        float* acc = run + 1 + 2 * heads + (int64_t)h * hdp;
        const float* bacc = blk + 1 + 2 * heads + (int64_t)h * hdp;
        V va = VSET1(alpha), vb = VSET1(beta);
        for (int i = 0; i < hdp; i += W) VSTORE(acc + i, VADD(VMUL(VLOAD(acc + i), va), VMUL(VLOAD(bacc + i), vb)));
    }
}

/* out row (heads × hd floats) = acc / sum for every head. */
FA_TARGET static void FA(finish)(const float* run, int heads, int hd, int hdp, float* out) {
    for (int h = 0; h < heads; h++) {
        float inv = 1.0f / run[1 + heads + h];
        const float* acc = run + 1 + 2 * heads + (int64_t)h * hdp;
        for (int i = 0; i < hd; i++) out[(int64_t)h * hd + i] = acc[i] * inv;
    }
}

FP_EXPORT FA_TARGET void FA(fp_attn)(const float* q, const int32_t* rows, const int32_t* lengths, int32_t count,
        const int64_t* kpages, const int64_t* vpages, int32_t page_tokens, int32_t kind, int32_t heads, int32_t kv_heads,
        int32_t head_dim, float scale, int32_t b0, int32_t b1, float* partials, const int32_t* part_off,
        int32_t block_stride, float* out, float* scratch) {
    fa_args a;
    fa_init(&a, q, rows, lengths, count, kpages, vpages, page_tokens, kind, heads, kv_heads, head_dim, scale, b1);
    int rf = fa_row_floats(heads, a.hdp);
    float* prow[FA_MAX_ROWS];
    if (partials != NULL) {
        for (int b = b0; b < b1; b++) {
            for (int r = 0; r < count; r++) prow[r] = partials + part_off[r] + (int64_t)(b - b0) * block_stride;
            FA(block)(&a, b, prow, scratch);
        }
        return;
    }
    float* run = scratch;
    float* blk = run + (int64_t)count * rf;
    float* work = blk + (int64_t)count * rf;
    for (int r = 0; r < count; r++) {
        run[(int64_t)r * rf] = 0.0f;
        prow[r] = blk + (int64_t)r * rf;
    }
    for (int b = b0; b < b1; b++) {
        FA(block)(&a, b, prow, work);
        for (int r = 0; r < count; r++) FA(fold)(run + (int64_t)r * rf, prow[r], heads, a.hdp);
    }
    for (int r = 0; r < count; r++) FA(finish)(run + (int64_t)r * rf, heads, head_dim, a.hdp, out + (int64_t)rows[r] * heads * head_dim);
}

FP_EXPORT FA_TARGET void FA(fp_attn_fold)(const float* partials, int32_t blocks, int32_t stride, int32_t heads,
        int32_t head_dim, float* out, float* scratch) {
    int hdp = fa_pad(head_dim);
    scratch[0] = 0.0f;
    for (int b = 0; b < blocks; b++) FA(fold)(scratch, partials + (int64_t)b * stride, heads, hdp);
    FA(finish)(scratch, heads, head_dim, hdp, out);
}

#undef FA_CAT2
#undef FA_CAT
#undef FA

/* this variant's vocabulary ends here: the next variant defines its own */
#undef FA_SUFFIX
#undef FA_TARGET
#undef W
#undef V
#undef VZERO
#undef VSET1
#undef VLOAD
#undef VLOADM
#undef VSTORE
#undef VLOADH
#undef VLOADHM
#undef VLOADQ8
#undef VLOADQ4
#undef SHALF
#undef VADD
#undef VSUB
#undef VMUL
#undef VMAX
#undef VFMA
#undef VEXP
#undef VKEEP
#undef VKEEPMAX
#undef VHSUM
#undef VHMAX
#undef REDUCE
