/* x86 entries of the float-weight prefill GEMM (kernels/fgemm.h): the row
 * conversions (F16 by F16C, BF16 by a shift) and the micro-kernel of each
 * level. Below LB_FGEMM_MIN_M activation rows (decode, short prompts) the
 * weights are streamed once per row by the vec_dot instead: packing a panel
 * pays for itself only over several rows. */
#include "kernels/x86/fgemm_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/dispatch.h"
#include "kernels/fgemm.h"

#ifndef LB_FGEMM_MIN_M
#define LB_FGEMM_MIN_M 4
#endif

#define LB_FG __attribute__((target("avx2,fma,f16c")))

typedef float f32_t; /* bytes per weight of each type, for FG_DEFINE */
typedef uint16_t f16_t, bf16_t;
#ifdef LB_FGEMM_NO_PREFETCH
#define FG_ESIZE(w) 0
#else
#define FG_ESIZE(w) sizeof(w##_t)
#endif

static void cvt_f32(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    memcpy(out, (const float *)row + k0, (size_t)n * sizeof(float));
}

LB_FG static void cvt_f16(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    const uint16_t *w = (const uint16_t *)row + k0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i))));
    for (; i < n; i++) out[i] = lb_fp16_to_f32(w[i]);
}

LB_FG static void cvt_bf16(const void *ctx, const void *row, int64_t k0, int64_t n, float *out) {
    (void)ctx;
    const uint16_t *w = (const uint16_t *)row + k0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(w + i)));
        _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)));
    }
    for (; i < n; i++) out[i] = lb_bf16_to_f32(w[i]);
}

static void gemm(lb_isa level, lb_fgemm_cvt_fn cvt, size_t esize, lb_vec_dot_fn dot, int64_t K, const void *W,
                 size_t rs, int n0, int n1, const void *A, size_t ars, int M, float *Y, size_t ldy) {
    if (M >= LB_FGEMM_MIN_M &&
        lb_fgemm(lb_sgemm_kernel_at(level), cvt, NULL, esize, K, W, rs, n0, n1, (const float *)A, ars, M, Y, ldy) == 0)
        return;
    for (int m = 0; m < M; m++) /* few rows, or no scratch */
        for (int n = n0; n < n1; n++)
            dot(K, Y + (size_t)m * ldy + n, (const char *)W + (size_t)n * rs, (const char *)A + (size_t)m * ars);
}

#define FG_DEFINE(w, isa, ISA)                                                                                   \
    void lb_gemm_##w##_f32_##isa(int64_t K, const void *W, size_t rs, int n0, int n1, const void *A, size_t ars, \
                                 int M, float *Y, size_t ldy) {                                                  \
        gemm(LB_ISA_##ISA, cvt_##w, FG_ESIZE(w), lb_vec_dot_##w##_avx2, K, W, rs, n0, n1, A, ars, M, Y, ldy);   \
    }
FG_DEFINE(f32, avx2, AVX2)
FG_DEFINE(f16, avx2, AVX2)
FG_DEFINE(bf16, avx2, AVX2)
FG_DEFINE(f32, avx512, AVX512)
FG_DEFINE(f16, avx512, AVX512)
FG_DEFINE(bf16, avx512, AVX512)
#endif
