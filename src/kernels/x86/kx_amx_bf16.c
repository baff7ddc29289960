/* AMX-BF16 GEMM (prefill) on the 16-row K-quant layouts of
 * formats/repack_kx.h: Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, the bulk of llama.cpp's
 * K-quant mixes, and the legacy Q4_1, Q5_0, Q5_1 that those mixes keep for
 * rows 256 does not divide. The tile work, blocking and scratch are the shared core
 * (amx_bf16_impl.h, why bf16: repack_amx_bf16.c); this file only turns one
 * weight tile (16 rows, 32 weights of a super-block) into bf16 with the
 * reference's arithmetic: d1 = d * sc, m1 = dmin * m, w = d1 * q - m1 in
 * fp32 (formats/q4_k.c and the others), then rounded to nearest even.
 * The decode of the quants and scales is the AVX-512 VNNI kernels'
 * (kx_avx512_impl.h): unsigned bytes u with q = u - bias. Decode and the
 * rows past a multiple of 16 keep Q8_K activations and the VNNI GEMV. */
#include "kernels/x86/kx_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/amx_bf16_impl.h"
#include "kernels/x86/kx_avx512_impl.h"
#include "kernels/x86/repack_amx.h"

/* Weights 32t .. 32t + 31 of super-block b / 8 (t = b % 8) of the 16 rows from n. */
INLINE_BF void kx_tile(const void *vctx, int n, int64_t b, __m512i out[16]) {
    const bf16_groups *c = vctx;
    const int kt = c->kind, t = (int)(b % 8), sb16 = kx_sb(kt) == 16;
    const uint8_t *xb = bf16_xblock(c, n, b / 8, kx_xbs(kt));
    kx_sstate S;
    kx_sload(kt, xb, &S);
    const __m512 d = fp16x16(xb + kx_d_off(kt)), bias = _mm512_set1_ps((float)kx_bias(kt));
    __m512 d1 = d, m1 = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int kk = 0; kk < 8; kk++) {
        if (kk == 0 || (sb16 && kk == 4)) {
            const int j = sb16 ? 2 * t + kk / 4 : t; /* the sub-block */
            d1 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(kx_sc(kt, &S, j)));
            if (kx_has_min(kt))
                m1 = _mm512_mul_ps(fp16x16(xb + KX_DMIN_OFF), _mm512_cvtepi32_ps(byte_of(S.v[2 + j / 4], j % 4)));
        }
        const __m512i v = dec_vec(kt, xb, t / 2, 8 * (t % 2) + kk);
        __m512 f[4];
#pragma GCC unroll 4
        for (int e = 0; e < 4; e++)
            f[e] = _mm512_sub_ps(_mm512_mul_ps(d1, _mm512_sub_ps(_mm512_cvtepi32_ps(byte_of(v, e)), bias)), m1);
        out[2 * kk] = bf16_pair_row(f[0], f[1]);
        out[2 * kk + 1] = bf16_pair_row(f[2], f[3]);
    }
}

/* The legacy 32-weight kinds, one x-block per tile (ctx: bf16_groups of a
 * legacy kind): w = d * u + m (Q4_1, Q5_1: d * u exact in fp32, one
 * rounding as the reference's d * q + m) or d * (u - 16) (Q5_0, exact). */
INLINE_BF void lg_tile(const void *vctx, int n, int64_t b, __m512i out[16]) {
    const bf16_groups *c = vctx;
    const int kt = c->kind;
    const uint8_t *xb = bf16_xblock(c, n, b, lg_xbs(kt));
    const __m512 d = fp16x16(xb + lg_d(kt));
    const __m512 m = lg_has_m(kt) ? fp16x16(xb + LG_M_OFF) : _mm512_mul_ps(d, _mm512_set1_ps(-16.0f));
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        const __m512i v = lg_vec(kt, xb, k);
        __m512 f[4];
#pragma GCC unroll 4
        for (int e = 0; e < 4; e++) f[e] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(byte_of(v, e)), m);
        out[2 * k] = bf16_pair_row(f[0], f[1]);
        out[2 * k + 1] = bf16_pair_row(f[2], f[3]);
    }
}

/* The entry points: TILE decodes a tile of kind KT */
#define BF16_KERNEL(w, KT, TILE)                                                                                \
    LB_AMXBF16 void lb_gemm_##w##x16_bf16x16_16x4_amxbf16(int64_t K, const void *W, size_t wrs, int n0, int n1, \
                                                          const void *A, size_t ars, int M, float *Y,           \
                                                          size_t ldy) {                                         \
        const bf16_groups c = {W, 16 * wrs, KT};                                                                \
        lb_amx_bf16_gemm(TILE, &c, K, n0, n1, A, ars, M, Y, ldy);                                               \
    }
BF16_KERNEL(q3_K, KQ3, kx_tile)
BF16_KERNEL(q4_K, KQ4, kx_tile)
BF16_KERNEL(q5_K, KQ5, kx_tile)
BF16_KERNEL(q6_K, KQ6, kx_tile)
BF16_KERNEL(iq4_xs, KIQ4, kx_tile)
BF16_KERNEL(q4_1, KL41, lg_tile)
BF16_KERNEL(q5_0, KL50, lg_tile)
BF16_KERNEL(q5_1, KL51, lg_tile)
#endif
