/* AMX-BF16 GEMM (prefill) on the interleaved Q4_0 / IQ4_NL / Q8_0 layouts of
 * formats/repack.h, against bf16 activations (lb_block_bf16x16).
 *
 * Why bf16 and not the int8 tiles of repack_amx.c: a weight block's scale
 * changes every 32 weights, so an int8 tdpbssd can only take K = 32 (half
 * its width: tdpbssd costs the same 16 cycles at K = 32 as at 64, measured
 * on the Xeon this was written on) and each block's int32 tile must go
 * through memory to be scaled by AVX-512 (three vector operations per output
 * and block: about 24 cycles per 16 cycles of tile work). That path peaks at
 * a third of the AMX int8 rate and runs at about 11 % of it. Here each weight
 * tile is decoded once to bf16 (the block's scale folded in, q * d rounded to
 * nearest even), reused by every 16-row activation tile of the call, and
 * tdpbf16ps accumulates whole K chunks in fp32 tiles with no vector work per
 * block: its ceiling is half the int8 rate (16 x 16 x 32 per 16 cycles).
 *
 * Rounding: q * d is exact in fp32 and rounded once to bf16 (relative error
 * <= 2^-9, a small fraction of the 4-bit step); the activations are rounded
 * to bf16 (<= 2^-9 relative, finer than Q8_0's step of max/127 per block).
 * tests/test_repack_kernels.c checks the outputs against a double sum of
 * exactly these bf16 values.
 *
 * Blocking and scratch: the shared core, amx_bf16_impl.h.
 * Rows beyond a multiple of 16 go to the AVX-512 VNNI GEMV (the entry's gemv). */
#include "kernels/x86/repack_amx.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/amx_bf16_impl.h"
#include "kernels/x86/repack_avx512_impl.h"

/* The layout's weight tile (lb_bf16_tile_fn): decode16's vector kk has
 * w[n][4kk..4kk+3] in dword n; its bytes, scaled by the rows' d, become pair
 * rows 2kk and 2kk + 1. */
typedef struct {
    geom G;
    __m512i idx[8];
    int wt, n1;
    const void *W;
} repack_ctx;

INLINE_BF void repack_tile(const void *vctx, int n, int64_t b, __m512i out[16]) {
    const repack_ctx *c = vctx;
    const rows16 r = rows_at(&c->G, c->W, n, c->n1);
    __m512i w[8];
    decode16(c->wt, 1, &c->G, c->idx, &r, b, w);
    const __m512 d = scales16(&c->G, &r, b);
#pragma GCC unroll 8
    for (int kk = 0; kk < 8; kk++) {
        out[2 * kk] = bf16_pair_row(_mm512_mul_ps(bf16_byte_ps(w[kk], 0), d), _mm512_mul_ps(bf16_byte_ps(w[kk], 1), d));
        out[2 * kk + 1] =
            bf16_pair_row(_mm512_mul_ps(bf16_byte_ps(w[kk], 2), d), _mm512_mul_ps(bf16_byte_ps(w[kk], 3), d));
    }
}

INLINE_BF void gemm_bf16(int wt, int R, int C, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                         const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    repack_ctx c;
    geom_init(&c.G, R, C, wt == WQ8 ? 32 : 16, w_row_size);
    for (int t = 0; t < c.G.ntgt; t++) c.idx[t] = _mm512_loadu_si512(c.G.idx[t]);
    c.wt = wt, c.n1 = n1, c.W = W;
    lb_amx_bf16_gemm(repack_tile, &c, K, n0, n1, A, a_row_size, M, Y, ldy);
}

/* Bit-identical to lb_pack_bf16x16_ref (round to nearest even, NaN quieted,
 * denormal inputs to zero as the instruction does). */
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void lb_pack_bf16x16_avx512(const float *x, size_t ldx,
                                                                                   void *vy, int64_t k) {
    lb_block_bf16x16 *y = vy;
    for (int64_t b = 0; b < k / 32; b++)
        for (int m = 0; m < 16; m++) {
            const float *s = x + (size_t)m * ldx + b * 32;
            _mm512_storeu_si512(y[b].v[m], (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + 16), _mm512_loadu_ps(s)));
        }
}

#define KERNELS(w, R, C, WT)                                                                                  \
    LB_AMXBF16 void lb_gemm_##w##x##R##_bf16x16_##R##x##C##_amxbf16(int64_t K, const void *W, size_t wrs,   \
                                                                    int n0, int n1, const void *A, size_t ars, \
                                                                    int M, float *Y, size_t ldy) {            \
        gemm_bf16(WT, R, C, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                           \
    }
LB_REPACK_LAYOUTS(KERNELS)
#endif
