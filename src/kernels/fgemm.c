/* The float-weight prefill GEMM's driver (kernels/fgemm.h). Single-threaded:
 * the matmul driver hands each thread its whole range of weight rows
 * (whole_m), so the activations are packed once per thread and call. */
#include "kernels/fgemm.h"

#include <stdint.h>
#include <string.h>

#include "core/common.h"
#include "kernels/thread_scratch.h"

enum { KC = 256 }; /* K block: a panel of 32 rows is 32 KiB of floats */

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

int lb_fgemm(const lb_sgemm_kernel *uk, lb_fgemm_cvt_fn cvt, const void *ctx, size_t esize, int64_t K, const void *W,
             size_t rs, int n0, int n1, const float *A, size_t ars, int M, float *Y, size_t ldy) {
    const int mr = uk->mr, nr = uk->nr;
    const int strips = (M + mr - 1) / mr;
    const size_t strip = round16((size_t)mr * KC); /* floats per packed strip: 64-byte aligned */
    const size_t ap_n = (size_t)strips * strip, bp_n = round16((size_t)nr * KC);
    float *buf = lb_thread_scratch((ap_n + bp_n + KC + LB_SGEMM_MR_MAX * LB_SGEMM_NR_MAX) * sizeof(float) + 64);
    if (!buf) return -1;
    buf = (float *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    float *ap = buf, *bp = ap + ap_n, *row = bp + bp_n, *tile = row + KC;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int kn = (int)LB_MIN((int64_t)KC, K - k0);
        /* bytes of a row's block, when its weights are a fixed width (all but ABQ's planes) */
        const size_t pf_off = esize ? (size_t)k0 * esize : 0, pf_bytes = esize ? (size_t)kn * esize : 0;
        /* activation strips, k-major: ap[s][k][i] = A[s mr + i][k0 + k], 0 past M */
        for (int s = 0; s < strips; s++) {
            float *p = ap + (size_t)s * strip;
            for (int i = 0; i < mr; i++) {
                const int m = s * mr + i;
                const float *x = m < M ? (const float *)((const char *)A + (size_t)m * ars) + k0 : NULL;
                for (int k = 0; k < kn; k++) p[k * mr + i] = x ? x[k] : 0.0f;
            }
        }
        for (int nb = n0; nb < n1; nb += nr) {
            const int nn = LB_MIN(nr, n1 - nb);
            /* the weight panel, k-major: bp[k][r] = W[nb + r][k0 + k], 0 past n1 */
            for (int r = 0; r < nr; r++) {
                if (r < nn) cvt(ctx, (const char *)W + (size_t)(nb + r) * rs, k0, kn, row);
                for (int k = 0; k < kn; k++) bp[k * nr + r] = r < nn ? row[k] : 0.0f;
            }
            /* the next panel's weights come from memory (a row segment each,
             * rows apart): fetched while this one runs over the strips */
            if (nb + nr < n1 && pf_bytes)
                for (int r = 0; r < LB_MIN(nr, n1 - nb - nr); r++) {
                    const char *q = (const char *)W + (size_t)(nb + nr + r) * rs + pf_off;
                    for (size_t b = 0; b < pf_bytes; b += 64) __builtin_prefetch(q + b);
                }
            for (int s = 0; s < strips; s++) {
                const int m0 = s * mr, mm = LB_MIN(mr, M - m0);
                float *c = Y + (size_t)m0 * ldy + nb;
                const float *p = ap + (size_t)s * strip;
                if (mm == mr && nn == nr) {
                    uk->fn(kn, p, bp, c, ldy, 1.0f, k0 ? 1.0f : 0.0f);
                    continue;
                }
                /* edge tile: computed whole into tile, merged where it lies in Y */
                uk->fn(kn, p, bp, tile, (size_t)nr, 1.0f, 0.0f);
                for (int i = 0; i < mm; i++)
                    for (int j = 0; j < nn; j++)
                        c[(size_t)i * ldy + j] = (k0 ? c[(size_t)i * ldy + j] : 0.0f) + tile[i * nr + j];
            }
        }
    }
    return 0;
}

void lb_fgemm_or_dot(const lb_sgemm_kernel *uk, lb_fgemm_cvt_fn cvt, size_t esize, lb_vec_dot_fn dot, int64_t K,
                     const void *W, size_t rs, int n0, int n1, const void *A, size_t ars, int M, float *Y, size_t ldy) {
    if (M >= LB_FGEMM_MIN_M && lb_fgemm(uk, cvt, NULL, esize, K, W, rs, n0, n1, (const float *)A, ars, M, Y, ldy) == 0)
        return;
    for (int m = 0; m < M; m++)
        for (int n = n0; n < n1; n++)
            dot(K, Y + (size_t)m * ldy + n, (const char *)W + (size_t)n * rs, (const char *)A + (size_t)m * ars);
}
