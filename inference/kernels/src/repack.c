/* B, the GGUF's rows of blocks, decoded once at kernel creation into a layout's column tiles
 * (kernels.h: what the tile kernels read). */
#include <string.h>

#include "kernels.h"

/* Four 4-bit codes as the low nibbles of a little-endian word's bytes. */
static uint32_t nibbles(const int8_t q[4]) {
    uint32_t word = 0;
    for (int i = 0; i < 4; i++) word |= (uint32_t)(q[i] & 15) << (8 * i);
    return word;
}

/* B's rows, decoded block by block into the layout's tiles (kernels.h). */
void repack(const struct format *f, const struct layout *l, const uint8_t *B, size_t row_bytes, size_t N, size_t nb,
            int fast, uint8_t *packed) {
    size_t tiles = (N + TILE - 1) / TILE;
    memset(packed, 0, tiles * nb * l->block_bytes);
    for (size_t t = 0; t < tiles; t++)
        for (size_t b = 0; b < nb; b++) {
            uint8_t *blk = packed + (t * nb + b) * l->block_bytes;
            float *d = (float *)blk;
            uint16_t *d16 = (uint16_t *)blk;
            uint32_t *code = (uint32_t *)(blk + (l->bits == 4 ? 2 * TILE * (l->half ? 2 : 4) : l->groups * TILE * 4));
            for (size_t j = 0; j < TILE && t * TILE + j < N; j++) {
                int8_t q[QK];
                float scale[2] = {0, 0}, m = 0;
                f->decode(B + (t * TILE + j) * row_bytes, b, q, scale, &m);
                if (l->bits == 4) {
                    if (l->half) {
                        d16[j] = float_to_half(scale[0]);
                        d16[TILE + j] = float_to_half(m);
                    } else {
                        d[j] = scale[0];
                        d[TILE + j] = m;
                    }
                    for (int w = 0; w < 4; w++) /* byte i: q[4w + i] low, q[16 + 4w + i] high */
                        code[w * TILE + j] = nibbles(q + 4 * w) | nibbles(q + 16 + 4 * w) << 4;
                    continue;
                }
                for (int g = 0; g < l->groups; g++) d[g * TILE + j] = scale[g];
                if (fast) /* 4 consecutive k a lane, for the int8 dot products */
                    for (int w = 0; w < 8; w++) memcpy(&code[w * TILE + j], q + 4 * w, 4);
                else /* k-major: 16 columns' codes of one k side by side */
                    for (int kk = 0; kk < QK; kk++) ((int8_t *)code)[kk * TILE + j] = q[kk];
            }
        }
}
