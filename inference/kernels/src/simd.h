/* What the SIMD tile kernels share: the per-function targets (the library is compiled for plain
 * x86-64; only these functions use wider instructions, and only on a CPU that has them), and the
 * walk over a tile's rows in chunks of R rows whose accumulators stay in registers. */
#ifndef PLAYGROUND_KERNELS_SIMD_H
#define PLAYGROUND_KERNELS_SIMD_H

#include <string.h>

#include "kernels.h"

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 32") /* the fixed-count loops of a block: shifts and offsets become constants */

/* The SIMD paths exist on x86 only (and not with -DPLAYGROUND_KERNELS_PLAIN_ONLY); elsewhere the
 * layouts' tables hold the plain kernels. */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(PLAYGROUND_KERNELS_PLAIN_ONLY)
#define HAVE_X86_SIMD 1
#include <immintrin.h>
#define TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TARGET_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")))
#define TARGET_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

/* Accumulators of one row's dot product over a block (its k alternate): a lone row's FMAs are not
 * one chain of 32 latencies, and every row takes the same steps whatever the batch, so a row's
 * result does not depend on the rows beside it. */
enum { CHAINS = 2 };

/* The 4 bytes of int8 activations at p as one int32 (to broadcast to every lane). */
INLINE int32_t word_at(const int8_t *p) {
    int32_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* A tile_fn walking the rows 8, then 4, then 1 at a time through body(…, R, extra). */
#define WALK_ROWS(name, target, body, extra)                                                               \
    target static void name(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, \
                            size_t ldy, size_t cols) {                                                     \
        size_t r = 0;                                                                                      \
        for (; r + 8 <= rows; r += 8) body(tile, a, row0 + r, y + r * ldy, ldy, cols, 8, extra);           \
        for (; r + 4 <= rows; r += 4) body(tile, a, row0 + r, y + r * ldy, ldy, cols, 4, extra);           \
        for (; r < rows; r++) body(tile, a, row0 + r, y + r * ldy, ldy, cols, 1, extra);                   \
    }

/* The same for AVX2's 16 registers: 2 rows, then 1. */
#define WALK_ROWS_AVX2(name, body, extra)                                                                       \
    TARGET_AVX2 static void name(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, \
                                 size_t ldy, size_t cols) {                                                     \
        size_t r = 0;                                                                                           \
        for (; r + 2 <= rows; r += 2) body(tile, a, row0 + r, y + r * ldy, ldy, cols, 2, extra);                \
        for (; r < rows; r++) body(tile, a, row0 + r, y + r * ldy, ldy, cols, 1, extra);                        \
    }

/* 16 lanes out: all of them, or the first `cols` of the last tile. */
TARGET_AVX512 INLINE void store512(float *y, __m512 v, size_t cols) {
    _mm512_mask_storeu_ps(y, (__mmask16)((1u << cols) - 1), v);
}

TARGET_AVX2 INLINE void store256(float *y, __m256 lo, __m256 hi, size_t cols) {
    if (cols == TILE) {
        _mm256_storeu_ps(y, lo);
        _mm256_storeu_ps(y + 8, hi);
    } else {
        float tmp[TILE];
        _mm256_storeu_ps(tmp, lo);
        _mm256_storeu_ps(tmp + 8, hi);
        memcpy(y, tmp, cols * sizeof(float));
    }
}

#endif /* x86 */

/* A plain kernel for one value `arg` of its layout's parameter, named with the suffix s (_h0, _g1, …). */
#define PLAIN_INSTANCE(name, s, arg)                                                                            \
    static void name##s(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy, \
                        size_t cols) {                                                                          \
        name(tile, a, row0, rows, y, ldy, cols, arg);                                                           \
    }

#ifdef HAVE_X86_SIMD
/* Every SIMD kernel of a layout for one value `arg` of its parameter, named with the suffix s. */
#define SIMD_INSTANCES(s, arg)                                             \
    WALK_ROWS(exact_avx512##s, TARGET_AVX512, exact_avx512, arg)          \
    WALK_ROWS(fast_avx512##s, TARGET_AVX512, fast_avx512, arg)            \
    WALK_ROWS(fast_vnni##s, TARGET_VNNI, fast_vnni, arg)                  \
    WALK_ROWS_AVX2(exact_avx2##s, exact_avx2, arg)                        \
    WALK_ROWS_AVX2(fast_avx2##s, fast_avx2, arg)
#define SIMD_OR(simd, plain) simd
#else
#define SIMD_OR(simd, plain) plain
#endif

/* A layout's kernels by ISA path, in enum isa's order (plain, avx2, avx512, avx512vnni), for the
 * suffix s; where the SIMD paths are not compiled every entry is the plain kernel. */
#define EXACT_KERNELS(s) \
    {exact_plain##s, SIMD_OR(exact_avx2##s, exact_plain##s), SIMD_OR(exact_avx512##s, exact_plain##s), SIMD_OR(exact_avx512##s, exact_plain##s)}
#define FAST_KERNELS(s) \
    {fast_plain##s, SIMD_OR(fast_avx2##s, fast_plain##s), SIMD_OR(fast_avx512##s, fast_plain##s), SIMD_OR(fast_vnni##s, fast_plain##s)}

#endif
