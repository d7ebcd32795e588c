/* Tile kernels of the 8-bit layout (Q8_0, Q5_0, Q6_K): w = d * q, q signed, d per group of
 * 32 / groups k (kernels.h). Each kernel is written once for `groups` and instantiated for 1 and 2. */
#include <string.h>

#include "kernels.h"
#include "simd.h"

#define BLOCK8(groups) ((groups) * TILE * 4 + 8 * TILE * 4) /* d[groups][16], code[8][16] */

INLINE void exact_plain(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy,
                        size_t cols, const int groups) {
    for (size_t r = 0; r < rows; r++) {
        const float *x = a->x + (row0 + r) * a->K;
        float acc[TILE] = {0};
        for (size_t b = 0; b < a->nb; b++) {
            const uint8_t *blk = tile + b * BLOCK8(groups);
            prefetch_ahead(blk, BLOCK8(groups));
            const float *d = (const float *)blk;
            const int8_t *code = (const int8_t *)(blk + groups * TILE * 4); /* k-major */
            const float *xb = x + b * QK;
            for (int g = 0; g < groups; g++) {
                float dot[TILE] = {0};
                for (int k = g * QK / groups; k < (g + 1) * QK / groups; k++)
                    for (int j = 0; j < TILE; j++) dot[j] += xb[k] * (float)code[k * TILE + j];
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
            prefetch_ahead(blk, BLOCK8(groups));
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

PLAIN_INSTANCE(exact_plain, _g1, 1)
PLAIN_INSTANCE(exact_plain, _g2, 2)
PLAIN_INSTANCE(fast_plain, _g1, 1)
PLAIN_INSTANCE(fast_plain, _g2, 2)

#ifdef HAVE_X86_SIMD
/* The int8 sum of a group's activations: Q6_K's groups of 16 have their own, a block's is both. */
INLINE int32_t group_sum(const struct acts *a, size_t row, size_t b, int g, int groups) {
    const int32_t *s = a->isum + row * a->nb * 2 + 2 * b;
    return groups == 2 ? s[g] : s[0] + s[1];
}

/* AVX-512, one lane per column. Exact: the 16 columns' codes of one k sign-extended, to float,
 * times the broadcast activation. */
TARGET_AVX512 INLINE void exact_avx512(const uint8_t *tile, const struct acts *a, size_t row0, float *y, size_t ldy,
                                       size_t cols, const int R, const int groups) {
    const float *x[8];
    __m512 acc[8];
    for (int r = 0; r < R; r++) {
        x[r] = a->x + (row0 + r) * a->K;
        acc[r] = _mm512_setzero_ps();
    }
    for (size_t b = 0; b < a->nb; b++) {
        const uint8_t *blk = tile + b * BLOCK8(groups), *code = blk + 64 * groups;
        prefetch_ahead(blk, BLOCK8(groups));
        for (int g = 0; g < groups; g++) {
            __m512 dot[8][CHAINS]; /* per row, its k spread over CHAINS accumulators */
            for (int r = 0; r < R; r++) dot[r][0] = dot[r][1] = _mm512_setzero_ps();
            UNROLL for (int k = g * QK / groups; k < (g + 1) * QK / groups; k++) {
                __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(code + TILE * k))));
                for (int r = 0; r < R; r++)
                    dot[r][k % CHAINS] = _mm512_fmadd_ps(_mm512_set1_ps(x[r][b * QK + k]), v, dot[r][k % CHAINS]);
            }
            __m512 d = _mm512_load_ps(blk + 64 * g);
            for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(d, _mm512_add_ps(dot[r][0], dot[r][1]), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) store512(y + r * ldy, acc[r], cols);
}

/* Fast, VNNI: the codes as u8 (q + 128, one xor), vpdpbusd with the s8 activations, and
 * 128 * (sum of xq) taken off in int32; without VNNI: |q| times the activations carrying q's sign
 * (vpmaddubsw: 2 * 128 * 127 fits in int16), no correction. */
#define FAST_AVX512(name, target, vnni)                                                                              \
    target INLINE void name(const uint8_t *tile, const struct acts *a, size_t row0, float *y, size_t ldy, size_t cols, \
                            const int R, const int groups) {                                                           \
        const int words = 8 / groups;                                                                                  \
        const __m512i flip = _mm512_set1_epi8(-128), ones = _mm512_set1_epi16(1), zero = _mm512_setzero_si512();       \
        const int8_t *xq[8];                                                                                           \
        const float *dx[8];                                                                                            \
        __m512 acc[8];                                                                                                 \
        for (int r = 0; r < R; r++) {                                                                                  \
            xq[r] = a->xq + (row0 + r) * a->K;                                                                         \
            dx[r] = a->dx + (row0 + r) * a->nb;                                                                        \
            acc[r] = _mm512_setzero_ps();                                                                              \
        }                                                                                                              \
        for (size_t b = 0; b < a->nb; b++) {                                                                           \
            const uint8_t *blk = tile + b * BLOCK8(groups);                                                            \
            prefetch_ahead(blk, BLOCK8(groups));                                                                       \
            for (int g = 0; g < groups; g++) {                                                                         \
                __m512i dot[8];                                                                                        \
                for (int r = 0; r < R; r++) dot[r] = _mm512_setzero_si512();                                           \
                UNROLL for (int w = g * words; w < (g + 1) * words; w++) {                                             \
                    __m512i c = _mm512_load_si512(blk + 64 * groups + 64 * w);                                         \
                    __m512i u = _mm512_xor_si512(c, flip), mag = _mm512_abs_epi8(c);                                   \
                    __mmask64 negative = _mm512_movepi8_mask(c);                                                       \
                    (void)u, (void)mag, (void)negative, (void)ones, (void)zero;                                        \
                    for (int r = 0; r < R; r++) {                                                                      \
                        __m512i xw = _mm512_set1_epi32(word_at(xq[r] + b * QK + 4 * w));                               \
                        if (vnni) {                                                                                    \
                            dot[r] = _mm512_dpbusd_epi32(dot[r], u, xw);                                               \
                        } else {                                                                                       \
                            __m512i signed_x = _mm512_mask_sub_epi8(xw, negative, zero, xw);                           \
                            __m512i p = _mm512_maddubs_epi16(mag, signed_x);                                           \
                            dot[r] = _mm512_add_epi32(dot[r], _mm512_madd_epi16(p, ones));                             \
                        }                                                                                              \
                    }                                                                                                  \
                }                                                                                                      \
                __m512 d = _mm512_load_ps(blk + 64 * g);                                                               \
                for (int r = 0; r < R; r++) {                                                                          \
                    if (vnni)                                                                                          \
                        dot[r] = _mm512_sub_epi32(dot[r], _mm512_set1_epi32(128 * group_sum(a, row0 + r, b, g, groups))); \
                    __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(dx[r][b]));                                         \
                    acc[r] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(dot[r]), acc[r]);                               \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
        for (int r = 0; r < R; r++) store512(y + r * ldy, acc[r], cols);                                               \
    }
FAST_AVX512(fast_avx512, TARGET_AVX512, 0)
FAST_AVX512(fast_vnni, TARGET_VNNI, 1)

/* AVX2: a tile is two registers of 8 lanes (h = 0, 1). */
TARGET_AVX2 INLINE void exact_avx2(const uint8_t *tile, const struct acts *a, size_t row0, float *y, size_t ldy,
                                   size_t cols, const int R, const int groups) {
    const float *x[2];
    __m256 acc[2][2];
    for (int r = 0; r < R; r++) {
        x[r] = a->x + (row0 + r) * a->K;
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < a->nb; b++) {
        const uint8_t *blk = tile + b * BLOCK8(groups), *code = blk + 64 * groups;
        prefetch_ahead(blk, BLOCK8(groups));
        for (int g = 0; g < groups; g++) {
            __m256 dot[2][2];
            for (int r = 0; r < R; r++) dot[r][0] = dot[r][1] = _mm256_setzero_ps();
            UNROLL for (int k = g * QK / groups; k < (g + 1) * QK / groups; k++)
                for (int h = 0; h < 2; h++) {
                    __m128i q8 = _mm_loadl_epi64((const __m128i *)(code + TILE * k + 8 * h));
                    __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
                    for (int r = 0; r < R; r++) dot[r][h] = _mm256_fmadd_ps(_mm256_set1_ps(x[r][b * QK + k]), v, dot[r][h]);
                }
            for (int h = 0; h < 2; h++) {
                __m256 d = _mm256_load_ps((const float *)(blk + 64 * g) + 8 * h);
                for (int r = 0; r < R; r++) acc[r][h] = _mm256_fmadd_ps(d, dot[r][h], acc[r][h]);
            }
        }
    }
    for (int r = 0; r < R; r++) store256(y + r * ldy, acc[r][0], acc[r][1], cols);
}

TARGET_AVX2 INLINE void fast_avx2(const uint8_t *tile, const struct acts *a, size_t row0, float *y, size_t ldy,
                                  size_t cols, const int R, const int groups) {
    const int words = 8 / groups;
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t *xq[2];
    const float *dx[2];
    __m256 acc[2][2];
    for (int r = 0; r < R; r++) {
        xq[r] = a->xq + (row0 + r) * a->K;
        dx[r] = a->dx + (row0 + r) * a->nb;
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < a->nb; b++) {
        const uint8_t *blk = tile + b * BLOCK8(groups);
        prefetch_ahead(blk, BLOCK8(groups));
        for (int g = 0; g < groups; g++) {
            __m256i dot[2][2];
            for (int r = 0; r < R; r++) dot[r][0] = dot[r][1] = _mm256_setzero_si256();
            UNROLL for (int w = g * words; w < (g + 1) * words; w++)
                for (int h = 0; h < 2; h++) {
                    __m256i c = _mm256_load_si256((const __m256i *)(blk + 64 * groups + 64 * w + 32 * h));
                    __m256i mag = _mm256_abs_epi8(c);
                    for (int r = 0; r < R; r++) {
                        __m256i xw = _mm256_set1_epi32(word_at(xq[r] + b * QK + 4 * w));
                        __m256i p = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(xw, c));
                        dot[r][h] = _mm256_add_epi32(dot[r][h], _mm256_madd_epi16(p, ones));
                    }
                }
            for (int h = 0; h < 2; h++) {
                __m256 d = _mm256_load_ps((const float *)(blk + 64 * g) + 8 * h);
                for (int r = 0; r < R; r++) {
                    __m256 scale = _mm256_mul_ps(d, _mm256_set1_ps(dx[r][b]));
                    acc[r][h] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dot[r][h]), acc[r][h]);
                }
            }
        }
    }
    for (int r = 0; r < R; r++) store256(y + r * ldy, acc[r][0], acc[r][1], cols);
}

SIMD_INSTANCES(_g1, 1)
SIMD_INSTANCES(_g2, 2)
#endif

const struct layout LAYOUT8_G1 = {
    .bits = 8,
    .groups = 1,
    .block_bytes = BLOCK8(1),
    .exact = EXACT_KERNELS(_g1),
    .fast = FAST_KERNELS(_g1),
};

const struct layout LAYOUT8_G2 = {
    .bits = 8,
    .groups = 2,
    .block_bytes = BLOCK8(2),
    .exact = EXACT_KERNELS(_g2),
    .fast = FAST_KERNELS(_g2),
};
