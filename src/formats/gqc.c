/* GQ{b}_GC (formats/gqc.h): GPTQ's whole-column groups, scalar reference.
 * The arithmetic is GQ's (formats/gq.c) with one group per row: the same
 * quantizer over K values, and the float operations of GQ{b}_G128's
 * dequantize and dot, so a GC row and its expansion into G128 blocks give
 * the same bits. */
#include <math.h>

#include "formats/gqc.h"

/* as gq.c: products are not fused, so rounding and dequantizing agree */
#include "core/fp_strict.h"

static const struct {
    int type, bits;
    lb_type_traits traits;
} gqc_types[] = {
#define GQC_ENTRY(name, NAME, B)                                                                   \
    {LB_TYPE_##NAME, B, {#NAME, QK_GQ, sizeof(block_##name), 1, LB_TYPE_Q8_0, NULL, NULL, NULL}},
    LB_GQC_LIST(GQC_ENTRY)
#undef GQC_ENTRY
};
static_assert(sizeof gqc_types / sizeof gqc_types[0] == LB_GQC_LAST - LB_GQC_FIRST + 1, "GC ids are contiguous");

static int index_of(int type) {
    if (type < LB_GQC_FIRST || type > LB_GQC_LAST) return -1;
    const int i = type - LB_GQC_FIRST;
    return gqc_types[i].type == type ? i : -1;
}

int lb_gqc_bits(int type) {
    const int i = index_of(type);
    return i < 0 ? 0 : gqc_types[i].bits;
}

int lb_gqc_type(int bits) {
    for (int i = 0; i < (int)(sizeof gqc_types / sizeof gqc_types[0]); i++)
        if (gqc_types[i].bits == bits) return gqc_types[i].type;
    return -1;
}

int lb_gqc_g128(int type) {
    const int b = lb_gqc_bits(type);
    return b ? lb_gq_type(b, QK_GQ) : -1;
}

const lb_type_traits *lb_gqc_traits(int type) {
    const int i = index_of(type);
    return i < 0 ? NULL : &gqc_types[i].traits;
}

/* ---- one row ---- */

void lb_gqc_quantize_row(int type, const float *x, void *codes, int64_t k, int sym, const float *imp, lb_fp16 *s,
                         int *z) {
    const int bits = lb_gqc_bits(type);
    if (!bits) return;
    lb_gq_fit(bits, x, k, imp, sym, s, z);
    const float sf = lb_fp16_to_f32(*s);
    uint8_t *y = codes;
    const size_t bs = LB_GQC_SIZE(bits);
    for (int64_t b = 0; b < k / QK_GQ; b++, y += bs, x += QK_GQ) {
        memset(y, 0, bs);
        for (int j = 0; j < QK_GQ; j++) lb_gq_set_code(y, bits, j, lb_gq_code(x[j], sf, *z, bits));
    }
}

void lb_gqc_dequantize_row(int type, const void *codes, float *y, int64_t k, lb_fp16 s, int z) {
    const int bits = lb_gqc_bits(type);
    const uint8_t *x = codes;
    const float sf = lb_fp16_to_f32(s);
    for (int64_t b = 0; b < k / QK_GQ; b++, x += LB_GQC_SIZE(bits))
        for (int j = 0; j < QK_GQ; j++) *y++ = sf * (float)(lb_gq_get_code(x, bits, j) - z);
}

void lb_gqc_vec_dot_q8_0(int type, int64_t k, float *out, const void *codes, const void *va, lb_fp16 s, int z) {
    const int bits = lb_gqc_bits(type);
    const uint8_t *w = codes;
    const block_q8_0 *a = va;
    const float sf = lb_fp16_to_f32(s);
    float sumf = 0.0f;
    for (int64_t b = 0; b < k / QK_GQ; b++, w += LB_GQC_SIZE(bits))
        for (int c = 0; c < QK_GQ / QK8_0; c++, a++) {
            const float d = lb_fp16_to_f32(a->d);
            int32_t sumi = 0;
            for (int j = 0; j < QK8_0; j++) sumi += (lb_gq_get_code(w, bits, QK8_0 * c + j) - z) * a->qs[j];
            sumf += (sf * d) * (float)sumi; /* as GQ{b}_G128's reference: (s * d) * sum */
        }
    *out = sumf;
}

float lb_gqc_round(int type, void *codes, int64_t col, float x, lb_fp16 s, int z) {
    const int bits = lb_gqc_bits(type);
    const float sf = lb_fp16_to_f32(s);
    const int q = lb_gq_code(x, sf, z, bits);
    lb_gq_set_code((uint8_t *)codes + (size_t)(col / QK_GQ) * LB_GQC_SIZE(bits), bits, (int)(col % QK_GQ), q);
    return sf * (float)(q - z);
}

void lb_gqc_to_g128(int type, const void *codes, lb_fp16 s, int z, void *dst, int64_t k) {
    const int bits = lb_gqc_bits(type);
    const size_t cs = LB_GQC_SIZE(bits), bs = LB_GQ_SIZE(bits, QK_GQ);
    const uint8_t *x = codes;
    uint8_t *y = dst;
    for (int64_t b = 0; b < k / QK_GQ; b++, x += cs, y += bs) {
        memset(y, 0, bs); /* the padding, as the G128 quantizer leaves it */
        memcpy(y, x, cs);
        memcpy(y + LB_GQ_S_OFF(bits), &s, sizeof s);
        y[LB_GQ_Z_OFF(bits, QK_GQ)] = (uint8_t)z;
    }
}
