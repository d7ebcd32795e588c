/* The activations' part of a call, computed once per call and shared by every column tile:
 * exact mode's block sums, fast mode's int8 quantization per block of 32 (llama.cpp's Q8_1). */
#include <math.h>

#include "kernels.h"

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

/* Per block of 32: dx = max |x| / 127, xq = rint(x * (1 / dx)) (ties to even), isum the sums of xq
 * over each half block of 16, sums = dx * (sum of xq). A block of zeros has dx = 0 and xq = 0. */
void acts_quantize(const float *x, size_t M, size_t K, int8_t *xq, float *dx, float *sums, int32_t *isum) {
    size_t nb = K / QK;
    for (size_t r = 0; r < M; r++)
        for (size_t b = 0; b < nb; b++) {
            const float *xb = x + r * K + b * QK;
            int8_t *qb = xq + r * K + b * QK;
            float amax = 0.0f;
            for (int k = 0; k < QK; k++) amax = fmaxf(amax, fabsf(xb[k]));
            float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            int32_t s[2] = {0, 0};
            for (int k = 0; k < QK; k++) {
                qb[k] = (int8_t)lrintf(xb[k] * id);
                s[k / 16] += qb[k];
            }
            dx[r * nb + b] = d;
            isum[r * nb * 2 + 2 * b] = s[0];
            isum[r * nb * 2 + 2 * b + 1] = s[1];
            sums[r * nb + b] = d * (float)(s[0] + s[1]);
        }
}
