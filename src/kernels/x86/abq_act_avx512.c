/* The AVX-512 activation quantizer of the ABQ kernels: per token, exactly
 * the reference's ABQ_ACT blocks (lb_abq_quantize_act, formats/abq.c), byte
 * for byte, as lb_abq_quantize_act_avx2 (kernels/x86/abq_act_avx2.c) writes
 * them. Why a second one: in prefill the AVX2 quantizer took 5 % of the
 * time the W4A4 GEMM took (`perf`, pp512 on Zen 4), a tenth of the whole
 * matmul's activation work next to Q4_0's; here 64 values are one pass:
 * four conversions and clamps by mask registers, one pack, one permute, and
 * per plane one shift and one vpmovb2m, where the AVX2 loop needs twice the
 * passes and a movemask per 32 values and plane.
 *
 * Same float operations in the same order as the reference: the range by
 * min / max from 0 (vminps / vmaxps return their second operand, the
 * running value, when the new one is NaN, as the reference's `x < lo` is
 * false), d and 1/d in scalar, v = x * id, codes by round-to-nearest-even
 * conversion, the reference's guards against NaN and out-of-range values
 * before the conversion. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#define LB_ABQA512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))

/* 16 codes of x * id: v >= cmax gives cmax; else v > -cmax gives the
 * clamped rint(v) + z; else (and NaN) 0 */
LB_ABQA512 static inline __m512i codes16(const float *x, __m512 id, __m512i z, __m512 top, __m512i cmax) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x), id);
    const __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(v), z), _mm512_setzero_si512()),
                                       cmax);
    const __mmask16 ge = _mm512_cmp_ps_mask(v, top, _CMP_GE_OQ);
    const __mmask16 gt = _mm512_cmp_ps_mask(v, _mm512_sub_ps(_mm512_setzero_ps(), top), _CMP_GT_OQ);
    return _mm512_mask_mov_epi32(_mm512_maskz_mov_epi32(gt, r), ge, cmax);
}

LB_ABQA512 void lb_abq_quantize_act_avx512(const float *x, void *vy, int64_t k, int p_in) {
    block_abq_act *y = vy;
    __m512 lo16 = _mm512_setzero_ps(), hi16 = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= k; j += 16) {
        const __m512 v = _mm512_loadu_ps(x + j);
        lo16 = _mm512_min_ps(v, lo16), hi16 = _mm512_max_ps(v, hi16);
    }
    /* the lanes hold no NaN, so the order of the reduction does not matter */
    const lb_abq_act_scale sc = lb_abq_act_scale_of(x, j, k, _mm512_reduce_min_ps(lo16), _mm512_reduce_max_ps(hi16), p_in);
    const float d = sc.d, id = sc.id;
    const int z = sc.z, p = sc.p, cmax = sc.cmax;
    const __m512 id16 = _mm512_set1_ps(id), top = _mm512_set1_ps((float)cmax);
    const __m512i z16 = _mm512_set1_epi32(z), cmax16 = _mm512_set1_epi32(cmax);
    /* after the two packs, dword 4l + j holds codes 4l .. 4l + 3 of the j-th
     * 16: this puts them back in value order */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int64_t i = 0; i < k / LB_ABQ_G; i++) {
        block_abq_act *b = &y[i];
        memset(b, 0, sizeof *b);
        b->d = d, b->z = (int16_t)z, b->p = (uint8_t)p;
        __m512i sum = _mm512_setzero_si512();
        for (int h = 0; h < LB_ABQ_G / 64; h++) {
            const float *xs = x + i * LB_ABQ_G + 64 * h;
            const __m512i c0 = codes16(xs, id16, z16, top, cmax16), c1 = codes16(xs + 16, id16, z16, top, cmax16);
            const __m512i c2 = codes16(xs + 32, id16, z16, top, cmax16), c3 = codes16(xs + 48, id16, z16, top, cmax16);
            const __m512i w = _mm512_packus_epi16(_mm512_packs_epi32(c0, c1), _mm512_packs_epi32(c2, c3));
            const __m512i c = _mm512_permutexvar_epi32(order, w);
            sum = _mm512_add_epi64(sum, _mm512_sad_epu8(c, _mm512_setzero_si512()));
            _mm512_storeu_si512(b->c + 64 * h, _mm512_xor_si512(c, flip));
            /* plane t: bit t of each byte moved to its top bit (the 16-bit
             * shift brings the low byte's bits into the high byte's low ones
             * only), then one bit per byte */
            for (int t = 0; t < p; t++) {
                const uint64_t bits = _cvtmask64_u64(_mm512_movepi8_mask(_mm512_slli_epi16(c, 7 - t)));
                memcpy(&b->b[t][8 * h], &bits, 8);
            }
        }
        b->sum = (int32_t)_mm512_reduce_add_epi64(sum);
    }
}

LB_ABQA512 void lb_abq_quantize_act8_avx512(const float *x, void *y, int64_t k) { lb_abq_quantize_act_avx512(x, y, k, 8); }

#endif
