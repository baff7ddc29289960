/* AVX2 (+FMA, F16C) dot products for the foundation types. The int8 dot uses
 * the sign trick: |w| (unsigned) times sign-adjusted a (signed) with
 * maddubs, so one instruction multiplies 32 byte pairs. */
#include "kernels/x86/kernels_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <math.h>

#include "formats/types.h"
#include "kernels/x86/bf16_avx2.h"

#define LB_AVX2 __attribute__((target("avx2,fma,f16c")))

/* hardware half -> float (F16C), exact like lb_fp16_to_f32 */
#define FP16(h) _cvtsh_ss(h)

LB_AVX2 static inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

LB_AVX2 void lb_vec_dot_f32_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const float *w = vw, *a = va;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(a + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(a + i + 8), acc1);
    }
    float sum = hsum_ps(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) sum += w[i] * a[i];
    *s = sum;
}

LB_AVX2 void lb_vec_dot_f16_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const uint16_t *w = vw;
    const float *a = va;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i)));
        __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i + 8)));
        acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a + i), acc0);
        acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(a + i + 8), acc1);
    }
    float sum = hsum_ps(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) sum += lb_fp16_to_f32(w[i]) * a[i];
    *s = sum;
}

/* four chains of 8: with one, each FMA waited for the last (BF16 tg128
 * 13.5 t/s on the tinyllama-1.1b shape, Zen 4, where llama.cpp ran 20.4) */
LB_AVX2 void lb_vec_dot_bf16_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const uint16_t *w = vw;
    const float *a = va;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[j] = _mm256_fmadd_ps(lb_bf16x8_to_ps_avx2(w + i + 8 * j), _mm256_loadu_ps(a + i + 8 * j), acc[j]);
    for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(lb_bf16x8_to_ps_avx2(w + i), _mm256_loadu_ps(a + i), acc[0]);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < n; i++) sum += lb_bf16_to_f32(w[i]) * a[i];
    *s = sum;
}

/* roundf semantics (ties away from zero), so the result is bit-identical to
 * the scalar reference quantizer. */
LB_AVX2 static inline __m256i round_away_epi32(__m256 x) {
    __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_sub_ps(x, t);
    __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    __m256 absf = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), frac);
    __m256 up = _mm256_cmp_ps(absf, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), sign);
    t = _mm256_add_ps(t, _mm256_and_ps(up, one));
    return _mm256_cvttps_epi32(t);
}

LB_AVX2 void lb_quantize_row_q8_0_avx2(const float *x, void *vy, int64_t k) {
    block_q8_0 *y = vy;
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t b = 0; b < k / QK8_0; b++) {
        const float *xb = x + b * QK8_0;
        __m256 v0 = _mm256_loadu_ps(xb), v1 = _mm256_loadu_ps(xb + 8);
        __m256 v2 = _mm256_loadu_ps(xb + 16), v3 = _mm256_loadu_ps(xb + 24);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v0, absmask), _mm256_and_ps(v1, absmask)),
                                 _mm256_max_ps(_mm256_and_ps(v2, absmask), _mm256_and_ps(v3, absmask)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i i0 = round_away_epi32(_mm256_mul_ps(v0, vid));
        __m256i i1 = round_away_epi32(_mm256_mul_ps(v1, vid));
        __m256i i2 = round_away_epi32(_mm256_mul_ps(v2, vid));
        __m256i i3 = round_away_epi32(_mm256_mul_ps(v3, vid));
        /* packs interleave 128-bit lanes; the permute restores element order */
        __m256i p01 = _mm256_packs_epi32(i0, i1), p23 = _mm256_packs_epi32(i2, i3);
        __m256i p = _mm256_packs_epi16(p01, p23);
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)y[b].qs, p);
    }
}

/* sum of 32 signed byte products, as 8 int32 lanes */
LB_AVX2 static inline __m256 dot_i8_ps(__m256i w, __m256i a) {
    __m256i aw = _mm256_sign_epi8(w, w);   /* |w| */
    __m256i sa = _mm256_sign_epi8(a, w);   /* a * sign(w) */
    __m256i p16 = _mm256_maddubs_epi16(aw, sa);
    __m256i p32 = _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
    return _mm256_cvtepi32_ps(p32);
}

LB_AVX2 void lb_vec_dot_q8_0_q8_0_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q8_0 *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK8_0; b++) {
        const __m256 d = _mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d));
        __m256i wq = _mm256_loadu_si256((const __m256i *)w[b].qs);
        __m256i aq = _mm256_loadu_si256((const __m256i *)a[b].qs);
        acc = _mm256_fmadd_ps(d, dot_i8_ps(wq, aq), acc);
    }
    *s = hsum_ps(acc);
}

LB_AVX2 void lb_vec_dot_q4_0_q8_0_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_0 *w = vw;
    const block_q8_0 *a = va;
    const __m256i low = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK4_0; b++) {
        const __m256 d = _mm256_set1_ps(FP16(w[b].d) * FP16(a[b].d));
        __m128i q = _mm_loadu_si128((const __m128i *)w[b].qs);
        __m256i wq = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low);
        wq = _mm256_sub_epi8(wq, eight);
        __m256i aq = _mm256_loadu_si256((const __m256i *)a[b].qs);
        acc = _mm256_fmadd_ps(d, dot_i8_ps(wq, aq), acc);
    }
    *s = hsum_ps(acc);
}
#endif
