/* AVX-512 VPOPCNTDQ kernel of the ABQ plane types (kernels/x86/abq_x86.h;
 * layout and order of operations in formats/abq.h): the popcount way of
 * abq_avx2.c with four activation planes per step instead of two and the
 * count in one instruction.
 *
 * Per weight plane s, its 16 bytes in all four lanes, ANDed with activation
 * planes 0..3 (64 bytes, side by side in block_abq_act) and, when p > 4,
 * 4..7; vpopcntq gives two 64-bit counts per plane, each shifted left by
 * s + t (vpsllvq). q ceil(p/4) steps per group against AVX2's q ceil(p/2)
 * nibble-table steps; on the Xeon faster than the int8 way (planes
 * recombined into code bytes, abq_avx2.c) at every q and p, which the
 * gemm (M > 1) keeps for q <= 7: it recombines each group once for all
 * rows. The group's exact int32, then the reference's double accumulation: every
 * output is the reference's float, bit for bit. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

/* the reference's double multiply, then add: never fused */
#include "core/fp_strict.h"

#define LB_ABQ512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vpopcntdq,avx2,fma,f16c,popcnt")))
#define INLINE LB_ABQ512 static inline __attribute__((always_inline))

/* sum_s sum_t 2^(s+t) popcount(W_s & A_t) of one group (p: the token's bits) */
INLINE int32_t planes_product(const uint8_t *wp, int q, const block_abq_act *a) {
    const __m512i a0 = _mm512_loadu_si512(a->b[0]), a1 = _mm512_loadu_si512(a->b[4]);
    const __m512i t0 = _mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3), t1 = _mm512_add_epi64(t0, _mm512_set1_epi64(4));
    __m512i acc = _mm512_setzero_si512();
    for (int s = 0; s < q; s++) {
        const __m512i w = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(wp + LB_ABQ_PLANE * s)));
        const __m512i sv = _mm512_set1_epi64(s);
        acc = _mm512_add_epi64(acc, _mm512_sllv_epi64(_mm512_popcnt_epi64(_mm512_and_si512(w, a0)), _mm512_add_epi64(t0, sv)));
        if (a->p > 4)
            acc = _mm512_add_epi64(acc,
                                   _mm512_sllv_epi64(_mm512_popcnt_epi64(_mm512_and_si512(w, a1)), _mm512_add_epi64(t1, sv)));
    }
    return (int32_t)_mm512_reduce_add_epi64(acc);
}

INLINE float row_dot(int q, int header, int zfixed, int64_t n, const void *w, const void *va) {
    const block_abq_act *a = va;
    const size_t bs = (size_t)header + LB_ABQ_PLANE * (size_t)q;
    double acc = 0.0;
    for (int64_t i = 0; i < n / LB_ABQ_G; i++) {
        const uint8_t *blk = (const uint8_t *)w + i * bs;
        double dw;
        int zw;
        int32_t sw;
        lb_abq_group_head(blk, q, header, zfixed, &dw, &zw, &sw);
        const int32_t P = planes_product(blk + header, q, &a[i]);
        acc += dw * (double)(P - a[i].z * sw - zw * a[i].sum + LB_ABQ_G * zw * a[i].z);
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

/* way -1 (vec_dot) is this popcount at every p: bench/abq on the Xeon (docs/abq.md)
 * measured it 1.3-2.8x the AVX2 int8 way for every q and p. */
LB_ABQ512 float lb_abq_dot_avx512(int type, int way, int64_t n, const void *w, const void *a) {
    const int q = lb_abq_bits(type), balanced = lb_abq_is_balanced(type);
    if (way == 1) return lb_abq_dot_avx2(type, 1, n, w, a);
    return row_dot(q, balanced ? 2 : 4, balanced ? 2 : -1, n, w, a);
}

/* W2S: d alone (2 header bytes), z = 2; the others d and z (4 bytes).
 * The gemm (M > 1) takes the AVX2 int8 gemm (each weight group recombined
 * once for all rows) where there is one (q <= 7). */
#define ABQ_AVX512(name, NAME, Q)                                                                            \
    LB_ABQ512 void lb_vec_dot_##name##_avx512(int64_t n, float *s, const void *w, const void *va) {          \
        *s = lb_abq_dot_avx512(LB_TYPE_##NAME, -1, n, w, va);                                               \
    }                                                                                                       \
    LB_ABQ512 void lb_gemm_##name##_avx512(int64_t K, const void *W, size_t w_row_size, int n0, int n1,      \
                                            const void *A, size_t a_row_size, int M, float *Y, size_t ldy) { \
        if (M > 1 && Q <= 7) {                                                                               \
            lb_gemm_##name##_avx2(K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                      \
            return;                                                                                          \
        }                                                                                                    \
        for (int m = 0; m < M; m++)                                                                          \
            for (int n = n0; n < n1; n++)                                                                    \
                Y[(size_t)m * ldy + n] = lb_abq_dot_avx512(LB_TYPE_##NAME, -1, K,                           \
                                                           (const uint8_t *)W + (size_t)n * w_row_size,      \
                                                           (const uint8_t *)A + (size_t)m * a_row_size);     \
    }
LB_ABQ_LIST(ABQ_AVX512)
#undef ABQ_AVX512

#endif
