/* NEON against portable C for the float kernels (forkpoint_float.c: F32, F16, BF16 weights, float activations) on
 * random data and ragged shapes, against a double reference within (⌈cols/4⌉ + 17)·2^-24·Σ|w·x|; with small integer
 * values the two must be the same bits; one token and a slice of rows must equal the whole, bit for bit. Built and
 * run by check-neon.sh (aarch64 cross gcc, qemu-aarch64): exits non-zero on a difference. Written for this project. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
void fp_float_rows_c(const uint8_t*, int32_t, int32_t, int32_t, const float*, int32_t, float*, int32_t);
void fp_float_rows_neon(const uint8_t*, int32_t, int32_t, int32_t, const float*, int32_t, float*, int32_t);

/* The value a stored weight stands for, and the storing of a float (F16 for small dyadic values and zero only). */
static float stored(const uint8_t* w, int kind, int i) {
    uint32_t b = 0; uint16_t h; float f;
    if (kind == 0) { memcpy(&f, w + 4 * i, 4); return f; }
    memcpy(&h, w + 2 * i, 2);
    if (kind == 2) { b = (uint32_t)h << 16; memcpy(&f, &b, 4); return f; }
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    f = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -f : f;
}

static void store(uint8_t* w, int kind, int i, float v) {
    uint32_t b; memcpy(&b, &v, 4);
    if (kind == 0) { memcpy(w + 4 * i, &v, 4); return; }
    uint16_t h;
    if (kind == 2) h = (uint16_t)(b >> 16);
    else if (v == 0) h = 0;
    else { int e = ((b >> 23) & 0xff) - 127 + 15; h = (uint16_t)(((b >> 16) & 0x8000) | (e << 10) | ((b >> 13) & 0x3ff)); }
    memcpy(w + 2 * i, &h, 2);
}

int main(void) {
    srand(11);
    int fails = 0, checks = 0;
    const int colsList[] = {1, 3, 4, 5, 17, 64, 130, 259};
    for (int kind = 0; kind <= 2; kind++) for (int s = 0; s < 8; s++) for (int integer = 0; integer <= 1; integer++) {
        int rows = 1 + (s * 7 + kind) % 13, cols = colsList[s], n = 1 + (s * 3) % 9, vb = kind == 0 ? 4 : 2;
        uint8_t* w = malloc((size_t)rows * cols * vb);
        float* x = malloc(sizeof(float) * n * cols);
        for (int i = 0; i < rows * cols; i++) {
            /* F16 gets values with exponents inside its normal range: integers, or k/64 for k in ±[1, 255] */
            float v = integer ? (float)(rand() % 17 - 8) : (float)(rand() % 511 - 255) / 64.0f;
            store(w, kind, i, v);
        }
        for (int i = 0; i < n * cols; i++) x[i] = integer ? (float)(rand() % 17 - 8) : (float)rand() / RAND_MAX * 2 - 1;
        float* a = calloc(n * rows, 4); float* c = calloc(n * rows, 4); float* one = calloc(rows, 4);
        fp_float_rows_c(w, kind, cols, rows, x, n, a, rows);
        fp_float_rows_neon(w, kind, cols, rows, x, n, c, rows);
        for (int t = 0; t < n; t++) for (int r = 0; r < rows; r++) {
            double ref = 0, g = 0;
            for (int k = 0; k < cols; k++) { double p = (double)stored(w, kind, r * cols + k) * x[t * cols + k]; ref += p; g += fabs(p); }
            double bound = ((cols + 3) / 4 + 17) * ldexp(1, -24) * g;
            float pc = a[t * rows + r], pn = c[t * rows + r];
            checks++;
            int bad = integer ? memcmp(&pc, &pn, 4) != 0 || pn != (float)ref : fabs(pn - ref) > bound || fabs(pc - ref) > bound;
            if (bad) { fails++; if (fails < 10) printf("kind %d cols %d integer %d token %d row %d: c %.9g neon %.9g ref %.9g\n", kind, cols, integer, t, r, pc, pn, ref); }
        }
        /* the last token alone over rows [rows/2, rows) must equal those results of the whole */
        int first = rows / 2, t = n - 1;
        fp_float_rows_neon(w + (size_t)first * cols * vb, kind, cols, rows - first, x + (size_t)t * cols, 1, one, rows);
        for (int r = 0; r < rows - first; r++) {
            checks++;
            if (memcmp(&one[r], &c[t * rows + first + r], 4) != 0) { fails++; printf("slice mismatch kind %d cols %d row %d\n", kind, cols, r); }
        }
        free(w); free(x); free(a); free(c); free(one);
    }
    printf("%d checks, %d failures\n", checks, fails);
    return fails != 0;
}
