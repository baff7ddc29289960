/* The C side of the CUDA backend: the error message, and the upload of an
 * lb_matrix into the kernels' device layout (lb_cuda_internal.h). Repacking
 * happens here, on the host, so every array a kernel reads is 16-byte
 * aligned: GGUF's Q4_0 / Q8_0 blocks (18 / 34 bytes) and MX's tiles (157 /
 * 296 bytes) are not. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/kquants.h"
#include "formats/mx.h"
#include "kernels/cuda/lb_cuda.h"
#include "kernels/cuda/lb_cuda_internal.h"

_Static_assert((int)LBCU_F32 == (int)LB_TYPE_F32 && (int)LBCU_F16 == (int)LB_TYPE_F16 && (int)LBCU_Q4_0 == (int)LB_TYPE_Q4_0 &&
                   (int)LBCU_Q8_0 == (int)LB_TYPE_Q8_0 && (int)LBCU_Q4_K == (int)LB_TYPE_Q4_K &&
                   (int)LBCU_Q8_K == (int)LB_TYPE_Q8_K && (int)LBCU_MX == (int)LB_TYPE_MX,
               "lb_cuda_internal.h type ids");
_Static_assert((int)LBCU_BCQ_FIRST == (int)LB_BCQ_FIRST && (int)LBCU_BCQ_LAST == (int)LB_BCQ_LAST &&
                   (int)LBCU_ABQ_ACT == (int)LB_TYPE_ABQ_ACT && (int)LBCU_ABQ_W1 == (int)LB_TYPE_ABQ_W1 &&
                   (int)LBCU_ABQ_W8 == (int)LB_TYPE_ABQ_W8 && (int)LBCU_ABQ_W2S == (int)LB_TYPE_ABQ_W2S,
               "lb_cuda_internal.h seed type ids");
_Static_assert(LBCU_ABQ_G == LB_ABQ_G && LB_ABQ_PLANE == 16, "ABQ group");
_Static_assert(LBCU_QK == QK8_0 && LBCU_QK == QK4_0 && LBCU_QK_K == QK_K && LBCU_Q4_K_BYTES == sizeof(block_q4_K),
               "block sizes");
_Static_assert(LBCU_MX_ROWS == LB_MX_ROWS && LBCU_MX2_QS == sizeof(((block_mx2 *)0)->qs) &&
                   LBCU_MX4_QS == sizeof(((block_mx4 *)0)->qs),
               "MX tile sizes");

static char g_err[1024] = "no error";

const char *lb_cuda_last_error(void) { return g_err; }

void lbcu_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
}

int lb_cuda_matrix_type(const lb_cuda_matrix *W) { return W->type; }
int64_t lb_cuda_matrix_rows(const lb_cuda_matrix *W) { return W->N; }
int64_t lb_cuda_matrix_cols(const lb_cuda_matrix *W) { return W->K; }
uint64_t lb_cuda_matrix_bytes(const lb_cuda_matrix *W) { return W->bytes; }

static const void *row_of(const lb_matrix *W, int64_t n) { return (const char *)W->data + (size_t)n * W->row_size; }

/* Q8_0 / Q4_0: codes (qb bytes per block) and scales into two arrays */
static int upload_split(struct lb_cuda_matrix *D, const lb_matrix *W, size_t blk, size_t qb) {
    const size_t nb = (size_t)W->K / 32, N = (size_t)W->N;
    uint8_t *q = malloc(N * nb * qb);
    uint16_t *d = malloc(N * nb * sizeof *d);
    int rc = -1;
    if (!q || !d) {
        lbcu_set_error("lb_cuda_matrix_upload: out of host memory");
    } else {
        for (size_t n = 0; n < N; n++)
            for (size_t b = 0; b < nb; b++) {
                const uint8_t *src = (const uint8_t *)row_of(W, (int64_t)n) + b * blk;
                memcpy(&d[n * nb + b], src, 2); /* both blocks start with their fp16 d */
                memcpy(q + (n * nb + b) * qb, src + 2, qb);
            }
        rc = lbcu_alloc_copy(&D->q, q, N * nb * qb) || lbcu_alloc_copy(&D->d, d, N * nb * sizeof *d) ? -1 : 0;
    }
    free(q);
    free(d);
    return rc;
}

/* MX: each tile's codes and scale parts into separate aligned arrays */
static int upload_mx(struct lb_cuda_matrix *D, const lb_mx_view *v) {
    const size_t T = (size_t)(v->N / LB_MX_ROWS), nl = (size_t)v->n_lo, nh = (size_t)v->n_hi;
    uint8_t *lq = malloc(T * nl * LBCU_MX2_QS), *lm = calloc(T * nl, LBCU_MX2_META);
    uint8_t *hq = malloc(T * nh * LBCU_MX4_QS + 1), *hm = calloc(T * nh + 1, LBCU_MX4_META);
    int rc = -1;
    if (!lq || !lm || !hq || !hm) {
        lbcu_set_error("lb_cuda_matrix_upload: out of host memory");
        goto out;
    }
    for (size_t i = 0; i < T * nl; i++) {
        const block_mx2 *b = &v->lo[i];
        uint8_t *m = lm + i * LBCU_MX2_META;
        memcpy(lq + i * LBCU_MX2_QS, b->qs, LBCU_MX2_QS);
        memcpy(m, b->s1, 16);
        memcpy(m + 16, b->z1, 8);
        memcpy(m + 24, b->s2, 4);
        m[28] = b->z2;
    }
    for (size_t i = 0; i < T * nh; i++) {
        const block_mx4 *b = &v->hi[i];
        uint8_t *m = hm + i * LBCU_MX4_META;
        memcpy(hq + i * LBCU_MX4_QS, b->qs, LBCU_MX4_QS);
        memcpy(m, b->s, 32);
        memcpy(m + 32, b->z, 8);
    }
    if (lbcu_alloc_copy(&D->lo_qs, lq, T * nl * LBCU_MX2_QS) || lbcu_alloc_copy(&D->lo_meta, lm, T * nl * LBCU_MX2_META) ||
        lbcu_alloc_copy((void **)&D->lo_group, v->lo_group, nl * 2))
        goto out;
    if (nh && (lbcu_alloc_copy(&D->hi_qs, hq, T * nh * LBCU_MX4_QS) ||
               lbcu_alloc_copy(&D->hi_meta, hm, T * nh * LBCU_MX4_META) ||
               lbcu_alloc_copy((void **)&D->hi_group, v->hi_group, nh * 2)))
        goto out;
    if (v->row_ptr && v->row_ptr[v->N] > 0) {
        /* the words in use; lb_mx_view_make checked them (columns in the row, increasing) */
        D->n_cap = v->row_ptr[v->N];
        if (lbcu_alloc_copy((void **)&D->row_ptr, v->row_ptr, (size_t)(v->N + 1) * 4) ||
            lbcu_alloc_copy((void **)&D->outliers, v->outliers, (size_t)D->n_cap * 4))
            goto out;
    }
    rc = 0;
out:
    free(lq), free(lm), free(hq), free(hm);
    return rc;
}

/* BCQ: each block's heads (q + 1 fp16) and planes (q g / 8 bytes) into two
 * arrays, rows of planes padded to 16 bytes (the kernel's vector loads) */
static int upload_bcq(struct lb_cuda_matrix *D, const lb_matrix *W) {
    const int q = D->bits, g = D->group;
    const size_t N = (size_t)W->N, ng = (size_t)W->K / (size_t)g, pb = (size_t)q * (size_t)g / 8;
    const size_t bs = LB_BCQ_SIZE(q, g), hb = 2 * ((size_t)q + 1);
    D->pstride = (int64_t)((ng * pb + 15) & ~(size_t)15);
    uint8_t *planes = calloc(N, (size_t)D->pstride);
    uint8_t *heads = malloc(N * ng * hb);
    int rc = -1;
    if (!planes || !heads) {
        lbcu_set_error("lb_cuda_matrix_upload: out of host memory");
    } else {
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < ng; i++) {
                const uint8_t *blk = (const uint8_t *)row_of(W, (int64_t)n) + i * bs;
                memcpy(heads + (n * ng + i) * hb, blk, hb);
                memcpy(planes + n * (size_t)D->pstride + i * pb, blk + hb, pb);
            }
        rc = lbcu_alloc_copy(&D->q, planes, N * (size_t)D->pstride) || lbcu_alloc_copy(&D->d, heads, N * ng * hb) ? -1
                                                                                                               : 0;
    }
    free(planes);
    free(heads);
    return rc;
}

/* ABQ: planes and heads in the kernel's chunks of 4 groups (zero padded), and
 * per row the exponent E of its integer scales: the smallest unit m 2^e of
 * its nonzero fp16 scales, raised to (largest e) - 20 if needed so that every
 * m 2^(e - E) fits 31 bits (cuda_abq.cu) */
static int upload_abq(struct lb_cuda_matrix *D, const lb_matrix *W) {
    const int t = W->type, q = D->bits;
    const size_t N = (size_t)W->N, G = (size_t)W->K / LB_ABQ_G, G4 = (size_t)LBCU_ABQ_CHUNKS(W->K);
    const size_t bs = lb_traits(t)->type_size;
    uint32_t *planes = calloc(N * G4 * (size_t)q * 16, 4);
    uint32_t *heads = calloc(N * G4 * 4, 4);
    int32_t *row_e = malloc(N * 4);
    int rc = -1;
    if (!planes || !heads || !row_e) {
        lbcu_set_error("lb_cuda_matrix_upload: out of host memory");
    } else {
        for (size_t n = 0; n < N; n++) {
            int emin = 1000, emax = -1000;
            for (size_t i = 0; i < G; i++) {
                const void *blk = (const uint8_t *)row_of(W, (int64_t)n) + i * bs;
                uint16_t d;
                memcpy(&d, blk, 2);
                heads[n * G4 * 4 + i] = d | (uint32_t)(uint16_t)(int16_t)lb_abq_block_z(t, blk) << 16;
                for (int s = 0; s < q; s++) {
                    const uint8_t *pl = lb_abq_block_plane(t, blk, s);
                    for (int w = 0; w < 4; w++) {
                        uint32_t word;
                        memcpy(&word, pl + 4 * w, 4);
                        planes[((n * G4 + i / 4) * (size_t)q + (size_t)s) * 16 + 4 * (size_t)w + i % 4] = word;
                    }
                }
                const int e = (d >> 10) & 31, e_unit = (e ? e : 1) - 25;
                if (d & 0x7fff) emin = e_unit < emin ? e_unit : emin, emax = e_unit > emax ? e_unit : emax;
            }
            row_e[n] = emax < emin ? 0 : emin > emax - 20 ? emin : emax - 20;
        }
        rc = lbcu_alloc_copy(&D->q, planes, N * G4 * (size_t)q * 64) || lbcu_alloc_copy(&D->d, heads, N * G4 * 16) ||
                     lbcu_alloc_copy((void **)&D->row_e, row_e, N * 4)
                 ? -1
                 : 0;
    }
    free(planes);
    free(heads);
    free(row_e);
    return rc;
}

lb_cuda_matrix *lb_cuda_matrix_upload(const lb_matrix *W) {
    if (!W || !W->data || W->N < 1 || W->K < 1 || W->N > INT32_MAX || W->K > INT32_MAX) {
        lbcu_set_error("lb_cuda_matrix_upload: no matrix, or a shape out of range");
        return NULL;
    }
    const int t = W->type;
    const int bcq = lb_bcq_is_plain(t), abq = lbcu_is_abq(t);
    if (t != LB_TYPE_Q4_0 && t != LB_TYPE_Q8_0 && t != LB_TYPE_Q4_K && t != LB_TYPE_MX && t != LB_TYPE_F16 &&
        t != LB_TYPE_F32 && !bcq && !abq) {
        lbcu_set_error("lb_cuda_matrix_upload: type %s has no CUDA kernel (Q4_0, Q8_0, Q4_K, MX, BCQ{q}_G{g}, "
                       "ABQ_W{q}, ABQ_W2S, F16, F32; the CPU's repacked layouts are not uploaded)",
                       lb_type_name(t) ? lb_type_name(t) : "?");
        return NULL;
    }
    if (t == LB_TYPE_MX) {
        const lb_mx_view *v = W->data;
        if (v->N != W->N || v->K != W->K || v->N % LB_MX_ROWS || v->K % LB_MX_M || v->n_lo < 1) {
            lbcu_set_error("lb_cuda_matrix_upload: MX view %lld x %lld does not match the matrix %lld x %lld",
                           (long long)v->N, (long long)v->K, (long long)W->N, (long long)W->K);
            return NULL;
        }
    } else if (t == LB_TYPE_F32) {
        if (W->row_size != (size_t)W->K * sizeof(float)) {
            lbcu_set_error("lb_cuda_matrix_upload: F32 rows of %lld weights: row size %zu", (long long)W->K, W->row_size);
            return NULL;
        }
    } else if (lb_row_size(t, W->K) == 0 || W->row_size != lb_row_size(t, W->K) || W->K % 32) {
        const int blk = lb_traits(t)->blck > 32 ? lb_traits(t)->blck : 32; /* the kernels' unit, or the type's block */
        lbcu_set_error("lb_cuda_matrix_upload: %s rows of %lld weights: row size %zu, want %llu (K a multiple of %d)",
                       lb_type_name(t), (long long)W->K, W->row_size, (unsigned long long)lb_row_size(t, W->K), blk);
        return NULL;
    }
    if (abq && W->act_bits == LB_ABQ_ACT_F32) {
        lbcu_set_error("lb_cuda_matrix_upload: %s at 16 activation bits (unquantized) has no CUDA kernel; "
                       "the CUDA ABQ kernels take 1..8", lb_type_name(t));
        return NULL;
    }
    struct lb_cuda_matrix *D = calloc(1, sizeof *D);
    if (!D) {
        lbcu_set_error("lb_cuda_matrix_upload: out of host memory");
        return NULL;
    }
    D->type = t, D->N = W->N, D->K = W->K, D->bytes = lb_matrix_bytes(W);
    if (bcq) D->bits = lb_bcq_bits(t), D->group = lb_bcq_group(t);
    if (abq) {
        D->bits = lb_abq_bits(t), D->group = LB_ABQ_G;
        D->act_bits = W->act_bits >= 1 && W->act_bits <= LB_ABQ_MAX_BITS ? W->act_bits : LB_ABQ_MAX_BITS;
    }
    int rc;
    switch (t) {
    case LB_TYPE_Q8_0: rc = upload_split(D, W, sizeof(block_q8_0), 32); break;
    case LB_TYPE_Q4_0: rc = upload_split(D, W, sizeof(block_q4_0), 16); break;
    case LB_TYPE_Q4_K: rc = lbcu_alloc_copy(&D->q, W->data, (size_t)W->N * W->row_size); break;
    case LB_TYPE_F16: rc = lbcu_alloc_copy((void **)&D->w16, W->data, (size_t)W->N * W->row_size); break;
    case LB_TYPE_F32: rc = lbcu_alloc_copy((void **)&D->w32, W->data, (size_t)W->N * W->row_size); break;
    case LB_TYPE_MX: {
        const lb_mx_view *v = W->data;
        D->n_lo = v->n_lo, D->n_hi = v->n_hi;
        rc = upload_mx(D, v);
        break;
    }
    default: rc = bcq ? upload_bcq(D, W) : upload_abq(D, W);
    }
    if (rc) {
        lb_cuda_matrix_free(D);
        return NULL;
    }
    return D;
}

int lb_cuda_quantize_to_host(int act_type, const float *X_dev, int M, int64_t K, void *rows) {
    const int k_blk = act_type == LB_TYPE_Q8_0 ? QK8_0 : QK_K;
    if ((act_type != LB_TYPE_Q8_0 && act_type != LB_TYPE_Q8_K) || M < 1 || K < 1 || K % k_blk) {
        lbcu_set_error("lb_cuda_quantize_to_host: Q8_0 (K %% 32 == 0) or Q8_K (K %% 256 == 0) only");
        return -1;
    }
    const size_t mk = (size_t)M * (size_t)K, nb = (size_t)K / (size_t)k_blk;
    int8_t *qs = malloc(mk);
    uint16_t *d0 = malloc(mk / 32 * 2 + 2);
    float *dk = malloc(mk / 256 * 4 + 4);
    int16_t *s16 = malloc(mk / 16 * 2);
    int rc = -1;
    if (!qs || !d0 || !dk || !s16) lbcu_set_error("lb_cuda_quantize_to_host: out of host memory");
    else if (!lbcu_quantize_to_host(act_type, X_dev, M, K, qs, d0, dk, s16)) {
        for (size_t b = 0; b < (size_t)M * nb; b++) {
            if (act_type == LB_TYPE_Q8_0) {
                block_q8_0 *o = (block_q8_0 *)rows + b;
                o->d = d0[b];
                memcpy(o->qs, qs + 32 * b, 32);
            } else {
                block_q8_K *o = (block_q8_K *)rows + b;
                o->d = dk[b];
                memcpy(o->qs, qs + 256 * b, 256);
                memcpy(o->bsums, s16 + 16 * b, sizeof o->bsums);
            }
        }
        rc = 0;
    }
    free(qs), free(d0), free(dk), free(s16);
    return rc;
}

int lb_cuda_abq_act_to_host(const float *X_dev, int M, int64_t K, int p, void *rows) {
    if (M < 1 || K < LB_ABQ_G || K % LB_ABQ_G || p < 1 || p > LB_ABQ_MAX_BITS) {
        lbcu_set_error("lb_cuda_abq_act_to_host: K a multiple of 128 and 1..8 bits only");
        return -1;
    }
    const size_t G = (size_t)K / LB_ABQ_G, G4 = (size_t)LBCU_ABQ_CHUNKS(K), mg4 = (size_t)M * 4 * G4;
    uint32_t *planes = malloc(mg4 * 128);
    int32_t *sums = malloc(mg4 * 4), *z = malloc((size_t)M * 4);
    float *d = malloc((size_t)M * 4);
    int rc = -1;
    if (!planes || !sums || !z || !d) lbcu_set_error("lb_cuda_abq_act_to_host: out of host memory");
    else if (!lbcu_abq_act_to_host(X_dev, M, K, p, (uint8_t *)planes, sums, d, z)) {
        for (size_t m = 0; m < (size_t)M; m++)
            for (size_t g = 0; g < G; g++) {
                block_abq_act *b = (block_abq_act *)rows + m * G + g;
                memset(b, 0, sizeof *b);
                for (int t = 0; t < LB_ABQ_MAX_BITS; t++)
                    for (int w = 0; w < 4; w++)
                        memcpy(&b->b[t][4 * w], &planes[((m * G4 + g / 4) * 8 + (size_t)t) * 16 + 4 * (size_t)w + g % 4],
                               4);
                for (int j = 0; j < LB_ABQ_G; j++) {
                    int c = 0;
                    for (int t = 0; t < LB_ABQ_MAX_BITS; t++) c |= ((b->b[t][j / 8] >> (j % 8)) & 1) << t;
                    b->c[j] = (int8_t)(c - 128);
                }
                b->d = d[m], b->sum = sums[m * 4 * G4 + g], b->z = (int16_t)z[m], b->p = (uint8_t)p;
            }
        rc = 0;
    }
    free(planes), free(sums), free(z), free(d);
    return rc;
}
