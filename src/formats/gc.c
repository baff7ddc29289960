/* Whole-row (GC) types (formats/gc.h): the side-tensor layer over GQ{b}_GC
 * (formats/gqc.c) and BCQ{q}_GC (formats/bcqc.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gc.h"

int lb_gc_is(int type) { return lb_gqc_bits(type) || lb_bcqc_bits(type); }

int lb_gc_bits(int type) { return lb_gqc_bits(type) ? lb_gqc_bits(type) : lb_bcqc_bits(type); }

int lb_gc_side_n(int type) {
    if (lb_gqc_bits(type)) return 2;
    return lb_bcqc_bits(type) ? lb_bcqc_bits(type) + 1 : 0;
}

const char *lb_gc_sfx(int type) {
    if (lb_gqc_bits(type)) return LB_GQC_SFX;
    return lb_bcqc_bits(type) ? LB_BCQC_SFX : NULL;
}

const char *lb_gc_side_what(int type) { return lb_bcqc_bits(type) ? "alpha/z" : "scale/zero"; }

int lb_gc_g128(int type) { return lb_gqc_bits(type) ? lb_gqc_g128(type) : lb_bcqc_g128(type); }

size_t lb_gc_side_sfx_len(const char *name, size_t len) {
    static const char *const sfx[] = {LB_GQC_SFX, LB_BCQC_SFX};
    for (int i = 0; i < 2; i++) {
        const size_t n = strlen(sfx[i]);
        if (len > n && !memcmp(name + len - n, sfx[i], n)) return n;
    }
    return 0;
}

int lb_gc_is_side(const char *name, size_t len) { return lb_gc_side_sfx_len(name, len) != 0; }

/* ---- one row ---- */

int lb_gc_quantize_row(int type, const float *x, void *codes, int64_t k, int sym, const float *imp, lb_fp16 *side) {
    if (lb_gqc_bits(type)) {
        int z = 0;
        lb_gqc_quantize_row(type, x, codes, k, sym, imp, &side[0], &z);
        side[1] = lb_gqc_zero_fp16(z);
        return 0;
    }
    return lb_bcqc_bits(type) ? lb_bcqc_quantize_row(type, x, codes, k, imp, side) : -1;
}

void lb_gc_dequantize_row(int type, const void *codes, float *y, int64_t k, const lb_fp16 *side) {
    if (lb_gqc_bits(type)) lb_gqc_dequantize_row(type, codes, y, k, side[0], (int)lb_fp16_to_f32(side[1]));
    else lb_bcqc_dequantize_row(type, codes, y, k, side);
}

float lb_gc_round(int type, void *codes, int64_t col, float x, const lb_fp16 *side) {
    if (lb_gqc_bits(type)) return lb_gqc_round(type, codes, col, x, side[0], (int)lb_fp16_to_f32(side[1]));
    return lb_bcqc_round(type, codes, col, x, side);
}

void lb_gc_to_g128(int type, const void *codes, const lb_fp16 *side, void *dst, int64_t k) {
    if (lb_gqc_bits(type)) lb_gqc_to_g128(type, codes, side[0], (int)lb_fp16_to_f32(side[1]), dst, k);
    else lb_bcqc_to_g128(type, codes, side, dst, k);
}

lb_status lb_gc_check_side(int type, const lb_fp16 *side, int64_t n) {
    if (lb_bcqc_bits(type)) return lb_bcqc_check_az(type, side, n);
    const int bits = lb_gqc_bits(type);
    const float maxq = (float)((1 << bits) - 1);
    const float s = lb_fp16_to_f32(side[0]), z = lb_fp16_to_f32(side[1]);
    if (!isfinite(s)) return lb_fail(LB_ERR_FORMAT, "row %lld's scale is %g, not a finite number", (long long)n, (double)s);
    if (!(z >= 0.0f && z <= maxq && z == floorf(z)))
        return lb_fail(LB_ERR_FORMAT, "row %lld's zero point is %g, not an integer in 0..%d", (long long)n, (double)z,
                       (int)maxq);
    return LB_OK;
}

/* ---- one matrix ---- */

lb_status lb_gc_view_make(int type, int64_t N, int64_t K, const void *codes, uint64_t codes_bytes,
                          const lb_fp16 *side, int64_t n_side, lb_gc_view **out) {
    *out = NULL;
    const int bits = lb_gc_bits(type), sn = lb_gc_side_n(type);
    if (!bits) return lb_fail(LB_ERR_ARG, "type %d is not a GC type", type);
    if (N <= 0 || K <= 0 || K % 128)
        return lb_fail(LB_ERR_SHAPE, "%s matrix of %lld x %lld: rows must be a positive multiple of %d",
                       lb_type_name(type), (long long)N, (long long)K, 128);
    const size_t row = (size_t)(K / 128) * (size_t)(16 * bits);
    if (codes_bytes != (uint64_t)row * (uint64_t)N)
        return lb_fail(LB_ERR_SHAPE, "%s codes hold %llu bytes, %lld rows of %lld need %llu", lb_type_name(type),
                       (unsigned long long)codes_bytes, (long long)N, (long long)K,
                       (unsigned long long)((uint64_t)row * (uint64_t)N));
    if (n_side != sn * N)
        return lb_fail(LB_ERR_SHAPE, "%s %s: %lld values, %lld rows need %lld (%d per row)", lb_type_name(type),
                       lb_bcqc_bits(type) ? "alphas and z" : "scales and zeros", (long long)n_side, (long long)N,
                       (long long)(sn * N), sn);
    for (int64_t n = 0; n < N; n++) {
        lb_status s = lb_gc_check_side(type, side + sn * n, n);
        if (s) return s;
    }
    lb_gc_view *v = lb_malloc_aligned(sizeof *v);
    if (!v) return lb_fail(LB_ERR_NOMEM, "out of memory");
    *v = (lb_gc_view){type, bits, sn, N, K, row, codes, side};
    *out = v;
    return LB_OK;
}

void lb_gc_view_dequantize(const lb_gc_view *v, float *W) {
    for (int64_t n = 0; n < v->N; n++)
        lb_gc_dequantize_row(v->type, lb_gc_view_row(v, n), W + (size_t)n * (size_t)v->K, v->K, lb_gc_view_side(v, n));
}

void lb_gc_view_to_g128(const lb_gc_view *v, int64_t n0, int64_t n1, void *dst) {
    const size_t out_row = lb_row_size(lb_gc_g128(v->type), v->K);
    for (int64_t n = n0; n < n1; n++)
        lb_gc_to_g128(v->type, lb_gc_view_row(v, n), lb_gc_view_side(v, n), (uint8_t *)dst + (size_t)(n - n0) * out_row,
                      v->K);
}

void lb_gemv_gqc_q8_0_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                          size_t a_row_size, int M, float *Y, size_t ldy) {
    (void)w_row_size;
    const lb_gc_view *v = W;
    for (int n = n0; n < n1; n++) {
        const int z = lb_gqc_view_zero(v, n);
        for (int m = 0; m < M; m++)
            lb_gqc_vec_dot_q8_0(v->type, K, &Y[(size_t)m * ldy + n], lb_gc_view_row(v, n),
                                (const char *)A + (size_t)m * a_row_size, v->side[2 * n], z);
    }
}

void lb_gemv_bcqc_lut4_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                           size_t a_row_size, int M, float *Y, size_t ldy) {
    (void)w_row_size;
    const lb_gc_view *v = W;
    const int g = lb_gc_g128(v->type);
    const lb_type_traits *t = lb_traits(g);
    /* one row expanded at a time: a row of G128 blocks is 74 / 64 of its codes at most */
    uint8_t stack[8192];
    const size_t row = lb_row_size(g, K);
    uint8_t *buf = row <= sizeof stack ? stack : malloc(row);
    if (!buf) { /* no memory for a row: NaN, which no caller mistakes for a result */
        for (int n = n0; n < n1; n++)
            for (int m = 0; m < M; m++) Y[(size_t)m * ldy + n] = NAN;
        return;
    }
    for (int n = n0; n < n1; n++) {
        lb_gc_to_g128(v->type, lb_gc_view_row(v, n), lb_gc_view_side(v, n), buf, K);
        for (int m = 0; m < M; m++) t->vec_dot(K, &Y[(size_t)m * ldy + n], buf, (const char *)A + (size_t)m * a_row_size);
    }
    if (buf != stack) free(buf);
}
