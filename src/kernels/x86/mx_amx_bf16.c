/* AMX-BF16 GEMM (prefill) of MX (formats/mx.h: 2-bit tiles with 4-bit
 * second-order scales, 4-bit tiles, fp16 outliers; W an lb_mx_view). The
 * tile work, blocking and scratch are the shared core (amx_bf16_impl.h; why
 * bf16: repack_amx_bf16.c); this file turns one weight tile (16 rows, the 32
 * columns of one input-channel group) into bf16.
 *
 * Why bf16 here too: a 2-bit tile's scales change every 16 columns, so int8
 * tiles would need each tdpbssd's int32 result scaled at K = 16, a quarter of
 * the unit's rate (mx_x86.h); in bf16 the scales, the half-step zeros and
 * the outliers are folded into the weights when a tile is decoded, once per
 * call for all its activation rows.
 *
 * A weight is the reference's float (lb_mx_view_dequantize): s1 * ((float)q
 * - z1) for a 2-bit tile, s * (float)(q - z) for a 4-bit one, plus its
 * outlier's fp16 value where it has one (the same operations, in the same
 * order), then rounded to bf16. The outliers stay in the one pass over the
 * weights (seed 002's point): each tile row looks its own up by a binary
 * search of its row's columns. */
#include "kernels/x86/mx_x86.h"

#if LB_HAVE_X86_KERNELS
#include <string.h>

#include "core/fp16.h"
#include "formats/mx.h"
#include "kernels/x86/amx_bf16_impl.h"
#include "kernels/x86/mx_x86_impl.h"

/* The call's view and where each group (32 columns) lives: slot[g] >= 0 a
 * 2-bit slot, -1 - slot a 4-bit one. */
typedef struct {
    const lb_mx_view *v;
    const int32_t *slot;
} mx_ctx;

/* Weights of rows n .. n + 15, columns 32 g .. 32 g + 31, as w[c][r]. */
INLINE_BF void mx_tile_floats(const mx_ctx *c, int n, int64_t g, float w[32][16]) {
    const lb_mx_view *v = c->v;
    const int64_t t = n / LB_MX_ROWS, s = c->slot[g];
    if (s >= 0) {
        const block_mx2 *b = &v->lo[t * v->n_lo + s];
        for (int h = 0; h < 2; h++) {
            /* lb_mx2_scale and lb_mx2_zero of the 16 rows, as they compute
             * them: s2 * (float)(c + z2) and 0.5 * (float)(z1 code + 1) */
            uint32_t zw;
            memcpy(&zw, b->z1 + 4 * h, 4);
            const __m512i r2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            const __m512i ci = lb_mx_nibbles16(b->s1 + 8 * h);
            const __m512i zi = _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32((int)zw), r2), _mm512_set1_epi32(3));
            const float s2 = lb_fp16_to_f32((lb_fp16)(b->s2[2 * h] | b->s2[2 * h + 1] << 8));
            const int z2 = (b->z2 >> (4 * h)) & 15;
            const __m512 sv = _mm512_mul_ps(_mm512_set1_ps(s2),
                                            _mm512_cvtepi32_ps(_mm512_add_epi32(ci, _mm512_set1_epi32(z2))));
            const __m512 zv = _mm512_mul_ps(_mm512_set1_ps(0.5f),
                                            _mm512_cvtepi32_ps(_mm512_add_epi32(zi, _mm512_set1_epi32(1))));
            const __m512i q = _mm512_loadu_si512(b->qs + 64 * h); /* dword r: row r's 16 codes */
            for (int tt = 0; tt < 4; tt++)
                for (int i = 0; i < 4; i++) {
                    const __m512i qi = _mm512_and_si512(_mm512_srli_epi32(q, (unsigned)(8 * i + 2 * tt)), _mm512_set1_epi32(3));
                    _mm512_storeu_ps(w[16 * h + 4 * tt + i], _mm512_mul_ps(sv, _mm512_sub_ps(_mm512_cvtepi32_ps(qi), zv)));
                }
        }
    } else {
        const block_mx4 *b = &v->hi[t * v->n_hi + (-1 - s)];
        const __m512 sv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b->s));
        const __m512i zv = lb_mx_nibbles16(b->z); /* row r's zero at bits 4r */
        for (int vv = 0; vv < 4; vv++) {
            const __m512i q = _mm512_loadu_si512(b->qs + 64 * vv); /* columns 8 vv .. 8 vv + 7 */
            for (int hi = 0; hi < 2; hi++)
                for (int i = 0; i < 4; i++) {
                    const __m512i qi = _mm512_and_si512(_mm512_srli_epi32(q, (unsigned)(8 * i + 4 * hi)), _mm512_set1_epi32(15));
                    _mm512_storeu_ps(w[8 * vv + 4 * hi + i], _mm512_mul_ps(sv, _mm512_cvtepi32_ps(_mm512_sub_epi32(qi, zv))));
                }
        }
    }
    if (!v->row_ptr) return;
    const uint32_t c0 = (uint32_t)(32 * g);
    for (int r = 0; r < 16; r++) {
        uint32_t lo = v->row_ptr[n + r], hi = v->row_ptr[n + r + 1];
        while (lo < hi) { /* the first outlier of the row at column c0 or after */
            const uint32_t mid = lo + (hi - lo) / 2;
            if ((v->outliers[mid] & 0xffffu) < c0) lo = mid + 1;
            else hi = mid;
        }
        for (uint32_t o = lo; o < v->row_ptr[n + r + 1] && (v->outliers[o] & 0xffffu) < c0 + 32; o++)
            w[(v->outliers[o] & 0xffffu) - c0][r] += lb_fp16_to_f32((lb_fp16)(v->outliers[o] >> 16));
    }
}

INLINE_BF void mx_tile(const void *ctx, int n, int64_t g, __m512i out[16]) {
    const mx_ctx *c = ctx;
    if (n >= c->v->N) { /* a column tile past the matrix: decoded as zeros, never stored */
        for (int p = 0; p < 16; p++) out[p] = _mm512_setzero_si512();
        return;
    }
    float w[32][16] __attribute__((aligned(64)));
    mx_tile_floats(c, n, g, w);
    for (int p = 0; p < 16; p++) out[p] = bf16_pair_row(_mm512_load_ps(w[2 * p]), _mm512_load_ps(w[2 * p + 1]));
}

LB_AMXBF16 void lb_gemm_mx_bf16x16_amxbf16(int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                                            const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    (void)w_row_size;
    const lb_mx_view *v = W;
    int32_t slot[65536 / LB_MX_M]; /* K <= 65536: an outlier's column is 16 bits */
    for (int64_t l = 0; l < v->n_lo; l++) slot[v->lo_group[l]] = (int32_t)l;
    for (int64_t l = 0; l < v->n_hi; l++) slot[v->hi_group[l]] = (int32_t)(-1 - l);
    const mx_ctx c = {v, slot};
    lb_amx_bf16_gemm(mx_tile, &c, K, n0, n1, A, a_row_size, M, Y, ldy);
}
#endif
