/* The traits table: the one place that says what each type id is. */
#include <ctype.h>

#include "formats/float.h"
#include "formats/types.h"
#include "formats/kquants.h"
#include "formats/legacy.h"
#include "formats/repack.h"
#include "formats/cb.h"
#include "formats/gq.h"
#include "formats/gc.h"
#include "formats/mx.h"
#include "formats/mxfp4.h"
#include "formats/bcq.h"
#include "formats/abq.h"

static const lb_type_traits traits_f32 = {"F32", 1, 4, 0, LB_TYPE_F32,
    lb_f32_to_float, lb_f32_from_float, lb_vec_dot_f32_ref};
static const lb_type_traits traits_f16 = {"F16", 1, 2, 0, LB_TYPE_F32,
    lb_f16_to_float, lb_f16_from_float, lb_vec_dot_f16_ref};
static const lb_type_traits traits_bf16 = {"BF16", 1, 2, 0, LB_TYPE_F32,
    lb_bf16_to_float, lb_bf16_from_float, lb_vec_dot_bf16_ref};
static const lb_type_traits traits_q8_0 = {"Q8_0", QK8_0, sizeof(block_q8_0), 1, LB_TYPE_Q8_0,
    lb_dequantize_row_q8_0, lb_quantize_row_q8_0_ref, lb_vec_dot_q8_0_q8_0_ref};
static const lb_type_traits traits_q4_0 = {"Q4_0", QK4_0, sizeof(block_q4_0), 1, LB_TYPE_Q8_0,
    lb_dequantize_row_q4_0, lb_quantize_row_q4_0_ref, lb_vec_dot_q4_0_q8_0_ref};

const lb_type_traits *lb_traits(int type) {
    switch (type) {
    case LB_TYPE_F32: return &traits_f32;
    case LB_TYPE_F16: return &traits_f16;
    case LB_TYPE_BF16: return &traits_bf16;
    case LB_TYPE_Q8_0: return &traits_q8_0;
    case LB_TYPE_Q4_0: return &traits_q4_0;
    case LB_TYPE_MXFP4: case LB_TYPE_MXFP4_NL: return lb_mxfp4_traits(type);
    case LB_TYPE_Q4_1:
    case LB_TYPE_Q5_0:
    case LB_TYPE_Q5_1:
    case LB_TYPE_Q8_1: return lb_legacy_traits(type);
    case LB_TYPE_CB2:
    case LB_TYPE_CB3: return lb_cb_traits(type);
    case LB_TYPE_GQ4_G128: case LB_TYPE_GQ4_G64: case LB_TYPE_GQ4_G32: case LB_TYPE_GQ4_G16:
    case LB_TYPE_GQ3_G128: case LB_TYPE_GQ3_G64: case LB_TYPE_GQ3_G32: case LB_TYPE_GQ3_G16:
    case LB_TYPE_GQ2_G128: case LB_TYPE_GQ2_G64: case LB_TYPE_GQ2_G32: case LB_TYPE_GQ2_G16:
        return lb_gq_traits(type);
    case LB_TYPE_MX2: case LB_TYPE_MX4: case LB_TYPE_MX: return lb_mx_traits(type);
    case LB_TYPE_GQ4_GC: case LB_TYPE_GQ3_GC: case LB_TYPE_GQ2_GC: return lb_gqc_traits(type);
    case LB_TYPE_BCQ4_GC: case LB_TYPE_BCQ3_GC: case LB_TYPE_BCQ2_GC: case LB_TYPE_BCQ1_GC: return lb_bcqc_traits(type);
#define BCQ_CASES(name, NAME, Q, G) case LB_TYPE_##NAME: case LB_TYPE_##NAME##_LUT:
    LB_BCQ_LIST(BCQ_CASES)
#undef BCQ_CASES
    case LB_TYPE_Q8_0_LUT4: return lb_bcq_traits(type);
#define ABQ_CASES(name, NAME, Q) case LB_TYPE_##NAME:
    LB_ABQ_LIST(ABQ_CASES)
#undef ABQ_CASES
    case LB_TYPE_ABQ_ACT: return lb_abq_traits(type);
    case LB_TYPE_ABQ_W1_C2: case LB_TYPE_ABQ_W2_C2: case LB_TYPE_ABQ_W3_C4: case LB_TYPE_ABQ_W4_C4:
    case LB_TYPE_ABQ_W2S_C4: return lb_abq_codes_traits(type);
    case LB_TYPE_ABQ_W1_C2X16: case LB_TYPE_ABQ_W2_C2X16: case LB_TYPE_ABQ_W3_C4X16: case LB_TYPE_ABQ_W4_C4X16:
    case LB_TYPE_ABQ_W2S_C4X16: case LB_TYPE_ABQ_W3_C3X16: case LB_TYPE_ABQ_W2S_C3X16: return lb_abq_x16_traits(type);
    default: return type >= 1000 ? lb_repack_traits(type) : lb_kquant_traits(type);
    }
}

const char *lb_type_name(int type) {
    const lb_type_traits *t = lb_traits(type);
    return t ? t->name : NULL;
}

int lb_type_from_name(const char *name) {
    for (int id = 0; id < 2048; id++) {
        const lb_type_traits *t = lb_traits(id);
        if (!t) continue;
        const char *a = t->name, *b = name;
        while (*a && *b && toupper((unsigned char)*a) == toupper((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return id;
    }
    return -1;
}

double lb_type_bits_per_weight(int type) {
    const lb_type_traits *t = lb_traits(type);
    return t ? 8.0 * (double)t->type_size / t->blck : 0.0;
}

int lb_type_fits_row(int type, int64_t ne0) {
    const lb_type_traits *t = lb_traits(type);
    return t && ne0 > 0 && ne0 % t->blck == 0;
}

int lb_type_fallback(int type, int64_t ne0) {
    if (lb_type_fits_row(type, ne0)) return type;
    /* K-quant rows that don't fit 256: llama-quantize's 32-block substitutes
     * (llama-quant.cpp), so a model quantized here mixes types as llama.cpp's does. */
    int sub = -1;
    switch (type) {
    case LB_TYPE_Q2_K: case LB_TYPE_Q3_K: sub = LB_TYPE_IQ4_NL; break;
    case LB_TYPE_IQ4_XS: sub = LB_TYPE_IQ4_NL; break; /* same codebook, blocks of 32 */
    case LB_TYPE_CB2: case LB_TYPE_CB3: sub = LB_TYPE_IQ4_NL; break; /* as Q2_K / Q3_K */
    case LB_TYPE_Q4_K: sub = LB_TYPE_Q5_0; break;
    case LB_TYPE_Q5_K: sub = LB_TYPE_Q5_1; break;
    case LB_TYPE_Q6_K: sub = LB_TYPE_Q8_0; break;
    case LB_TYPE_GQ4_G128: case LB_TYPE_GQ4_G64: case LB_TYPE_GQ4_G32: case LB_TYPE_GQ4_G16:
    case LB_TYPE_GQ3_G128: case LB_TYPE_GQ3_G64: case LB_TYPE_GQ3_G32: case LB_TYPE_GQ3_G16:
    case LB_TYPE_GQ2_G128: case LB_TYPE_GQ2_G64: case LB_TYPE_GQ2_G32: case LB_TYPE_GQ2_G16:
    case LB_TYPE_GQ4_GC: case LB_TYPE_GQ3_GC: case LB_TYPE_GQ2_GC:
        sub = LB_TYPE_Q8_0; break; /* GPTQ's groups: rows not a multiple of 128 keep 8 bits */
#define BCQ_CASES(name, NAME, Q, G) case LB_TYPE_##NAME:
    LB_BCQ_LIST(BCQ_CASES)
#undef BCQ_CASES
    case LB_TYPE_BCQ4_GC: case LB_TYPE_BCQ3_GC: case LB_TYPE_BCQ2_GC: case LB_TYPE_BCQ1_GC:
        sub = LB_TYPE_Q8_0; break; /* BCQ: rows the group does not divide */
#define ABQ_CASES(name, NAME, Q) case LB_TYPE_##NAME:
    LB_ABQ_LIST(ABQ_CASES)
#undef ABQ_CASES
        sub = LB_TYPE_Q8_0; break; /* ABQ: rows 128 does not divide */
    }
    if (sub >= 0) return lb_type_fits_row(sub, ne0) ? sub : LB_TYPE_F16;
    /* Other quantized rows that don't fit: the closest wider type that does. */
    if (lb_traits(type) && lb_traits(type)->is_quantized && lb_type_fits_row(LB_TYPE_Q8_0, ne0))
        return LB_TYPE_Q8_0;
    if (type == LB_TYPE_BF16) return LB_TYPE_BF16;
    return LB_TYPE_F16;
}
