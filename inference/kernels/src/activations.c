/* The activations' part of a call, computed once per call and shared by every column tile:
 * exact mode's block sums, fast mode's int8 quantization per block of 32 (llama.cpp's Q8_1). */
#include <math.h>

#include "kernels.h"
#include "simd.h"

/* sums[M, nb]: the sum of each block of 32 of x[M, K]. */
void acts_block_sums(const float *x, size_t M, size_t K, float *sums) {
    size_t nb = K / QK;
    for (size_t r = 0; r < M; r++)
        for (size_t b = 0; b < nb; b++) {
            const float *xb = x + r * K + b * QK;
            float s = 0.0f;
            for (int k = 0; k < QK; k++) s += xb[k];
            sums[r * nb + b] = s;
        }
}

/* One block's scale: dx = max |x| / 127 and its inverse (0 for a block of zeros). */
static inline void block_scale(float amax, float *d, float *id) {
    *d = amax / 127.0f;
    *id = *d != 0.0f ? 1.0f / *d : 0.0f;
}

static void quantize_plain(const float *xb, int8_t *qb, float *d, int32_t s[2]) {
    float amax = 0.0f, id;
    for (int k = 0; k < QK; k++) amax = fmaxf(amax, fabsf(xb[k]));
    block_scale(amax, d, &id);
    s[0] = s[1] = 0;
    for (int k = 0; k < QK; k++) {
        qb[k] = (int8_t)lrintf(xb[k] * id);
        s[k / 16] += qb[k];
    }
}

#ifdef HAVE_X86_SIMD
/* The same in SIMD, bit for bit: the products are the same IEEE multiplications, and the
 * conversion rounds to nearest even as lrintf does in the default rounding mode. */
TARGET_AVX512 static void quantize_avx512(const float *xb, int8_t *qb, float *d, int32_t s[2]) {
    __m512 x0 = _mm512_loadu_ps(xb), x1 = _mm512_loadu_ps(xb + 16), id;
    float inv;
    block_scale(_mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1))), d, &inv);
    id = _mm512_set1_ps(inv);
    __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, id)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, id));
    _mm_storeu_si128((__m128i *)qb, _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(qb + 16), _mm512_cvtepi32_epi8(q1));
    s[0] = _mm512_reduce_add_epi32(q0);
    s[1] = _mm512_reduce_add_epi32(q1);
}

TARGET_AVX2 static int32_t hsum256(__m256i v) {
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1)));
}

TARGET_AVX2 static void quantize_avx2(const float *xb, int8_t *qb, float *d, int32_t s[2]) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 x[4], m;
    for (int i = 0; i < 4; i++) x[i] = _mm256_loadu_ps(xb + 8 * i);
    m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, x[0]), _mm256_andnot_ps(sign, x[1])),
                      _mm256_max_ps(_mm256_andnot_ps(sign, x[2]), _mm256_andnot_ps(sign, x[3])));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    float inv;
    block_scale(_mm_cvtss_f32(h), d, &inv);
    __m256 id = _mm256_set1_ps(inv);
    __m256i q[4];
    for (int i = 0; i < 4; i++) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(x[i], id));
    s[0] = hsum256(_mm256_add_epi32(q[0], q[1]));
    s[1] = hsum256(_mm256_add_epi32(q[2], q[3]));
    /* int32 -> int8 (no saturation happens: |q| <= 127), back into order across the 128-bit lanes */
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256((__m256i *)qb, _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

#else
#define quantize_avx512 quantize_plain
#define quantize_avx2 quantize_plain
#endif

/* Per block of 32: dx = max |x| / 127, xq = rint(x * (1 / dx)) (ties to even), isum the sums of xq
 * over each half block of 16, sums = dx * (sum of xq). A block of zeros has dx = 0 and xq = 0. */
void acts_quantize(int isa, const float *x, size_t M, size_t K, int8_t *xq, float *dx, float *sums, int32_t *isum) {
    void (*quantize)(const float *, int8_t *, float *, int32_t *) =
        isa >= ISA_AVX512 ? quantize_avx512 : isa == ISA_AVX2 ? quantize_avx2 : quantize_plain;
    size_t nb = K / QK;
    for (size_t r = 0; r < M; r++)
        for (size_t b = 0; b < nb; b++) {
            int32_t *s = isum + r * nb * 2 + 2 * b;
            quantize(x + r * K + b * QK, xq + r * K + b * QK, dx + r * nb + b, s);
            sums[r * nb + b] = dx[r * nb + b] * (float)(s[0] + s[1]);
        }
}
