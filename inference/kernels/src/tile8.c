/* Tile kernels of the 8-bit layout (Q8_0, Q5_0, Q6_K): w = d * q, q signed, d per group of
 * 32 / groups k (kernels.h). Each kernel is written once for `groups` and instantiated for 1 and 2. */
#include <string.h>

#include "kernels.h"

#define INLINE static inline __attribute__((always_inline))
#define BLOCK8(groups) ((groups) * TILE * 4 + 8 * TILE * 4) /* d[groups][16], code[8][16] */

INLINE void exact_plain(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy,
                        size_t cols, const int groups) {
    const int words = 8 / groups; /* words of codes per group */
    for (size_t r = 0; r < rows; r++) {
        const float *x = a->x + (row0 + r) * a->K;
        float acc[TILE] = {0};
        for (size_t b = 0; b < a->nb; b++) {
            const uint8_t *blk = tile + b * BLOCK8(groups);
            const float *d = (const float *)blk;
            const uint32_t *code = (const uint32_t *)(blk + groups * TILE * 4);
            const float *xb = x + b * QK;
            for (int g = 0; g < groups; g++) {
                float dot[TILE] = {0};
                for (int w = g * words; w < (g + 1) * words; w++)
                    for (int i = 0; i < 4; i++) {
                        float xv = xb[4 * w + i];
                        for (int j = 0; j < TILE; j++) dot[j] += xv * (float)(int8_t)(code[w * TILE + j] >> (8 * i));
                    }
                for (int j = 0; j < TILE; j++) acc[j] += d[g * TILE + j] * dot[j];
            }
        }
        memcpy(y + r * ldy, acc, cols * sizeof(float));
    }
}

INLINE void fast_plain(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy,
                       size_t cols, const int groups) {
    const int words = 8 / groups;
    for (size_t r = 0; r < rows; r++) {
        const int8_t *xq = a->xq + (row0 + r) * a->K;
        const float *dx = a->dx + (row0 + r) * a->nb;
        float acc[TILE] = {0};
        for (size_t b = 0; b < a->nb; b++) {
            const uint8_t *blk = tile + b * BLOCK8(groups);
            const float *d = (const float *)blk;
            const uint32_t *code = (const uint32_t *)(blk + groups * TILE * 4);
            const int8_t *qb = xq + b * QK;
            for (int g = 0; g < groups; g++)
                for (int j = 0; j < TILE; j++) {
                    int32_t dot = 0;
                    for (int w = g * words; w < (g + 1) * words; w++)
                        for (int i = 0; i < 4; i++) dot += (int8_t)(code[w * TILE + j] >> (8 * i)) * qb[4 * w + i];
                    acc[j] += d[g * TILE + j] * dx[b] * (float)dot;
                }
        }
        memcpy(y + r * ldy, acc, cols * sizeof(float));
    }
}

#define INSTANCES(name, groups)                                                                                   \
    static void name##_g##groups(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, \
                                 size_t ldy, size_t cols) {                                                     \
        name(tile, a, row0, rows, y, ldy, cols, groups);                                                        \
    }
INSTANCES(exact_plain, 1)
INSTANCES(exact_plain, 2)
INSTANCES(fast_plain, 1)
INSTANCES(fast_plain, 2)

const struct layout LAYOUT8_G1 = {
    .bits = 8,
    .groups = 1,
    .block_bytes = BLOCK8(1),
    .exact = {exact_plain_g1, exact_plain_g1, exact_plain_g1, exact_plain_g1},
    .fast = {fast_plain_g1, fast_plain_g1, fast_plain_g1, fast_plain_g1},
};

const struct layout LAYOUT8_G2 = {
    .bits = 8,
    .groups = 2,
    .block_bytes = BLOCK8(2),
    .exact = {exact_plain_g2, exact_plain_g2, exact_plain_g2, exact_plain_g2},
    .fast = {fast_plain_g2, fast_plain_g2, fast_plain_g2, fast_plain_g2},
};
