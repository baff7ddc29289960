/* The AVX-512 mu = 4 lookup GEMV's driver for one way of taking a group's
 * sums (included by kernels/x86/bcq_avx512.c once per way, with the macros
 * it defines):
 *   ATTR_INLINE         the way's target and inline attributes;
 *   SFX(name)           name with the way's suffix;
 *   SFX(group_sums)     (Q, G, xb, tab, a, P): P[i] = plane i's sums over
 *                       the group at xb, p += d * sum per block in order,
 *                       rows in order (defined before the inclusion).
 * Both ways scale in the reference's order, so both give its floats. */

/* One activation row's blocks [0, nb) (whole groups) against the 16 rows of
 * x-blocks from xb on; y carried in row order. */
ATTR_INLINE __m512 SFX(rows16)(const int Q, const int G, const uint8_t *xb, const block_q8_0_lut4 *a,
                               const __m512i *tab, int nb, __m512 y, int pf_l2) {
    const size_t xs = LB_BCQ_XSIZE(Q, G);
    const size_t ahead = (size_t)(pf_l2 ? PF_L2 : PF_L1) * xs;
    const int NC = G / 32;
    for (int c0 = 0; c0 < nb; c0 += NC, xb += xs, a += NC, tab += 4 * NC) {
        lb_prefetch_span(xb + ahead, xs, pf_l2);
        __m512 P[LB_BCQ_MAX_Q];
        SFX(group_sums)(Q, G, xb, tab, a, P);
        float zs = 0.0f;
        for (int c = 0; c < NC; c++) zs += a[c].ds;
        y = _mm512_add_ps(y, _mm512_mul_ps(load_h16(xb + 32 * Q), _mm512_set1_ps(zs)));
#pragma GCC unroll 4
        for (int i = 0; i < Q; i++) y = _mm512_add_ps(y, _mm512_mul_ps(load_h16(xb + 32 * i), P[i]));
    }
    return y;
}

ATTR_INLINE void SFX(gemv_lut4)(const int Q, const int G, int64_t K, const void *W, size_t w_row_size, int n0,
                                int n1, const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int NB = (int)(K / 32), NC = G / 32;
    /* the whole row's tables for M_TILE rows in the thread's scratch: one
     * pass over the weights, in order (in chunks the stream ran at 0.8 of
     * that); without it, one row at a time in chunks on the stack */
    __m512i stack_tab[4 * CHUNK];
    __m512i *tab = lb_thread_scratch((size_t)M_TILE * NB * 4 * sizeof(__m512i));
    const int whole = tab != NULL, MT = whole ? M_TILE : 1, CH = whole ? NB : CHUNK - CHUNK % NC;
    if (!whole) tab = stack_tab;
    const int pf_l2 = lb_cpu_prefetch_l2();
    for (int m0 = 0; m0 < M; m0 += MT) {
        const int mt = M - m0 < MT ? M - m0 : MT;
        for (int b0 = 0; b0 < NB; b0 += CH) {
            const int nb = NB - b0 < CH ? NB - b0 : CH;
            for (int j = 0; j < mt; j++) split_tables(act_row(A, a_row_size, m0 + j, b0), nb, tab + (size_t)j * 4 * CH);
            for (int n = n0; n < n1; n += LB_BCQ_ROWS) {
                const uint8_t *xb =
                    (const uint8_t *)W + (size_t)n * w_row_size + (size_t)(b0 / NC) * LB_BCQ_XSIZE(Q, G);
                for (int j = 0; j < mt; j++) {
                    float *y = Y + (size_t)(m0 + j) * ldy + n;
                    /* between chunks the 16 sums wait in y */
                    const __m512 y0 = b0 ? _mm512_loadu_ps(y) : _mm512_setzero_ps();
                    _mm512_storeu_ps(y, SFX(rows16)(Q, G, xb, act_row(A, a_row_size, m0 + j, b0),
                                                    tab + (size_t)j * 4 * CH, nb, y0, pf_l2));
                }
            }
        }
    }
}
