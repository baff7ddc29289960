/* x86 micro-kernels of the fp32 GEMM family (kernels/sgemm.h): an mr x nr
 * tile of C held in registers while the packed panels stream past. Each
 * k step loads one row of the B panel (nr floats, the vector side) and
 * broadcasts mr values of the A panel, one FMA per accumulator.
 *   AVX2:    6 x 16, 12 ymm accumulators + 2 B vectors + 1 broadcast (of 16)
 *   AVX-512: 14 x 32, 28 zmm accumulators + 2 B vectors + 1 broadcast (of 32):
 *            28 FMAs per 2 B loads and 14 broadcasts keeps the loads well
 *            below the FMA rate, so the FMA pipes stay busy.
 * The functions carry target attributes, so the file builds with any flags
 * and the driver calls them only at a level that has the instructions. */
#include "kernels/sgemm.h"

#if LB_SGEMM_X86
#include <immintrin.h>

#define LB_SG_AVX2 __attribute__((target("avx2,fma")))
#define LB_SG_AVX512 __attribute__((target("avx512f,avx512vl,avx2,fma")))

/* ---- AVX2: 6 x 16 ---- */

enum { AVX2_MR = 6 };

LB_SG_AVX2 static void store_avx2(__m256 acc[AVX2_MR][2], float *c, size_t ldc, float alpha, float beta) {
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int i = 0; i < AVX2_MR; i++) {
        float *ci = c + (size_t)i * ldc;
        __m256 r0 = _mm256_mul_ps(va, acc[i][0]), r1 = _mm256_mul_ps(va, acc[i][1]);
        if (beta != 0.0f) { /* beta == 0 must not read C (it may hold NaN) */
            r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci), r0);
            r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci + 8), r1);
        }
        _mm256_storeu_ps(ci, r0);
        _mm256_storeu_ps(ci + 8, r1);
    }
}

LB_SG_AVX2 void lb_sgemm_ukr_avx2_6x16(int64_t kc, const float *a, const float *b, float *c, size_t ldc,
                                       float alpha, float beta) {
    __m256 acc[AVX2_MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < AVX2_MR; i++) {
        acc[i][0] = acc[i][1] = _mm256_setzero_ps();
        /* the C tile is needed only after the k loop: fetch it meanwhile */
        _mm_prefetch((const char *)(c + (size_t)i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)i * ldc + 15), _MM_HINT_T0);
    }
    for (int64_t k = 0; k < kc; k++, a += AVX2_MR, b += 16) {
        const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < AVX2_MR; i++) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    store_avx2(acc, c, ldc, alpha, beta);
}

/* ---- AVX-512: 14 x 32 ---- */

enum { AVX512_MR = 14 };

LB_SG_AVX512 static void store_avx512(__m512 acc[AVX512_MR][2], float *c, size_t ldc, float alpha, float beta) {
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int i = 0; i < AVX512_MR; i++) {
        float *ci = c + (size_t)i * ldc;
        __m512 r0 = _mm512_mul_ps(va, acc[i][0]), r1 = _mm512_mul_ps(va, acc[i][1]);
        if (beta != 0.0f) { /* beta == 0 must not read C (it may hold NaN) */
            r0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci + 16), r1);
        }
        _mm512_storeu_ps(ci, r0);
        _mm512_storeu_ps(ci + 16, r1);
    }
}

LB_SG_AVX512 void lb_sgemm_ukr_avx512_14x32(int64_t kc, const float *a, const float *b, float *c, size_t ldc,
                                           float alpha, float beta) {
    __m512 acc[AVX512_MR][2];
#pragma GCC unroll 14
    for (int i = 0; i < AVX512_MR; i++) {
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
        _mm_prefetch((const char *)(c + (size_t)i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)i * ldc + 31), _MM_HINT_T0);
    }
    for (int64_t k = 0; k < kc; k++, a += AVX512_MR, b += 32) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 14
        for (int i = 0; i < AVX512_MR; i++) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    store_avx512(acc, c, ldc, alpha, beta);
}

#endif
