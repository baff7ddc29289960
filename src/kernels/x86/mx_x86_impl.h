/* Shared by the x86 MX kernels (mx_avx2.c, mx_avx512.c, mx_amx_bf16.c):
 * the activation side of each Q8_0 block, formed once per call and row
 * before the weights stream, the outliers of a tile row, and a tile's
 * nibbles. x86 kernel files only. */
#ifndef LB_MX_X86_IMPL_H
#define LB_MX_X86_IMPL_H

#include <immintrin.h>

#include "core/fp16.h"
#include "formats/mx.h"

/* One activation block's side values. d is half the block's scale: the
 * 2-bit tiles sum twice the products (half-step zeros, exact in integers) */
typedef struct {
    float d;
    int32_t s[2]; /* sums of qs[0..15], qs[16..31] */
    int32_t s01;
} lb_mx_act;

/* out[g] for the G blocks of one Q8_0 row (kernels/x86/mx_avx2.c) */
void lb_mx_act_sides_avx2(const block_q8_0 *a, int64_t G, lb_mx_act *out);

/* yr[r] += the outliers of rows 16t + r, in the reference's order and
 * arithmetic: value * (d * q) (lb_gemv_mx_q8_0_ref) */
static inline void lb_mx_add_outliers(const lb_mx_view *v, int64_t t, const block_q8_0 *a, const lb_mx_act *as,
                                      float yr[16]) {
    for (int r = 0; r < 16 && v->row_ptr; r++)
        for (uint32_t o = v->row_ptr[16 * t + r]; o < v->row_ptr[16 * t + r + 1]; o++) {
            const uint32_t w = v->outliers[o], c = w & 0xffffu;
            yr[r] += lb_fp16_to_f32((lb_fp16)(w >> 16)) * ((2.0f * as[c / 32].d) * (float)a[c / 32].qs[c % 32]);
        }
}

/* x[32 g + i] = d_g q_gi for the G blocks: the activations as the outliers'
 * products take them (d * q, as the reference) (kernels/x86/mx_avx2.c) */
void lb_mx_act_floats_avx2(const block_q8_0 *a, const lb_mx_act *as, int64_t G, float *x);

/* The same as lb_mx_add_outliers with x from lb_mx_act_floats_avx2: a load,
 * a conversion and a multiply-add an outlier (decode forms x once a call) */
__attribute__((target("f16c"))) static inline void lb_mx_add_outliers_x(const lb_mx_view *v, int64_t t,
                                                                        const float *x, float yr[16]) {
    for (int r = 0; r < 16; r++)
        for (uint32_t o = v->row_ptr[16 * t + r]; o < v->row_ptr[16 * t + r + 1]; o++) {
            const uint32_t w = v->outliers[o];
            yr[r] += _cvtsh_ss((uint16_t)(w >> 16)) * x[w & 0xffffu];
        }
}

/* 16 nibbles (8 bytes at p, row r at bits 4r of the 64-bit word) as 16
 * dwords: a tile's 16 rows' 4-bit scale codes or zeros (mx_avx512.c,
 * mx_amx_bf16.c) */
__attribute__((target("avx512f"))) static inline __m512i lb_mx_nibbles16(const uint8_t *p) {
    const __m512i both = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                                  _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)p)));
    const __m512i sh = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
    return _mm512_and_si512(_mm512_srlv_epi32(both, sh), _mm512_set1_epi32(15));
}

/* The prefill GEMMs (kernels/x86/mx_gemm_avx512.c, mx_gemm_avx2.c): tile
 * rows [t0, t1) against M plain Q8_0 rows; -1 (nothing written) when their
 * scratch cannot be allocated */
int lb_mx_gemm_avx512(const lb_mx_view *v, int64_t t0, int64_t t1, const uint8_t *A, size_t a_row_size, int M,
                      float *Y, size_t ldy);
int lb_mx_gemm_avx2(const lb_mx_view *v, int64_t t0, int64_t t1, const uint8_t *A, size_t a_row_size, int M,
                    float *Y, size_t ldy);
/* Their activations: row m's codes as unsigned bytes a + 128 at au + m ld,
 * its blocks' d as floats at d + m G */
void lb_mx_gemm_acts_avx2(const uint8_t *A, size_t a_row_size, int M, int64_t G, size_t ld, uint8_t *au, float *d);


#endif
