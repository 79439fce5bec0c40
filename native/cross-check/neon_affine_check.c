/* NEON against portable C for the MLX affine kernels (forkpoint_affine.c) on random data, and a slice of rows / one token
 * against the whole, bit for bit; with unit scales and integer biases the two must be the same bits. Built and run by
 * check-neon.sh (aarch64 cross gcc, qemu-aarch64): exits non-zero on a difference. Written for this project. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
typedef void (*fn)(const uint8_t*, const uint8_t*, const uint8_t*, int32_t, int32_t, int32_t, int32_t, const int8_t*, const float*, const float*, int32_t, float*, int32_t);
void fp_affine4_rows_c(const uint8_t*, const uint8_t*, const uint8_t*, int32_t, int32_t, int32_t, int32_t, const int8_t*, const float*, const float*, int32_t, float*, int32_t);
void fp_affine8_rows_c(const uint8_t*, const uint8_t*, const uint8_t*, int32_t, int32_t, int32_t, int32_t, const int8_t*, const float*, const float*, int32_t, float*, int32_t);
void fp_affine4_rows_neon(const uint8_t*, const uint8_t*, const uint8_t*, int32_t, int32_t, int32_t, int32_t, const int8_t*, const float*, const float*, int32_t, float*, int32_t);
void fp_affine8_rows_neon(const uint8_t*, const uint8_t*, const uint8_t*, int32_t, int32_t, int32_t, int32_t, const int8_t*, const float*, const float*, int32_t, float*, int32_t);
static uint16_t f2h(float f) { /* small normal dyadic values only */ uint32_t b; memcpy(&b,&f,4); uint32_t s=(b>>16)&0x8000; int e=((b>>23)&0xff)-127+15; uint32_t m=(b>>13)&0x3ff; return (uint16_t)(s|(e<<10)|m); }
int main(void) {
    srand(7);
    int fails = 0, checks = 0;
    for (int bits = 4; bits <= 8; bits += 4) for (int gs = 0; gs <= 2; gs++) for (int kind = 0; kind <= 2; kind++) for (int unit = 0; unit <= 1; unit++) {
        int rows = 19, blocks = 7 << gs, groups = blocks >> gs, n = 5;
        int rowBytes = blocks * (bits == 4 ? 16 : 32), vb = kind == 0 ? 4 : 2;
        uint8_t* w = malloc(rows * rowBytes); uint8_t* sc = malloc(rows * groups * vb); uint8_t* bi = malloc(rows * groups * vb);
        for (int i = 0; i < rows * rowBytes; i++) w[i] = rand() & 0xff;
        for (int g = 0; g < rows * groups; g++) {
            float s = unit ? 1.0f : (1 + rand() % 127) / 4096.0f, b = unit ? -(float)(rand() % 8) : -(rand() % 256) / 64.0f;
            if (kind == 0) { memcpy(sc + 4*g, &s, 4); memcpy(bi + 4*g, &b, 4); }
            else if (kind == 1) { uint16_t hs = f2h(s), hb = b == 0 ? 0 : f2h(b); memcpy(sc + 2*g, &hs, 2); memcpy(bi + 2*g, &hb, 2); }
            else { uint32_t u; memcpy(&u, &s, 4); uint16_t hs = u >> 16; memcpy(&u, &b, 4); uint16_t hb = u >> 16; memcpy(sc + 2*g, &hs, 2); memcpy(bi + 2*g, &hb, 2); }
        }
        int8_t* xq = malloc(n * blocks * 32); float* xd = malloc(n * blocks * 4); float* xg = malloc(n * groups * 4);
        for (int i = 0; i < n * blocks * 32; i++) xq[i] = (int8_t)(rand() % 255 - 127);
        for (int i = 0; i < n * blocks; i++) xd[i] = unit ? 1.0f : (1 + rand() % 100) / 1000.0f;
        for (int t = 0; t < n; t++) for (int g = 0; g < groups; g++) {
            float s = 0; for (int k = 0; k < (1 << gs); k++) { int b = t * blocks + g * (1 << gs) + k, sum = 0; for (int j = 0; j < 32; j++) sum += xq[b*32+j]; s += xd[b] * sum; }
            xg[t * groups + g] = s;
        }
        float* a = calloc(n * rows, 4); float* c = calloc(n * rows, 4);
        if (bits == 4) { fp_affine4_rows_c(w, sc, bi, kind, gs, blocks, rows, xq, xd, xg, n, a, rows); fp_affine4_rows_neon(w, sc, bi, kind, gs, blocks, rows, xq, xd, xg, n, c, rows); }
        else { fp_affine8_rows_c(w, sc, bi, kind, gs, blocks, rows, xq, xd, xg, n, a, rows); fp_affine8_rows_neon(w, sc, bi, kind, gs, blocks, rows, xq, xd, xg, n, c, rows); }
        /* a slice of rows and a single token must equal the whole, bit for bit */
        float* one = calloc(rows, 4);
        if (bits == 4) fp_affine4_rows_neon(w + 3 * rowBytes, sc + 3 * groups * vb, bi + 3 * groups * vb, kind, gs, blocks, rows - 3, xq + 2 * blocks * 32, xd + 2 * blocks, xg + 2 * groups, 1, one, rows);
        else fp_affine8_rows_neon(w + 3 * rowBytes, sc + 3 * groups * vb, bi + 3 * groups * vb, kind, gs, blocks, rows - 3, xq + 2 * blocks * 32, xd + 2 * blocks, xg + 2 * groups, 1, one, rows);
        for (int r = 0; r < rows - 3; r++) { checks++; if (memcmp(&one[r], &c[2 * rows + 3 + r], 4) != 0) { fails++; printf("slice mismatch bits %d gs %d kind %d row %d\n", bits, gs, kind, r); } }
        for (int i = 0; i < n * rows; i++) {
            checks++;
            double tol = unit ? 0 : 1e-5 * fabs(a[i]) + 1e-4;
            if (fabs((double)a[i] - c[i]) > tol) { fails++; if (fails < 10) printf("bits %d gs %d kind %d unit %d i %d: c %.9g neon %.9g\n", bits, gs, kind, unit, i, a[i], c[i]); }
        }
        free(w); free(sc); free(bi); free(xq); free(xd); free(xg); free(a); free(c); free(one);
    }
    printf("%d checks, %d failures\n", checks, fails);
    return fails != 0;
}
