/* The matrix multiply driver: convert activations once to the kernel's input
 * type, then split the output rows over threads. Weight rows are walked in
 * tiles so a tile stays in cache while every activation row passes over it. */
#include <omp.h>

#include "kernels/dispatch.h"

#define LB_TILE_N 16 /* output rows per work item */
#define LB_TILE_M 64 /* activation rows per pass over a weight tile */

static size_t act_row_size(const lb_kernel *k, int64_t K) { return lb_row_size(k->act_type, K); }

size_t lb_matmul_scratch_size(const lb_matrix *W, int M) {
    const lb_kernel *k = lb_kernel_get(W->type);
    return k ? act_row_size(k, W->K) * (size_t)M : 0;
}

void lb_matmul(const lb_matrix *W, const float *X, int M, float *Y, size_t ldy, void *scratch,
               int n_threads) {
    const lb_kernel *k = lb_kernel_get(W->type);
    const int64_t K = W->K, N = W->N;
    const size_t arow = act_row_size(k, K);
    const int n_tiles = (int)((N + LB_TILE_N - 1) / LB_TILE_N);
    if (n_threads < 1) n_threads = 1;
    /* Tiny matrices are not worth waking threads for. */
    if ((int64_t)M * N * K < 32768) n_threads = 1;

#pragma omp parallel num_threads(n_threads)
    {
        const int nth = omp_get_num_threads(), ith = omp_get_thread_num();
        for (int m = ith; m < M; m += nth)
            k->quantize_act(X + (size_t)m * K, (char *)scratch + (size_t)m * arow, K);
#pragma omp barrier
        /* Contiguous ranges of tiles per thread keep each thread's weight
         * stream sequential (matters for decode, which is bandwidth-bound). */
        const int t0 = (int)((int64_t)n_tiles * ith / nth), t1 = (int)((int64_t)n_tiles * (ith + 1) / nth);
        for (int t = t0; t < t1; t++) {
            const int n0 = t * LB_TILE_N, n1 = (int)LB_MIN((int64_t)n0 + LB_TILE_N, N);
            for (int m0 = 0; m0 < M; m0 += LB_TILE_M) {
                const int m1 = LB_MIN(m0 + LB_TILE_M, M);
                if (k->gemm) {
                    k->gemm(K, W->data, W->row_size, n0, n1, (const char *)scratch + (size_t)m0 * arow, arow,
                            m1 - m0, Y + (size_t)m0 * ldy, ldy);
                    continue;
                }
                for (int m = m0; m < m1; m++) {
                    const char *a = (const char *)scratch + (size_t)m * arow;
                    for (int n = n0; n < n1; n++)
                        k->vec_dot(K, Y + (size_t)m * ldy + n, (const char *)W->data + (size_t)n * W->row_size, a);
                }
            }
        }
    }
}
