/* The attention op's arithmetic per ISA path (attend.c), used by its kernel (attention.c). */
#ifndef PLAYGROUND_ATTENTION_H
#define PLAYGROUND_ATTENTION_H

#include <stddef.h>

#include "kernels.h"

struct attend_ops {
    /* out[j] = scale * (q . K[j]) for j < n; q [D], K [n, D]. */
    void (*scores)(const float *q, const float *K, size_t n, size_t D, float scale, float *out);
    /* x[0..n) = exp(x - max) / sum, in place (n >= 1). */
    void (*softmax)(float *x, size_t n);
    /* out[D] = sum_j p[j] * V[j]; V [n, D]; `resume`: the sum goes on from out's values (attend.c). */
    void (*mix)(const float *p, const float *V, size_t n, size_t D, float *out, int resume);
};

/* The arithmetic for the path `isa` and heads of `head_dim` floats. */
const struct attend_ops *attend_ops_for(int isa, size_t head_dim);

/* The op, for RegisterCustomOps (attention.c). */
struct OrtCustomOp;
extern const struct OrtCustomOp GROUP_ATTENTION;

#endif
