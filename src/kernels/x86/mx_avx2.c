/* AVX2 kernels of MX (kernels/x86/mx_x86.h; tiles and view in formats/mx.h).
 *
 * The tiles are "lanes = rows": a 32-byte load of a tile's codes is 8 rows
 * x 4 bytes, so a vpmaddubsw against 4 activation bytes broadcast to every
 * dword adds into each row's own lane and no horizontal sum is ever needed.
 * One ymm accumulator per 8 rows and activation row, in float.
 *
 * 2-bit tile, per half h (16 columns) and 8 rows: the 4 code planes
 * (v >> 2t) & 3 against activation dwords 16h + 4t, summed in int16 (at most
 * 4 * 2 * 3 * 127), widened and doubled by one vpmaddwd with 2s; the
 * half-step zero comes off exactly in integers as code' * S_h (code' =
 * z1 code + 1, S_h the half's activation sum), code' * S_h picked from the 4
 * multiples of S_h by vpermd; then one float step, times the row's scale
 * s2 (c + z2) / 2 and the activation's d.
 * 4-bit tile, per 8 rows: low and high nibbles of 4 vectors against 8
 * activation dwords, summed in int16 (at most 8 * 2 * 15 * 127), minus
 * z * S (vpmulld), times fp16 s and d.
 * The activation side of each block (d as float, the sums of each half) is
 * formed once per call and row, before the weights stream; in decode, with
 * outliers, the activations as floats (d q, as the reference multiplies)
 * too, so an outlier costs a load, a conversion and a multiply-add: 13 % of
 * the GEMV's time from L2 before, 8 % after (bench: A/B of both in one
 * process, 2048 x 2048, 0.2 % outliers, AMD EPYC Zen 3). */
#include "kernels/x86/mx_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "core/common.h"
#include "formats/mx.h"
#include "kernels/cpu.h"
#include "kernels/x86/mx_x86_impl.h"
#include "kernels/x86/prefetch_x86.h"

#define LB_MXA __attribute__((target("avx2,fma,f16c")))

/* Software prefetch of the 2-bit and the 4-bit tile streams, this many bytes
 * ahead in each, one tile's lines per tile (spread over the loop, as
 * docs/qigen.md's *Prefetch* measured a stream wants it; 0: off). */
#ifndef LB_MX_PF_BYTES
#define LB_MX_PF_BYTES 3072
#endif
/* into L2 (lb_cpu_prefetch_l2: AMD) further: Zen 4 at --isa avx2, 5632x2048,
 * GB/s on 1 / 2 threads, two rounds: 3 KiB 14.1-14.2 / 27.4-27.5, 6 KiB
 * 15.3-15.8 / 29.7-30.7, 12 KiB 15.3-15.4 / 28.5-29.0 */
#ifndef LB_MX_PF_BYTES_L2
#define LB_MX_PF_BYTES_L2 6144
#endif
#define INLINE LB_MXA static inline __attribute__((always_inline))

typedef lb_mx_act act_blk;

INLINE __m256i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
INLINE float fp16(const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}
INLINE int32_t hsum128(__m128i s) {
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

LB_MXA void lb_mx_act_sides_avx2(const block_q8_0 *a, int64_t G, lb_mx_act *out) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t g = 0; g < G; g++) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)a[g].qs);
        const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, x), ones16);
        out[g].d = 0.5f * fp16(&a[g].d); /* the 2-bit tiles' half (doubled sums); the 4-bit ones double it back */
        out[g].s[0] = hsum128(_mm256_castsi256_si128(s));
        out[g].s[1] = hsum128(_mm256_extracti128_si256(s, 1));
        out[g].s01 = out[g].s[0] + out[g].s[1];
    }
}

/* acc[m][j] (rows 8j..8j+7) += 2-bit tile b against activation block g of
 * the MR rows */
INLINE void lo_tile(const block_mx2 *b, int MR, const block_q8_0 *const *a, const act_blk *const *as, int64_t g,
                    __m256 acc[][2]) {
    const __m256i m3 = _mm256_set1_epi8(3), twos = _mm256_set1_epi16(2), m15 = _mm256_set1_epi32(15);
    const __m256i nib_sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i ramp = _mm256_setr_epi32(1, 2, 3, 4, 1, 2, 3, 4);
    /* both halves' s2 at once, with z2 beside: per tile, not per half */
    int32_t s2w;
    memcpy(&s2w, b->s2, 4);
    const __m128 s2f = _mm_cvtph_ps(_mm_cvtsi32_si128(s2w));
    const __m256i z2v = _mm256_set1_epi32(b->z2);
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m256i z2 = h ? _mm256_srli_epi32(z2v, 4) : _mm256_and_si256(z2v, m15);
        const __m256 s2 = _mm256_broadcastss_ps(h ? _mm_movehdup_ps(s2f) : s2f);
        const __m256i zw = bcast32(b->z1 + 4 * h);
        __m256i A[2][4], T[2];
        __m256 sc[2];
        for (int m = 0; m < MR; m++) {
            const int8_t *q = a[m][g].qs + 16 * h;
            for (int t = 0; t < 4; t++) A[m][t] = bcast32(q + 4 * t);
            T[m] = _mm256_mullo_epi32(_mm256_set1_epi32(as[m][g].s[h]), ramp);
            sc[m] = _mm256_mul_ps(s2, _mm256_set1_ps(as[m][g].d));
        }
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(b->qs + 64 * h + 32 * j));
            const __m256i q0 = _mm256_and_si256(x, m3), q1 = _mm256_and_si256(_mm256_srli_epi16(x, 2), m3);
            const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(x, 4), m3), q3 = _mm256_and_si256(_mm256_srli_epi16(x, 6), m3);
            const __m256i c = _mm256_and_si256(_mm256_srlv_epi32(bcast32(b->s1 + 8 * h + 4 * j), nib_sh), m15);
            const __m256 k = _mm256_cvtepi32_ps(_mm256_add_epi32(c, z2));
            const __m256i zsh = _mm256_add_epi32(_mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), _mm256_set1_epi32(16 * j));
            const __m256i code = _mm256_and_si256(_mm256_srlv_epi32(zw, zsh), _mm256_set1_epi32(3));
            for (int m = 0; m < MR; m++) {
                __m256i p = _mm256_maddubs_epi16(q0, A[m][0]);
                p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q1, A[m][1]));
                p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q2, A[m][2]));
                p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q3, A[m][3]));
                const __m256i val = _mm256_sub_epi32(_mm256_madd_epi16(p, twos), _mm256_permutevar8x32_epi32(T[m], code));
                acc[m][j] = _mm256_fmadd_ps(_mm256_mul_ps(k, sc[m]), _mm256_cvtepi32_ps(val), acc[m][j]);
            }
        }
    }
}

/* acc[m][j] += 4-bit tile b against activation block g */
INLINE void hi_tile(const block_mx4 *b, int MR, const block_q8_0 *const *a, const act_blk *const *as, int64_t g,
                    __m256 acc[][2]) {
    const __m256i m15 = _mm256_set1_epi8(15), ones16 = _mm256_set1_epi16(1);
    const __m256i nib_sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    __m256i A[2][8];
    for (int m = 0; m < MR; m++)
        for (int i = 0; i < 8; i++) A[m][i] = bcast32(a[m][g].qs + 4 * i);
#pragma GCC unroll 2
    for (int j = 0; j < 2; j++) {
        __m256i p[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(b->qs + 64 * v + 32 * j));
            const __m256i lo = _mm256_and_si256(x, m15), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m15);
            for (int m = 0; m < MR; m++) {
                p[m] = _mm256_add_epi16(p[m], _mm256_maddubs_epi16(lo, A[m][2 * v]));
                p[m] = _mm256_add_epi16(p[m], _mm256_maddubs_epi16(hi, A[m][2 * v + 1]));
            }
        }
        const __m256i z = _mm256_and_si256(_mm256_srlv_epi32(bcast32(b->z + 4 * j), nib_sh), _mm256_set1_epi32(15));
        const __m256 s = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b->s + 8 * j)));
        for (int m = 0; m < MR; m++) {
            const __m256i val = _mm256_sub_epi32(_mm256_madd_epi16(p[m], ones16),
                                                 _mm256_mullo_epi32(z, _mm256_set1_epi32(as[m][g].s01)));
            acc[m][j] = _mm256_fmadd_ps(_mm256_mul_ps(s, _mm256_set1_ps(2.0f * as[m][g].d)), _mm256_cvtepi32_ps(val), acc[m][j]);
        }
    }
}

LB_MXA void lb_mx_act_floats_avx2(const block_q8_0 *a, const lb_mx_act *as, int64_t G, float *x) {
    for (int64_t g = 0; g < G; g++) {
        const __m256 d = _mm256_set1_ps(2.0f * as[g].d);
        for (int i = 0; i < 32; i += 8)
            _mm256_storeu_ps(x + 32 * g + i, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                                  _mm_loadl_epi64((const __m128i *)(a[g].qs + i))))));
    }
}

/* Tile rows [t0, t1) x MR activation rows: the 2-bit slots, the 4-bit
 * slots, then the rows' outliers (in the reference's order) */
INLINE void rows_pass(const lb_mx_view *v, int64_t t0, int64_t t1, int MR, const block_q8_0 *const *a,
                      const act_blk *const *as, float *const *y, const float *const *xf) {
    const int l2 = lb_cpu_prefetch_l2();
    const size_t pf = l2 ? LB_MX_PF_BYTES_L2 : LB_MX_PF_BYTES;
    for (int64_t t = t0; t < t1; t++) {
        __m256 acc[2][2];
        for (int m = 0; m < MR; m++) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
        const block_mx2 *lo = v->lo + t * v->n_lo;
        for (int64_t l = 0; l < v->n_lo; l++) {
            if (pf) lb_prefetch_span((const char *)&lo[l] + pf, sizeof *lo, l2);
            lo_tile(&lo[l], MR, a, as, v->lo_group[l], acc);
        }
        const block_mx4 *hi = v->hi + t * v->n_hi;
        for (int64_t l = 0; l < v->n_hi; l++) {
            if (pf) lb_prefetch_span((const char *)&hi[l] + pf, sizeof *hi, l2);
            hi_tile(&hi[l], MR, a, as, v->hi_group[l], acc);
        }
        for (int m = 0; m < MR; m++) {
            float yr[16];
            _mm256_storeu_ps(yr, acc[m][0]);
            _mm256_storeu_ps(yr + 8, acc[m][1]);
            if (xf[m] && v->row_ptr) lb_mx_add_outliers_x(v, t, xf[m], yr);
            else lb_mx_add_outliers(v, t, a[m], as[m], yr);
            memcpy(y[m] + 16 * t, yr, sizeof yr);
        }
    }
}

LB_MXA static void gemv1(const lb_mx_view *v, int64_t t0, int64_t t1, const block_q8_0 *a, const act_blk *as, float *y,
                         const float *xf) {
    const block_q8_0 *aa[1] = {a};
    const act_blk *ss[1] = {as};
    float *yy[1] = {y};
    const float *xx[1] = {xf};
    rows_pass(v, t0, t1, 1, aa, ss, yy, xx);
}

LB_MXA static void gemv2(const lb_mx_view *v, int64_t t0, int64_t t1, const block_q8_0 *const *a, const act_blk *const *as,
                         float *const *y, const float *const *xf) {
    rows_pass(v, t0, t1, 2, a, as, y, xf);
}

void lb_gemv_mx_q8_0_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                          size_t a_row_size, int M, float *Y, size_t ldy) {
    (void)w_row_size;
    const lb_mx_view *v = W;
    const int64_t G = K / LB_MX_M; /* <= 2048: a view's K is at most 65536 */
    /* prefill: the GEMM (mx_gemm_avx2.c); decode, or no memory for its scratch: 2 rows at a time */
    if (M >= 4 && lb_mx_gemm_avx2(v, n0 / 16, n1 / 16, (const uint8_t *)A, a_row_size, M, Y, ldy) == 0) return;
    act_blk sides[2 * 2048];
    float *xbuf = v->row_ptr ? lb_malloc_aligned((size_t)(2 * K) * sizeof *xbuf) : NULL;
    for (int m = 0; m < M; m += 2) {
        const int mr = LB_MIN(2, M - m);
        const block_q8_0 *a[2];
        const act_blk *as[2];
        float *y[2];
        for (int i = 0; i < mr; i++) {
            a[i] = (const block_q8_0 *)((const char *)A + (size_t)(m + i) * a_row_size);
            lb_mx_act_sides_avx2(a[i], G, sides + i * G);
            as[i] = sides + i * G;
            y[i] = Y + (size_t)(m + i) * ldy;
        }
        const float *xf[2] = {NULL, NULL};
        for (int i = 0; i < mr && xbuf; i++) lb_mx_act_floats_avx2(a[i], as[i], G, xbuf + i * K), xf[i] = xbuf + i * K;
        if (mr == 2) gemv2(v, n0 / 16, n1 / 16, a, as, y, xf);
        else gemv1(v, n0 / 16, n1 / 16, a[0], as[0], y[0], xf[0]);
    }
    lb_free_aligned(xbuf);
}
#endif
