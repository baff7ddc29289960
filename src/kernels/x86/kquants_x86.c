/* AVX2 and AVX-512 VNNI dot products for the K-quants and IQ4_NL.
 *
 * K-quant weights are small unsigned integers q with per-group scales (and,
 * for Q2_K/Q4_K/Q5_K, mins; for Q3_K/Q6_K a fixed offset). So every kernel
 * multiplies the UNSIGNED q with the signed Q8_K activations (maddubs on
 * AVX2, dpbusd on VNNI), applies the integer group scales, and removes the
 * min/offset term through Q8_K's bsums (the sum of each 16 activations).
 * All integer sums are exact; only the float scaling order differs from the
 * scalar reference (formats/q*_k.c), so results agree to float rounding.
 *
 * Overflow bounds (the K-quant kernels hold for any int8 activation; the
 * quantizers only write -127..127, which IQ4_NL's sign trick relies on):
 * maddubs pairs  2*63*128 = 16128 < 32767 (Q6_K's q <= 63 is the widest);
 * dpbusd quads   4*63*128 = 32256 < 32767, so a dpbusd lane also fits int16,
 * which lets dpwssd multiply it by a group scale held in the low 16 bits of
 * an int32 lane (high 16 bits zero) and accumulate in one instruction. */
#include "kernels/x86/kquants_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "formats/kquants.h"
#include "formats/mxfp4.h"
#include "formats/repack.h"

#define LB_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LB_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

/* hardware half -> float (F16C), exact like lb_fp16_to_f32 */
#define FP16(h) _cvtsh_ss(h)

/* Fixed-count inner loops unrolled: their shuffle masks and shift counts
 * become constants and the unpacked vectors stay in registers. */
#define LB_UNROLL _Pragma("GCC unroll 8")

/* ------------------------------------------------------------------------ */
/* shared helpers                                                           */

LB_AVX2 static inline float hsum128_ps(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

LB_AVX2 static inline float hsum256_ps(__m256 v) {
    return hsum128_ps(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

LB_AVX512 static inline float hsum512_ps(__m512 v) {
    __m256 lo = _mm256_castpd_ps(_mm512_castpd512_pd256(_mm512_castps_pd(v)));
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return hsum256_ps(_mm256_add_ps(lo, hi));
}

/* Broadcasts int16 element k (0..7) of each 128-bit lane; v8x2 holds the 8
 * group scales of a Q4_K/Q5_K block as int16 in both lanes. */
LB_AVX2 static inline __m256i bcast_i16(__m256i v8x2, int k) {
    return _mm256_shuffle_epi8(v8x2, _mm256_set1_epi16((int16_t)(0x0100 + 0x0202 * k)));
}

/* Byte shuffle mask [2k x8, 2k+1 x8]: spreads the scales of groups 2k and
 * 2k+1 over the two 128-bit halves that maddubs results of 32 weights fill. */
LB_AVX2 static inline __m128i pair_mask(int k) {
    return _mm_add_epi8(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                        _mm_set1_epi8((char)(2 * k)));
}

/* Q4_K / Q5_K scales: 8 6-bit scales (bytes 0..7) then 8 6-bit mins (bytes
 * 8..15), unpacked from the 12 packed bytes as lb_get_scale_min_k4 does. */
static inline __m128i unpack_k4_scales(const uint8_t *packed) {
    uint32_t w[3];
    memcpy(w, packed, sizeof w);
    const uint32_t lo6 = 0x3f3f3f3f, lo4 = 0x0f0f0f0f, lo2 = 0x03030303;
    const uint32_t sc_lo = w[0] & lo6;
    const uint32_t sc_hi = (w[2] & lo4) | (((w[0] >> 6) & lo2) << 4);
    const uint32_t m_lo = w[1] & lo6;
    const uint32_t m_hi = ((w[2] >> 4) & lo4) | (((w[1] >> 6) & lo2) << 4);
    return _mm_setr_epi32((int)sc_lo, (int)sc_hi, (int)m_lo, (int)m_hi);
}

/* Q3_K scales: the 16 6-bit values minus 32, as signed bytes. Low nibbles sit
 * in bytes 0..7 (groups 0..7 low halves, 8..15 high halves), the top 2 bits
 * of group j in byte 8 + j%4 at bit 2*(j/4). */
static inline __m128i unpack_q3_K_scales(const uint8_t *packed) {
    uint32_t w[3];
    memcpy(w, packed, sizeof w);
    const uint32_t lo4 = 0x0f0f0f0f, lo2 = 0x03030303;
    const uint32_t s0 = (w[0] & lo4) | ((w[2] & lo2) << 4);
    const uint32_t s1 = (w[1] & lo4) | (((w[2] >> 2) & lo2) << 4);
    const uint32_t s2 = ((w[0] >> 4) & lo4) | (((w[2] >> 4) & lo2) << 4);
    const uint32_t s3 = ((w[1] >> 4) & lo4) | (((w[2] >> 6) & lo2) << 4);
    return _mm_sub_epi8(_mm_setr_epi32((int)s0, (int)s1, (int)s2, (int)s3), _mm_set1_epi8(32));
}

/* Q4_K / Q5_K min term of one block: sum over groups of min_j * (sum of the
 * group's 32 activations), as 4 int32 lanes. */
LB_AVX2 static inline __m128i k4_mins_dot(__m128i scales_mins, const int16_t *bsums) {
    const __m128i mins = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(scales_mins, scales_mins));
    const __m128i pair_sums = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)bsums),
                                             _mm_loadu_si128((const __m128i *)(bsums + 8)));
    return _mm_madd_epi16(mins, pair_sums);
}

/* ------------------------------------------------------------------------ */
/* Q8_K activation quantizer                                                */

LB_AVX2 void lb_quantize_row_q8_K_avx2(const float *x, void *vy, int64_t k) {
    block_q8_K *y = vy;
    const __m256 sign_bit = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < k / QK_K; b++, x += QK_K) {
        /* max_ps returns its second operand when the first is NaN, so NaNs are
         * skipped as the reference's `ax > amax` skips them. */
        __m256 vmax = _mm256_setzero_ps();
        for (int j = 0; j < QK_K; j += 8)
            vmax = _mm256_max_ps(_mm256_andnot_ps(sign_bit, _mm256_loadu_ps(x + j)), vmax);
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        /* The reference keeps the sign of the FIRST element of largest magnitude. */
        const __m256 vamax = _mm256_set1_ps(amax);
        float max = amax;
        for (int j = 0; j < QK_K; j += 8) {
            const __m256 ax = _mm256_andnot_ps(sign_bit, _mm256_loadu_ps(x + j));
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(ax, vamax, _CMP_EQ_OQ));
            if (hit) {
                max = x[j + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vis = _mm256_set1_ps(iscale);
        const __m256i i127 = _mm256_set1_epi32(127);
        __m128i group_sums[4];
        for (int c = 0; c < 4; c++) { /* 64 values: 4 bsums groups */
            __m256i q[8];
            LB_UNROLL
            for (int v = 0; v < 8; v++) {
                /* round half to even = lb_nearest_int for |x| < 2^22 */
                const __m256 r = _mm256_round_ps(_mm256_mul_ps(vis, _mm256_loadu_ps(x + 64 * c + 8 * v)),
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q[v] = _mm256_min_epi32(_mm256_cvtps_epi32(r), i127);
            }
            LB_UNROLL
            for (int h = 0; h < 2; h++) {
                /* packs interleave 128-bit lanes; the permute restores element order */
                const __m256i p01 = _mm256_packs_epi32(q[4 * h], q[4 * h + 1]);
                const __m256i p23 = _mm256_packs_epi32(q[4 * h + 2], q[4 * h + 3]);
                __m256i p = _mm256_packs_epi16(p01, p23);
                p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
                _mm256_storeu_si256((__m256i *)(y[b].qs + 64 * c + 32 * h), p);
            }
            /* group g = q[2g] + q[2g+1]; three hadds leave [G0..G3] per 128-bit half */
            const __m256i g01 = _mm256_hadd_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
            const __m256i g23 = _mm256_hadd_epi32(_mm256_add_epi32(q[4], q[5]), _mm256_add_epi32(q[6], q[7]));
            const __m256i g = _mm256_hadd_epi32(g01, g23);
            group_sums[c] = _mm_add_epi32(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1));
        }
        _mm_storeu_si128((__m128i *)y[b].bsums, _mm_packs_epi32(group_sums[0], group_sums[1]));
        _mm_storeu_si128((__m128i *)(y[b].bsums + 8), _mm_packs_epi32(group_sums[2], group_sums[3]));
        y[b].d = 1.0f / iscale;
    }
}

/* ------------------------------------------------------------------------ */
/* AVX2 dot products                                                        */

LB_AVX2 void lb_vec_dot_q2_K_q8_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q2_K *x = vw;
    const block_q8_K *y = va;
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float dall = y[i].d * FP16(x[i].d);
        const float dmin = y[i].d * FP16(x[i].dmin);
        const __m128i packed = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m128i scales = _mm_and_si128(packed, m4);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
        const __m256i min_dot = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        acc_min = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(min_dot), acc_min);

        const int8_t *a = y[i].qs;
        __m256i sumi = _mm256_setzero_si256();
        LB_UNROLL
        for (int c = 0; c < 2; c++) {
            /* byte l holds weights l, l+32, l+64, l+96 of this 128 at bits 0, 2, 4, 6 */
            __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            LB_UNROLL
            for (int sh = 0; sh < 4; sh++, a += 32) {
                const __m256i w = _mm256_and_si256(q, m3);
                q = _mm256_srli_epi16(q, 2); /* bits crossing bytes land above bit 1 */
                const __m256i p = _mm256_maddubs_epi16(w, _mm256_loadu_si256((const __m256i *)a));
                const __m256i sc = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(scales, pair_mask(4 * c + sh)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sc));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dall), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum256_ps(acc) - hsum256_ps(acc_min);
}

LB_AVX2 void lb_vec_dot_q3_K_q8_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q3_K *x = vw;
    const block_q8_K *y = va;
    const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = FP16(x[i].d) * y[i].d;
        const __m128i scales = unpack_q3_K_scales(x[i].scales); /* signed, -32..31 */
        /* value = q3 - 4 with q3 = q2 | hbit << 2 in 0..7: the -4 comes off
         * through bsums, 4 * sum_g sc_g * bsum_g. */
        const __m256i offset = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scales),
                                                 _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m256i hm = _mm256_loadu_si256((const __m256i *)x[i].hmask);
        const int8_t *a = y[i].qs;
        __m256i sumi = _mm256_setzero_si256();
        LB_UNROLL
        for (int c = 0; c < 2; c++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            LB_UNROLL
            for (int sh = 0; sh < 4; sh++, a += 32) {
                /* bit 4c+sh of hmask[l] belongs to weight 32*(4c+sh) + l */
                const __m256i w = _mm256_or_si256(_mm256_and_si256(q, m3),
                                                  _mm256_and_si256(_mm256_slli_epi16(hm, 2), m4));
                q = _mm256_srli_epi16(q, 2);
                hm = _mm256_srli_epi16(hm, 1);
                const __m256i p = _mm256_maddubs_epi16(w, _mm256_loadu_si256((const __m256i *)a));
                const __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pair_mask(4 * c + sh)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sc));
            }
        }
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(offset, 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum256_ps(acc);
}

/* One Q4_K/Q5_K chunk of 64 weights (groups 2c and 2c+1) already unpacked to
 * bytes: scaled integer dot with the chunk's 64 activations. */
LB_AVX2 static inline __m256i k4_chunk_avx2(__m256i w_lo, __m256i w_hi, const int8_t *a,
                                            __m256i scales8x2, int c) {
    const __m256i p_lo = _mm256_maddubs_epi16(w_lo, _mm256_loadu_si256((const __m256i *)a));
    const __m256i p_hi = _mm256_maddubs_epi16(w_hi, _mm256_loadu_si256((const __m256i *)(a + 32)));
    return _mm256_add_epi32(_mm256_madd_epi16(p_lo, bcast_i16(scales8x2, 2 * c)),
                            _mm256_madd_epi16(p_hi, bcast_i16(scales8x2, 2 * c + 1)));
}

LB_AVX2 void lb_vec_dot_q4_K_q8_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_K *x = vw;
    const block_q8_K *y = va;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = y[i].d * FP16(x[i].d);
        const float dmin = y[i].d * FP16(x[i].dmin);
        const __m128i sm = unpack_k4_scales(x[i].scales);
        acc_min = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_mins_dot(sm, y[i].bsums)), acc_min);
        const __m256i scales8x2 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        __m256i sumi = _mm256_setzero_si256();
    LB_UNROLL
    for (int c = 0; c < 4; c++) {
            /* 32 bytes: group 2c in the low nibbles, 2c+1 in the high */
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            const __m256i w_lo = _mm256_and_si256(q, m4);
            const __m256i w_hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            sumi = _mm256_add_epi32(sumi, k4_chunk_avx2(w_lo, w_hi, y[i].qs + 64 * c, scales8x2, c));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum256_ps(acc) - hsum128_ps(acc_min);
}

LB_AVX2 void lb_vec_dot_q5_K_q8_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_K *x = vw;
    const block_q8_K *y = va;
    const __m256i m4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = y[i].d * FP16(x[i].d);
        const float dmin = y[i].d * FP16(x[i].dmin);
        const __m128i sm = unpack_k4_scales(x[i].scales);
        acc_min = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_mins_dot(sm, y[i].bsums)), acc_min);
        const __m256i scales8x2 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        /* bit 2c of qh[l] is the fifth bit of weight l of group 2c, bit 2c+1 of group 2c+1 */
        __m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh);
        __m256i sumi = _mm256_setzero_si256();
    LB_UNROLL
    for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            const __m256i h_lo = _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit4);
            const __m256i h_hi = _mm256_and_si256(_mm256_slli_epi16(qh, 3), bit4);
            qh = _mm256_srli_epi16(qh, 2); /* bits crossing bytes land above bit 1 */
            const __m256i w_lo = _mm256_or_si256(_mm256_and_si256(q, m4), h_lo);
            const __m256i w_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h_hi);
            sumi = _mm256_add_epi32(sumi, k4_chunk_avx2(w_lo, w_hi, y[i].qs + 64 * c, scales8x2, c));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum256_ps(acc) - hsum128_ps(acc_min);
}

LB_AVX2 void lb_vec_dot_q6_K_q8_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q6_K *x = vw;
    const block_q8_K *y = va;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2h = _mm256_set1_epi8(0x30);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = FP16(x[i].d) * y[i].d;
        const __m128i scales = _mm_loadu_si128((const __m128i *)x[i].scales);
        /* value = q - 32 with q in 0..63: the -32 comes off through bsums */
        const __m256i offset = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scales),
                                                 _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m256i sumi = _mm256_setzero_si256();
        LB_UNROLL
        for (int h = 0; h < 2; h++) { /* 128 weights: ql[64h..], qh[32h..] */
            const uint8_t *ql = x[i].ql + 64 * h, *qhp = x[i].qh + 32 * h;
            const int8_t *a = y[i].qs + 128 * h;
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)qhp);
            /* weights l, l+32, l+64, l+96 take qh[l] bits 0-1, 2-3, 4-5, 6-7 as bits 4-5 */
            __m256i w[4];
            w[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2h));
            w[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2h));
            w[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m2h));
            w[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2h));
            LB_UNROLL
            for (int r = 0; r < 4; r++) {
                const __m256i p = _mm256_maddubs_epi16(w[r], _mm256_loadu_si256((const __m256i *)(a + 32 * r)));
                const __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pair_mask(4 * h + r)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sc));
            }
        }
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(offset, 5));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum256_ps(acc);
}

/* A 16-entry codebook (IQ4_NL's, or MXFP4's for MXFP4_NL: the same blocks)
 * in both 128-bit lanes, for a byte lookup. */
LB_AVX2 static inline __m256i nl_table(const int8_t *kv) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kv));
}

/* One IQ4_NL block against one Q8_0 block: 8 int32 partial sums.
 * Signed x signed bytes via the sign trick: |w| (unsigned) times a*sign(w);
 * a zero weight (MXFP4's table has two) zeroes its product, as it should. */
LB_AVX2 static inline __m256i iq4nl_block_avx2(__m256i table, const block_iq4_nl *x, const block_q8_0 *y) {
    const __m128i q = _mm_loadu_si128((const __m128i *)x->qs);
    const __m256i idx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
    const __m256i w = _mm256_shuffle_epi8(table, idx);
    const __m256i a = _mm256_loadu_si256((const __m256i *)y->qs);
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

LB_AVX2 static inline float iq4nl_tail_avx2(__m256i table, const block_iq4_nl *x, const block_q8_0 *y) {
    const __m256 p = _mm256_cvtepi32_ps(iq4nl_block_avx2(table, x, y));
    return FP16(x->d) * FP16(y->d) * hsum256_ps(p);
}

LB_AVX2 static inline void nl_dot_avx2(const int8_t *kv, int64_t n, float *s, const void *vw, const void *va) {
    const block_iq4_nl *x = vw;
    const block_q8_0 *y = va;
    const __m256i table = nl_table(kv);
    const int64_t nb = n / QK4_NL;
    __m256 acc = _mm256_setzero_ps();
    int64_t b = 0;
    /* Four blocks at a time: their integer sums are reduced together and
     * scaled by one vector of four block scales, instead of four scalar
     * fp16 conversions and broadcasts. */
    for (; b + 4 <= nb; b += 4) {
        const __m256i p0 = iq4nl_block_avx2(table, &x[b], &y[b]);
        const __m256i p1 = iq4nl_block_avx2(table, &x[b + 1], &y[b + 1]);
        const __m256i p2 = iq4nl_block_avx2(table, &x[b + 2], &y[b + 2]);
        const __m256i p3 = iq4nl_block_avx2(table, &x[b + 3], &y[b + 3]);
        /* [S0 S1 S2 S3] of the low 128-bit halves, then of the high halves */
        const __m256i sums = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
        const __m128 dw = _mm_cvtph_ps(_mm_setr_epi16((short)x[b].d, (short)x[b + 1].d, (short)x[b + 2].d,
                                                      (short)x[b + 3].d, 0, 0, 0, 0));
        const __m128 da = _mm_cvtph_ps(_mm_setr_epi16((short)y[b].d, (short)y[b + 1].d, (short)y[b + 2].d,
                                                      (short)y[b + 3].d, 0, 0, 0, 0));
        const __m128 d4 = _mm_mul_ps(dw, da);
        acc = _mm256_fmadd_ps(_mm256_set_m128(d4, d4), _mm256_cvtepi32_ps(sums), acc);
    }
    float sum = hsum256_ps(acc);
    for (; b < nb; b++) sum += iq4nl_tail_avx2(table, &x[b], &y[b]);
    *s = sum;
}

LB_AVX2 void lb_vec_dot_iq4_nl_q8_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    nl_dot_avx2(lb_kvalues_iq4nl, n, s, w, a);
}
LB_AVX2 void lb_vec_dot_mxfp4_nl_q8_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    nl_dot_avx2(lb_kvalues_mxfp4, n, s, w, a);
}

/* ------------------------------------------------------------------------ */
/* AVX-512 VNNI dot products                                                */

/* Lane j of the result = v[base + j/4] (lanes of 4 share a 16-weight group)
 * or v[base + j/8] (lanes of 8 share a 32-weight group). */
LB_AVX512 static inline __m512i spread4(__m512i v, int base) {
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    return _mm512_permutexvar_epi32(_mm512_add_epi32(idx, _mm512_set1_epi32(base)), v);
}
LB_AVX512 static inline __m512i spread8(__m512i v, int base) {
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    return _mm512_permutexvar_epi32(_mm512_add_epi32(idx, _mm512_set1_epi32(base)), v);
}

/* 32 bytes into both 256-bit halves, the upper half shifted right by `bits`
 * per 16-bit lane (callers mask what they keep). */
LB_AVX512 static inline __m512i load_x2_srl(const void *p, int bits) {
    const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_srlv_epi16(v, _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16((int16_t)bits), 1));
}

/* Q4_K / Q5_K block body: 4 chunks of 64 weights, chunk c = [group 2c | group
 * 2c+1] as unsigned bytes w[c], against the 64 activations that follow. */
LB_AVX512 static inline __m512i k4_block_avx512(const __m512i w[4], const int8_t *a, __m128i scales_mins) {
    /* lane g (hi 16 bits zero) = scale of group g, for dpwssd */
    const __m512i scales = _mm512_cvtepu8_epi32(scales_mins);
    __m512i sumi = _mm512_setzero_si512();
    LB_UNROLL
    for (int c = 0; c < 4; c++) {
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[c],
                                                _mm512_loadu_si512((const void *)(a + 64 * c)));
        sumi = _mm512_dpwssd_epi32(sumi, dot, spread8(scales, 2 * c));
    }
    return sumi;
}

LB_AVX512 void lb_vec_dot_q4_K_q8_K_avx512(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_K *x = vw;
    const block_q8_K *y = va;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc = _mm512_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = y[i].d * FP16(x[i].d);
        const float dmin = y[i].d * FP16(x[i].dmin);
        const __m128i sm = unpack_k4_scales(x[i].scales);
        acc_min = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_mins_dot(sm, y[i].bsums)), acc_min);
        __m512i w[4];
        LB_UNROLL
        for (int c = 0; c < 4; c++) /* low nibbles then high nibbles of 32 bytes */
            w[c] = _mm512_and_si512(load_x2_srl(x[i].qs + 32 * c, 4), m4);
        const __m512i sumi = k4_block_avx512(w, y[i].qs, sm);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = hsum512_ps(acc) - hsum128_ps(acc_min);
}

LB_AVX512 void lb_vec_dot_q5_K_q8_K_avx512(int64_t n, float *s, const void *vw, const void *va) {
    const block_q5_K *x = vw;
    const block_q8_K *y = va;
    const __m512i m4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    __m512 acc = _mm512_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = y[i].d * FP16(x[i].d);
        const float dmin = y[i].d * FP16(x[i].dmin);
        const __m128i sm = unpack_k4_scales(x[i].scales);
        acc_min = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_mins_dot(sm, y[i].bsums)), acc_min);
        /* qh in both halves, the upper one a bit ahead: bit 0 of each byte is
         * then the fifth bit of group 2c (low half) or 2c+1 (high half). */
        __m512i qh = load_x2_srl(x[i].qh, 1);
        __m512i w[4];
    LB_UNROLL
    for (int c = 0; c < 4; c++) {
            const __m512i hbit = _mm512_and_si512(_mm512_slli_epi16(qh, 4), bit4);
            qh = _mm512_srli_epi16(qh, 2); /* bits crossing bytes land above bit 0 */
            w[c] = _mm512_or_si512(_mm512_and_si512(load_x2_srl(x[i].qs + 32 * c, 4), m4), hbit);
        }
        const __m512i sumi = k4_block_avx512(w, y[i].qs, sm);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = hsum512_ps(acc) - hsum128_ps(acc_min);
}

LB_AVX512 void lb_vec_dot_q6_K_q8_K_avx512(int64_t n, float *s, const void *vw, const void *va) {
    const block_q6_K *x = vw;
    const block_q8_K *y = va;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2h = _mm512_set1_epi8(0x30);
    /* qh bits for weights l / l+32 (shifted up to bits 4-5) and l+64 / l+96 */
    const __m512i shl_lo = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr_hi = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = FP16(x[i].d) * y[i].d;
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        /* lane g: signed scale in the low 16 bits, zero above (for dpwssd) */
        const __m512i scales = _mm512_cvtepu16_epi32(sc16);
        /* value = q - 32: the offset 32 * sum_g sc_g * bsum_g, exact in int32 */
        const __m256i offset = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m512i sumi = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_slli_epi32(offset, 5), 0);
        sumi = _mm512_sub_epi32(_mm512_setzero_si512(), sumi);
        LB_UNROLL
        for (int h = 0; h < 2; h++) {
            /* ql[64h..64h+63]: low nibbles = weights 0..63, high = 64..127 of this half */
            const __m512i ql = _mm512_loadu_si512((const void *)(x[i].ql + 64 * h));
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * h)));
            const __m512i w_lo = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                                 _mm512_and_si512(_mm512_sllv_epi16(qh, shl_lo), m2h));
            const __m512i w_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                                 _mm512_and_si512(_mm512_srlv_epi16(qh, shr_hi), m2h));
            const int8_t *a = y[i].qs + 128 * h;
            const __m512i dot_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w_lo, _mm512_loadu_si512((const void *)a));
            const __m512i dot_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w_hi,
                                                       _mm512_loadu_si512((const void *)(a + 64)));
            sumi = _mm512_dpwssd_epi32(sumi, dot_lo, spread4(scales, 8 * h));
            sumi = _mm512_dpwssd_epi32(sumi, dot_hi, spread4(scales, 8 * h + 4));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = hsum512_ps(acc);
}

/* Two IQ4_NL blocks against two Q8_0 blocks: 16 int32 partial sums, lanes
 * 0..7 for the first pair, 8..15 for the second. dpbusd wants unsigned
 * weights, so the table holds codebook + 128 and 128 * sum(a) comes off. */
LB_AVX512 static inline __m512i iq4nl_pair_avx512(__m512i table_u, const block_iq4_nl *x, const block_q8_0 *y) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    /* per 128-bit lane: [blk0 low nibbles, blk0 high, blk1 low, blk1 high] */
    const __m512i nib_shift = _mm512_setr_epi64(0, 0, 0x0004000400040004LL, 0x0004000400040004LL, 0, 0,
                                                0x0004000400040004LL, 0x0004000400040004LL);
    const __m256i q0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)x[0].qs));
    const __m256i q1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)x[1].qs));
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    const __m512i idx = _mm512_and_si512(_mm512_srlv_epi16(q, nib_shift), _mm512_set1_epi8(0x0F));
    const __m512i w = _mm512_shuffle_epi8(table_u, idx);
    const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[0].qs)),
                                         _mm256_loadu_si256((const __m256i *)y[1].qs), 1);
    return _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w, a),
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, a));
}

LB_AVX512 static inline void nl_dot_avx512(const int8_t *kv, int64_t n, float *s, const void *vw, const void *va) {
    const block_iq4_nl *x = vw;
    const block_q8_0 *y = va;
    const __m512i table_u = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)kv)),
                                             _mm512_set1_epi8((char)0x80));
    /* lanes 0..7 of a pair belong to its first block, 8..15 to its second */
    const __m512i spread_lo = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i spread_hi = _mm512_add_epi32(spread_lo, _mm512_set1_epi32(2));
    const int64_t nb = n / QK4_NL;
    __m512 acc = _mm512_setzero_ps();
    int64_t b = 0;
    /* four blocks a time: one vector of four block scales (as in the AVX2 kernel) */
    for (; b + 4 <= nb; b += 4) {
        const __m512i p01 = iq4nl_pair_avx512(table_u, &x[b], &y[b]);
        const __m512i p23 = iq4nl_pair_avx512(table_u, &x[b + 2], &y[b + 2]);
        const __m128 dw = _mm_cvtph_ps(_mm_setr_epi16((short)x[b].d, (short)x[b + 1].d, (short)x[b + 2].d,
                                                      (short)x[b + 3].d, 0, 0, 0, 0));
        const __m128 da = _mm_cvtph_ps(_mm_setr_epi16((short)y[b].d, (short)y[b + 1].d, (short)y[b + 2].d,
                                                      (short)y[b + 3].d, 0, 0, 0, 0));
        const __m512 d4 = _mm512_castps128_ps512(_mm_mul_ps(dw, da));
        acc = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread_lo, d4), _mm512_cvtepi32_ps(p01), acc);
        acc = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread_hi, d4), _mm512_cvtepi32_ps(p23), acc);
    }
    float sum = hsum512_ps(acc);
    for (; b < nb; b++) sum += iq4nl_tail_avx2(nl_table(kv), &x[b], &y[b]);
    *s = sum;
}

LB_AVX512 void lb_vec_dot_iq4_nl_q8_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    nl_dot_avx512(lb_kvalues_iq4nl, n, s, w, a);
}
LB_AVX512 void lb_vec_dot_mxfp4_nl_q8_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    nl_dot_avx512(lb_kvalues_mxfp4, n, s, w, a);
}
LB_AVX2 void lb_quantize_q8_Kx4_avx2(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_Kx4 *y = vy;
    block_q8_K blk;
    for (int64_t b = 0; b < k / QK_K; b++)
        for (int m = 0; m < 4; m++) {
            lb_quantize_row_q8_K_avx2(x + m * ldx + b * QK_K, &blk, QK_K);
            y[b].d[m] = blk.d;
            memcpy(y[b].qs[m], blk.qs, QK_K);
            lb_q8_K_bsum_forms(blk.bsums, y[b].b64[m], y[b].bsp[m], &y[b].b128[m]);
        }
}
#endif
