/* AVX2 and AVX-512 element-wise ops: the scalar versions' operations
 * (kernels/vecops.c, kernels/vmath.h) in the same order, so results are
 * bit-identical to the scalar level; tails use the scalar forms. */
#include "kernels/x86/vecops_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <math.h>

#include "kernels/x86/vmath_x86.h"

#define LB_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LB_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

/* ---- AVX2: 16 lanes as two vectors ---- */

LB_AVX2 void lb_rmsnorm_avx2(float *y, const float *x, const float *w, int n, float eps) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m256 x0 = _mm256_loadu_ps(x + j), x1 = _mm256_loadu_ps(x + j + 8);
        lo = _mm256_fmadd_ps(x0, x0, lo);
        hi = _mm256_fmadd_ps(x1, x1, hi);
    }
    float ss;
    if (j < n) {
        float lanes[16];
        _mm256_storeu_ps(lanes, lo);
        _mm256_storeu_ps(lanes + 8, hi);
        for (; j < n; j++) lanes[j % 16] = fmaf(x[j], x[j], lanes[j % 16]);
        ss = lb_hsum16(lanes);
    } else {
        ss = lb_hsum16_avx2(lo, hi);
    }
    const float scale = 1.0f / sqrtf(ss / (float)n + eps);
    const __m256 vs = _mm256_set1_ps(scale);
    for (j = 0; j + 8 <= n; j += 8)
        _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(w + j), _mm256_mul_ps(vs, _mm256_loadu_ps(x + j))));
    for (; j < n; j++) y[j] = w[j] * (scale * x[j]);
}

LB_AVX2 void lb_add_avx2(float *y, const float *a, int n) {
    int j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_loadu_ps(y + j), _mm256_loadu_ps(a + j)));
    for (; j < n; j++) y[j] += a[j];
}

LB_AVX2 static inline __m256 silu8(__m256 x) {
    const __m256 e = lb_exp8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

LB_AVX2 static inline __m256 gelu8(__m256 x) {
    const __m256 t = _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(LB_GELU_M2C)),
                                   _mm256_fmadd_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(LB_GELU_A), _mm256_set1_ps(1.0f)));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), lb_exp8(t)));
}

#define GATED_256(name, act, canon)                                                                   \
    LB_AVX2 void name(float *g, const float *u, int n) {                                              \
        int j = 0;                                                                                    \
        for (; j + 8 <= n; j += 8)                                                                    \
            _mm256_storeu_ps(g + j, _mm256_mul_ps(act(_mm256_loadu_ps(g + j)), _mm256_loadu_ps(u + j))); \
        for (; j < n; j++) g[j] = canon(g[j]) * u[j];                                                 \
    }
GATED_256(lb_silu_mul_avx2, silu8, lb_silu_canon)
GATED_256(lb_gelu_mul_avx2, gelu8, lb_gelu_canon)

LB_AVX2 void lb_rope_avx2(float *v, const float *cs, const float *sn, int n, int neox) {
    int j = 0;
    if (!neox) {
        for (; j + 8 <= n; j += 8) {
            const __m256 x = _mm256_loadu_ps(v + j), sw = _mm256_permute_ps(x, 0xB1); /* pairs swapped */
            _mm256_storeu_ps(v + j, _mm256_add_ps(_mm256_mul_ps(x, _mm256_loadu_ps(cs + j)),
                                                  _mm256_mul_ps(sw, _mm256_loadu_ps(sn + j))));
        }
        for (; j < n; j += 2) {
            const float v0 = v[j], v1 = v[j + 1];
            v[j] = v0 * cs[j] + v1 * sn[j];
            v[j + 1] = v1 * cs[j + 1] + v0 * sn[j + 1];
        }
        return;
    }
    const int h = n / 2;
    for (; j + 8 <= h; j += 8) {
        const __m256 x0 = _mm256_loadu_ps(v + j), x1 = _mm256_loadu_ps(v + j + h);
        _mm256_storeu_ps(v + j, _mm256_add_ps(_mm256_mul_ps(x0, _mm256_loadu_ps(cs + j)),
                                              _mm256_mul_ps(x1, _mm256_loadu_ps(sn + j))));
        _mm256_storeu_ps(v + j + h, _mm256_add_ps(_mm256_mul_ps(x1, _mm256_loadu_ps(cs + j + h)),
                                                  _mm256_mul_ps(x0, _mm256_loadu_ps(sn + j + h))));
    }
    for (; j < h; j++) {
        const float v0 = v[j], v1 = v[j + h];
        v[j] = v0 * cs[j] + v1 * sn[j];
        v[j + h] = v1 * cs[j + h] + v0 * sn[j + h];
    }
}

/* ---- AVX-512: the same, tails with masks ---- */

#define TAIL(n, j) ((__mmask16)((1u << ((n) - (j))) - 1u)) /* n - j in [1, 15] */

LB_AVX512 void lb_rmsnorm_avx512(float *y, const float *x, const float *w, int n, float eps) {
    __m512 acc = _mm512_setzero_ps();
    int j = 0;
    for (; j + 16 <= n; j += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + j), _mm512_loadu_ps(x + j), acc);
    if (j < n) { /* absent lanes add fma(0, 0, acc) = acc */
        const __m512 xt = _mm512_maskz_loadu_ps(TAIL(n, j), x + j);
        acc = _mm512_fmadd_ps(xt, xt, acc);
    }
    const __m512 vs = _mm512_set1_ps(1.0f / sqrtf(lb_hsum16_avx512(acc) / (float)n + eps));
    for (j = 0; j + 16 <= n; j += 16)
        _mm512_storeu_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(w + j), _mm512_mul_ps(vs, _mm512_loadu_ps(x + j))));
    if (j < n) {
        const __mmask16 m = TAIL(n, j);
        _mm512_mask_storeu_ps(y + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + j),
                                                      _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(m, x + j))));
    }
}

LB_AVX512 void lb_add_avx512(float *y, const float *a, int n) {
    int j = 0;
    for (; j + 16 <= n; j += 16) _mm512_storeu_ps(y + j, _mm512_add_ps(_mm512_loadu_ps(y + j), _mm512_loadu_ps(a + j)));
    if (j < n) {
        const __mmask16 m = TAIL(n, j);
        _mm512_mask_storeu_ps(y + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + j), _mm512_maskz_loadu_ps(m, a + j)));
    }
}

LB_AVX512 static inline __m512 silu16(__m512 x) {
    const __m512 e = lb_exp16(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

LB_AVX512 static inline __m512 gelu16(__m512 x) {
    const __m512 t = _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(LB_GELU_M2C)),
                                   _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(LB_GELU_A), _mm512_set1_ps(1.0f)));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), lb_exp16(t)));
}

#define GATED_512(name, act)                                                                                 \
    LB_AVX512 void name(float *g, const float *u, int n) {                                                   \
        int j = 0;                                                                                           \
        for (; j + 16 <= n; j += 16)                                                                         \
            _mm512_storeu_ps(g + j, _mm512_mul_ps(act(_mm512_loadu_ps(g + j)), _mm512_loadu_ps(u + j)));     \
        if (j < n) {                                                                                         \
            const __mmask16 m = TAIL(n, j);                                                                  \
            _mm512_mask_storeu_ps(g + j, m, _mm512_mul_ps(act(_mm512_maskz_loadu_ps(m, g + j)),              \
                                                          _mm512_maskz_loadu_ps(m, u + j)));                 \
        }                                                                                                    \
    }
GATED_512(lb_silu_mul_avx512, silu16)
GATED_512(lb_gelu_mul_avx512, gelu16)

LB_AVX512 void lb_rope_avx512(float *v, const float *cs, const float *sn, int n, int neox) {
    int j = 0;
    if (!neox) {
        for (; j < n; j += 16) {
            const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : TAIL(n, j); /* n is even: whole pairs */
            const __m512 x = _mm512_maskz_loadu_ps(m, v + j), sw = _mm512_permute_ps(x, 0xB1);
            _mm512_mask_storeu_ps(v + j, m, _mm512_add_ps(_mm512_mul_ps(x, _mm512_maskz_loadu_ps(m, cs + j)),
                                                          _mm512_mul_ps(sw, _mm512_maskz_loadu_ps(m, sn + j))));
        }
        return;
    }
    const int h = n / 2;
    for (; j < h; j += 16) {
        const __mmask16 m = h - j >= 16 ? (__mmask16)0xffff : TAIL(h, j);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, v + j), x1 = _mm512_maskz_loadu_ps(m, v + j + h);
        _mm512_mask_storeu_ps(v + j, m, _mm512_add_ps(_mm512_mul_ps(x0, _mm512_maskz_loadu_ps(m, cs + j)),
                                                      _mm512_mul_ps(x1, _mm512_maskz_loadu_ps(m, sn + j))));
        _mm512_mask_storeu_ps(v + j + h, m, _mm512_add_ps(_mm512_mul_ps(x1, _mm512_maskz_loadu_ps(m, cs + j + h)),
                                                          _mm512_mul_ps(x0, _mm512_maskz_loadu_ps(m, sn + j + h))));
    }
}
#endif
