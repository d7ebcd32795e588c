/* Tile kernels of the 4-bit layout (Q4_1, Q4_K): w = d * q + m, q in 0..15 (kernels.h). */
#include <string.h>

#include "kernels.h"

enum { BLOCK4 = 2 * TILE * 4 + 4 * TILE * 4 }; /* d[16], m[16], code[4][16]: 384 bytes */

/* The k of nibble s (0..7, low bits first) of a lane's word w. */
#define K_OF(w, s) (4 * (w) + (s) / 2 + 16 * ((s) & 1))

static void exact_plain(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy,
                        size_t cols) {
    for (size_t r = 0; r < rows; r++) {
        const float *x = a->x + (row0 + r) * a->K, *sums = a->sums + (row0 + r) * a->nb;
        float acc[TILE] = {0};
        for (size_t b = 0; b < a->nb; b++) {
            const uint8_t *blk = tile + b * BLOCK4;
            const float *d = (const float *)blk, *m = d + TILE;
            const uint32_t *code = (const uint32_t *)(blk + 2 * TILE * 4);
            const float *xb = x + b * QK;
            float dot[TILE] = {0};
            for (int w = 0; w < 4; w++)
                for (int s = 0; s < 8; s++) {
                    float xv = xb[K_OF(w, s)];
                    for (int j = 0; j < TILE; j++) dot[j] += xv * (float)((code[w * TILE + j] >> (4 * s)) & 15);
                }
            for (int j = 0; j < TILE; j++) acc[j] += d[j] * dot[j] + m[j] * sums[b];
        }
        memcpy(y + r * ldy, acc, cols * sizeof(float));
    }
}

static void fast_plain(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy,
                       size_t cols) {
    for (size_t r = 0; r < rows; r++) {
        const int8_t *xq = a->xq + (row0 + r) * a->K;
        const float *dx = a->dx + (row0 + r) * a->nb, *sums = a->sums + (row0 + r) * a->nb;
        float acc[TILE] = {0};
        for (size_t b = 0; b < a->nb; b++) {
            const uint8_t *blk = tile + b * BLOCK4;
            const float *d = (const float *)blk, *m = d + TILE;
            const uint32_t *code = (const uint32_t *)(blk + 2 * TILE * 4);
            const int8_t *qb = xq + b * QK;
            for (int j = 0; j < TILE; j++) {
                int32_t dot = 0;
                for (int w = 0; w < 4; w++) {
                    uint32_t c = code[w * TILE + j];
                    for (int i = 0; i < 4; i++)
                        dot += (int32_t)((c >> (8 * i)) & 15) * qb[4 * w + i] +
                               (int32_t)((c >> (8 * i + 4)) & 15) * qb[16 + 4 * w + i];
                }
                acc[j] += d[j] * dx[b] * (float)dot + m[j] * sums[b];
            }
        }
        memcpy(y + r * ldy, acc, cols * sizeof(float));
    }
}

const struct layout LAYOUT4 = {
    .bits = 4,
    .groups = 1,
    .block_bytes = BLOCK4,
    .exact = {exact_plain, exact_plain, exact_plain, exact_plain},
    .fast = {fast_plain, fast_plain, fast_plain, fast_plain},
};
