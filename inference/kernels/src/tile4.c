/* Tile kernels of the 4-bit layout (Q4_1, Q4_K): w = d * q + m, q in 0..15 (kernels.h). Each kernel
 * is written once for `half` (d and m stored as fp16, Q4_1's own, or as fp32) and instantiated for both. */
#include <string.h>

#include "kernels.h"
#include "simd.h"

#define BLOCK4(half) ((half) ? 320 : 384)      /* d[16], m[16] (fp16 or fp32), code[4][16] */
#define CODES4(half) ((half) ? 64 : 128)       /* where the codes start */

/* Scale i of a block: d[0..15], then m[0..15]. */
INLINE float scale4(const uint8_t *blk, int half, int i) {
    return half ? half_to_float(blk + 2 * i) : ((const float *)blk)[i];
}

/* The k of nibble s (0..7, low bits first) of a lane's word w. */
#define K_OF(w, s) (4 * (w) + (s) / 2 + 16 * ((s) & 1))

INLINE void exact_plain(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy,
                        size_t cols, const int half) {
    for (size_t r = 0; r < rows; r++) {
        const float *x = a->x + (row0 + r) * a->K, *sums = a->sums + (row0 + r) * a->nb;
        float acc[TILE] = {0};
        for (size_t b = 0; b < a->nb; b++) {
            const uint8_t *blk = tile + b * BLOCK4(half);
            prefetch_ahead(blk, BLOCK4(half));
            const uint32_t *code = (const uint32_t *)(blk + CODES4(half));
            const float *xb = x + b * QK;
            float dot[TILE] = {0};
            for (int w = 0; w < 4; w++)
                for (int s = 0; s < 8; s++) {
                    float xv = xb[K_OF(w, s)];
                    for (int j = 0; j < TILE; j++) dot[j] += xv * (float)((code[w * TILE + j] >> (4 * s)) & 15);
                }
            for (int j = 0; j < TILE; j++) acc[j] += scale4(blk, half, j) * dot[j] + scale4(blk, half, TILE + j) * sums[b];
        }
        memcpy(y + r * ldy, acc, cols * sizeof(float));
    }
}

INLINE void fast_plain(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy,
                       size_t cols, const int half) {
    for (size_t r = 0; r < rows; r++) {
        const int8_t *xq = a->xq + (row0 + r) * a->K;
        const float *dx = a->dx + (row0 + r) * a->nb, *sums = a->sums + (row0 + r) * a->nb;
        float acc[TILE] = {0};
        for (size_t b = 0; b < a->nb; b++) {
            const uint8_t *blk = tile + b * BLOCK4(half);
            prefetch_ahead(blk, BLOCK4(half));
            const uint32_t *code = (const uint32_t *)(blk + CODES4(half));
            const int8_t *qb = xq + b * QK;
            for (int j = 0; j < TILE; j++) {
                int32_t dot = 0;
                for (int w = 0; w < 4; w++) {
                    uint32_t c = code[w * TILE + j];
                    for (int i = 0; i < 4; i++)
                        dot += (int32_t)((c >> (8 * i)) & 15) * qb[4 * w + i] +
                               (int32_t)((c >> (8 * i + 4)) & 15) * qb[16 + 4 * w + i];
                }
                acc[j] += scale4(blk, half, j) * dx[b] * (float)dot + scale4(blk, half, TILE + j) * sums[b];
            }
        }
        memcpy(y + r * ldy, acc, cols * sizeof(float));
    }
}

#ifdef HAVE_X86_SIMD
/* 16 (or 8) scales from i: fp16 widened (F16C), or fp32 as they are. */
TARGET_AVX512 INLINE __m512 load16(const uint8_t *blk, int half, int i) {
    return half ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + 2 * i))) : _mm512_load_ps((const float *)blk + i);
}

TARGET_AVX2 INLINE __m256 load8(const uint8_t *blk, int half, int i) {
    return half ? _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(blk + 2 * i))) : _mm256_load_ps((const float *)blk + i);
}

/* AVX-512: one lane per column. Exact: a nibble shifted into the low 4 bits of a lane indexes a
 * table of 0.0 … 15.0 (vpermps reads only those bits), so float(q) costs a shift and a permute. */
TARGET_AVX512 INLINE void exact_avx512(const uint8_t *tile, const struct acts *a, size_t row0, float *y, size_t ldy,
                                       size_t cols, const int R, const int half) {
    const __m512 table = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const float *x[8], *sums[8];
    __m512 acc[8];
    for (int r = 0; r < R; r++) {
        x[r] = a->x + (row0 + r) * a->K;
        sums[r] = a->sums + (row0 + r) * a->nb;
        acc[r] = _mm512_setzero_ps();
    }
    for (size_t b = 0; b < a->nb; b++) {
        const uint8_t *blk = tile + b * BLOCK4(half);
        prefetch_ahead(blk, BLOCK4(half));
        __m512 dot[8][CHAINS]; /* per row, its k spread over CHAINS accumulators */
        for (int r = 0; r < R; r++) dot[r][0] = dot[r][1] = _mm512_setzero_ps();
        UNROLL for (int w = 0; w < 4; w++) {
            __m512i c = _mm512_load_si512(blk + CODES4(half) + 64 * w);
            UNROLL for (int s = 0; s < 8; s++) {
                __m512 v = _mm512_permutexvar_ps(_mm512_srli_epi32(c, 4 * s), table);
                for (int r = 0; r < R; r++)
                    dot[r][s % CHAINS] =
                        _mm512_fmadd_ps(_mm512_set1_ps(x[r][b * QK + K_OF(w, s)]), v, dot[r][s % CHAINS]);
            }
        }
        __m512 d = load16(blk, half, 0), m = load16(blk, half, TILE);
        for (int r = 0; r < R; r++) {
            dot[r][0] = _mm512_add_ps(dot[r][0], dot[r][1]);
            acc[r] = _mm512_fmadd_ps(d, dot[r][0], acc[r]);
            acc[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(sums[r][b]), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) store512(y + r * ldy, acc[r], cols);
}

/* Fast: the low and high nibbles of each word are bytes for k = 4w … 4w + 3 and 16 + 4w …, the
 * activations' own order; u8 weights times s8 activations summed in int32 per block, then
 * y += d * dx * dot + m * (dx * sum of xq). `vnni`: vpdpbusd, else vpmaddubsw + vpmaddwd (no
 * saturation: 2 * 15 * 127 fits in int16). */
#define FAST_AVX512(name, target, vnni)                                                                              \
    target INLINE void name(const uint8_t *tile, const struct acts *a, size_t row0, float *y, size_t ldy, size_t cols, \
                            const int R, const int half) {                                                             \
        const __m512i low = _mm512_set1_epi8(15), ones = _mm512_set1_epi16(1);                                         \
        const int8_t *xq[8];                                                                                           \
        const float *dx[8], *sums[8];                                                                                  \
        __m512 acc[8];                                                                                                 \
        for (int r = 0; r < R; r++) {                                                                                  \
            xq[r] = a->xq + (row0 + r) * a->K;                                                                         \
            dx[r] = a->dx + (row0 + r) * a->nb;                                                                        \
            sums[r] = a->sums + (row0 + r) * a->nb;                                                                    \
            acc[r] = _mm512_setzero_ps();                                                                              \
        }                                                                                                              \
        for (size_t b = 0; b < a->nb; b++) {                                                                           \
            const uint8_t *blk = tile + b * BLOCK4(half);                                                                    \
            prefetch_ahead(blk, BLOCK4(half));                                                                               \
            __m512i dot[8];                                                                                            \
            for (int r = 0; r < R; r++) dot[r] = _mm512_setzero_si512();                                               \
            UNROLL for (int w = 0; w < 4; w++) {                                                                       \
                __m512i c = _mm512_load_si512(blk + CODES4(half) + 64 * w);                                                     \
                __m512i lo = _mm512_and_si512(c, low), hi = _mm512_and_si512(_mm512_srli_epi32(c, 4), low);            \
                for (int r = 0; r < R; r++) {                                                                          \
                    __m512i xl = _mm512_set1_epi32(word_at(xq[r] + b * QK + 4 * w));                                   \
                    __m512i xh = _mm512_set1_epi32(word_at(xq[r] + b * QK + 16 + 4 * w));                              \
                    if (vnni) {                                                                                        \
                        dot[r] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[r], lo, xl), hi, xh);                     \
                    } else {                                                                                           \
                        __m512i p = _mm512_add_epi16(_mm512_maddubs_epi16(lo, xl), _mm512_maddubs_epi16(hi, xh));      \
                        dot[r] = _mm512_add_epi32(dot[r], _mm512_madd_epi16(p, ones));                                 \
                    }                                                                                                  \
                }                                                                                                      \
            }                                                                                                          \
            __m512 d = load16(blk, half, 0), m = load16(blk, half, TILE);                                              \
            for (int r = 0; r < R; r++) {                                                                              \
                __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(dx[r][b]));                                             \
                acc[r] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(dot[r]), acc[r]);                                   \
                acc[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(sums[r][b]), acc[r]);                                       \
            }                                                                                                          \
        }                                                                                                              \
        for (int r = 0; r < R; r++) store512(y + r * ldy, acc[r], cols);                                               \
    }
FAST_AVX512(fast_avx512, TARGET_AVX512, 0)
FAST_AVX512(fast_vnni, TARGET_VNNI, 1)

/* AVX2: a tile is two registers of 8 lanes (h = 0, 1); float(q) is shift, mask, convert. */
TARGET_AVX2 INLINE void exact_avx2(const uint8_t *tile, const struct acts *a, size_t row0, float *y, size_t ldy,
                                   size_t cols, const int R, const int half) {
    const __m256i low = _mm256_set1_epi32(15);
    const float *x[2], *sums[2];
    __m256 acc[2][2];
    for (int r = 0; r < R; r++) {
        x[r] = a->x + (row0 + r) * a->K;
        sums[r] = a->sums + (row0 + r) * a->nb;
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < a->nb; b++) {
        const uint8_t *blk = tile + b * BLOCK4(half);
        prefetch_ahead(blk, BLOCK4(half));
        __m256 dot[2][2];
        for (int r = 0; r < R; r++) dot[r][0] = dot[r][1] = _mm256_setzero_ps();
        UNROLL for (int w = 0; w < 4; w++) {
            __m256i c[2] = {_mm256_load_si256((const __m256i *)(blk + CODES4(half) + 64 * w)),
                            _mm256_load_si256((const __m256i *)(blk + CODES4(half) + 32 + 64 * w))};
            UNROLL for (int s = 0; s < 8; s++)
                for (int h = 0; h < 2; h++) {
                    __m256 v = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(c[h], 4 * s), low));
                    for (int r = 0; r < R; r++)
                        dot[r][h] = _mm256_fmadd_ps(_mm256_set1_ps(x[r][b * QK + K_OF(w, s)]), v, dot[r][h]);
                }
        }
        for (int h = 0; h < 2; h++) {
            __m256 d = load8(blk, half, 8 * h), m = load8(blk, half, TILE + 8 * h);
            for (int r = 0; r < R; r++) {
                acc[r][h] = _mm256_fmadd_ps(d, dot[r][h], acc[r][h]);
                acc[r][h] = _mm256_fmadd_ps(m, _mm256_set1_ps(sums[r][b]), acc[r][h]);
            }
        }
    }
    for (int r = 0; r < R; r++) store256(y + r * ldy, acc[r][0], acc[r][1], cols);
}

TARGET_AVX2 INLINE void fast_avx2(const uint8_t *tile, const struct acts *a, size_t row0, float *y, size_t ldy,
                                  size_t cols, const int R, const int half) {
    const __m256i low = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    const int8_t *xq[2];
    const float *dx[2], *sums[2];
    __m256 acc[2][2];
    for (int r = 0; r < R; r++) {
        xq[r] = a->xq + (row0 + r) * a->K;
        dx[r] = a->dx + (row0 + r) * a->nb;
        sums[r] = a->sums + (row0 + r) * a->nb;
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < a->nb; b++) {
        const uint8_t *blk = tile + b * BLOCK4(half);
        prefetch_ahead(blk, BLOCK4(half));
        __m256i dot[2][2];
        for (int r = 0; r < R; r++) dot[r][0] = dot[r][1] = _mm256_setzero_si256();
        UNROLL for (int w = 0; w < 4; w++)
            for (int h = 0; h < 2; h++) {
                __m256i c = _mm256_load_si256((const __m256i *)(blk + CODES4(half) + 64 * w + 32 * h));
                __m256i lo = _mm256_and_si256(c, low), hi = _mm256_and_si256(_mm256_srli_epi32(c, 4), low);
                for (int r = 0; r < R; r++) {
                    __m256i xl = _mm256_set1_epi32(word_at(xq[r] + b * QK + 4 * w));
                    __m256i xh = _mm256_set1_epi32(word_at(xq[r] + b * QK + 16 + 4 * w));
                    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl), _mm256_maddubs_epi16(hi, xh));
                    dot[r][h] = _mm256_add_epi32(dot[r][h], _mm256_madd_epi16(p, ones));
                }
            }
        for (int h = 0; h < 2; h++) {
            __m256 d = load8(blk, half, 8 * h), m = load8(blk, half, TILE + 8 * h);
            for (int r = 0; r < R; r++) {
                __m256 scale = _mm256_mul_ps(d, _mm256_set1_ps(dx[r][b]));
                acc[r][h] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dot[r][h]), acc[r][h]);
                acc[r][h] = _mm256_fmadd_ps(m, _mm256_set1_ps(sums[r][b]), acc[r][h]);
            }
        }
    }
    for (int r = 0; r < R; r++) store256(y + r * ldy, acc[r][0], acc[r][1], cols);
}

SIMD_INSTANCES(_h0, 0)
SIMD_INSTANCES(_h1, 1)
#endif

PLAIN_INSTANCE(exact_plain, _h0, 0)
PLAIN_INSTANCE(exact_plain, _h1, 1)
PLAIN_INSTANCE(fast_plain, _h0, 0)
PLAIN_INSTANCE(fast_plain, _h1, 1)

const struct layout LAYOUT4 = {
    .bits = 4,
    .groups = 1,
    .half = 0,
    .block_bytes = BLOCK4(0),
    .exact = EXACT_KERNELS(_h0),
    .fast = FAST_KERNELS(_h0),
};

const struct layout LAYOUT4_HALF = {
    .bits = 4,
    .groups = 1,
    .half = 1,
    .block_bytes = BLOCK4(1),
    .exact = EXACT_KERNELS(_h1),
    .fast = FAST_KERNELS(_h1),
};
