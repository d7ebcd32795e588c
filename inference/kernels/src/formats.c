/* The GGUF block formats (llama.cpp's ggml-common.h), each read one block of 32 weights at a time
 * into the codes, scale(s) and offset of the layout it repacks into (kernels.h). */
#include <stdio.h>
#include <string.h>

#include "kernels.h"

uint16_t float_to_half(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    uint32_t sign = (b >> 16) & 0x8000, exp = (b >> 23) & 255, man = b & 0x7fffff;
    if (exp == 255) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) return (uint16_t)(e < -10 ? sign : sign | ((man | 0x800000) >> (14 - e))); /* subnormal */
    return (uint16_t)(sign | (uint32_t)e << 10 | man >> 13);
}

float half_to_float(const uint8_t *p) {
    uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023, bits;
    if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man) { /* subnormal: normalize */
        exp = 113;
        while (!(man & 1024)) {
            man <<= 1;
            exp--;
        }
        bits = sign | (exp << 23) | ((man & 1023) << 13);
    } else {
        bits = sign;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Q4_1, 20 bytes: d, m (fp16), 16 bytes of nibbles (byte j: q[j] low, q[j + 16] high); w = d * q + m. */
static void decode_q4_1(const uint8_t *row, size_t b, int8_t q[QK], float d[2], float *m) {
    const uint8_t *blk = row + b * 20;
    d[0] = half_to_float(blk);
    *m = half_to_float(blk + 2);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(blk[4 + j] & 15);
        q[j + 16] = (int8_t)(blk[4 + j] >> 4);
    }
}

/* Q8_0, 34 bytes: d (fp16), 32 int8; w = d * q. */
static void decode_q8_0(const uint8_t *row, size_t b, int8_t q[QK], float d[2], float *m) {
    const uint8_t *blk = row + b * 34;
    d[0] = half_to_float(blk);
    memcpy(q, blk + 2, QK);
    (void)m;
}

/* Q5_0, 22 bytes: d (fp16), 32 high bits, 16 bytes of low nibbles as Q4_1; w = d * (q - 16). */
static void decode_q5_0(const uint8_t *row, size_t b, int8_t q[QK], float d[2], float *m) {
    const uint8_t *blk = row + b * 22;
    uint32_t qh = (uint32_t)blk[2] | (uint32_t)blk[3] << 8 | (uint32_t)blk[4] << 16 | (uint32_t)blk[5] << 24;
    d[0] = half_to_float(blk);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((blk[6 + j] & 15) | (((qh >> j) << 4) & 16)) - 16);
        q[j + 16] = (int8_t)(((blk[6 + j] >> 4) | ((qh >> (j + 12)) & 16)) - 16);
    }
    (void)m;
}

/* Q4_K, 144 bytes per 256: d, dmin (fp16), eight 6-bit scales and mins in 12 bytes, 128 bytes of
 * nibbles (32 bytes per pair of sub-blocks: the even one low, the odd one high);
 * w = (d * sc) * q - dmin * mn per sub-block of 32. */
static void decode_q4_k(const uint8_t *row, size_t b, int8_t q[QK], float d[2], float *m) {
    const uint8_t *blk = row + (b / 8) * 144, *sc = blk + 4, *qs = blk + 16 + 32 * ((b % 8) / 2);
    int s = (int)(b % 8), scale, min;
    if (s < 4) {
        scale = sc[s] & 63;
        min = sc[s + 4] & 63;
    } else {
        scale = (sc[s + 4] & 15) | ((sc[s - 4] >> 6) << 4);
        min = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
    }
    d[0] = half_to_float(blk) * (float)scale;
    *m = -(half_to_float(blk + 2) * (float)min);
    for (int j = 0; j < QK; j++) q[j] = (int8_t)(s % 2 ? qs[j] >> 4 : qs[j] & 15);
}

/* Q6_K, 210 bytes per 256: 128 bytes of low nibbles, 64 of high bit pairs, sixteen int8 scales,
 * d (fp16); w = (d * scale) * (q - 32) per group of 16. */
static void decode_q6_k(const uint8_t *row, size_t b, int8_t q[QK], float d[2], float *m) {
    const uint8_t *blk = row + (b / 8) * 210;
    int half = (int)(b % 8) / 4, t = (int)(b % 8) % 4;
    const uint8_t *ql = blk + 64 * half + 32 * (t & 1), *qh = blk + 128 + 32 * half;
    const int8_t *sc = (const int8_t *)(blk + 192) + 8 * half + 2 * t;
    float dd = half_to_float(blk + 208);
    for (int l = 0; l < QK; l++) {
        int lo = t < 2 ? ql[l] & 15 : ql[l] >> 4;
        q[l] = (int8_t)((lo | (((qh[l] >> (2 * t)) & 3) << 4)) - 32);
    }
    d[0] = dd * (float)sc[0];
    d[1] = dd * (float)sc[1];
    (void)m;
}

static const struct format FORMATS[] = {
    {"Q4_1", 32, 20, 4, 1, 1, decode_q4_1},
    {"Q8_0", 32, 34, 8, 1, 0, decode_q8_0},
    {"Q5_0", 32, 22, 8, 1, 0, decode_q5_0},
    {"Q4_K", 256, 144, 4, 1, 0, decode_q4_k},
    {"Q6_K", 256, 210, 8, 2, 0, decode_q6_k},
};

const struct format *format_named(const char *name) {
    for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++)
        if (!strcmp(FORMATS[i].name, name)) return &FORMATS[i];
    return NULL;
}

static char FORMAT_LIST[64];

/* Written once when the library is loaded, before any caller can read it. */
__attribute__((constructor)) static void list_formats(void) {
    for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++)
        snprintf(FORMAT_LIST + strlen(FORMAT_LIST), sizeof FORMAT_LIST - strlen(FORMAT_LIST), "%s%s", i ? "," : "",
                 FORMATS[i].name);
}

const char *format_list(void) { return FORMAT_LIST; }

const struct layout *layout_for(const struct format *f) {
    if (f->bits == 4) return f->half ? &LAYOUT4_HALF : &LAYOUT4;
    return f->groups == 2 ? &LAYOUT8_G2 : &LAYOUT8_G1;
}
