/* AMX-BF16 GEMM (prefill) on the BCQ _LUT layouts (formats/bcq.h): the
 * shared core (amx_bf16_impl.h; why bf16: repack_amx_bf16.c) with a tile
 * decoder that evaluates w = z + sum_i (b_i ? alpha_i : -alpha_i) in fp32 in
 * the reference's order (formats/bcq.c, code_values), so the weights are
 * the reference's floats, then rounds them to bf16. Table lookup (the GEMV)
 * costs the same per activation row whatever M is; the tiles reuse each
 * decoded weight tile for every 16-row activation group, so the driver's
 * split is the dispatch on M: rows in whole groups of 16 here, the rest
 * (and decode) through the lookup GEMV. */
#include "kernels/x86/bcq_x86.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/amx_bf16_impl.h"

/* Weights 32bb .. 32bb + 31 of the 16 rows from n: plane bytes 4t .. 4t + 3
 * of the x-block (t = the 32-weight slice within the group of g). */
INLINE_BF void bcq_tile_at(const bf16_groups *c, int n, int64_t bb, __m512i out[16], int Q, int G) {
    const uint8_t *xp = bf16_xblock(c, n, bb * 32 / G, LB_BCQ_XSIZE(Q, G));
    const int t = (int)(bb % (G / 32));
    __m512 a[LB_BCQ_MAX_Q], na[LB_BCQ_MAX_Q];
    for (int i = 0; i < Q; i++) {
        a[i] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(xp + 32 * i)));
        na[i] = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a[i]), _mm512_set1_epi32((int)0x80000000u)));
    }
    const __m512 z = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(xp + 32 * Q)));
    const uint8_t *planes = xp + 32 * (Q + 1);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        __m512i pb[LB_BCQ_MAX_Q]; /* byte 4t + k of each plane, one per row's lane */
        for (int i = 0; i < Q; i++)
            pb[i] = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(planes + ((size_t)i * (G / 8) + 4 * t + k) * 16)));
#pragma GCC unroll 4
        for (int e = 0; e < 8; e += 2) {
            __m512 f0 = z, f1 = z;
            for (int i = 0; i < Q; i++) {
                const __mmask16 m0 = _mm512_test_epi32_mask(pb[i], _mm512_set1_epi32(1 << e));
                const __mmask16 m1 = _mm512_test_epi32_mask(pb[i], _mm512_set1_epi32(2 << e));
                f0 = _mm512_add_ps(f0, _mm512_mask_blend_ps(m0, na[i], a[i]));
                f1 = _mm512_add_ps(f1, _mm512_mask_blend_ps(m1, na[i], a[i]));
            }
            out[4 * k + e / 2] = bf16_pair_row(f0, f1);
        }
    }
}

#define BCQ_BF16_KERNEL(name, NAME, Q, G)                                                                     \
    INLINE_BF void bcq_tile_##name(const void *c, int n, int64_t bb, __m512i out[16]) {                       \
        bcq_tile_at(c, n, bb, out, Q, G);                                                                     \
    }                                                                                                         \
    LB_AMXBF16 void lb_gemm_##name##_lut_bf16x16_amxbf16(int64_t K, const void *W, size_t w_row_size, int n0, \
                                                         int n1, const void *A, size_t a_row_size, int M,     \
                                                         float *Y, size_t ldy) {                              \
        const bf16_groups c = {W, 16 * w_row_size, 0};                                                        \
        lb_amx_bf16_gemm(bcq_tile_##name, &c, K, n0, n1, A, a_row_size, M, Y, ldy);                           \
    }
LB_BCQ_LIST(BCQ_BF16_KERNEL)
#endif
