/* AVX2 kernels of the ABQ types (kernels/x86/abq_x86.h; layout and order of
 * operations in formats/abq.h).
 *
 * Per group of 128 and weight plane s: the plane's 16 bytes in both lanes,
 * ANDed with activation planes t (lane 0) and t + 1 (lane 1), which lie side
 * by side in block_abq_act; the bytes' popcounts (two vpshufb of the nibble
 * table, each <= 8) are summed by vpsadbw into one 64-bit count per half
 * lane and shifted left by s + t or s + t + 1 (vpsllvq). Planes p..7 of an
 * activation block are zero, so an odd p reads one zero plane. The group's
 * integer dot and the double accumulation are the reference's, so every
 * output is the reference's float, bit for bit. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#define LB_ABQA __attribute__((target("avx2,fma,f16c,popcnt")))
#define INLINE LB_ABQA static inline __attribute__((always_inline))

INLINE int plane_count(const uint8_t *w) {
    uint64_t w0, w1;
    memcpy(&w0, w, 8), memcpy(&w1, w + 8, 8);
    return __builtin_popcountll(w0) + __builtin_popcountll(w1);
}

/* sum_s sum_t 2^(s+t) popcount(W_s & A_t) of one group */
INLINE int32_t planes_product(const uint8_t *wp, int q, const block_abq_act *a) {
    const __m256i nibble = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1,
                                            2, 2, 3, 2, 3, 3, 4);
    const __m256i low4 = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    const int pairs = (a->p + 1) / 2;
    __m256i acc = zero;
    for (int s = 0; s < q; s++) {
        const __m256i w = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(wp + LB_ABQ_PLANE * s)));
        for (int tp = 0; tp < pairs; tp++) {
            const __m256i x = _mm256_and_si256(w, _mm256_loadu_si256((const __m256i *)a->b[2 * tp]));
            const __m256i cnt = _mm256_add_epi8(_mm256_shuffle_epi8(nibble, _mm256_and_si256(x, low4)),
                                                _mm256_shuffle_epi8(nibble, _mm256_and_si256(_mm256_srli_epi16(x, 4), low4)));
            const int sh = s + 2 * tp;
            const __m256i shift = _mm256_setr_epi64x(sh, sh, sh + 1, sh + 1);
            acc = _mm256_add_epi64(acc, _mm256_sllv_epi64(_mm256_sad_epu8(cnt, zero), shift));
        }
    }
    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    return (int32_t)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1));
}

INLINE float row_dot(int q, int header, int zfixed, int64_t n, const void *w, const void *va) {
    const block_abq_act *a = va;
    const size_t bs = (size_t)header + LB_ABQ_PLANE * (size_t)q;
    double acc = 0.0;
    for (int64_t i = 0; i < n / LB_ABQ_G; i++) {
        const uint8_t *blk = (const uint8_t *)w + i * bs, *wp = blk + header;
        lb_fp16 dh;
        memcpy(&dh, blk, 2);
        int zw = zfixed;
        if (zfixed < 0) {
            int16_t z;
            memcpy(&z, blk + 2, 2);
            zw = z;
        }
        int32_t sw = 0;
        for (int s = 0; s < q; s++) sw += plane_count(wp + LB_ABQ_PLANE * s) << s;
        const int32_t I = planes_product(wp, q, &a[i]) - a[i].z * sw - zw * a[i].sum + LB_ABQ_G * zw * a[i].z;
        acc += (double)lb_fp16_to_f32(dh) * (double)I;
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

/* W2S: d alone (2 header bytes), z = 2; the others d and z (4 bytes) */
#define ABQ_AVX2(name, NAME, Q)                                                                              \
    LB_ABQA void lb_vec_dot_##name##_avx2(int64_t n, float *s, const void *w, const void *a) {               \
        const int balanced = LB_TYPE_##NAME == LB_TYPE_ABQ_W2S;                                              \
        *s = row_dot(Q, balanced ? 2 : 4, balanced ? 2 : -1, n, w, a);                                       \
    }
LB_ABQ_LIST(ABQ_AVX2)
#undef ABQ_AVX2

#endif
