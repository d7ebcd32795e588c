/* What both ops (MatMulGguf, register.c; GroupAttention, attention.c) read from ONNX Runtime the same
 * way: a refusal naming the node, their attributes, their inputs' types, and the parts of an
 * OrtCustomOp that are alike for every op of this library. */
#ifndef PLAYGROUND_OP_INFO_H
#define PLAYGROUND_OP_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "onnxruntime_c_api.h"

#define API_VERSION 21
#define OP_DOMAIN "playground.kernels"

/* ORT_INVALID_ARGUMENT with "<op> node '<node>': <what is wrong>". */
OrtStatus *op_refuse(const OrtApi *api, const char *op, const char *node, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The node's name into buf ("(unnamed)" when it has none). */
void op_node_name(const OrtApi *api, const OrtKernelInfo *info, char *buf, size_t size);

/* An attribute into *out; 0 when present (and, for strings, short enough). */
int op_string_attr(const OrtApi *api, const OrtKernelInfo *info, const char *name, char *buf, size_t size);
int op_int_attr(const OrtApi *api, const OrtKernelInfo *info, const char *name, int64_t *out);
int op_float_attr(const OrtApi *api, const OrtKernelInfo *info, const char *name, float *out);

const char *op_type_name(ONNXTensorElementDataType t);

/* Input `index`'s element type, rank and (when known) last dimension (-1: dynamic or unknown). */
OrtStatus *op_input_type(const OrtApi *api, const OrtKernelInfo *info, size_t index, ONNXTensorElementDataType *type,
                         int64_t *last, size_t *rank);

/* A tensor's shape at a call: its rank (at most `max`) and dimensions. */
OrtStatus *op_value_dims(const OrtApi *api, const OrtValue *value, int64_t *dims, size_t max, size_t *rank);

/* The callbacks every op of the library answers alike (CPU, any version, no in-place pairs). */
const char *op_cpu_provider(const OrtCustomOp *op);
OrtMemType op_default_memory(const OrtCustomOp *op, size_t i);
int op_one(const OrtCustomOp *op);
int op_first_version(const OrtCustomOp *op);
int op_last_version(const OrtCustomOp *op);
size_t op_no_pairs(int **in, int **out);
void op_release_pairs(int *in, int *out);
ONNXTensorElementDataType op_any_type(const OrtCustomOp *op, size_t i);
ONNXTensorElementDataType op_float_type(const OrtCustomOp *op, size_t i);
OrtCustomOpInputOutputCharacteristic op_required(const OrtCustomOp *op, size_t i);

#define OP_COMMON_CALLBACKS                                   \
    .version = API_VERSION, .GetExecutionProviderType = op_cpu_provider, \
    .GetInputMemoryType = op_default_memory, .GetVariadicInputMinArity = op_one,                  \
    .GetVariadicInputHomogeneity = op_one, .GetVariadicOutputMinArity = op_one,                   \
    .GetVariadicOutputHomogeneity = op_one, .GetStartVersion = op_first_version,                  \
    .GetEndVersion = op_last_version, .GetMayInplace = op_no_pairs, .ReleaseMayInplace = op_release_pairs, \
    .GetAliasMap = op_no_pairs, .ReleaseAliasMap = op_release_pairs

#endif
