/* The custom op GroupAttention in the domain "playground.kernels": causal grouped-query attention
 * over a KV cache, with rotary embedding, taking the inputs, attributes and outputs of ONNX Runtime's
 * GroupQueryAttention (com.microsoft) as the model build emits it, and computing what it computes:
 *
 *   inputs   0 query [B, S, (H + 2 Hkv) D] packed q/k/v, or [B, S, H D] with 1 key and 2 value
 *              [B, S, Hkv D]; 3 past_key, 4 past_value [B, Hkv, P, D] (optional); 5 seqlens_k int32
 *              [B] (a row's tokens so far - 1); 6 total_sequence_length int32 [1]; 7 cos_cache,
 *              8 sin_cache [positions, R / 2] (R <= D dimensions rotated); 9 position_ids int64 [B, S]
 *              (optional: else the row's own positions)
 *   outputs  0 [B, S, H D]; 1 present_key, 2 present_value [B, Hkv, max(P, total), D]
 *   attrs    num_heads H, kv_num_heads Hkv, scale (0: 1 / sqrt(D)), local_window_size (-1: none; W:
 *            the W positions ending at the query's own), do_rotary (0 or 1); rotary_interleaved,
 *            softcap and smooth_softmax must be absent or 0 (refused otherwise).
 *
 * A call is a first prompt when S equals total_sequence_length: every row's past is empty and row
 * b's queries past seqlens_k[b] + 1 are padding (their outputs are 0); otherwise row b holds
 * seqlens_k[b] + 1 - S earlier positions and all S queries are its own. The new keys (rotated) and
 * values go to positions past .. past + S of the row's cache; when present and past are one buffer
 * (the engine binds them so) they are written in place, else the present buffers are the past's
 * rows followed by them, zero beyond.
 *
 * Where ONNX Runtime's kernel runs two GEMMs over every head of the batch and a softmax between
 * them, each (row, query head, chunk of queries) here is one work item on ONNX Runtime's intra-op
 * threads: its query's scores against the row's keys, their softmax and the values' mix, the row's
 * keys and values read straight from the cache (attend.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "op_info.h"

#define OP "GroupAttention"

enum { QUERY, KEY, VALUE, PAST_KEY, PAST_VALUE, SEQLENS, TOTAL, COS, SIN, POSITIONS, INPUTS };
enum { OUTPUT, PRESENT_KEY, PRESENT_VALUE, OUTPUTS };
/* Heads of up to MAX_HEAD floats, query heads per kv head up to MAX_GROUP; a work item takes up to
 * QUERY_CHUNK tokens and its keys and values in tiles of about TILE_BYTES (an L1 cache's share);
 * its rotated queries and scores live on the stack up to STACK_FLOATS. */
enum { MAX_HEAD = 1024, MAX_GROUP = 32, QUERY_CHUNK = 16, TILE_BYTES = 16384, STACK_FLOATS = 8192 };

struct attention {
    const OrtApi *api;
    int64_t heads, kv_heads, window;
    float scale; /* 0: 1 / sqrt(D), known at the first call */
    int rotary, isa;
    char node[160];
};

static OrtStatus *create(const OrtCustomOp *op, const OrtApi *api, const OrtKernelInfo *info, void **out) {
    (void)op;
    char node[160], why[200];
    op_node_name(api, info, node, sizeof node);
    int64_t heads, kv_heads, window = -1, rotary = 0, off;
    float scale = 0.0f, zero;
    if (op_int_attr(api, info, "num_heads", &heads) || op_int_attr(api, info, "kv_num_heads", &kv_heads))
        return op_refuse(api, OP, node, "needs int attributes 'num_heads' and 'kv_num_heads'");
    if (heads < 1 || kv_heads < 1 || heads > 4096 || heads % kv_heads || heads / kv_heads > MAX_GROUP)
        return op_refuse(api, OP, node,
                         "num_heads=%lld must be a positive multiple of kv_num_heads=%lld, at most 4096 and %d times it",
                         (long long)heads, (long long)kv_heads, MAX_GROUP);
    (void)op_float_attr(api, info, "scale", &scale);
    if (!(scale >= 0.0f) || isinf(scale)) return op_refuse(api, OP, node, "scale=%g must be finite and >= 0", (double)scale);
    (void)op_int_attr(api, info, "local_window_size", &window);
    (void)op_int_attr(api, info, "do_rotary", &rotary);
    if (rotary != 0 && rotary != 1) return op_refuse(api, OP, node, "do_rotary=%lld must be 0 or 1", (long long)rotary);
    if (!op_int_attr(api, info, "rotary_interleaved", &off) && off)
        return op_refuse(api, OP, node, "rotary_interleaved=1 is not supported (the halves' rotation only)");
    if (!op_int_attr(api, info, "smooth_softmax", &off) && off)
        return op_refuse(api, OP, node, "smooth_softmax=1 is not supported");
    if (!op_float_attr(api, info, "softcap", &zero) && zero != 0.0f)
        return op_refuse(api, OP, node, "softcap=%g is not supported (0 only)", (double)zero);

    static const ONNXTensorElementDataType wanted[INPUTS] = {
        ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
        ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
        ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
        ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64};
    static const char *const names[INPUTS] = {"query", "key", "value", "past_key", "past_value", "seqlens_k",
                                              "total_sequence_length", "cos_cache", "sin_cache", "position_ids"};
    size_t count = 0;
    OrtStatus *st = api->KernelInfo_GetInputCount(info, &count);
    if (st) {
        api->ReleaseStatus(st);
        count = 0;
    }
    if (count <= TOTAL) return op_refuse(api, OP, node, "needs at least 7 inputs (query .. total_sequence_length); it has %zu", count);
    if (rotary && count <= SIN) return op_refuse(api, OP, node, "do_rotary=1 needs cos_cache and sin_cache (inputs 7, 8)");
    for (size_t i = 0; i < count && i < INPUTS; i++) {
        ONNXTensorElementDataType type;
        int64_t last;
        size_t rank;
        if ((st = op_input_type(api, info, i, &type, &last, &rank))) { /* an omitted optional input */
            api->ReleaseStatus(st);
            continue;
        }
        if (type != wanted[i])
            return op_refuse(api, OP, node, "input %s is %s; it must be %s", names[i], op_type_name(type),
                             op_type_name(wanted[i]));
    }
    int isa = isa_select(why, sizeof why);
    if (isa < 0) return op_refuse(api, OP, node, "%s", why);

    struct attention *k = calloc(1, sizeof *k);
    if (!k) return op_refuse(api, OP, node, "out of memory");
    *k = (struct attention){.api = api, .heads = heads, .kv_heads = kv_heads, .window = window, .scale = scale,
                            .rotary = (int)rotary, .isa = isa};
    memcpy(k->node, node, sizeof node);
    *out = k;
    return NULL;
}

/* One call's shapes and buffers, shared by its work items. */
struct call {
    const struct attention *k;
    const struct attend_ops *ops;
    size_t B, S, H, Hkv, G, D, width; /* width: floats of one token's query input row */
    size_t present, half, positions;  /* present buffer length; rotated pairs; rotary table rows */
    int packed, first;
    float scale;
    const float *q, *cos, *sin;
    const int32_t *seqlens;
    const int64_t *position_ids;
    float *out, *keys, *values; /* [B, S, H D]; present [B, Hkv, present, D] each */
    size_t chunks;              /* per (row, head group): items of up to QUERY_CHUNK queries */
    size_t item_heads;          /* heads an item takes: 1 at decode (S = 1), else a kv head's group */
};

static size_t past_of(const struct call *c, size_t b) {
    return c->first ? 0 : (size_t)c->seqlens[b] + 1 - c->S;
}

static int64_t position_of(const struct call *c, size_t b, size_t s) {
    return c->position_ids ? c->position_ids[b * c->S + s] : (int64_t)(past_of(c, b) + s);
}

/* y = x rotated for `position` (the first 2 * half dimensions: pairs (i, i + half)); the rest copied. */
static void rotate(const struct call *c, const float *x, int64_t position, float *y) {
    size_t h = c->k->rotary ? c->half : 0;
    const float *cs = c->cos + (size_t)position * c->half, *sn = c->sin + (size_t)position * c->half;
    for (size_t i = 0; i < h; i++) {
        float x1 = x[i], x2 = x[i + h];
        y[i] = x1 * cs[i] - x2 * sn[i];
        y[i + h] = x2 * cs[i] + x1 * sn[i];
    }
    memcpy(y + 2 * h, x + 2 * h, (c->D - 2 * h) * sizeof(float));
}

static const float *query_at(const struct call *c, size_t b, size_t s, size_t head) {
    return c->q + (b * c->S + s) * c->width + head * c->D;
}

/* Token s of row b's new key and value for kv head j: in the packed input, or the separate ones. */
static void new_kv(const struct call *c, const float *key_in, const float *value_in, size_t b, size_t s, size_t j,
                   const float **key, const float **value) {
    if (c->packed) {
        *key = query_at(c, b, s, c->H + j);
        *value = query_at(c, b, s, c->H + c->Hkv + j);
    } else {
        size_t at = ((b * c->S + s) * c->Hkv + j) * c->D;
        *key = key_in + at;
        *value = value_in + at;
    }
}

/* One query of a work item: its token and head, where its output goes and the keys it attends to,
 * [first, end). */
struct query {
    size_t s, head;
    float *out;
    size_t first, end;
};

/* The query's keys within the tile [t0, t0 + tile): [*j0, *j1) (empty when j0 >= j1). */
static void keys_in_tile(const struct query *q, size_t t0, size_t tile, size_t *j0, size_t *j1) {
    *j0 = t0 > q->first ? t0 : q->first;
    *j1 = t0 + tile < q->end ? t0 + tile : q->end;
}

/* Query r's keys within the tile [t0, t0 + tile) into [*j0, *j1); returns how many queries from r on
 * (up to ROWS) have the same ones and the same start of their sums (the attend_ops take them at once). */
static size_t alike(const struct query *queries, size_t r, size_t R, size_t t0, size_t tile, size_t *j0, size_t *j1) {
    const struct query *q = &queries[r];
    keys_in_tile(q, t0, tile, j0, j1);
    size_t g = 1;
    for (; g < ROWS && r + g < R; g++) {
        const struct query *o = &queries[r + g];
        size_t o0, o1;
        keys_in_tile(o, t0, tile, &o0, &o1);
        if (o0 != *j0 || o1 != *j1 || (o0 > o->first) != (*j0 > q->first)) break;
    }
    return g;
}

/* A work item: row b's queries [s0, s1) of heads [h0, h0 + heads) (one head at decode, a kv head's
 * group when a call brings several tokens: then each tile of keys and values, read once into the
 * cache, serves all of the item's queries). Every query's keys are taken tile by tile in the same
 * order, so a query's output is the same, bit for bit, whatever the item it is computed in. */
static void run_item(void *data, size_t item) {
    const struct call *c = data;
    size_t groups = c->H / c->item_heads, per_row = groups * c->chunks, b = item / per_row;
    size_t h0 = item % per_row / c->chunks * c->item_heads, chunk = c->chunks - 1 - item % c->chunks; /* longest first */
    size_t s0 = chunk * QUERY_CHUNK, s1 = s0 + QUERY_CHUNK < c->S ? s0 + QUERY_CHUNK : c->S;
    size_t D = c->D, past = past_of(c, b), length = (size_t)c->seqlens[b] + 1, j = h0 / c->G;
    const float *keys = c->keys + (b * c->Hkv + j) * c->present * D, *values = c->values + (b * c->Hkv + j) * c->present * D;
    struct query queries[QUERY_CHUNK * MAX_GROUP];
    size_t R = 0, u0 = (size_t)-1, u1 = 0;
    for (size_t s = s0; s < s1; s++)
        for (size_t h = h0; h < h0 + c->item_heads; h++) {
            float *out = c->out + ((b * c->S + s) * c->H + h) * D;
            if (c->first && s >= length) { /* a padding query of a shorter row */
                memset(out, 0, D * sizeof(float));
                continue;
            }
            size_t end = past + s + 1, window = (size_t)c->k->window;
            size_t first = c->k->window > 0 && end > window ? end - window : 0;
            queries[R++] = (struct query){s, h, out, first, end};
            u0 = first < u0 ? first : u0;
            u1 = end > u1 ? end : u1;
        }
    if (!R) return;
    size_t span = u1 - u0, floats = R * (D + span);
    float stack[STACK_FLOATS], *heap = floats > STACK_FLOATS ? malloc(floats * sizeof(float)) : NULL;
    float *rotated = heap ? heap : stack, *scores = rotated + R * D;
    if (floats > STACK_FLOATS && !heap) { /* no memory to compute with: NaN rather than a wrong number */
        for (size_t r = 0; r < R; r++)
            for (size_t d = 0; d < D; d++) queries[r].out[d] = NAN;
        return;
    }
    for (size_t r = 0; r < R; r++)
        rotate(c, query_at(c, b, queries[r].s, queries[r].head), position_of(c, b, queries[r].s), rotated + D * r);
    size_t tile = D * sizeof(float) >= TILE_BYTES ? 1 : TILE_BYTES / (D * sizeof(float));
    for (size_t t0 = u0; t0 < u1; t0 += tile)
        for (size_t r = 0, g; r < R; r += g) {
            size_t j0, j1;
            g = alike(queries, r, R, t0, tile, &j0, &j1);
            if (j0 < j1) c->ops->scores(rotated + r * D, g, D, keys + j0 * D, j1 - j0, D, c->scale, scores + r * span + j0 - u0, span);
        }
    for (size_t r = 0; r < R; r++) c->ops->softmax(scores + r * span + queries[r].first - u0, queries[r].end - queries[r].first);
    for (size_t t0 = u0; t0 < u1; t0 += tile)
        for (size_t r = 0, g; r < R; r += g) {
            size_t j0, j1;
            g = alike(queries, r, R, t0, tile, &j0, &j1);
            float *outs[ROWS];
            for (size_t i = 0; i < g; i++) outs[i] = queries[r + i].out;
            if (j0 < j1) c->ops->mix(scores + r * span + j0 - u0, span, g, values + j0 * D, j1 - j0, D, outs, j0 > queries[r].first);
        }
    free(heap);
}

static OrtStatus *compute(void *kernel, OrtKernelContext *ctx) {
    const struct attention *k = kernel;
    const OrtApi *api = k->api;
    const char *node = k->node;
    const OrtValue *in[INPUTS] = {0};
    size_t count = 0;
    OrtStatus *st = api->KernelContext_GetInputCount(ctx, &count);
    if (st) return st;
    for (size_t i = 0; i < count && i < INPUTS; i++)
        if ((st = api->KernelContext_GetInput(ctx, i, &in[i]))) return st;

    int64_t qd[8], kd[8], vd[8], pkd[8], pvd[8], sd[8], td[8], cd[8], snd[8], pd[8];
    size_t qr, kr, vr, pkr, pvr, sr, tr, cr, snr, pr;
    if ((st = op_value_dims(api, in[QUERY], qd, 8, &qr))) return st;
    if (qr != 3) return op_refuse(api, OP, node, "query has rank %zu; it must be [batch, sequence, hidden]", qr);
    struct call c = {.k = k, .B = (size_t)qd[0], .S = (size_t)qd[1], .width = (size_t)qd[2],
                     .H = (size_t)k->heads, .Hkv = (size_t)k->kv_heads, .G = (size_t)(k->heads / k->kv_heads)};
    c.packed = in[KEY] == NULL;
    if (c.packed != (in[VALUE] == NULL)) return op_refuse(api, OP, node, "key and value must both be given or both omitted");
    size_t parts = c.packed ? c.H + 2 * c.Hkv : c.H;
    if (c.width % parts || c.width == 0)
        return op_refuse(api, OP, node, "query's last dimension %zu is not %s heads of one size", c.width,
                         c.packed ? "num_heads + 2 kv_num_heads" : "num_heads");
    c.D = c.width / parts;
    if (c.D > MAX_HEAD) return op_refuse(api, OP, node, "heads of %zu floats (at most %d)", c.D, MAX_HEAD);
    if (!c.packed) {
        if ((st = op_value_dims(api, in[KEY], kd, 8, &kr)) || (st = op_value_dims(api, in[VALUE], vd, 8, &vr))) return st;
        for (int i = 0; i < 2; i++) {
            const int64_t *d = i ? vd : kd;
            if ((i ? vr : kr) != 3 || (size_t)d[0] != c.B || (size_t)d[1] != c.S || (size_t)d[2] != c.Hkv * c.D)
                return op_refuse(api, OP, node, "%s must be [%zu, %zu, %zu]", i ? "value" : "key", c.B, c.S, c.Hkv * c.D);
        }
    }
    size_t P = 0;
    if ((in[PAST_KEY] == NULL) != (in[PAST_VALUE] == NULL))
        return op_refuse(api, OP, node, "past_key and past_value must both be given or both omitted");
    if (in[PAST_KEY]) {
        if ((st = op_value_dims(api, in[PAST_KEY], pkd, 8, &pkr)) || (st = op_value_dims(api, in[PAST_VALUE], pvd, 8, &pvr)))
            return st;
        if (pkr != 4 || pvr != 4 || memcmp(pkd, pvd, sizeof(int64_t) * 4) || (size_t)pkd[0] != c.B ||
            (size_t)pkd[1] != c.Hkv || (size_t)pkd[3] != c.D)
            return op_refuse(api, OP, node, "past_key and past_value must both be [%zu, %zu, past, %zu]", c.B, c.Hkv, c.D);
        P = (size_t)pkd[2];
    }
    if ((st = op_value_dims(api, in[SEQLENS], sd, 8, &sr)) || (st = op_value_dims(api, in[TOTAL], td, 8, &tr))) return st;
    if (sr != 1 || (size_t)sd[0] != c.B) return op_refuse(api, OP, node, "seqlens_k must be [%zu]", c.B);
    if (tr > 1 || (tr == 1 && td[0] != 1)) return op_refuse(api, OP, node, "total_sequence_length must hold one value");
    const int32_t *total_p;
    if ((st = api->GetTensorMutableData((OrtValue *)in[TOTAL], (void **)&total_p))) return st;
    if ((st = api->GetTensorMutableData((OrtValue *)in[SEQLENS], (void **)&c.seqlens))) return st;
    if ((st = api->GetTensorMutableData((OrtValue *)in[QUERY], (void **)&c.q))) return st;
    int64_t total = *total_p;
    if (total < 1 || (size_t)total < c.S)
        return op_refuse(api, OP, node, "total_sequence_length %lld is under the %zu new tokens", (long long)total, c.S);
    c.first = (size_t)total == c.S;
    c.present = P > (size_t)total ? P : (size_t)total;
    if (k->rotary) {
        if (!in[COS] || !in[SIN]) return op_refuse(api, OP, node, "do_rotary=1 needs cos_cache and sin_cache");
        if ((st = op_value_dims(api, in[COS], cd, 8, &cr)) || (st = op_value_dims(api, in[SIN], snd, 8, &snr))) return st;
        if (cr != 2 || snr != 2 || cd[0] != snd[0] || cd[1] != snd[1] || cd[1] < 1 || (size_t)cd[1] * 2 > c.D)
            return op_refuse(api, OP, node, "cos_cache and sin_cache must both be [positions, rotated / 2] with rotated <= %zu", c.D);
        c.positions = (size_t)cd[0];
        c.half = (size_t)cd[1];
        if ((st = api->GetTensorMutableData((OrtValue *)in[COS], (void **)&c.cos))) return st;
        if ((st = api->GetTensorMutableData((OrtValue *)in[SIN], (void **)&c.sin))) return st;
    }
    if (count > POSITIONS && in[POSITIONS]) {
        if ((st = op_value_dims(api, in[POSITIONS], pd, 8, &pr))) return st;
        if (pr != 2 || (size_t)pd[0] != c.B || (size_t)pd[1] != c.S)
            return op_refuse(api, OP, node, "position_ids must be [%zu, %zu]", c.B, c.S);
        if ((st = api->GetTensorMutableData((OrtValue *)in[POSITIONS], (void **)&c.position_ids))) return st;
    }
    /* Every row's lengths and positions, checked before anything is written. */
    for (size_t b = 0; b < c.B; b++) {
        int64_t length = (int64_t)c.seqlens[b] + 1;
        if (length < 1 || length > total || (!c.first && (size_t)length < c.S))
            return op_refuse(api, OP, node, "row %zu: seqlens_k %d does not fit %zu new tokens of %lld in all", b,
                             c.seqlens[b], c.S, (long long)total);
        if (!c.first && past_of(&c, b) > P)
            return op_refuse(api, OP, node, "row %zu: %zu past positions but past_key holds %zu", b, past_of(&c, b), P);
        for (size_t s = 0; k->rotary && s < c.S; s++) {
            int64_t position = position_of(&c, b, s);
            if (position < 0 || (size_t)position >= c.positions)
                return op_refuse(api, OP, node, "row %zu, token %zu: position %lld is outside the rotary tables' %zu", b, s,
                                 (long long)position, c.positions);
        }
    }

    int64_t od[3] = {(int64_t)c.B, (int64_t)c.S, (int64_t)(c.H * c.D)};
    int64_t kvd[4] = {(int64_t)c.B, (int64_t)c.Hkv, (int64_t)c.present, (int64_t)c.D};
    OrtValue *ov = NULL, *kv = NULL, *vv = NULL;
    if ((st = api->KernelContext_GetOutput(ctx, OUTPUT, od, 3, &ov))) return st;
    if ((st = api->KernelContext_GetOutput(ctx, PRESENT_KEY, kvd, 4, &kv))) return st;
    if ((st = api->KernelContext_GetOutput(ctx, PRESENT_VALUE, kvd, 4, &vv))) return st;
    if ((st = api->GetTensorMutableData(ov, (void **)&c.out))) return st;
    if ((st = api->GetTensorMutableData(kv, (void **)&c.keys))) return st;
    if ((st = api->GetTensorMutableData(vv, (void **)&c.values))) return st;
    if (c.B == 0 || c.S == 0) return NULL;
    const float *past_keys = NULL, *past_values = NULL, *key_in = NULL, *value_in = NULL;
    if (in[PAST_KEY]) {
        if ((st = api->GetTensorMutableData((OrtValue *)in[PAST_KEY], (void **)&past_keys))) return st;
        if ((st = api->GetTensorMutableData((OrtValue *)in[PAST_VALUE], (void **)&past_values))) return st;
    }
    if (!c.packed) {
        if ((st = api->GetTensorMutableData((OrtValue *)in[KEY], (void **)&key_in))) return st;
        if ((st = api->GetTensorMutableData((OrtValue *)in[VALUE], (void **)&value_in))) return st;
    }
    c.scale = k->scale != 0.0f ? k->scale : 1.0f / sqrtf((float)c.D);
    c.ops = attend_ops_for(k->isa, c.D);

    /* The cache: the past rows copied where present is a buffer of its own, then each row's new keys
     * (rotated) and values after its past. */
    int shared = past_keys == c.keys && past_values == c.values;
    size_t D = c.D, row = c.present * D;
    for (size_t b = 0; b < c.B; b++)
        for (size_t j = 0; j < c.Hkv; j++) {
            float *keys = c.keys + (b * c.Hkv + j) * row, *values = c.values + (b * c.Hkv + j) * row;
            size_t past = past_of(&c, b);
            if (!shared) {
                memset(keys, 0, row * sizeof(float));
                memset(values, 0, row * sizeof(float));
                if (past_keys && past) {
                    memcpy(keys, past_keys + (b * c.Hkv + j) * P * D, past * D * sizeof(float));
                    memcpy(values, past_values + (b * c.Hkv + j) * P * D, past * D * sizeof(float));
                }
            }
            for (size_t s = 0; s < c.S; s++) {
                const float *key, *value;
                new_kv(&c, key_in, value_in, b, s, j, &key, &value);
                rotate(&c, key, position_of(&c, b, s), keys + (past + s) * D);
                memcpy(values + (past + s) * D, value, D * sizeof(float));
            }
        }

    c.chunks = (c.S + QUERY_CHUNK - 1) / QUERY_CHUNK;
    c.item_heads = c.S == 1 ? 1 : c.G;
    size_t items = c.B * (c.H / c.item_heads) * c.chunks;
    /* A prompt's items grow with their tokens' positions: one batch each, handed out as threads free up. */
    st = api->KernelContext_ParallelFor(ctx, run_item, items, 0, &c);
    if (st) { /* no thread pool to be had: run the items here */
        api->ReleaseStatus(st);
        for (size_t i = 0; i < items; i++) run_item(&c, i);
    }
    return NULL;
}

static void destroy(void *kernel) { free(kernel); }

static const char *op_name(const OrtCustomOp *op) { (void)op; return OP; }
static size_t input_count(const OrtCustomOp *op) { (void)op; return INPUTS; }
static size_t output_count(const OrtCustomOp *op) { (void)op; return OUTPUTS; }
static OrtCustomOpInputOutputCharacteristic input_need(const OrtCustomOp *op, size_t i) {
    (void)op;
    return i == QUERY || i == SEQLENS || i == TOTAL ? INPUT_OUTPUT_REQUIRED : INPUT_OUTPUT_OPTIONAL;
}

const OrtCustomOp GROUP_ATTENTION = {
    OP_COMMON_CALLBACKS,
    .GetName = op_name,
    .GetInputType = op_any_type,
    .GetInputTypeCount = input_count,
    .GetOutputType = op_float_type,
    .GetOutputTypeCount = output_count,
    .KernelDestroy = destroy,
    .GetInputCharacteristic = input_need,
    .GetOutputCharacteristic = op_required,
    .CreateKernelV2 = create,
    .KernelComputeV2 = compute,
};
