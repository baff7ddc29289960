/* AVX-512 VNNI prefill GEMM of the BCQ _LUT layouts (formats/bcq.h): the
 * "unpack the planes to int8 and run an int8 GEMM" side of LUT-GEMM's
 * crossover, for CPUs without AMX-BF16 (Zen 4 / 5, Xeons before Sapphire
 * Rapids) and the AMX level's row tails. Bit-identical to the reference.
 *
 * Per group the reference needs, for each plane i and Q8_0 block c, the
 * exact integer I_ic = sum_j b_ij x_j (b = +-1), then floats in its order:
 *     y += z * zs;  p_i = sum_c d_c * (float)I_ic;  y += alpha_i * p_i.
 * Here the activations become unsigned bytes x + 128 once per call and each
 * x-block (16 rows x g) is decoded once per call into +-1 bytes, "lanes =
 * rows" (one zmm per plane and 4 columns), so vpdpbusd gives
 * sum (x + 128) b = I + 128 sum b; each chain starts at the block's
 * -128 sum b (decoded with it) and ends at I exactly. That is 8 vpdpbusd per
 * plane and block against the lookup kernel's table shuffles, q of them per
 * 4 weights: it pays where activation rows are many (the tables are built
 * once per row and call, the planes decoded once per call).
 *
 * A chunk of 128 columns (one group of 128, two of 64, four of 32) of a
 * 16-row group is decoded into L1 (q x 8 KiB + the chains' starts and the
 * grid), then every activation row passes over it, 4 at a time for q <= 2
 * and 2 for q >= 3, sharing each weight load; each row's y (16 outputs) is
 * carried from chunk to chunk in a compact M x 16 scratch, so the float
 * order is the reference's. Measured against the lookup in docs/bcq.md
 * (crossover M, pp512 1.24-1.51x on an SPR-class Xeon at --isa avx512). */
#include "kernels/x86/bcq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "core/common.h"
#include "kernels/thread_scratch.h"
/* last: mul and add stay two roundings, as in the reference */
#include "core/fp_strict.h"

/* no UBSan in this file: clang with ASan and UBSan together took over 18
 * minutes on it (the unrolled chains of 12 instantiations), ASan alone 15 s;
 * ASan still checks every access */
#if defined(__clang__)
#define LB_BCQG_NO_UBSAN __attribute__((no_sanitize("undefined")))
#else
#define LB_BCQG_NO_UBSAN
#endif
#define LB_BCQG __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"))) LB_BCQG_NO_UBSAN
#define INLINE LB_BCQG static inline __attribute__((always_inline))

enum { CH = 128, RB = 4 };

/* one chunk of one 16-row group, decoded */
typedef struct {
    __m512i w[LB_BCQ_MAX_Q][CH / 4];        /* plane i, columns 4u .. 4u + 3: +-1 bytes, row r in dword r */
    __m512i init[LB_BCQ_MAX_Q][CH / 32];    /* plane i, block c: -128 sum b */
    __m512 alpha[CH / 32][LB_BCQ_MAX_Q];    /* group gi's alpha_i of the 16 rows */
    __m512 z[CH / 32];
} chunk;

INLINE __m512 load_h16(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }

/* ngr groups (ngr G <= CH columns) of the x-blocks at xb into D */
INLINE void decode(const int Q, const int G, const uint8_t *xb, int ngr, chunk *D) {
    const size_t xs = LB_BCQ_XSIZE(Q, G), plane = (size_t)(G / 8) * LB_BCQ_ROWS;
    /* byte 0 of each dword into all four; bit t (quad 0) or 4 + t (quad 1) of byte t */
    const __m512i rep = _mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0x00000000);
    const __m512i bit0 = _mm512_set1_epi32(0x08040201), bit1 = _mm512_set1_epi32((int)0x80402010);
    const __m512i plus = _mm512_set1_epi8(1), minus = _mm512_set1_epi8(-1);
    for (int gi = 0; gi < ngr; gi++, xb += xs) {
        for (int i = 0; i < Q; i++) {
            D->alpha[gi][i] = load_h16(xb + 32 * i);
            for (int k = 0; k < G / 8; k++) {
                /* byte k of plane i of the 16 rows: columns 8k .. 8k + 7 */
                const __m512i v = _mm512_shuffle_epi8(
                    _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(xb + 32 * (Q + 1) + (size_t)i * plane + 16 * (size_t)k))), rep);
                const int u = (gi * G) / 4 + 2 * k;
                D->w[i][u] = _mm512_mask_blend_epi8(_mm512_test_epi8_mask(v, bit0), minus, plus);
                D->w[i][u + 1] = _mm512_mask_blend_epi8(_mm512_test_epi8_mask(v, bit1), minus, plus);
            }
        }
        D->z[gi] = load_h16(xb + 32 * Q);
    }
    for (int i = 0; i < Q; i++)
        for (int c = 0; c < ngr * G / 32; c++) {
            __m512i s = _mm512_setzero_si512();
            for (int u = 0; u < 8; u++) s = _mm512_dpbusd_epi32(s, _mm512_set1_epi8(1), D->w[i][8 * c + u]);
            D->init[i][c] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(s, 7));
        }
}

/* The activations of one call: row m's x + 128 at au + m K, its blocks' d
 * at d + m nb, its groups' zs (sum of the blocks' ds, in order) at zs + m ng */
typedef struct {
    const uint8_t *au;
    const float *d, *zs;
    int64_t K, nb, ng;
} acts;

/* y[r] (rows m0 + r, r < R) through the chunk's ngr groups from column k0 */
INLINE void rows(const int Q, const int G, const chunk *D, int ngr, const acts *a, int64_t k0, int m0, int R,
                 __m512 *y) {
    const int NC = G / 32;
    for (int gi = 0; gi < ngr; gi++) {
        const int64_t g = (k0 + (int64_t)gi * G) / G;
        __m512 p[RB][LB_BCQ_MAX_Q];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            y[r] = _mm512_add_ps(y[r], _mm512_mul_ps(D->z[gi], _mm512_set1_ps(a->zs[(size_t)(m0 + r) * (size_t)a->ng + (size_t)g])));
#pragma GCC unroll 4
            for (int i = 0; i < Q; i++) p[r][i] = _mm512_setzero_ps();
        }
#pragma GCC unroll 4
        for (int c = 0; c < NC; c++) {
            const int cc = gi * NC + c; /* block within the chunk */
            __m512i s[RB][LB_BCQ_MAX_Q];
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
#pragma GCC unroll 4
                for (int i = 0; i < Q; i++) s[r][i] = D->init[i][cc];
            const uint8_t *x0 = a->au + (size_t)m0 * (size_t)a->K + (size_t)(k0 + 32 * cc);
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) {
                __m512i xb[RB];
#pragma GCC unroll 4
                for (int r = 0; r < R; r++) {
                    int32_t v;
                    memcpy(&v, x0 + (size_t)r * (size_t)a->K + 4 * t, 4);
                    xb[r] = _mm512_set1_epi32(v);
                }
#pragma GCC unroll 4
                for (int i = 0; i < Q; i++) {
                    const __m512i w = D->w[i][8 * cc + t];
#pragma GCC unroll 4
                    for (int r = 0; r < R; r++) s[r][i] = _mm512_dpbusd_epi32(s[r][i], xb[r], w);
                }
            }
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const __m512 d = _mm512_set1_ps(a->d[(size_t)(m0 + r) * (size_t)a->nb + (size_t)(k0 / 32 + cc)]);
#pragma GCC unroll 4
                for (int i = 0; i < Q; i++) p[r][i] = _mm512_add_ps(p[r][i], _mm512_mul_ps(d, _mm512_cvtepi32_ps(s[r][i])));
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int i = 0; i < Q; i++) y[r] = _mm512_add_ps(y[r], _mm512_mul_ps(D->alpha[gi][i], p[r][i]));
    }
}

/* Rows [n0, n1) (whole groups of 16) x M activation rows; -1 when the
 * scratch cannot be had (nothing written) */
INLINE int gemm(const int Q, const int G, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32, ng = K / G;
    const size_t au_bytes = (size_t)M * (size_t)K, d_bytes = (size_t)M * (size_t)(nb + ng) * sizeof(float);
    const size_t y_bytes = (size_t)M * 16 * sizeof(float);
    uint8_t *buf = lb_thread_scratch(au_bytes + d_bytes + y_bytes + sizeof(chunk) + 256);
    if (!buf) return -1;
    buf = (uint8_t *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    chunk *D = (chunk *)buf;
    uint8_t *au = buf + ((sizeof(chunk) + 63) & ~(size_t)63);
    float *d = (float *)(au + ((au_bytes + 63) & ~(size_t)63)), *zs = d + (size_t)M * (size_t)nb;
    float *P = (float *)((uint8_t *)d + ((d_bytes + 63) & ~(size_t)63));
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int m = 0; m < M; m++) {
        const block_q8_0_lut4 *b = (const block_q8_0_lut4 *)((const uint8_t *)A + (size_t)m * a_row_size);
        for (int64_t c = 0; c < nb; c++) {
            _mm256_storeu_si256((__m256i *)(au + (size_t)m * (size_t)K + 32 * c),
                                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)b[c].qs), flip));
            d[(size_t)m * (size_t)nb + (size_t)c] = b[c].d;
        }
        for (int64_t g = 0; g < ng; g++) {
            float s = 0.0f;
            for (int c = 0; c < G / 32; c++) s += b[g * (G / 32) + c].ds;
            zs[(size_t)m * (size_t)ng + (size_t)g] = s;
        }
    }
    const acts a = {au, d, zs, K, nb, ng};
    /* activation rows per pass: as many as the registers hold (q chains,
     * q plane sums, y and a broadcast per row) */
    const int R = Q <= 2 ? 4 : 2;
    const size_t xs = LB_BCQ_XSIZE(Q, G);
    for (int n = n0; n < n1; n += LB_BCQ_ROWS) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)n * w_row_size;
        for (int64_t k0 = 0; k0 < K; k0 += CH) {
            const int ngr = (int)(LB_MIN((int64_t)CH, K - k0) / G);
            decode(Q, G, xg + (size_t)(k0 / G) * xs, ngr, D);
            int m0 = 0;
            for (; m0 + R <= M; m0 += R) {
                __m512 y[RB];
                for (int r = 0; r < R; r++) y[r] = k0 ? _mm512_load_ps(P + 16 * (size_t)(m0 + r)) : _mm512_setzero_ps();
                rows(Q, G, D, ngr, &a, k0, m0, R, y);
                for (int r = 0; r < R; r++) _mm512_store_ps(P + 16 * (size_t)(m0 + r), y[r]);
            }
            for (; m0 < M; m0++) {
                __m512 y[RB];
                y[0] = k0 ? _mm512_load_ps(P + 16 * (size_t)m0) : _mm512_setzero_ps();
                rows(Q, G, D, ngr, &a, k0, m0, 1, y);
                _mm512_store_ps(P + 16 * (size_t)m0, y[0]);
            }
        }
        for (int m = 0; m < M; m++) memcpy(Y + (size_t)m * ldy + n, P + 16 * (size_t)m, 16 * sizeof(float));
    }
    return 0;
}

#define BCQ_GEMM_DEFINE(name, NAME, Q, G)                                                                        \
    LB_BCQG static int gemm_##name(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,   \
                                   size_t a_row_size, int M, float *Y, size_t ldy) {                            \
        return gemm(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                                   \
    }
LB_BCQ_LIST(BCQ_GEMM_DEFINE)
#undef BCQ_GEMM_DEFINE

LB_BCQG int lb_bcq_gemm_vnni_avx512(int q, int g, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                            size_t a_row_size, int M, float *Y, size_t ldy) {
#define BCQ_GEMM_CASE(name, NAME, Q, G) \
    if (q == Q && g == G) return gemm_##name(K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);
    LB_BCQ_LIST(BCQ_GEMM_CASE)
#undef BCQ_GEMM_CASE
    return -1;
}
#endif
