/* BCQ{q}_GC (formats/bcqc.h): BCQ with one group per row, scalar reference.
 * Everything goes through BCQ{q}_G128 (formats/bcq.c): a row's grid copied
 * into G128 blocks gives its values and dot products, bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bcqc.h"
#include "formats/gqc.h"

static const struct {
    int type, q;
    lb_type_traits traits;
} bcqc_types[] = {
#define BCQC_ENTRY(name, NAME, Q)                                                                  \
    {LB_TYPE_##NAME, Q, {#NAME, QK_BCQC, sizeof(block_##name), 1, LB_TYPE_Q8_0_LUT4, NULL, NULL, NULL}},
    LB_BCQC_LIST(BCQC_ENTRY)
#undef BCQC_ENTRY
};
enum { N_BCQC = sizeof bcqc_types / sizeof bcqc_types[0] };
static_assert(N_BCQC == LB_BCQC_LAST - LB_BCQC_FIRST + 1, "BCQ GC ids are contiguous");

static int index_of(int type) {
    if (type < LB_BCQC_FIRST || type > LB_BCQC_LAST) return -1;
    const int i = type - LB_BCQC_FIRST;
    return bcqc_types[i].type == type ? i : -1;
}

int lb_bcqc_bits(int type) {
    const int i = index_of(type);
    return i < 0 ? 0 : bcqc_types[i].q;
}

int lb_bcqc_type(int q) {
    for (int i = 0; i < N_BCQC; i++)
        if (bcqc_types[i].q == q) return bcqc_types[i].type;
    return -1;
}

int lb_bcqc_g128(int type) {
    const int q = lb_bcqc_bits(type);
    return q ? lb_bcq_type(q, QK_BCQC) : -1;
}

const lb_type_traits *lb_bcqc_traits(int type) {
    const int i = index_of(type);
    return i < 0 ? NULL : &bcqc_types[i].traits;
}

/* ---- one row ---- */

int lb_bcqc_quantize_row(int type, const float *x, void *codes, int64_t k, const float *imp, lb_fp16 *az) {
    const int q = lb_bcqc_bits(type);
    if (!q || k % QK_BCQC || k > LB_BCQ_MAX_FIT) return -1;
    /* the row as one BCQ group: alpha[q], z, planes b[q][k / 8] */
    uint8_t *blk = malloc(LB_BCQ_SIZE((size_t)q, (size_t)k));
    if (!blk || lb_bcq_fit_group(q, (int)k, x, imp, lb_bcq_iters(), blk, NULL) < 0) {
        memset(codes, 0, (size_t)(k / QK_BCQC) * LB_BCQC_SIZE(q));
        memset(az, 0, sizeof *az * (size_t)(q + 1));
        free(blk);
        return -1;
    }
    memcpy(az, blk, sizeof *az * (size_t)(q + 1)); /* the group's head: alpha[q], z */
    /* plane i of the row -> plane i of each block of 128 */
    const uint8_t *planes = blk + 2 * (q + 1);
    uint8_t *y = codes;
    for (int64_t b = 0; b < k / QK_BCQC; b++, y += LB_BCQC_SIZE(q))
        for (int i = 0; i < q; i++) memcpy(y + 16 * i, planes + (size_t)i * (size_t)(k / 8) + 16 * b, 16);
    free(blk);
    return 0;
}

void lb_bcqc_to_g128(int type, const void *codes, const lb_fp16 *az, void *dst, int64_t k) {
    const int q = lb_bcqc_bits(type);
    const size_t cs = LB_BCQC_SIZE(q), bs = LB_BCQ_SIZE(q, QK_BCQC);
    const uint8_t *x = codes;
    uint8_t *y = dst;
    for (int64_t b = 0; b < k / QK_BCQC; b++, x += cs, y += bs) {
        memcpy(y, az, sizeof *az * (size_t)(q + 1));
        memcpy(y + 2 * (q + 1), x, cs);
    }
}

void lb_bcqc_dequantize_row(int type, const void *codes, float *y, int64_t k, const lb_fp16 *az) {
    const int q = lb_bcqc_bits(type);
    const size_t cs = LB_BCQC_SIZE(q);
    uint8_t blk[LB_BCQ_SIZE(LB_BCQ_MAX_Q, QK_BCQC)];
    const lb_type_traits *g = lb_traits(lb_bcqc_g128(type));
    for (int64_t b = 0; b < k / QK_BCQC; b++) {
        lb_bcqc_to_g128(type, (const uint8_t *)codes + (size_t)b * cs, az, blk, QK_BCQC);
        g->to_float(blk, y + b * QK_BCQC, QK_BCQC);
    }
}

float lb_bcqc_round(int type, void *codes, int64_t col, float x, const lb_fp16 *az) {
    const int q = lb_bcqc_bits(type);
    float v[1 << LB_BCQ_MAX_Q];
    lb_bcq_values(q, az, v); /* az is laid out as a block's head */
    /* the nearest value, a tie to the smaller one (BCQ's quantizer's rule) */
    int best = 0;
    const double xd = isnan(x) ? 0.0 : (double)x;
    for (int c = 1; c < (1 << q); c++) {
        const double d = fabs(xd - v[c]), db = fabs(xd - v[best]);
        if (d < db || (d == db && v[c] < v[best])) best = c;
    }
    const float bv = v[best];
    uint8_t *y = (uint8_t *)codes + (size_t)(col / QK_BCQC) * LB_BCQC_SIZE(q);
    const int j = (int)(col % QK_BCQC);
    for (int i = 0; i < q; i++) {
        uint8_t *p = y + 16 * i + j / 8;
        *p = (uint8_t)((*p & ~(1u << (j % 8))) | ((unsigned)(best >> i & 1) << (j % 8)));
    }
    return bv;
}

lb_status lb_bcqc_check_az(int type, const lb_fp16 *az, int64_t n) {
    const int q = lb_bcqc_bits(type);
    for (int i = 0; i <= q; i++) {
        const float v = lb_fp16_to_f32(az[i]);
        if (isfinite(v)) continue;
        return i < q ? lb_fail(LB_ERR_FORMAT, "row %lld's alpha_%d is %g, not a finite number", (long long)n, i, (double)v)
                     : lb_fail(LB_ERR_FORMAT, "row %lld's z is %g, not a finite number", (long long)n, (double)v);
    }
    return LB_OK;
}

int lb_bcqc_from_gqc(int q, const void *gq_codes, lb_fp16 s, int zq, void *codes, lb_fp16 *az, int64_t k) {
    const int gq = lb_gqc_type(q), type = lb_bcqc_type(q);
    if (gq < 0 || type < 0) return 0;
    const double sd = lb_fp16_to_f32(s);
    lb_bcq_uniform_grid(q, sd, -sd * (double)zq, az); /* w = s c - s zq */
    const uint8_t *x = gq_codes;
    uint8_t *y = codes;
    for (int64_t b = 0; b < k / QK_BCQC; b++, x += LB_GQC_SIZE(q), y += LB_BCQC_SIZE(q)) {
        memset(y, 0, LB_BCQC_SIZE(q));
        for (int j = 0; j < QK_BCQC; j++) {
            const int c = lb_gq_get_code(x, q, j);
            for (int i = 0; i < q; i++) y[16 * i + j / 8] |= (uint8_t)((c >> i & 1) << (j % 8));
        }
    }
    return lb_bcq_uniform_exact(s, zq, q);
}
