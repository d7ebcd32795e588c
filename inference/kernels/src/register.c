/* The custom op MatMulGguf in the domain "playground.kernels": Y[..., N] = A[..., K] @ W^T, W the
 * GGUF's blocks in B[N, K / block_k * block_bytes] (attributes: format, mode, K, N).
 *
 * Kernel creation checks everything it can (types, B a constant of the right byte count, the
 * attributes, the ISA switch) and refuses with a message naming the node; it then repacks B into
 * column tiles once (kernels.h). Each call prepares the activations once, then runs the tiles on
 * ONNX Runtime's intra-op threads (KernelContext_ParallelFor). RegisterCustomOps, at the end, puts it and
 * GroupAttention (attention.c) into the domain. */
#define _DEFAULT_SOURCE /* madvise, sysconf's page size */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels.h"
#include "attention.h"
#include "op_info.h"

#define EXPORT __attribute__((visibility("default")))
#define VERSION "1.1.0" /* the ops' contract (their attributes, layouts' numbers): models record it */

/* A work item: up to PANEL rows (a tile's weights are read once per panel) of a run of tiles, at
 * most about ITEMS runs per panel (a few per thread: the pool's hand-out costs per item). */
enum { PANEL = 32, ITEMS = 64 };

struct kernel {
    const OrtApi *api;
    const struct layout *layout;
    tile_fn *tile;
    int fast, isa;
    size_t K, N, nb, tiles;
    uint8_t *packed; /* [tiles][nb][layout->block_bytes], 64-byte aligned */
    char node[160];
};

static OrtStatus *refuse(const OrtApi *api, const char *node, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static OrtStatus *refuse(const OrtApi *api, const char *node, const char *fmt, ...) {
    char msg[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof msg, fmt, args);
    va_end(args);
    return op_refuse(api, "MatMulGguf", node, "%s", msg);
}

/* The repacked weights' memory: in 2 MiB pages where the system gives them (a step streams ~100 MB
 * of weights; with 4 KiB pages every 4 KiB costs a TLB miss: 5-10 % of a step measured), 64-byte
 * aligned whatever it gives. */
static uint8_t *packed_alloc(size_t bytes) {
    enum { HUGE_PAGE = 1 << 21 };
#ifdef MADV_HUGEPAGE
    if (bytes >= HUGE_PAGE) {
        size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        uint8_t *p = aligned_alloc(HUGE_PAGE, rounded);
        if (p) madvise(p, rounded, MADV_HUGEPAGE); /* a hint: refused, the pages are 4 KiB ones */
        return p;
    }
#endif
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

/* B's bytes are read once, by the repack, and never again: their pages are handed back. A model built
 * with its weights beside it (model.onnx.data) has them mapped from the file, so the kernel drops
 * them and the weights are not resident twice; MADV_PAGEOUT keeps any memory's contents (heap pages
 * with no swap stay where they are), so it is safe whatever ONNX Runtime made of the initializer. */
static void page_out(const void *data, size_t bytes) {
#if defined(__linux__)
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 /* Linux 5.4 */
#endif
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = ((uintptr_t)data + page - 1) / page * page, end = ((uintptr_t)data + bytes) / page * page;
    if (end > start) (void)madvise((void *)start, end - start, MADV_PAGEOUT); /* a hint: refused, nothing changes */
#else
    (void)data;
    (void)bytes;
#endif
}

static OrtStatus *create(const OrtCustomOp *op, const OrtApi *api, const OrtKernelInfo *info, void **out) {
    (void)op;
    char node[160] = "?", format[16], mode[16], why[200];
    OrtStatus *st = NULL;
    op_node_name(api, info, node, sizeof node);

    if (op_string_attr(api, info, "format", format, sizeof format))
        return refuse(api, node, "needs a string attribute 'format' (one of %s)", format_list());
    const struct format *f = format_named(format);
    if (!f) return refuse(api, node, "format '%s' is not supported (one of %s)", format, format_list());
    if (op_string_attr(api, info, "mode", mode, sizeof mode) || (strcmp(mode, "exact") && strcmp(mode, "fast")))
        return refuse(api, node, "needs a string attribute 'mode': \"exact\" or \"fast\"");
    int64_t K, N;
    if (op_int_attr(api, info, "K", &K) || op_int_attr(api, info, "N", &N))
        return refuse(api, node, "needs int attributes 'K' and 'N'");
    if (K <= 0 || N <= 0 || K > (1 << 24) || N > (1 << 24))
        return refuse(api, node, "K=%lld and N=%lld must be in 1..16777216", (long long)K, (long long)N);
    if (K % (int64_t)f->block_k)
        return refuse(api, node, "K=%lld is not a multiple of %s's block of %zu", (long long)K, f->name, f->block_k);

    ONNXTensorElementDataType type;
    int64_t last;
    size_t rank;
    if ((st = op_input_type(api, info, 0, &type, &last, &rank))) {
        api->ReleaseStatus(st);
        return refuse(api, node, "input A is not a tensor");
    }
    if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
        return refuse(api, node, "input A is %s; it must be float32", op_type_name(type));
    if (rank == 0) return refuse(api, node, "input A is a scalar; it must be [..., K=%lld]", (long long)K);
    if (last >= 0 && last != K)
        return refuse(api, node, "input A's last dimension is %lld, attribute K is %lld", (long long)last, (long long)K);
    if ((st = op_input_type(api, info, 1, &type, &last, &rank))) {
        api->ReleaseStatus(st);
        return refuse(api, node, "input B is not a tensor");
    }
    if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8)
        return refuse(api, node, "input B is %s; it must be uint8 (the GGUF's block bytes)", op_type_name(type));

    int is_constant = 0;
    const OrtValue *bval = NULL;
    st = api->KernelInfoGetConstantInput_tensor(info, 1, &is_constant, &bval);
    if (st) api->ReleaseStatus(st);
    if (st || !is_constant || !bval) return refuse(api, node, "input B must be a constant initializer");
    OrtTensorTypeAndShapeInfo *bshape = NULL;
    int64_t bdims[2] = {0, 0};
    size_t brank = 0;
    st = api->GetTensorTypeAndShape(bval, &bshape);
    if (!st) st = api->GetDimensionsCount(bshape, &brank);
    if (!st && brank == 2) st = api->GetDimensions(bshape, bdims, 2);
    if (bshape) api->ReleaseTensorTypeAndShapeInfo(bshape);
    if (st) {
        api->ReleaseStatus(st);
        return refuse(api, node, "cannot read input B's shape");
    }
    size_t row_bytes = (size_t)K / f->block_k * f->block_bytes;
    if (brank != 2 || bdims[0] != N || (size_t)bdims[1] != row_bytes)
        return refuse(api, node, "input B must be [N=%lld, %zu] bytes of %s blocks for K=%lld; it is %s[%lld, %lld]",
                      (long long)N, row_bytes, f->name, (long long)K, brank == 2 ? "" : "not 2-D: ",
                      (long long)bdims[0], (long long)bdims[1]);
    void *bdata = NULL;
    if ((st = api->GetTensorMutableData((OrtValue *)bval, &bdata))) {
        api->ReleaseStatus(st);
        return refuse(api, node, "cannot read input B's data");
    }

    int isa = isa_select(why, sizeof why);
    if (isa < 0) return refuse(api, node, "%s", why);

    struct kernel *k = calloc(1, sizeof *k);
    if (!k) return refuse(api, node, "out of memory");
    k->api = api;
    snprintf(k->node, sizeof k->node, "%s", node);
    k->layout = layout_for(f);
    k->fast = !strcmp(mode, "fast");
    k->isa = isa;
    k->tile = k->fast ? k->layout->fast[isa] : k->layout->exact[isa];
    k->K = (size_t)K;
    k->N = (size_t)N;
    k->nb = (size_t)K / QK;
    k->tiles = ((size_t)N + TILE - 1) / TILE;
    size_t bytes = k->tiles * k->nb * k->layout->block_bytes;
    k->packed = packed_alloc(bytes);
    if (!k->packed) {
        free(k);
        return refuse(api, node, "out of memory for %zu bytes of repacked weights", bytes);
    }
    repack(f, k->layout, bdata, row_bytes, k->N, k->nb, k->fast, k->packed);
    page_out(bdata, (size_t)N * row_bytes);
    *out = k;
    return NULL;
}

struct job {
    const struct kernel *k;
    struct acts acts;
    size_t M;
    size_t run, runs; /* tiles per item, items per panel */
    float *y;         /* [M, N] */
};

static void run_item(void *data, size_t item) {
    const struct job *job = data;
    const struct kernel *k = job->k;
    size_t row0 = item / job->runs * PANEL, rows = job->M - row0 < PANEL ? job->M - row0 : PANEL;
    size_t first = item % job->runs * job->run, last = first + job->run < k->tiles ? first + job->run : k->tiles;
    for (size_t t = first; t < last; t++) {
        size_t cols = k->N - t * TILE < TILE ? k->N - t * TILE : TILE;
        k->tile(k->packed + t * k->nb * k->layout->block_bytes, &job->acts, row0, rows,
                job->y + row0 * k->N + t * TILE, k->N, cols);
    }
}

static OrtStatus *compute(void *kernel, OrtKernelContext *ctx) {
    const struct kernel *k = kernel;
    const OrtApi *api = k->api;
    const OrtValue *a = NULL;
    OrtTensorTypeAndShapeInfo *shape = NULL;
    size_t rank = 0;
    int64_t dims[16];
    OrtStatus *st = api->KernelContext_GetInput(ctx, 0, &a);
    if (!st) st = api->GetTensorTypeAndShape(a, &shape);
    if (!st) st = api->GetDimensionsCount(shape, &rank);
    if (!st && (rank == 0 || rank > 16)) st = refuse(api, k->node, "input A has rank %zu (1..16)", rank);
    if (!st) st = api->GetDimensions(shape, dims, rank);
    if (shape) api->ReleaseTensorTypeAndShapeInfo(shape);
    if (st) return st;
    if (dims[rank - 1] != (int64_t)k->K)
        return refuse(api, k->node, "input A's last dimension is %lld, attribute K is %zu", (long long)dims[rank - 1], k->K);
    size_t M = 1;
    for (size_t i = 0; i + 1 < rank; i++) M *= (size_t)dims[i];
    dims[rank - 1] = (int64_t)k->N;
    OrtValue *yval = NULL;
    const float *x = NULL;
    float *y = NULL;
    if ((st = api->KernelContext_GetOutput(ctx, 0, dims, rank, &yval))) return st;
    if (M == 0) return NULL;
    if ((st = api->GetTensorMutableData((OrtValue *)a, (void **)&x))) return st;
    if ((st = api->GetTensorMutableData(yval, (void **)&y))) return st;

    struct job job = {.k = k, .M = M, .y = y, .acts = {.K = k->K, .nb = k->nb, .x = x}};
    void *scratch;
    if (k->fast) {
        scratch = malloc(M * k->K + M * k->nb * (2 * sizeof(float) + 2 * sizeof(int32_t)));
        if (!scratch) return refuse(api, k->node, "out of memory");
        float *dx = scratch, *sums = dx + M * k->nb;
        int32_t *isum = (int32_t *)(sums + M * k->nb);
        int8_t *xq = (int8_t *)(isum + 2 * M * k->nb);
        acts_quantize(k->isa, x, M, k->K, xq, dx, sums, isum);
        job.acts.xq = xq;
        job.acts.dx = dx;
        job.acts.sums = sums;
        job.acts.isum = isum;
    } else {
        scratch = malloc(M * k->nb * sizeof(float));
        if (!scratch) return refuse(api, k->node, "out of memory");
        if (k->layout->bits == 4) acts_block_sums(x, M, k->K, scratch);
        job.acts.sums = scratch;
    }
    job.run = (k->tiles + ITEMS - 1) / ITEMS;
    job.runs = (k->tiles + job.run - 1) / job.run;
    size_t items = job.runs * ((M + PANEL - 1) / PANEL);
    st = api->KernelContext_ParallelFor(ctx, run_item, items, 0, &job);
    if (st) { /* no thread pool to be had: run the items here */
        api->ReleaseStatus(st);
        for (size_t i = 0; i < items; i++) run_item(&job, i);
    }
    free(scratch);
    return NULL;
}

static void destroy(void *kernel) {
    struct kernel *k = kernel;
    if (!k) return;
    free(k->packed);
    free(k);
}

static const char *op_name(const OrtCustomOp *op) { (void)op; return "MatMulGguf"; }
static size_t input_count(const OrtCustomOp *op) { (void)op; return 2; }
static size_t output_count(const OrtCustomOp *op) { (void)op; return 1; }

static const OrtCustomOp MATMUL_GGUF = {
    OP_COMMON_CALLBACKS,
    .GetName = op_name,
    .GetInputType = op_any_type,
    .GetInputTypeCount = input_count,
    .GetOutputType = op_float_type,
    .GetOutputTypeCount = output_count,
    .KernelDestroy = destroy,
    .GetInputCharacteristic = op_required,
    .GetOutputCharacteristic = op_required,
    .CreateKernelV2 = create,
    .KernelComputeV2 = compute,
};

EXPORT OrtStatus *RegisterCustomOps(OrtSessionOptions *options, const OrtApiBase *base) {
    const OrtApi *api = base->GetApi(API_VERSION);
    if (!api) { /* an ONNX Runtime older than 1.21: say so through the oldest API, which every one serves */
        const OrtApi *oldest = base->GetApi(1);
        return oldest ? oldest->CreateStatus(ORT_FAIL, "playground kernels need ONNX Runtime 1.21 or later (C API 21)")
                      : NULL;
    }
    OrtCustomOpDomain *domain = NULL;
    OrtStatus *st = api->CreateCustomOpDomain(OP_DOMAIN, &domain);
    if (!st) st = api->CustomOpDomain_Add(domain, (OrtCustomOp *)&MATMUL_GGUF);
    if (!st) st = api->CustomOpDomain_Add(domain, (OrtCustomOp *)&GROUP_ATTENTION);
    if (!st) st = api->AddCustomOpDomain(options, domain);
    /* The domain must outlive every session made from these options: it is kept for the process. */
    return st;
}

EXPORT const char *playground_kernels_version(void) { return VERSION; }

/* The GGUF formats MatMulGguf computes, comma-separated: "Q4_1,Q8_0,…". */
EXPORT const char *playground_kernels_formats(void) { return format_list(); }

/* The ops the library registers, comma-separated. */
EXPORT const char *playground_kernels_ops(void) { return "MatMulGguf,GroupAttention"; }

EXPORT const char *playground_kernels_isa(void) {
    char why[200];
    int isa = isa_select(why, sizeof why);
    return isa_name(isa < 0 ? isa_best() : isa);
}
