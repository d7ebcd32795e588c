/* The arithmetic of one query's attention, per ISA path: its scores against a run of cached keys,
 * their softmax, and the probabilities' mix of the cached values. fp32 throughout, as ONNX Runtime's
 * GroupQueryAttention computes (its GEMMs and softmax in another order: the results agree to a few
 * units in the last place).
 *
 *   scores[j] = scale * (q . K[j])                 j < n, K [n, D] rows D floats apart
 *   p = softmax(scores)                            exp(s - max) / sum, in place
 *   out = sum_j p[j] * V[j]                        out [D], V [n, D]
 *
 * Scores and mix take up to ROWS queries over the same keys at once (a prompt's queries share
 * their keys; each key and value is then read once for all of them), each query's arithmetic the
 * same whatever the queries beside it: its dot products and its mix are the same FMAs in the same
 * order as for a query alone.
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

static void scores_plain_one(const float *q, const float *K, size_t n, size_t D, float scale, float *out) {
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

static void mix_plain_one(const float *p, const float *V, size_t n, size_t D, float *out, int resume) {
    if (!resume)
        for (size_t d = 0; d < D; d++) out[d] = 0.0f;
    for (size_t j = 0; j < n; j++)
        for (size_t d = 0; d < D; d++) out[d] += p[j] * V[j * D + d];
}

/* A path's one-query scores and mix, taken query by query for the rows' interface. */
#define ROWS_OF(name, target)                                                                                          \
    target static void scores_##name(const float *q, size_t R, size_t ldq, const float *K, size_t n, size_t D,          \
                                     float scale, float *out, size_t ldo) {                                             \
        for (size_t r = 0; r < R; r++) scores_##name##_one(q + r * ldq, K, n, D, scale, out + r * ldo);                 \
    }                                                                                                                   \
    target static void mix_##name(const float *p, size_t ldp, size_t R, const float *V, size_t n, size_t D,             \
                                  float *const *out, int resume) {                                                      \
        for (size_t r = 0; r < R; r++) mix_##name##_one(p + r * ldp, V, n, D, out[r], resume);                          \
    }
ROWS_OF(plain, )

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

/* R queries against n keys on the path `isa` (its avx512_ or avx2_ blocks): KEYS at a time, then the
 * rest one by one; heads of 64, 128 and 256 floats get code of their own (the loop over d
 * unrolled), the same arithmetic as any other. */
#define SCORES_WALK(isa, target, R, KEYS)                                                                     \
    target INLINE void isa##_walk_##R(const float *q, size_t ldq, const float *K, size_t n, size_t D,         \
                                      float scale, float *out, size_t ldo) {                                  \
        size_t j = 0;                                                                                         \
        for (; j + KEYS <= n; j += KEYS) isa##_block_##R##x##KEYS(q, ldq, K + j * D, D, scale, out + j, ldo); \
        for (; j < n; j++) isa##_block_##R##x1(q, ldq, K + j * D, D, scale, out + j, ldo);                    \
    }                                                                                                         \
    target static void isa##_scores_rows##R(const float *q, size_t ldq, const float *K, size_t n, size_t D,   \
                                            float scale, float *out, size_t ldo) {                            \
        switch (D) {                                                                                          \
        case 64: isa##_walk_##R(q, ldq, K, n, 64, scale, out, ldo); return;                                   \
        case 128: isa##_walk_##R(q, ldq, K, n, 128, scale, out, ldo); return;                                 \
        case 256: isa##_walk_##R(q, ldq, K, n, 256, scale, out, ldo); return;                                 \
        default: isa##_walk_##R(q, ldq, K, n, D, scale, out, ldo); return;                                    \
        }                                                                                                     \
    }

/* The path's scores and mix for R <= ROWS queries: its code for that R (isa##_scores_rows##R,
 * isa##_mix_rows##R). */
#define BY_ROWS(isa, target)                                                                                  \
    target static void scores_##isa(const float *q, size_t R, size_t ldq, const float *K, size_t n, size_t D, \
                                    float scale, float *out, size_t ldo) {                                    \
        switch (R) {                                                                                          \
        case 1: isa##_scores_rows1(q, ldq, K, n, D, scale, out, ldo); return;                                 \
        case 2: isa##_scores_rows2(q, ldq, K, n, D, scale, out, ldo); return;                                 \
        case 3: isa##_scores_rows3(q, ldq, K, n, D, scale, out, ldo); return;                                 \
        default: isa##_scores_rows4(q, ldq, K, n, D, scale, out, ldo); return;                                \
        }                                                                                                     \
    }                                                                                                         \
    target static void mix_##isa(const float *p, size_t ldp, size_t R, const float *V, size_t n, size_t D,    \
                                 float *const *out, int resume) {                                             \
        switch (R) {                                                                                          \
        case 1: isa##_mix_rows1(p, ldp, V, n, D, out, resume); return;                                        \
        case 2: isa##_mix_rows2(p, ldp, V, n, D, out, resume); return;                                        \
        case 3: isa##_mix_rows3(p, ldp, V, n, D, out, resume); return;                                        \
        default: isa##_mix_rows4(p, ldp, V, n, D, out, resume); return;                                       \
        }                                                                                                     \
    }

/* R queries against KEYS keys, one accumulator a pair with its FMAs in the order of d: the arithmetic
 * every block shape shares, so a pair's score does not depend on the block it is computed in. */
#define SCORES_BLOCK(R, KEYS)                                                                                 \
    TARGET_AVX512 INLINE void avx512_block_##R##x##KEYS(const float *q, size_t ldq, const float *k, size_t D,        \
                                                        float scale, float *out, size_t ldo) {                \
        __m512 acc[R][KEYS];                                                                                  \
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < KEYS; t++) acc[r][t] = _mm512_setzero_ps(); \
        UNROLL for (int t = 0; t < KEYS; t++) __builtin_prefetch((const char *)(k + t * D) + AHEAD, 0, 3);   \
        UNROLL for (size_t d = 0; d < D; d += 16) {                                                           \
            __mmask16 m = D - d >= 16 ? (__mmask16)0xffff : MASK16(D - d);                                    \
            __m512 kv[KEYS];                                                                                  \
            UNROLL for (int t = 0; t < KEYS; t++) kv[t] = _mm512_maskz_loadu_ps(m, k + t * D + d);            \
            UNROLL for (int r = 0; r < R; r++) {                                                              \
                __m512 qv = _mm512_maskz_loadu_ps(m, q + r * ldq + d);                                        \
                UNROLL for (int t = 0; t < KEYS; t++) acc[r][t] = _mm512_fmadd_ps(qv, kv[t], acc[r][t]);      \
            }                                                                                                 \
        }                                                                                                     \
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < KEYS; t++)                              \
            out[r * ldo + t] = scale * _mm512_reduce_add_ps(acc[r][t]);                                       \
    }
SCORES_BLOCK(1, 1)
SCORES_BLOCK(2, 1)
SCORES_BLOCK(3, 1)
SCORES_BLOCK(4, 1)
SCORES_BLOCK(1, 8) /* a lone query: eight keys' chains in flight */
SCORES_BLOCK(2, 4)
SCORES_BLOCK(3, 4)
SCORES_BLOCK(4, 4)
SCORES_WALK(avx512, TARGET_AVX512, 1, 8)
SCORES_WALK(avx512, TARGET_AVX512, 2, 4)
SCORES_WALK(avx512, TARGET_AVX512, 3, 4)
SCORES_WALK(avx512, TARGET_AVX512, 4, 4)

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

/* R queries' out[D] in registers 64 floats at a time (a head of 256: four passes over V), each value
 * row read once for all R; a query's lanes take the same FMAs in the same order whatever R is. */
#define MIX_ROWS(R)                                                                                           \
    TARGET_AVX512 static void avx512_mix_rows##R(const float *p, size_t ldp, const float *V, size_t n, size_t D,     \
                                          float *const *out, int resume) {                                    \
        for (size_t d0 = 0; d0 < D; d0 += 64) {                                                               \
            size_t width = D - d0 < 64 ? D - d0 : 64;                                                         \
            __mmask16 m[4];                                                                                   \
            UNROLL for (int c = 0; c < 4; c++) {                                                              \
                size_t lo = (size_t)c * 16;                                                                   \
                m[c] = width >= lo + 16 ? (__mmask16)0xffff : width > lo ? MASK16(width - lo) : 0;            \
            }                                                                                                 \
            __m512 acc[R][4];                                                                                 \
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int c = 0; c < 4; c++)                             \
                acc[r][c] = resume ? _mm512_maskz_loadu_ps(m[c], out[r] + d0 + c * 16) : _mm512_setzero_ps(); \
            for (size_t j = 0; j < n; j++) {                                                                  \
                const float *v = V + j * D + d0;                                                              \
                __builtin_prefetch((const char *)v + AHEAD, 0, 3);                                            \
                __m512 vv[4];                                                                                 \
                UNROLL for (int c = 0; c < 4; c++) vv[c] = _mm512_maskz_loadu_ps(m[c], v + c * 16);           \
                UNROLL for (int r = 0; r < R; r++) {                                                          \
                    __m512 pj = _mm512_set1_ps(p[r * ldp + j]);                                               \
                    UNROLL for (int c = 0; c < 4; c++) acc[r][c] = _mm512_fmadd_ps(pj, vv[c], acc[r][c]);     \
                }                                                                                             \
            }                                                                                                 \
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int c = 0; c < 4; c++)                             \
                _mm512_mask_storeu_ps(out[r] + d0 + c * 16, m[c], acc[r][c]);                                 \
        }                                                                                                     \
    }
MIX_ROWS(1)
MIX_ROWS(2)
MIX_ROWS(3)
MIX_ROWS(4)
BY_ROWS(avx512, TARGET_AVX512)

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

/* AVX2 handles heads of a multiple of 8 floats (the ops' checks send others to the plain path), in
 * blocks of queries x keys as AVX-512 does (one accumulator a pair, its FMAs in d order), fewer at a
 * time for its 16 registers. */
#define SCORES_BLOCK_AVX2(R, KEYS)                                                                            \
    TARGET_AVX2 INLINE void avx2_block_##R##x##KEYS(const float *q, size_t ldq, const float *k, size_t D,          \
                                                float scale, float *out, size_t ldo) {                        \
        __m256 acc[R][KEYS];                                                                                  \
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < KEYS; t++) acc[r][t] = _mm256_setzero_ps(); \
        UNROLL for (int t = 0; t < KEYS; t++) __builtin_prefetch((const char *)(k + t * D) + AHEAD, 0, 3);   \
        UNROLL for (size_t d = 0; d < D; d += 8) {                                                            \
            __m256 qv[R];                                                                                     \
            UNROLL for (int r = 0; r < R; r++) qv[r] = _mm256_loadu_ps(q + r * ldq + d);                      \
            UNROLL for (int t = 0; t < KEYS; t++) {                                                           \
                __m256 kv = _mm256_loadu_ps(k + t * D + d);                                                   \
                UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm256_fmadd_ps(qv[r], kv, acc[r][t]);         \
            }                                                                                                 \
        }                                                                                                     \
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < KEYS; t++)                              \
            out[r * ldo + t] = scale * hsum8(acc[r][t]);                                                      \
    }
SCORES_BLOCK_AVX2(1, 1)
SCORES_BLOCK_AVX2(2, 1)
SCORES_BLOCK_AVX2(3, 1)
SCORES_BLOCK_AVX2(4, 1)
SCORES_BLOCK_AVX2(1, 8) /* a lone query: eight keys' chains in flight */
SCORES_BLOCK_AVX2(2, 4)
SCORES_BLOCK_AVX2(3, 3)
SCORES_BLOCK_AVX2(4, 2)
SCORES_WALK(avx2, TARGET_AVX2, 1, 8)
SCORES_WALK(avx2, TARGET_AVX2, 2, 4)
SCORES_WALK(avx2, TARGET_AVX2, 3, 3)
SCORES_WALK(avx2, TARGET_AVX2, 4, 2)

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

/* R queries' out[D] 16 floats at a time, each value row's 16 read once for all R; a query's lanes
 * take the same FMAs in the same order whatever R is. */
#define MIX_ROWS_AVX2(R)                                                                                      \
    TARGET_AVX2 static void avx2_mix_rows##R(const float *p, size_t ldp, const float *V, size_t n, size_t D,      \
                                         float *const *out, int resume) {                                     \
        for (size_t d0 = 0; d0 < D; d0 += 16) {                                                               \
            int parts = D - d0 >= 16 ? 2 : 1;                                                                 \
            __m256 acc[R][2];                                                                                 \
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int c = 0; c < 2; c++)                             \
                acc[r][c] = resume && c < parts ? _mm256_loadu_ps(out[r] + d0 + c * 8) : _mm256_setzero_ps(); \
            for (size_t j = 0; j < n; j++) {                                                                  \
                const float *v = V + j * D + d0;                                                              \
                __builtin_prefetch((const char *)v + AHEAD, 0, 3);                                            \
                __m256 v0 = _mm256_loadu_ps(v), v1 = parts == 2 ? _mm256_loadu_ps(v + 8) : _mm256_setzero_ps(); \
                UNROLL for (int r = 0; r < R; r++) {                                                          \
                    __m256 pj = _mm256_set1_ps(p[r * ldp + j]);                                               \
                    acc[r][0] = _mm256_fmadd_ps(pj, v0, acc[r][0]);                                           \
                    acc[r][1] = _mm256_fmadd_ps(pj, v1, acc[r][1]);                                           \
                }                                                                                             \
            }                                                                                                 \
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int c = 0; c < parts; c++)                         \
                _mm256_storeu_ps(out[r] + d0 + c * 8, acc[r][c]);                                             \
        }                                                                                                     \
    }
MIX_ROWS_AVX2(1)
MIX_ROWS_AVX2(2)
MIX_ROWS_AVX2(3)
MIX_ROWS_AVX2(4)
BY_ROWS(avx2, TARGET_AVX2)

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
