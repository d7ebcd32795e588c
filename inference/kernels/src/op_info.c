/* The ops' shared dealings with ONNX Runtime's C API (op_info.h). */
#include "op_info.h"

#include <stdarg.h>
#include <stdio.h>

OrtStatus *op_refuse(const OrtApi *api, const char *op, const char *node, const char *fmt, ...) {
    char msg[512];
    int n = snprintf(msg, sizeof msg, "%s node '%s': ", op, node);
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, args);
    va_end(args);
    return api->CreateStatus(ORT_INVALID_ARGUMENT, msg);
}

void op_node_name(const OrtApi *api, const OrtKernelInfo *info, char *buf, size_t size) {
    size_t needed = size;
    OrtStatus *st = api->KernelInfo_GetNodeName(info, buf, &needed);
    if (st) api->ReleaseStatus(st);
    if (st || !buf[0]) snprintf(buf, size, "(unnamed)");
}

int op_string_attr(const OrtApi *api, const OrtKernelInfo *info, const char *name, char *buf, size_t size) {
    size_t needed = 0;
    OrtStatus *st = api->KernelInfoGetAttribute_string(info, name, NULL, &needed);
    if (st) {
        api->ReleaseStatus(st);
        return -1;
    }
    if (needed > size) return -1;
    st = api->KernelInfoGetAttribute_string(info, name, buf, &needed);
    if (st) {
        api->ReleaseStatus(st);
        return -1;
    }
    return 0;
}

int op_int_attr(const OrtApi *api, const OrtKernelInfo *info, const char *name, int64_t *out) {
    OrtStatus *st = api->KernelInfoGetAttribute_int64(info, name, out);
    if (st) api->ReleaseStatus(st);
    return st ? -1 : 0;
}

int op_float_attr(const OrtApi *api, const OrtKernelInfo *info, const char *name, float *out) {
    OrtStatus *st = api->KernelInfoGetAttribute_float(info, name, out);
    if (st) api->ReleaseStatus(st);
    return st ? -1 : 0;
}

const char *op_type_name(ONNXTensorElementDataType t) {
    switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return "int64";
    default: return "another type";
    }
}

OrtStatus *op_input_type(const OrtApi *api, const OrtKernelInfo *info, size_t index, ONNXTensorElementDataType *type,
                         int64_t *last, size_t *rank) {
    OrtTypeInfo *ti = NULL;
    const OrtTensorTypeAndShapeInfo *tensor = NULL;
    OrtStatus *st = api->KernelInfo_GetInputTypeInfo(info, index, &ti);
    if (!st) st = api->CastTypeInfoToTensorInfo(ti, &tensor);
    if (!st && !tensor) st = api->CreateStatus(ORT_INVALID_ARGUMENT, "not a tensor");
    if (!st) st = api->GetTensorElementType(tensor, type);
    if (!st) st = api->GetDimensionsCount(tensor, rank);
    *last = -1;
    if (!st && *rank > 0 && *rank <= 8) {
        int64_t dims[8];
        st = api->GetDimensions(tensor, dims, *rank);
        if (!st) *last = dims[*rank - 1];
    }
    if (ti) api->ReleaseTypeInfo(ti);
    return st;
}

OrtStatus *op_value_dims(const OrtApi *api, const OrtValue *value, int64_t *dims, size_t max, size_t *rank) {
    OrtTensorTypeAndShapeInfo *shape = NULL;
    OrtStatus *st = api->GetTensorTypeAndShape(value, &shape);
    if (!st) st = api->GetDimensionsCount(shape, rank);
    if (!st && *rank > max) st = api->CreateStatus(ORT_INVALID_ARGUMENT, "a tensor of too many dimensions");
    if (!st) st = api->GetDimensions(shape, dims, *rank);
    if (shape) api->ReleaseTensorTypeAndShapeInfo(shape);
    return st;
}

const char *op_cpu_provider(const OrtCustomOp *op) { (void)op; return "CPUExecutionProvider"; }
OrtMemType op_default_memory(const OrtCustomOp *op, size_t i) { (void)op; (void)i; return OrtMemTypeDefault; }
int op_one(const OrtCustomOp *op) { (void)op; return 1; }
int op_first_version(const OrtCustomOp *op) { (void)op; return 1; }
int op_last_version(const OrtCustomOp *op) { (void)op; return 2147483647; }
size_t op_no_pairs(int **in, int **out) { *in = NULL; *out = NULL; return 0; }
void op_release_pairs(int *in, int *out) { (void)in; (void)out; }
/* Inputs take any type so that kernel creation can refuse a wrong one with its own message. */
ONNXTensorElementDataType op_any_type(const OrtCustomOp *op, size_t i) { (void)op; (void)i; return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED; }
ONNXTensorElementDataType op_float_type(const OrtCustomOp *op, size_t i) { (void)op; (void)i; return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
OrtCustomOpInputOutputCharacteristic op_required(const OrtCustomOp *op, size_t i) { (void)op; (void)i; return INPUT_OUTPUT_REQUIRED; }
