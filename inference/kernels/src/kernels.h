/* The kernel library's shared declarations: the repacked weight layouts, the per-call activations,
 * the ISA paths and the tile kernels each layout provides.
 *
 * Every GGUF format is decoded once, at kernel creation, into one of two layouts ("code widths"):
 *
 *   4-bit (Q4_1, Q4_K): w = d * q + m, q in 0..15, d and m per block of 32 k.
 *   8-bit (Q8_0, Q5_0, Q6_K): w = d * q, q signed int8, d per group of 32 / groups k (groups 1 or 2).
 *
 * Columns are taken TILE = 16 at a time (one SIMD lane per column); a tile's blocks are one
 * sequential stream, block b at tile + b * block_bytes:
 *
 *   4-bit block (320 or 384 bytes): d[16], m[16] as fp16 (Q4_1's own, exactly) or fp32 (Q4_K's
 *        d * scale needs more bits), then uint32 code[4][16]: code[w][j] holds column j's q[4w + i]
 *        in the low nibble of byte i, q[16 + 4w + i] in its high nibble (the GGUF's own order of a
 *        Q4_1 block's bytes).
 *   8-bit block (64 * groups + 512 bytes): float d[groups][16], then the codes: in fast mode
 *        uint32 code[8][16], code[w][j] holding column j's q[4w + i] in byte i (4 k per lane, for
 *        the int8 dot products); in exact mode int8 code[32][16], k-major (one sign extension
 *        gives a register of 16 columns' q of one k).
 *
 * Columns past N in the last tile have zero codes and scales.
 */
#ifndef PLAYGROUND_KERNELS_H
#define PLAYGROUND_KERNELS_H

#include <stddef.h>
#include <stdint.h>

enum { TILE = 16, QK = 32 };

/* How far ahead of the block a kernel computes its weights are asked for (bytes). A tile's blocks,
 * and the tiles of a work item, are one sequential stream; the hardware's prefetcher stops at each
 * 4 KiB page, so without this a decode step (~100 MB of weights, far more than the caches) waits
 * for memory at every page: measured on an AVX-512 Xeon, one thread, a whole step's products
 * (`python -m inference.kernels.bench --step`): exact 12.3 -> 8.5 ms, fast 9.0 -> 7.3 ms at 2 KiB
 * (1 KiB: 9.1 / 7.2, 4 KiB: 9.6 / 7.3). */
enum { PREFETCH_BYTES = 2048 };

/* Ask for the `bytes` bytes PREFETCH_BYTES past p (a block further on in the stream). */
static inline __attribute__((always_inline)) void prefetch_ahead(const uint8_t *p, size_t bytes) {
    for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(p + PREFETCH_BYTES + line, 0, 3);
}

enum isa { ISA_PLAIN, ISA_AVX2, ISA_AVX512, ISA_AVX512VNNI, ISA_COUNT };

/* The activations of one call, prepared once (activations.c) and read by every tile. */
struct acts {
    size_t K, nb;        /* nb = K / 32 blocks per row */
    const float *x;      /* [M, K]: exact mode */
    const float *sums;   /* [M, nb]: exact: sum of x over each block; fast: dx * sum of xq */
    const int8_t *xq;    /* [M, K]: fast: round(x / dx) */
    const float *dx;     /* [M, nb]: fast: max |x| / 127 of each block */
    const int32_t *isum; /* [M, nb * 2]: fast: sum of xq over each half block of 16 */
};

/* One tile's outputs for rows [row0, row0 + rows): y points at row0's column 0 of the tile, rows
 * ldy apart; only the first `cols` (<= 16) columns are written. */
typedef void tile_fn(const uint8_t *tile, const struct acts *a, size_t row0, size_t rows, float *y, size_t ldy,
                     size_t cols);

struct layout {
    int bits;           /* 4 or 8 */
    int half;           /* 4-bit only: d and m stored as fp16 */
    int groups;         /* 8-bit only: scales per block of 32 (1, or 2 for Q6_K's groups of 16) */
    size_t block_bytes; /* bytes of one repacked block of a tile */
    tile_fn *exact[ISA_COUNT];
    tile_fn *fast[ISA_COUNT];
};

/* One GGUF block format: its bytes per block of `block_k` weights and how to read one block of 32. */
struct format {
    const char *name;
    size_t block_k;     /* 32, or 256 for the k-quants */
    size_t block_bytes; /* GGUF bytes per block_k weights */
    int bits;           /* the layout it repacks into: 4 or 8 */
    int groups;         /* 8-bit: scales per 32 */
    int half;           /* 4-bit: every d and m is an fp16 value (stored so: fewer bytes to read) */
    /* Block b (of 32 weights) of one GGUF row: its codes, scale(s) and offset (4-bit only). */
    void (*decode)(const uint8_t *row, size_t b, int8_t q[QK], float d[2], float *m);
};

const struct format *format_named(const char *name);
const char *format_list(void); /* "Q4_1,Q8_0,...": the formats, in order */
const struct layout *layout_for(const struct format *f);
float half_to_float(const uint8_t *p);  /* an fp16 value, little-endian */
uint16_t float_to_half(float f);       /* for a value that is an fp16 value: exact */

/* repack.c: B [N, row_bytes] into packed [tiles][nb][l->block_bytes] (fast: 8-bit codes 4 k a lane). */
void repack(const struct format *f, const struct layout *l, const uint8_t *B, size_t row_bytes, size_t N, size_t nb,
            int fast, uint8_t *packed);

/* activations.c */
void acts_block_sums(const float *x, size_t M, size_t K, float *sums);
void acts_quantize(int isa, const float *x, size_t M, size_t K, int8_t *xq, float *dx, float *sums, int32_t *isum);

/* isa.c: the path kernels created now use (PLAYGROUND_KERNELS_ISA or the best the CPU has);
 * returns -1 and writes why into `why` when the switch names an unknown path or one the CPU lacks. */
int isa_select(char *why, size_t why_size);
int isa_best(void);
const char *isa_name(int isa);

/* The tile kernels, by layout (tile4.c, tile8.c). */
extern const struct layout LAYOUT4, LAYOUT4_HALF, LAYOUT8_G1, LAYOUT8_G2;

#endif
