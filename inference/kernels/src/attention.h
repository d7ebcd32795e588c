/* The attention op's arithmetic per ISA path (attend.c), used by its kernel (attention.c). */
#ifndef PLAYGROUND_ATTENTION_H
#define PLAYGROUND_ATTENTION_H

#include <stddef.h>

#include "kernels.h"

enum { ROWS = 4 }; /* queries over the same keys that scores and mix take at once */

struct attend_ops {
    /* out[r * ldo + j] = scale * (q_r . K[j]) for r < R <= ROWS, j < n; q_r = q + r * ldq [D], K [n, D]. */
    void (*scores)(const float *q, size_t R, size_t ldq, const float *K, size_t n, size_t D, float scale, float *out,
                   size_t ldo);
    /* x[0..n) = exp(x - max) / sum, in place (n >= 1). */
    void (*softmax)(float *x, size_t n);
    /* out[r][D] = sum_j p[r * ldp + j] * V[j] for r < R <= ROWS; V [n, D]; `resume`: each sum goes on
     * from out's values (attend.c). */
    void (*mix)(const float *p, size_t ldp, size_t R, const float *V, size_t n, size_t D, float *const *out, int resume);
};

/* The arithmetic for the path `isa` and heads of `head_dim` floats. */
const struct attend_ops *attend_ops_for(int isa, size_t head_dim);

/* The op, for RegisterCustomOps (attention.c). */
struct OrtCustomOp;
extern const struct OrtCustomOp GROUP_ATTENTION;

#endif
