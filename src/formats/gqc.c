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

int lb_gqc_is_side(const char *name, size_t len) {
    const size_t n = sizeof LB_GQC_SFX - 1;
    return len > n && !memcmp(name + len - n, LB_GQC_SFX, n);
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

/* ---- one matrix ---- */

lb_status lb_gqc_view_make(int type, int64_t N, int64_t K, const void *codes, uint64_t codes_bytes, const lb_fp16 *sz,
                           int64_t n_sz, lb_gqc_view **out) {
    *out = NULL;
    const int bits = lb_gqc_bits(type);
    if (!bits) return lb_fail(LB_ERR_ARG, "type %d is not a GC type", type);
    if (N <= 0 || K <= 0 || K % QK_GQ)
        return lb_fail(LB_ERR_SHAPE, "%s matrix of %lld x %lld: rows must be a positive multiple of %d",
                       lb_type_name(type), (long long)N, (long long)K, QK_GQ);
    const size_t row = (size_t)(K / QK_GQ) * LB_GQC_SIZE(bits);
    if (codes_bytes != (uint64_t)row * (uint64_t)N)
        return lb_fail(LB_ERR_SHAPE, "%s codes hold %llu bytes, %lld rows of %lld need %llu", lb_type_name(type),
                       (unsigned long long)codes_bytes, (long long)N, (long long)K,
                       (unsigned long long)((uint64_t)row * (uint64_t)N));
    if (n_sz != 2 * N)
        return lb_fail(LB_ERR_SHAPE, "%s scales and zeros: %lld values, %lld rows need %lld", lb_type_name(type),
                       (long long)n_sz, (long long)N, (long long)(2 * N));
    const float maxq = (float)((1 << bits) - 1);
    for (int64_t n = 0; n < N; n++) {
        const float s = lb_fp16_to_f32(sz[2 * n]), z = lb_fp16_to_f32(sz[2 * n + 1]);
        if (!isfinite(s))
            return lb_fail(LB_ERR_FORMAT, "row %lld's scale is %g, not a finite number", (long long)n, (double)s);
        if (!(z >= 0.0f && z <= maxq && z == floorf(z)))
            return lb_fail(LB_ERR_FORMAT, "row %lld's zero point is %g, not an integer in 0..%d", (long long)n,
                           (double)z, (int)maxq);
    }
    lb_gqc_view *v = lb_malloc_aligned(sizeof *v);
    if (!v) return lb_fail(LB_ERR_NOMEM, "out of memory");
    *v = (lb_gqc_view){type, bits, N, K, row, codes, sz};
    *out = v;
    return LB_OK;
}

void lb_gqc_view_dequantize(const lb_gqc_view *v, float *W) {
    for (int64_t n = 0; n < v->N; n++)
        lb_gqc_dequantize_row(v->type, v->codes + (size_t)n * v->row_size, W + (size_t)n * (size_t)v->K, v->K,
                              v->sz[2 * n], lb_gqc_view_zero(v, n));
}

void lb_gqc_view_to_g128(const lb_gqc_view *v, int64_t n0, int64_t n1, void *dst) {
    const size_t out_row = (size_t)(v->K / QK_GQ) * LB_GQ_SIZE(v->bits, QK_GQ);
    for (int64_t n = n0; n < n1; n++)
        lb_gqc_to_g128(v->type, v->codes + (size_t)n * v->row_size, v->sz[2 * n], lb_gqc_view_zero(v, n),
                       (uint8_t *)dst + (size_t)(n - n0) * out_row, v->K);
}

void lb_gemv_gqc_q8_0_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                          size_t a_row_size, int M, float *Y, size_t ldy) {
    (void)w_row_size;
    const lb_gqc_view *v = W;
    for (int n = n0; n < n1; n++) {
        const uint8_t *row = v->codes + (size_t)n * v->row_size;
        const int z = lb_gqc_view_zero(v, n);
        for (int m = 0; m < M; m++)
            lb_gqc_vec_dot_q8_0(v->type, K, &Y[(size_t)m * ldy + n], row, (const char *)A + (size_t)m * a_row_size,
                                v->sz[2 * n], z);
    }
}
