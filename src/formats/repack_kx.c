/* The 16-row layouts of formats/repack_kx.h: the plane table of each base
 * type, repack / unpack of whole tensors, group to_float, the Q8_1
 * activation quantizer of the GEMMs and the scalar reference GEMV / GEMM.
 * The reference kernels unpack a row and call the base type's plain
 * reference dot, so they are bit-identical to it by construction; the fast
 * kernels (kernels/x86/kx_*, kernels/arm/kx_*) are tested against them. */
#include "formats/repack_kx.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

enum { KR = LB_KX_ROWS };
enum { DW, H16, P5 }; /* plane kinds */

typedef struct {
    uint8_t kind;
    uint16_t plain_off, bytes, x_off;
} plane;

typedef struct {
    int base, type;
    size_t bs; /* plain block bytes */
    int blck;
    int n;
    plane p[6];
} kx_layout;

/* Planes in x-block order: x_off = 16 * (the bytes of the planes before);
 * the bytes add up to the plain block's (tests/test_kx_repack.c checks). */
static const kx_layout kx[] = {
    {LB_TYPE_Q3_K, LB_TYPE_Q3_K_16X4, sizeof(block_q3_K), QK_K, 4,
     {{DW, 0, 32, 0}, {DW, 32, 64, 512}, {DW, 96, 12, 1536}, {H16, 108, 2, 1728}}},
    {LB_TYPE_Q4_K, LB_TYPE_Q4_K_16X4, sizeof(block_q4_K), QK_K, 4,
     {{H16, 0, 2, 0}, {H16, 2, 2, 32}, {DW, 4, 12, 64}, {DW, 16, 128, 256}}},
    {LB_TYPE_Q5_K, LB_TYPE_Q5_K_16X4, sizeof(block_q5_K), QK_K, 5,
     {{H16, 0, 2, 0}, {H16, 2, 2, 32}, {DW, 4, 12, 64}, {DW, 16, 32, 256}, {DW, 48, 128, 768}}},
    /* scales, ql 0-15, qh 0-7, ql 16-31, qh 8-15, d (LB_KX_Q6_*) */
    {LB_TYPE_Q6_K, LB_TYPE_Q6_K_16X4, sizeof(block_q6_K), QK_K, 6,
     {{DW, 192, 16, 0}, {DW, 0, 64, 256}, {DW, 128, 32, 1280}, {DW, 64, 64, 1792}, {DW, 160, 32, 2816},
      {H16, 208, 2, 3328}}},
    {LB_TYPE_IQ4_XS, LB_TYPE_IQ4_XS_16X4, sizeof(block_iq4_xs), QK_K, 4,
     {{H16, 0, 2, 0}, {H16, 2, 2, 32}, {DW, 4, 4, 64}, {DW, 8, 128, 128}}},
    {LB_TYPE_Q4_1, LB_TYPE_Q4_1_16X4, sizeof(block_q4_1), QK4_1, 3,
     {{H16, 0, 2, 0}, {H16, 2, 2, 32}, {DW, 4, 16, 64}}},
    {LB_TYPE_Q5_0, LB_TYPE_Q5_0_16X4, sizeof(block_q5_0), QK5_0, 3,
     {{DW, 6, 16, 0}, {P5, 2, 4, 256}, {H16, 0, 2, 320}}},
    {LB_TYPE_Q5_1, LB_TYPE_Q5_1_16X4, sizeof(block_q5_1), QK5_1, 4,
     {{H16, 0, 2, 0}, {H16, 2, 2, 32}, {P5, 4, 4, 64}, {DW, 8, 16, 128}}},
    /* the Q6_K layout files of lowbit before 2026-11-29 carry (plain field
     * order); read only, converted at load (model/repack.c). After the
     * current Q6_K entry, so that kx_of_base finds that one. */
    {LB_TYPE_Q6_K, LB_TYPE_Q6_K_16X4_V1, sizeof(block_q6_K), QK_K, 4,
     {{DW, 0, 128, 0}, {DW, 128, 64, 2048}, {DW, 192, 16, 3072}, {H16, 208, 2, 3328}}},
};
enum { N_KX = sizeof kx / sizeof kx[0] };

static const kx_layout *kx_of_base(int base) {
    for (int i = 0; i < N_KX; i++)
        if (kx[i].base == base) return &kx[i];
    return NULL;
}

static const kx_layout *kx_of_type(int type) {
    for (int i = 0; i < N_KX; i++)
        if (kx[i].type == type) return &kx[i];
    return NULL;
}

int lb_repack_is_kx(int base) { return kx_of_base(base) != NULL; }

int lb_kx_x_offset(int base, int plain_byte) {
    const kx_layout *L = kx_of_base(base);
    for (int i = 0; L && i < L->n; i++) {
        const plane *p = &L->p[i];
        const int b = plain_byte - p->plain_off;
        if (b < 0 || b >= p->bytes) continue;
        return p->kind == H16 ? p->x_off + b : p->kind == P5 ? p->x_off : p->x_off + 64 * (b / 4) + b % 4;
    }
    return -1;
}

/* ---- one row's block in and out of an x-block ---- */

static inline uint32_t ld32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Q5's qh (bit i = fifth bit of weight i) -> the P5 dword and back. */
static uint32_t p5_of_qh(uint32_t qh) {
    uint32_t p = 0;
    for (int e = 0; e < 4; e++)
        for (int c = 0; c < 4; c++)
            for (int h = 0; h < 2; h++) p |= ((qh >> (4 * c + e + 16 * h)) & 1u) << (8 * e + 2 * c + h);
    return p;
}
static uint32_t qh_of_p5(uint32_t p) {
    uint32_t qh = 0;
    for (int e = 0; e < 4; e++)
        for (int c = 0; c < 4; c++)
            for (int h = 0; h < 2; h++) qh |= ((p >> (8 * e + 2 * c + h)) & 1u) << (4 * c + e + 16 * h);
    return qh;
}

static void put_row(const kx_layout *L, const uint8_t *blk, uint8_t *xb, int r) {
    for (int i = 0; i < L->n; i++) {
        const plane *p = &L->p[i];
        const uint8_t *src = blk + p->plain_off;
        uint8_t *dst = xb + p->x_off;
        if (p->kind == H16) memcpy(dst + 2 * r, src, 2);
        else if (p->kind == P5) st32(dst + 4 * r, p5_of_qh(ld32(src)));
        else
            for (int c = 0; c < p->bytes / 4; c++) memcpy(dst + 64 * c + 4 * r, src + 4 * c, 4);
    }
}

static void get_row(const kx_layout *L, const uint8_t *xb, int r, uint8_t *blk) {
    for (int i = 0; i < L->n; i++) {
        const plane *p = &L->p[i];
        const uint8_t *src = xb + p->x_off;
        uint8_t *dst = blk + p->plain_off;
        if (p->kind == H16) memcpy(dst, src + 2 * r, 2);
        else if (p->kind == P5) st32(dst, qh_of_p5(ld32(src + 4 * r)));
        else
            for (int c = 0; c < p->bytes / 4; c++) memcpy(dst + 4 * c, src + 64 * c + 4 * r, 4);
    }
}

/* Plain row r (nb blocks) of the group at xg. */
static void unpack_row(const kx_layout *L, const uint8_t *xg, int r, int64_t nb, uint8_t *row) {
    for (int64_t b = 0; b < nb; b++) get_row(L, xg + (size_t)b * KR * L->bs, r, row + (size_t)b * L->bs);
}

static void kx_tensor(const kx_layout *L, const void *src, void *dst, int64_t K, int64_t N, int pack) {
    const int64_t nb = K / L->blck, groups = N / KR;
    const size_t row_size = (size_t)nb * L->bs, gsize = row_size * KR;
#pragma omp parallel for schedule(static) if (groups * nb > 256)
    for (int64_t g = 0; g < groups; g++) {
        const uint8_t *s = (const uint8_t *)src + (size_t)g * gsize;
        uint8_t *d = (uint8_t *)dst + (size_t)g * gsize;
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < KR; r++) {
                if (pack) put_row(L, s + (size_t)r * row_size + (size_t)b * L->bs, d + (size_t)b * KR * L->bs, r);
                else get_row(L, s + (size_t)b * KR * L->bs, r, d + (size_t)r * row_size + (size_t)b * L->bs);
            }
    }
    memcpy((uint8_t *)dst + (size_t)groups * gsize, (const uint8_t *)src + (size_t)groups * gsize,
           (size_t)(N % KR) * row_size);
}

static const kx_layout *kx_of_layout(const lb_repack_layout *RL) { return RL ? kx_of_type(RL->type) : NULL; }

void lb_repack_kx_tensor(const lb_repack_layout *RL, const void *plain, void *packed, int64_t K, int64_t N) {
    const kx_layout *L = kx_of_layout(RL);
    if (L) kx_tensor(L, plain, packed, K, N, 1);
}

void lb_unpack_kx_tensor(const lb_repack_layout *RL, const void *packed, void *plain, int64_t K, int64_t N) {
    const kx_layout *L = kx_of_layout(RL);
    if (L) kx_tensor(L, packed, plain, K, N, 0);
}

/* ---- traits ---- */

/* One group: k = 16 rows of k/16 values (anything else decodes to zeros). */
static void group_to_float(int type, const void *src, float *dst, int64_t k) {
    const kx_layout *L = kx_of_type(type);
    const int base = L->base;
    const int64_t K = k / KR;
    uint8_t *row = K % L->blck == 0 && K > 0 ? malloc((size_t)(K / L->blck) * L->bs) : NULL;
    if (!row) {
        for (int64_t i = 0; i < k; i++) dst[i] = 0.0f;
        return;
    }
    for (int r = 0; r < KR; r++) {
        unpack_row(L, src, r, K / L->blck, row);
        lb_traits(base)->to_float(row, dst + r * K, K);
    }
    free(row);
}

#define KX_TO_FLOAT(w, TYPE) \
    static void to_float_##w(const void *s, float *d, int64_t k) { group_to_float(TYPE, s, d, k); }
KX_TO_FLOAT(q3_K, LB_TYPE_Q3_K_16X4)
KX_TO_FLOAT(q4_K, LB_TYPE_Q4_K_16X4)
KX_TO_FLOAT(q5_K, LB_TYPE_Q5_K_16X4)
KX_TO_FLOAT(q6_K, LB_TYPE_Q6_K_16X4)
KX_TO_FLOAT(iq4_xs, LB_TYPE_IQ4_XS_16X4)
KX_TO_FLOAT(q4_1, LB_TYPE_Q4_1_16X4)
KX_TO_FLOAT(q5_0, LB_TYPE_Q5_0_16X4)
KX_TO_FLOAT(q5_1, LB_TYPE_Q5_1_16X4)
KX_TO_FLOAT(q6_K_v1, LB_TYPE_Q6_K_16X4_V1)

static const lb_type_traits kx_traits[N_KX] = {
    {"Q3_K_16X4", QK_K, sizeof(block_q3_K), 1, LB_TYPE_Q8_K, to_float_q3_K, NULL, NULL},
    {"Q4_K_16X4", QK_K, sizeof(block_q4_K), 1, LB_TYPE_Q8_K, to_float_q4_K, NULL, NULL},
    {"Q5_K_16X4", QK_K, sizeof(block_q5_K), 1, LB_TYPE_Q8_K, to_float_q5_K, NULL, NULL},
    {"Q6_K_16X4", QK_K, sizeof(block_q6_K), 1, LB_TYPE_Q8_K, to_float_q6_K, NULL, NULL},
    {"IQ4_XS_16X4", QK_K, sizeof(block_iq4_xs), 1, LB_TYPE_Q8_K, to_float_iq4_xs, NULL, NULL},
    {"Q4_1_16X4", QK4_1, sizeof(block_q4_1), 1, LB_TYPE_Q8_1, to_float_q4_1, NULL, NULL},
    {"Q5_0_16X4", QK5_0, sizeof(block_q5_0), 1, LB_TYPE_Q8_0, to_float_q5_0, NULL, NULL},
    {"Q5_1_16X4", QK5_1, sizeof(block_q5_1), 1, LB_TYPE_Q8_1, to_float_q5_1, NULL, NULL},
    {"Q6_K_16X4_V1", QK_K, sizeof(block_q6_K), 1, LB_TYPE_Q8_K, to_float_q6_K_v1, NULL, NULL},
};

const lb_type_traits *lb_repack_kx_traits(int type) {
    for (int i = 0; i < N_KX; i++)
        if (kx[i].type == type) return &kx_traits[i];
    return NULL;
}

/* ---- activations ---- */

void lb_quantize_q8_1x4_ref(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_1x4 *y = vy;
    block_q8_1 blk;
    for (int64_t b = 0; b < k / QK8_1; b++)
        for (int m = 0; m < 4; m++) {
            lb_quantize_row_q8_1_ref(x + m * ldx + b * QK8_1, &blk, QK8_1);
            y[b].d[m] = lb_fp16_to_f32(blk.d);
            y[b].s[m] = lb_fp16_to_f32(blk.s);
            memcpy(y[b].qs[m], blk.qs, QK8_1);
        }
}

/* Row m of an activation group back in plain act_type blocks (exact: the
 * groups hold the plain rows' values, widened). */
static void act_row_of_group(int act_type, const void *group, int m, int64_t K, void *out) {
    if (act_type == LB_TYPE_Q8_K) {
        const lb_block_q8_Kx4 *a = group;
        block_q8_K *o = out;
        for (int64_t b = 0; b < K / QK_K; b++) {
            o[b].d = a[b].d[m];
            memcpy(o[b].qs, a[b].qs[m], QK_K);
            for (int j = 0; j < 16; j++) o[b].bsums[j] = (int16_t)(a[b].b64[m][j] / -64);
        }
    } else if (act_type == LB_TYPE_Q8_0) {
        const lb_block_q8_0x4v *a = group;
        block_q8_0 *o = out;
        for (int64_t b = 0; b < K / QK8_0; b++) {
            o[b].d = lb_f32_to_fp16(a[b].d[m]);
            memcpy(o[b].qs, a[b].qs[m], QK8_0);
        }
    } else {
        const lb_block_q8_1x4 *a = group;
        block_q8_1 *o = out;
        for (int64_t b = 0; b < K / QK8_1; b++) {
            o[b].d = lb_f32_to_fp16(a[b].d[m]);
            o[b].s = lb_f32_to_fp16(a[b].s[m]);
            memcpy(o[b].qs, a[b].qs[m], QK8_1);
        }
    }
}

/* ---- reference kernels ---- */

static void ref_kernel(int base, int x4, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                       size_t a_row_size, int M, float *Y, size_t ldy) {
    const kx_layout *L = kx_of_base(base);
    const lb_type_traits *t = lb_traits(base);
    const int64_t nb = K / L->blck;
    uint8_t *row = malloc(w_row_size);
    void *act = x4 ? malloc(lb_row_size(t->vec_dot_type, K)) : NULL;
    if (!row || (x4 && !act)) {
        /* a reference kernel has no error path: NaN marks the outputs */
        for (int m = 0; m < M; m++)
            for (int n = n0; n < n1; n++) Y[(size_t)m * ldy + n] = NAN;
        free(row);
        free(act);
        return;
    }
    for (int m = 0; m < M; m++) {
        const void *a = (const char *)A + (size_t)(x4 ? m / 4 : m) * a_row_size;
        if (x4) act_row_of_group(t->vec_dot_type, a, m % 4, K, act), a = act;
        for (int n = n0; n < n1; n++) {
            unpack_row(L, (const uint8_t *)W + (size_t)(n / KR) * KR * w_row_size, n % KR, nb, row);
            t->vec_dot(K, &Y[(size_t)m * ldy + n], row, a);
        }
    }
    free(row);
    free(act);
}

#define KX_REF_FNS(w, a, BASE)                                                                               \
    void lb_gemv_##w##x16_##a##_16x4_ref(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, \
                                         size_t ars, int M, float *Y, size_t ldy) {                          \
        ref_kernel(BASE, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                           \
    }                                                                                                        \
    void lb_gemm_##w##x16_##a##x4_16x4_ref(int64_t K, const void *W, size_t wrs, int n0, int n1,              \
                                           const void *A, size_t ars, int M, float *Y, size_t ldy) {         \
        ref_kernel(BASE, 1, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                           \
    }
KX_REF_FNS(q3_K, q8_K, LB_TYPE_Q3_K)
KX_REF_FNS(q4_K, q8_K, LB_TYPE_Q4_K)
KX_REF_FNS(q5_K, q8_K, LB_TYPE_Q5_K)
KX_REF_FNS(q6_K, q8_K, LB_TYPE_Q6_K)
KX_REF_FNS(iq4_xs, q8_K, LB_TYPE_IQ4_XS)
KX_REF_FNS(q4_1, q8_1, LB_TYPE_Q4_1)
KX_REF_FNS(q5_0, q8_0, LB_TYPE_Q5_0)
KX_REF_FNS(q5_1, q8_1, LB_TYPE_Q5_1)
