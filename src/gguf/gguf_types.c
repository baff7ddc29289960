/* Value-type names/sizes and the tensor-type geometry table. */
#include <inttypes.h>

#include "formats/types.h"
#include "gguf/gguf_internal.h"

const char *gguf_vtype_name(gguf_vtype t) {
    switch (t) {
    case GGUF_TYPE_UINT8: return "uint8";
    case GGUF_TYPE_INT8: return "int8";
    case GGUF_TYPE_UINT16: return "uint16";
    case GGUF_TYPE_INT16: return "int16";
    case GGUF_TYPE_UINT32: return "uint32";
    case GGUF_TYPE_INT32: return "int32";
    case GGUF_TYPE_FLOAT32: return "float32";
    case GGUF_TYPE_BOOL: return "bool";
    case GGUF_TYPE_STRING: return "string";
    case GGUF_TYPE_ARRAY: return "array";
    case GGUF_TYPE_UINT64: return "uint64";
    case GGUF_TYPE_INT64: return "int64";
    case GGUF_TYPE_FLOAT64: return "float64";
    default: return "unknown";
    }
}

size_t gguf_vtype_size(gguf_vtype t) {
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

/* ggml's block layouts (ggml-common.h). Ids with no entry were removed from
 * ggml (4, 5, 31-33, 36-38) and are refused like any unknown id. */
typedef struct {
    const char *name;
    int blck;
    int type_size;
} ggml_geometry;

static const ggml_geometry ggml_types[40] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},
    [2] = {"Q4_0", 32, 18},      [3] = {"Q4_1", 32, 20},
    [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},      [9] = {"Q8_1", 32, 36},
    [10] = {"Q2_K", 256, 84},    [11] = {"Q3_K", 256, 110},
    [12] = {"Q4_K", 256, 144},   [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 256, 292},
    [16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
    [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18},   [21] = {"IQ3_S", 256, 110},
    [22] = {"IQ2_S", 256, 82},   [23] = {"IQ4_XS", 256, 136},
    [24] = {"I8", 1, 1},         [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},        [27] = {"I64", 1, 8},
    [28] = {"F64", 1, 8},        [29] = {"IQ1_M", 256, 56},
    [30] = {"BF16", 1, 2},       [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66},   [39] = {"MXFP4", 32, 17},
};

int gguf_type_geometry(uint32_t type, int *blck, uint64_t *type_size) {
    if (type < sizeof ggml_types / sizeof ggml_types[0]) {
        if (!ggml_types[type].name) return 0;
        *blck = ggml_types[type].blck;
        *type_size = (uint64_t)ggml_types[type].type_size;
        return 1;
    }
    if (type >= 1000 && type <= INT32_MAX) {
        const lb_type_traits *t = lb_traits((int)type);
        if (!t || t->blck <= 0 || t->type_size == 0) return 0;
        *blck = t->blck;
        *type_size = (uint64_t)t->type_size;
        return 1;
    }
    return 0;
}

const char *gguf_type_label(uint32_t type) {
    if (type < sizeof ggml_types / sizeof ggml_types[0]) return ggml_types[type].name;
    if (type >= 1000 && type <= INT32_MAX) {
        const lb_type_traits *t = lb_traits((int)type);
        return t ? t->name : NULL;
    }
    return NULL;
}

lb_status gguf_tensor_nbytes(const char *name, uint32_t type, int n_dims, const int64_t *ne,
                             uint64_t *nbytes) {
    int blck;
    uint64_t type_size;
    *nbytes = 0;
    if (!gguf_type_geometry(type, &blck, &type_size))
        return lb_fail(LB_ERR_FORMAT, "tensor '%s' has unknown type %" PRIu32, name, type);
    uint64_t nel = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 0)
            return lb_fail(LB_ERR_FORMAT, "tensor '%s' has negative dimension ne[%d] = %" PRId64,
                           name, d, ne[d]);
        if (!lb_mul_ok(nel, (uint64_t)ne[d], &nel) || nel > (uint64_t)INT64_MAX)
            return lb_fail(LB_ERR_FORMAT, "tensor '%s' element count overflows", name);
    }
    if (ne[0] % blck != 0)
        return lb_fail(LB_ERR_FORMAT,
                       "tensor '%s' row length %" PRId64 " is not a multiple of the %s block size %d",
                       name, ne[0], gguf_type_label(type), blck);
    /* nel is a multiple of blck because ne[0] is. */
    if (!lb_mul_ok(nel / (uint64_t)blck, type_size, nbytes))
        return lb_fail(LB_ERR_FORMAT, "tensor '%s' byte size overflows", name);
    return LB_OK;
}
