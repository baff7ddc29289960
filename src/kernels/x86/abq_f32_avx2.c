/* ABQ weights against fp32 activations (16 activation bits, formats/abq.h
 * LB_ABQ_ACT_F32), every plane type and code layout. The weights decode to
 * floats exactly (d (c - z): c d and z d are exact in float, so the FMA
 * that subtracts them rounds nothing).
 *
 * Prefill (M >= 4): the float-weight GEMM (kernels/fgemm.h) with the
 * decode as its conversion, on the level's fp32 micro-kernel (AVX2 6 x 16,
 * AVX-512 / AMX 14 x 32); the entries are whole_m, so each weight is
 * decoded once per thread and call. (Its first form, four decoded rows
 * dotted with the activation rows read in place, reread all M activation
 * rows per four weight rows: 41.6 t/s pp512 where this runs 95.5, W4,
 * tinyllama-1.1b shape, Zen 4, 2 threads.) Decode (M < 4) on a code layout
 * is fused (row_dot_codes): c - z to float and the FMA in registers, d once
 * per group; the plane types (W5..W8, or LOWBIT_REPACK=off) decode four
 * rows at a time into a per-thread buffer and dot them with the rows (also
 * the GEMM's fallback when its scratch cannot be had). The sums are in float
 * (the reference's in double): tests/test_abq.c holds them within a
 * relative tolerance. */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/fgemm.h"
#include "kernels/thread_scratch.h"

#define TGT __attribute__((target("avx2,fma")))

enum { ROWS = 4 }; /* weight rows decoded at a time */

/* codes (int32 lanes) -> floats d (c - z) */
TGT static inline __m256 dq8(__m256i c, __m256 d, __m256 ndz) { return _mm256_fmadd_ps(_mm256_cvtepi32_ps(c), d, ndz); }

/* A code layout row (W = 4 or 2 bit codes, formats/abq.h) of K weights:
 * groups [g0, g1) -> floats at y. */
TGT static void decode_codes(int w, const uint8_t *row, int64_t K, int64_t g0, int64_t g1, float *y) {
    const int64_t nb = K / LB_ABQ_G;
    const lb_abq_code_row r = lb_abq_code_row_of(row, nb);
    for (int64_t i = g0; i < g1; i++) {
        __m256i c[4];
        lb_abq_group_codes(r.qs + (size_t)16 * w * i, w, c);
        const __m256 d = _mm256_set1_ps(r.d[i]), ndz = _mm256_set1_ps(-r.d[i] * (float)r.z[i]);
        float *o = y + (i - g0) * LB_ABQ_G;
        for (int k = 0; k < 4; k++) {
            const __m128i lo = _mm256_castsi256_si128(c[k]), hi = _mm256_extracti128_si256(c[k], 1);
            _mm256_storeu_ps(o + 32 * k, dq8(_mm256_cvtepu8_epi32(lo), d, ndz));
            _mm256_storeu_ps(o + 32 * k + 8, dq8(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), d, ndz));
            _mm256_storeu_ps(o + 32 * k + 16, dq8(_mm256_cvtepu8_epi32(hi), d, ndz));
            _mm256_storeu_ps(o + 32 * k + 24, dq8(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)), d, ndz));
        }
    }
}

/* A plane type's row: groups [g0, g1) -> floats at y. Weights 8b .. 8b + 7
 * are bit 0..7 of byte b of each plane; a lane shifts its byte right by its
 * index. */
TGT static void decode_planes(int type, const uint8_t *row, int64_t g0, int64_t g1, float *y) {
    const int q = lb_abq_bits(type);
    const size_t bs = lb_row_size(type, LB_ABQ_G);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1);
    for (int64_t i = g0; i < g1; i++) {
        const uint8_t *blk = row + (size_t)i * bs;
        const float df = lb_abq_block_d(type, blk);
        const __m256 d = _mm256_set1_ps(df), ndz = _mm256_set1_ps(-df * (float)lb_abq_block_z(type, blk));
        const uint8_t *pl[LB_ABQ_MAX_BITS];
        for (int s = 0; s < q; s++) pl[s] = lb_abq_block_plane(type, blk, s);
        for (int b = 0; b < LB_ABQ_PLANE; b++) {
            __m256i c = _mm256_setzero_si256();
            for (int s = 0; s < q; s++) {
                const __m256i bit = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(pl[s][b]), lane), one);
                c = _mm256_or_si256(c, _mm256_slli_epi32(bit, s));
            }
            _mm256_storeu_ps(y + (i - g0) * LB_ABQ_G + 8 * b, dq8(c, d, ndz));
        }
    }
}

/* Groups [g0, g1) of a row of K weights, any ABQ type -> floats at y */
TGT static void decode_groups(int type, const uint8_t *row, int64_t K, int64_t g0, int64_t g1, float *y) {
    const int w = lb_abq_code_bits(type);
    if (w) decode_codes(w, row, K, g0, g1, y);
    else decode_planes(type, row, g0, g1, y);
}

TGT static void decode_row(int type, const uint8_t *row, int64_t K, float *y) {
    decode_groups(type, row, K, 0, K / LB_ABQ_G, y);
}

/* The prefill GEMM's conversion (kernels/fgemm.h): weights k0 .. k0 + n - 1
 * of a row, whole groups (k0 and n multiples of 128: K is) */
typedef struct {
    int type;
    int64_t K;
} cvt_ctx;
TGT static void cvt_groups(const void *vc, const void *row, int64_t k0, int64_t n, float *out) {
    const cvt_ctx *c = vc;
    decode_groups(c->type, row, c->K, k0 / LB_ABQ_G, (k0 + n) / LB_ABQ_G, out);
}

TGT static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* y[a][r] = dot(w row r, x[a]) for the ROWS decoded rows (the first nr
 * stored) and MR activation rows: ROWS x MR accumulators (4 x 3 = 12 of
 * AVX2's 16 registers), each weight vector loaded once for the MR rows:
 * 7 loads per 12 FMAs, no packing. K a multiple of 8. */
#define DOT_TILE(MR)                                                                                             \
    TGT static void dot_tile##MR(const float *w, int64_t K, const float *const *x, float *const *y, int nr) {  \
        __m256 acc[MR][ROWS];                                                                                    \
        for (int a = 0; a < MR; a++)                                                                             \
            for (int r = 0; r < ROWS; r++) acc[a][r] = _mm256_setzero_ps();                                      \
        for (int64_t k = 0; k < K; k += 8) {                                                                     \
            __m256 xv[MR];                                                                                       \
            for (int a = 0; a < MR; a++) xv[a] = _mm256_loadu_ps(x[a] + k);                                      \
            for (int r = 0; r < ROWS; r++) {                                                                     \
                const __m256 wr = _mm256_loadu_ps(w + r * K + k);                                                \
                for (int a = 0; a < MR; a++) acc[a][r] = _mm256_fmadd_ps(wr, xv[a], acc[a][r]);                  \
            }                                                                                                    \
        }                                                                                                        \
        for (int a = 0; a < MR; a++)                                                                             \
            for (int r = 0; r < nr; r++) y[a][r] = hsum(acc[a][r]);                                              \
    }
DOT_TILE(1)
DOT_TILE(2)
DOT_TILE(3)
#undef DOT_TILE

/* Decode (one activation row) on a code layout, fused: per group the codes
 * minus z as int32 (exact), to float, times x, summed in float; then times
 * d into the row's sum. No buffer: the codes are read once, as in the
 * int8 kernel. */
TGT static float row_dot_codes(int w, const uint8_t *row, int64_t K, const float *x) {
    const int64_t nb = K / LB_ABQ_G;
    const lb_abq_code_row r = lb_abq_code_row_of(row, nb);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i c[4];
        lb_abq_group_codes(r.qs + (size_t)16 * w * i, w, c);
        const __m256i z = _mm256_set1_epi32(r.z[i]);
        const float *xg = x + i * LB_ABQ_G;
        __m256 g[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int k = 0; k < 4; k++) { /* four chains: an FMA's latency is four of its issue slots */
            const __m128i lo = _mm256_castsi256_si128(c[k]), hi = _mm256_extracti128_si256(c[k], 1);
#define CZ(v) _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(v), z))
            g[0] = _mm256_fmadd_ps(CZ(lo), _mm256_loadu_ps(xg + 32 * k), g[0]);
            g[1] = _mm256_fmadd_ps(CZ(_mm_srli_si128(lo, 8)), _mm256_loadu_ps(xg + 32 * k + 8), g[1]);
            g[2] = _mm256_fmadd_ps(CZ(hi), _mm256_loadu_ps(xg + 32 * k + 16), g[2]);
            g[3] = _mm256_fmadd_ps(CZ(_mm_srli_si128(hi, 8)), _mm256_loadu_ps(xg + 32 * k + 24), g[3]);
#undef CZ
        }
        const __m256 gs = _mm256_add_ps(_mm256_add_ps(g[0], g[1]), _mm256_add_ps(g[2], g[3]));
        acc = _mm256_fmadd_ps(gs, _mm256_set1_ps(r.d[i]), acc);
    }
    return hsum(acc);
}

static void gemm_f32(int type, int64_t K, const void *W, size_t rs, int n0, int n1, const void *A, size_t ars, int M,
                     float *Y, size_t ldy) {
    const int w = lb_abq_code_bits(type);
    if (M == 1 && w) {
        for (int n = n0; n < n1; n++) Y[n] = row_dot_codes(w, (const uint8_t *)W + (size_t)n * rs, K, A);
        return;
    }
    /* prefill: the packed fp32 GEMM on the level's micro-kernel (AVX2 6 x 16,
     * AVX-512 14 x 32), each weight decoded once per call */
    const cvt_ctx ctx = {type, K};
    if (M >= LB_FGEMM_MIN_M &&
        lb_fgemm(lb_sgemm_kernel_at(lb_cpu_level()), cvt_groups, &ctx, 0, K, W, rs, n0, n1, (const float *)A, ars, M, Y,
                 ldy) == 0)
        return;
    float *buf = lb_thread_scratch((size_t)ROWS * (size_t)K * sizeof(float));
    if (!buf) { /* no memory for the decoded rows: the reference, row by row */
        for (int m = 0; m < M; m++)
            for (int n = n0; n < n1; n++)
                Y[(size_t)m * ldy + n] = lb_abq_row_dot_f32(type, K, (const uint8_t *)W + (size_t)n * rs,
                                                            (const float *)((const char *)A + (size_t)m * ars));
        return;
    }
    for (int n = n0; n < n1; n += ROWS) {
        const int nr = n1 - n < ROWS ? n1 - n : ROWS;
        for (int r = 0; r < ROWS; r++) /* rows past n1: a copy of the first, computed and dropped */
            decode_row(type, (const uint8_t *)W + (size_t)(n + (r < nr ? r : 0)) * rs, K, buf + (size_t)r * K);
        for (int m = 0; m < M; m += 3) {
            const int mr = M - m < 3 ? M - m : 3;
            const float *x[3];
            float *y[3];
            for (int a = 0; a < mr; a++)
                x[a] = (const float *)((const char *)A + (size_t)(m + a) * ars), y[a] = Y + (size_t)(m + a) * ldy + n;
            if (mr == 3) dot_tile3(buf, K, x, y, nr);
            else if (mr == 2) dot_tile2(buf, K, x, y, nr);
            else dot_tile1(buf, K, x, y, nr);
        }
    }
}

#define F32_DEFINE(name, NAME, Q)                                                                              \
    void lb_gemm_##name##_f32_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, \
                                   size_t a_row_size, int M, float *Y, size_t ldy) {                           \
        gemm_f32(LB_TYPE_##NAME, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                          \
    }                                                                                                          \
    void lb_vec_dot_##name##_f32_avx2(int64_t n, float *s, const void *w, const void *a) {                     \
        gemm_f32(LB_TYPE_##NAME, n, w, lb_row_size(LB_TYPE_##NAME, n), 0, 1, a, (size_t)n * sizeof(float), 1, s, 1); \
    }
LB_ABQ_LIST(F32_DEFINE)
LB_ABQ_CODES_LIST(F32_DEFINE)
#undef F32_DEFINE
#endif
