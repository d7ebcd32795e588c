/* The arithmetic of one query's attention, per ISA path: its scores against a run of cached keys,
 * their softmax, and the probabilities' mix of the cached values. fp32 throughout, as ONNX Runtime's
 * GroupQueryAttention computes (its GEMMs and softmax in another order: the results agree to a few
 * units in the last place).
 *
 *   scores[j] = scale * (q . K[j])                 j < n, K [n, D] rows D floats apart
 *   p = softmax(scores)                            exp(s - max) / sum, in place
 *   out = sum_j p[j] * V[j]                        out [D], V [n, D]
 *
 * The mix may go on from what `out` holds (`resume`): the sum over a long run of values taken in
 * pieces is then the same, bit for bit, as over the whole run at once (the same FMAs in the same
 * order), so a query computes the same whatever the block of keys or queries it is computed in.
 */
#include <math.h>

#include "attention.h"
#include "simd.h"

/* How far ahead of the key or value row being read the next rows are asked for (bytes): a row's
 * cache is one sequential run, split by the hardware prefetcher's 4 KiB page stops (kernels.h). */
enum { AHEAD = 2048 };

static void scores_plain(const float *q, const float *K, size_t n, size_t D, float scale, float *out) {
    for (size_t j = 0; j < n; j++) {
        const float *k = K + j * D;
        float s = 0.0f;
        for (size_t d = 0; d < D; d++) s += q[d] * k[d];
        out[j] = scale * s;
    }
}

static void softmax_plain(float *x, size_t n) {
    float top = -INFINITY, sum = 0.0f;
    for (size_t j = 0; j < n; j++) top = fmaxf(top, x[j]);
    for (size_t j = 0; j < n; j++) sum += x[j] = expf(x[j] - top);
    float inv = 1.0f / sum;
    for (size_t j = 0; j < n; j++) x[j] *= inv;
}

static void mix_plain(const float *p, const float *V, size_t n, size_t D, float *out, int resume) {
    if (!resume)
        for (size_t d = 0; d < D; d++) out[d] = 0.0f;
    for (size_t j = 0; j < n; j++)
        for (size_t d = 0; d < D; d++) out[d] += p[j] * V[j * D + d];
}

#ifdef HAVE_X86_SIMD
/* exp(x) for x <= 0 (a softmax's x - max): x = n ln2 + r, |r| <= ln2 / 2 (ln2 in two parts, the
 * first with few bits so n ln2_hi is exact), e^r by its Taylor series to r^7 / 7! (remainder under
 * 1e-8 of the result), times 2^n. Below -87 the result is 0's neighbour and is taken as e^-87. */
#define EXP_STEPS(T, set1, fmadd, fnmadd, mul, maxf, round)                    \
    x = maxf(x, set1(-87.0f));                                                  \
    T n_ = round(mul(x, set1(1.44269504088896341f)));                           \
    T r_ = fnmadd(n_, set1(0.693145751953125f), x);                             \
    r_ = fnmadd(n_, set1(1.42860682030941723e-6f), r_);                         \
    T p_ = set1(1.0f / 5040.0f);                                                \
    p_ = fmadd(p_, r_, set1(1.0f / 720.0f));                                    \
    p_ = fmadd(p_, r_, set1(1.0f / 120.0f));                                    \
    p_ = fmadd(p_, r_, set1(1.0f / 24.0f));                                     \
    p_ = fmadd(p_, r_, set1(1.0f / 6.0f));                                      \
    p_ = fmadd(p_, r_, set1(0.5f));                                             \
    p_ = fmadd(p_, r_, set1(1.0f));                                             \
    p_ = fmadd(p_, r_, set1(1.0f));

#define ROUND512(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
TARGET_AVX512 static inline __m512 exp512(__m512 x) {
    EXP_STEPS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_fnmadd_ps, _mm512_mul_ps, _mm512_max_ps, ROUND512)
    return _mm512_scalef_ps(p_, n_);
}

#define ROUND256(v) _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
TARGET_AVX2 static inline __m256 exp256(__m256 x) {
    EXP_STEPS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_fnmadd_ps, _mm256_mul_ps, _mm256_max_ps, ROUND256)
    __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n_), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p_, _mm256_castsi256_ps(two_n)); /* n >= -126: 2^n is a normal number */
}

/* The first `left` (< 16) lanes. */
#define MASK16(left) ((__mmask16)((1u << (left)) - 1))

/* Heads of 64, 128 or 256 floats keep the query in registers: a key then costs one load per FMA. */
#define SCORES_HELD(NV)                                                                                       \
    TARGET_AVX512 static void scores_held##NV(const float *q, const float *K, size_t n, float scale, float *out) { \
        __m512 qv[NV];                                                                                        \
        UNROLL for (int v = 0; v < NV; v++) qv[v] = _mm512_loadu_ps(q + 16 * v);                             \
        for (size_t j = 0; j < n; j++) {                                                                      \
            const float *k = K + j * (16 * NV);                                                               \
            __builtin_prefetch((const char *)k + AHEAD, 0, 3);                                                \
            __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()}; \
            UNROLL for (int v = 0; v < NV; v++) a[v % 4] = _mm512_fmadd_ps(qv[v], _mm512_loadu_ps(k + 16 * v), a[v % 4]); \
            out[j] = scale * _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]))); \
        }                                                                                                     \
    }
SCORES_HELD(4)
SCORES_HELD(8)
SCORES_HELD(16)

TARGET_AVX512 static void scores_avx512(const float *q, const float *K, size_t n, size_t D, float scale, float *out) {
    switch (D) {
    case 64: scores_held4(q, K, n, scale, out); return;
    case 128: scores_held8(q, K, n, scale, out); return;
    case 256: scores_held16(q, K, n, scale, out); return;
    default: break;
    }
    for (size_t j = 0; j < n; j++) {
        const float *k = K + j * D;
        __builtin_prefetch((const char *)k + AHEAD, 0, 3);
        __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        size_t d = 0;
        for (int c = 0; d < D; d += 16, c = (c + 1) % 4) {
            __mmask16 m = D - d >= 16 ? (__mmask16)0xffff : MASK16(D - d);
            a[c] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, k + d), a[c]);
        }
        out[j] = scale * _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])));
    }
}

TARGET_AVX512 static void softmax_avx512(float *x, size_t n) {
    __m512 top = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
    size_t j = 0;
    for (; j + 16 <= n; j += 16) top = _mm512_max_ps(top, _mm512_loadu_ps(x + j));
    if (j < n) top = _mm512_mask_max_ps(top, MASK16(n - j), top, _mm512_maskz_loadu_ps(MASK16(n - j), x + j));
    __m512 t = _mm512_set1_ps(_mm512_reduce_max_ps(top));
    for (j = 0; j + 16 <= n; j += 16) {
        __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + j), t));
        _mm512_storeu_ps(x + j, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (j < n) {
        __mmask16 m = MASK16(n - j);
        __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), t));
        _mm512_mask_storeu_ps(x + j, m, e);
        sum = _mm512_mask_add_ps(sum, m, sum, e);
    }
    __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (j = 0; j + 16 <= n; j += 16) _mm512_storeu_ps(x + j, _mm512_mul_ps(_mm512_loadu_ps(x + j), inv));
    if (j < n) _mm512_mask_storeu_ps(x + j, MASK16(n - j), _mm512_mul_ps(_mm512_maskz_loadu_ps(MASK16(n - j), x + j), inv));
}

/* out[D] in registers 64 floats at a time (a head of 64 or 128: one or two passes over V). */
TARGET_AVX512 static void mix_avx512(const float *p, const float *V, size_t n, size_t D, float *out, int resume) {
    for (size_t d0 = 0; d0 < D; d0 += 64) {
        size_t width = D - d0 < 64 ? D - d0 : 64;
        __mmask16 m[4];
        for (int c = 0; c < 4; c++) {
            size_t lo = (size_t)c * 16;
            m[c] = width >= lo + 16 ? (__mmask16)0xffff : width > lo ? MASK16(width - lo) : 0;
        }
        __m512 acc[4];
        for (int c = 0; c < 4; c++) acc[c] = resume ? _mm512_maskz_loadu_ps(m[c], out + d0 + c * 16) : _mm512_setzero_ps();
        for (size_t j = 0; j < n; j++) {
            const float *v = V + j * D + d0;
            __builtin_prefetch((const char *)v + AHEAD, 0, 3);
            __m512 pj = _mm512_set1_ps(p[j]);
            for (int c = 0; c < 4; c++)
                if (m[c]) acc[c] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[c], v + c * 16), acc[c]);
        }
        for (int c = 0; c < 4; c++)
            if (m[c]) _mm512_mask_storeu_ps(out + d0 + c * 16, m[c], acc[c]);
    }
}

TARGET_AVX2 static float hsum8(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

TARGET_AVX2 static float hmax8(__m256 v) {
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

/* AVX2 handles heads of a multiple of 8 floats (the ops' checks send others to the plain path). */
TARGET_AVX2 static void scores_avx2(const float *q, const float *K, size_t n, size_t D, float scale, float *out) {
    for (size_t j = 0; j < n; j++) {
        const float *k = K + j * D;
        __builtin_prefetch((const char *)k + AHEAD, 0, 3);
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        size_t d = 0;
        for (; d + 16 <= D; d += 16) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(k + d), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 8), _mm256_loadu_ps(k + d + 8), a1);
        }
        if (d < D) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(k + d), a0);
        out[j] = scale * hsum8(_mm256_add_ps(a0, a1));
    }
}

TARGET_AVX2 static void softmax_avx2(float *x, size_t n) {
    __m256 top8 = _mm256_set1_ps(-INFINITY), sum8 = _mm256_setzero_ps();
    size_t j = 0;
    for (; j + 8 <= n; j += 8) top8 = _mm256_max_ps(top8, _mm256_loadu_ps(x + j));
    float top = hmax8(top8);
    for (size_t i = j; i < n; i++) top = fmaxf(top, x[i]);
    __m256 t = _mm256_set1_ps(top);
    for (j = 0; j + 8 <= n; j += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), t));
        _mm256_storeu_ps(x + j, e);
        sum8 = _mm256_add_ps(sum8, e);
    }
    float sum = hsum8(sum8);
    if (j < n) { /* the tail through a full vector: the same exp as every other lane */
        float tail[8] = {0};
        for (size_t i = j; i < n; i++) tail[i - j] = x[i];
        _mm256_storeu_ps(tail, exp256(_mm256_sub_ps(_mm256_loadu_ps(tail), t)));
        for (size_t i = j; i < n; i++) sum += x[i] = tail[i - j];
    }
    __m256 inv = _mm256_set1_ps(1.0f / sum);
    for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), inv));
    for (; j < n; j++) x[j] *= 1.0f / sum;
}

TARGET_AVX2 static void mix_avx2(const float *p, const float *V, size_t n, size_t D, float *out, int resume) {
    for (size_t d0 = 0; d0 < D; d0 += 64) {
        size_t parts = (D - d0 < 64 ? D - d0 : 64) / 8;
        __m256 acc[8];
        for (size_t c = 0; c < 8; c++) acc[c] = resume && c < parts ? _mm256_loadu_ps(out + d0 + c * 8) : _mm256_setzero_ps();
        for (size_t j = 0; j < n; j++) {
            const float *v = V + j * D + d0;
            __builtin_prefetch((const char *)v + AHEAD, 0, 3);
            __m256 pj = _mm256_set1_ps(p[j]);
            for (size_t c = 0; c < parts; c++) acc[c] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + c * 8), acc[c]);
        }
        for (size_t c = 0; c < parts; c++) _mm256_storeu_ps(out + d0 + c * 8, acc[c]);
    }
}

static const struct attend_ops AVX2 = {scores_avx2, softmax_avx2, mix_avx2};
static const struct attend_ops AVX512 = {scores_avx512, softmax_avx512, mix_avx512};
#endif

static const struct attend_ops PLAIN = {scores_plain, softmax_plain, mix_plain};

const struct attend_ops *attend_ops_for(int isa, size_t head_dim) {
#ifdef HAVE_X86_SIMD
    if (isa >= ISA_AVX512) return &AVX512;
    if (isa == ISA_AVX2 && head_dim % 8 == 0) return &AVX2;
#else
    (void)isa;
#endif
    (void)head_dim;
    return &PLAIN;
}
