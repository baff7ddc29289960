/* AVX-512 VNNI GEMV / GEMM on the 16-row layouts of the legacy 32-weight
 * formats Q4_1, Q5_0, Q5_1 (formats/repack_kx.h), which llama.cpp's K-quant
 * mixes keep for rows that 256 does not divide (Gemma 3 270M's 640-wide
 * matrices are Q5_0 in its Q4_K_M file). Activations: Q8_0 (Q5_0) or Q8_1
 * (Q4_1, Q5_1) plain rows for the GEMV, 4-row groups (lb_block_q8_0x4v,
 * lb_block_q8_1x4) for the GEMM.
 *
 * A block is one x-block of 16 rows: 4 DW vectors of nibbles (low = weights
 * 4c.., high = 16 + 4c..) and, for Q5, the P5 plane whose bits land on bit
 * 4 of each byte with one shift. Unsigned u = q (0..15 or 0..31); Q5_0's
 * w = u - 16 comes off by starting the block's int32 at -16 * sum(a); the
 * mins of Q4_1 / Q5_1 are m * s (s = d_a * sum(a), carried by Q8_1). Per
 * block and 16 rows: 8 VNNI and one float scaling, as the Q4_0 kernels
 * (repack_avx512.c, whose GEMM structure this follows). */
#include "kernels/cpu.h"
#include "kernels/x86/kx_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/kx_avx512_impl.h"
#include "kernels/x86/prefetch_x86.h"

/* ---- GEMV: plain Q8_0 / Q8_1 rows, one at a time ---- */

enum { LG_KC = 256 }; /* blocks per pass: activation scales and biases on the stack */

typedef struct {
    const uint8_t *row; /* the pass's first activation block */
    float d[LG_KC], s[LG_KC];
    int32_t bias[LG_KC];
} lg_acts;

INLINE size_t lg_abs(int kt) { return kt == KL50 ? sizeof(block_q8_0) : sizeof(block_q8_1); }
INLINE int lg_aqs(int kt) { return kt == KL50 ? 2 : 4; } /* offset of qs in an activation block */

/* One block of one group: acc += its contribution. Two chains of 4. */
INLINE __m512 lg_block(int kt, const uint8_t *xb, int64_t b, const lg_acts *A, __m512 acc) {
    const int8_t *q = (const int8_t *)(A->row + (size_t)b * lg_abs(kt) + lg_aqs(kt));
    __m512i s0 = kt == KL50 ? _mm512_set1_epi32(A->bias[b]) : _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        if (k & 1) s1 = _mm512_dpbusd_epi32(s1, lg_vec(kt, xb, k), bcast32(q + 4 * k));
        else s0 = _mm512_dpbusd_epi32(s0, lg_vec(kt, xb, k), bcast32(q + 4 * k));
    }
    const __m512 dw = fp16x16(xb + lg_d(kt));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)), _mm512_mul_ps(dw, _mm512_set1_ps(A->d[b])), acc);
    if (lg_has_m(kt)) acc = _mm512_fmadd_ps(fp16x16(xb + LG_M_OFF), _mm512_set1_ps(A->s[b]), acc);
    return acc;
}

INLINE void lg_gemv(int kt, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *Av, size_t ars, int M,
                    float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    const size_t xbs = lg_xbs(kt), gstride = 16 * wrs;
    const int pf_l2 = lb_cpu_prefetch_l2();
    const ptrdiff_t dist = pf_l2 ? 6144 : 3072; /* bytes, as the super-block GEMV's */
    lg_acts A;
    for (int m = 0; m < M; m++)
        for (int64_t b0 = 0; b0 < nb; b0 += LG_KC) {
            const int64_t kb = LB_MIN((int64_t)LG_KC, nb - b0);
            A.row = (const uint8_t *)Av + (size_t)m * ars + (size_t)b0 * lg_abs(kt);
            for (int64_t b = 0; b < kb; b++) {
                const uint8_t *ab = A.row + (size_t)b * lg_abs(kt);
                A.d[b] = lb_fp16_to_f32(*(const lb_fp16 *)ab);
                if (kt == KL50) {
                    int32_t sum = 0;
                    for (int i = 0; i < 32; i++) sum += ((const int8_t *)ab)[2 + i];
                    A.bias[b] = -16 * sum;
                } else {
                    A.s[b] = lb_fp16_to_f32(*(const lb_fp16 *)(ab + 2));
                }
            }
            const ptrdiff_t jump = (ptrdiff_t)(2 * gstride) - (ptrdiff_t)(kb * xbs);
            for (int n = n0; n < n1; n += 32) {
                const uint8_t *g0 = (const uint8_t *)W + (size_t)(n / 16) * gstride + (size_t)b0 * xbs;
                const uint8_t *g1 = n + 16 < n1 ? g0 + gstride : g0;
                __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
                for (int64_t b = 0; b < kb; b++) {
                    const ptrdiff_t ahead = (ptrdiff_t)(b * xbs) + dist;
                    const ptrdiff_t pf = ahead < (ptrdiff_t)(kb * xbs) ? ahead : ahead + jump;
                    lb_prefetch_span(g0 + pf, xbs, pf_l2);
                    if (g1 != g0) lb_prefetch_span(g1 + pf, xbs, pf_l2);
                    acc0 = lg_block(kt, g0 + (size_t)b * xbs, b, &A, acc0);
                    acc1 = lg_block(kt, g1 + (size_t)b * xbs, b, &A, acc1);
                }
                float *p = Y + (size_t)m * ldy + n;
                if (b0 > 0) acc0 = _mm512_add_ps(acc0, _mm512_loadu_ps(p));
                _mm512_storeu_ps(p, acc0);
                if (n + 16 < n1) {
                    if (b0 > 0) acc1 = _mm512_add_ps(acc1, _mm512_loadu_ps(p + 16));
                    _mm512_storeu_ps(p + 16, acc1);
                }
            }
        }
}

/* ---- GEMM: 48 rows x GKC blocks decoded once, then every 4-row group ---- */

enum { GKC = 16, GNV = 3 };

typedef struct {
    __m512i u[GKC][GNV][8];
    __m512 d[GKC][GNV], m[GKC][GNV];
} lg_buf;

/* the 4-row activation block's fields, by kind */
INLINE const float *ga_d(int kt, const void *a) {
    return kt == KL50 ? ((const lb_block_q8_0x4v *)a)->d : ((const lb_block_q8_1x4 *)a)->d;
}
INLINE const int8_t *ga_qs(int kt, const void *a, int m) {
    return kt == KL50 ? ((const lb_block_q8_0x4v *)a)->qs[m] : ((const lb_block_q8_1x4 *)a)->qs[m];
}
INLINE size_t ga_size(int kt) { return kt == KL50 ? sizeof(lb_block_q8_0x4v) : sizeof(lb_block_q8_1x4); }

INLINE void lg_tile(int kt, int NV, const lg_buf *buf, int64_t kc, const uint8_t *ab, float *Y, size_t ldy, int add) {
    __m512 acc[GNV][4];
#pragma GCC unroll 3
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) acc[v][m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kc; b++) {
        const void *a = ab + (size_t)b * ga_size(kt);
        __m512i s[GNV][4];
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) /* Q5_0: -16 sum = 2 * (-8 sum) */
                s[v][m] = kt == KL50 ? _mm512_set1_epi32(2 * ((const lb_block_q8_0x4v *)a)->b8[m]) : _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                const __m512i av = bcast32(ga_qs(kt, a, m) + 4 * k);
#pragma GCC unroll 3
                for (int v = 0; v < NV; v++) s[v][m] = _mm512_dpbusd_epi32(s[v][m], buf->u[b][v][k], av);
            }
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                acc[v][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[v][m]), _mm512_mul_ps(buf->d[b][v], _mm512_set1_ps(ga_d(kt, a)[m])),
                                            acc[v][m]);
                if (lg_has_m(kt))
                    acc[v][m] = _mm512_fmadd_ps(buf->m[b][v], _mm512_set1_ps(((const lb_block_q8_1x4 *)a)->s[m]), acc[v][m]);
            }
    }
#pragma GCC unroll 3
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            float *p = Y + (size_t)m * ldy + 16 * v;
            __m512 o = acc[v][m];
            if (add) o = _mm512_add_ps(o, _mm512_loadu_ps(p));
            _mm512_storeu_ps(p, o);
        }
}

INLINE void lg_gemm(int kt, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, size_t ars, int M,
                    float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    const size_t xbs = lg_xbs(kt);
    lg_buf bufs __attribute__((aligned(64)));
    lg_buf *buf = &bufs;
    for (int n = n0; n < n1; n += 16 * GNV) {
        const int nv = LB_MIN(GNV, (n1 - n) / 16);
        for (int64_t b0 = 0; b0 < nb; b0 += GKC) {
            const int64_t kc = LB_MIN((int64_t)GKC, nb - b0);
            for (int64_t b = 0; b < kc; b++)
                for (int v = 0; v < nv; v++) {
                    const uint8_t *xb = (const uint8_t *)W + (size_t)((n + 16 * v) / 16) * 16 * wrs + (size_t)(b0 + b) * xbs;
#pragma GCC unroll 8
                    for (int k = 0; k < 8; k++) buf->u[b][v][k] = lg_vec(kt, xb, k);
                    buf->d[b][v] = fp16x16(xb + lg_d(kt));
                    if (lg_has_m(kt)) buf->m[b][v] = fp16x16(xb + LG_M_OFF);
                }
            for (int m = 0; m < M; m += 4) {
                const uint8_t *ab = (const uint8_t *)A + (size_t)(m / 4) * ars + (size_t)b0 * ga_size(kt);
                float *y = Y + (size_t)m * ldy + n;
                if (nv == 3) lg_tile(kt, 3, buf, kc, ab, y, ldy, b0 > 0);
                else if (nv == 2) lg_tile(kt, 2, buf, kc, ab, y, ldy, b0 > 0);
                else lg_tile(kt, 1, buf, kc, ab, y, ldy, b0 > 0);
            }
        }
    }
}

/* ---- the Q8_1 4-row quantizer (== lb_quantize_q8_1x4_ref) ---- */

INLINE __m512i round_half_away(__m512 x) {
    const __m512 t = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(x, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u));
    const __m512 step = _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_castps_si512(_mm512_set1_ps(1.0f))));
    return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, step));
}

LB_KX512 void lb_quantize_q8_1x4_avx512(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_1x4 *y = vy;
    for (int64_t b = 0; b < k / 32; b++)
        for (int m = 0; m < 4; m++) {
            const float *xb = x + m * ldx + b * 32;
            const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const __m512i i0 = round_half_away(_mm512_mul_ps(v0, _mm512_set1_ps(id)));
            const __m512i i1 = round_half_away(_mm512_mul_ps(v1, _mm512_set1_ps(id)));
            const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
            _mm_storeu_si128((__m128i *)y[b].qs[m], _mm512_cvtepi32_epi8(i0));
            _mm_storeu_si128((__m128i *)(y[b].qs[m] + 16), _mm512_cvtepi32_epi8(i1));
            /* as lb_quantize_row_q8_1_ref: both through fp16 */
            y[b].d[m] = lb_fp16_to_f32(lb_f32_to_fp16(d));
            y[b].s[m] = lb_fp16_to_f32(lb_f32_to_fp16((float)sum * d));
        }
}

#define LG_KERNELS(w, a, KT)                                                                                     \
    LB_KX512 void lb_gemv_##w##x16_##a##_16x4_avx512vnni(int64_t K, const void *W, size_t wrs, int n0, int n1,   \
                                                         const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        lg_gemv(KT, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                                       \
    }                                                                                                            \
    LB_KX512 void lb_gemm_##w##x16_##a##x4_16x4_avx512vnni(int64_t K, const void *W, size_t wrs, int n0, int n1, \
                                                           const void *A, size_t ars, int M, float *Y,           \
                                                           size_t ldy) {                                         \
        lg_gemm(KT, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                                       \
    }
LG_KERNELS(q4_1, q8_1, KL41)
LG_KERNELS(q5_0, q8_0, KL50)
LG_KERNELS(q5_1, q8_1, KL51)
#endif
