/* AVX2 prefill GEMM of MX (formats/mx.h), for M >= 4 activation rows: the
 * AVX-512 GEMM's way (mx_gemm_avx512.c) with vpmaddubsw for vpdpbusd.
 *  - activations as unsigned bytes a + 128 (lb_mx_gemm_acts_avx2, shared
 *    with the AVX-512 GEMM), the tiles decoded once per call into signed
 *    codes w' (2q - z', -4..6; q - z, -15..15), and the a + 128 bias taken
 *    off in float by the tile's corr = -128 sum w' times the row's scale;
 *  - vpmaddubsw (u8 x s8, pairs to int16) cannot saturate: |pair| <=
 *    2 * 255 * 15 = 7650, and at most four of them are summed in int16
 *    (30600) before vpmaddwd by ones widens them (the 4-bit tile's 8 planes
 *    in two such sums);
 *  - a chunk of CHUNK slots of one tile row decoded into L1 (704
 *    bytes a tile: two ymm of 8 rows per plane), then all activation rows
 *    over it, RB = 2 at a time (16 ymm registers: the weights are memory
 *    operands of vpmaddubsw); partial sums in a compact M x 16 scratch;
 *  - outliers 8 activation rows at a time, transposed as in the AVX-512
 *    GEMM.
 * Within 1e-5 of the reference; bit for bit where every value is an
 * integer (tests/test_mx_kernels.c). */
#include "kernels/x86/mx_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "core/common.h"
#include "kernels/thread_scratch.h"
#include "kernels/x86/mx_x86_impl.h"

#define LB_MXG2 __attribute__((target("avx2,fma,f16c")))
#define INLINE LB_MXG2 static inline __attribute__((always_inline))

enum { CHUNK = 16, RB = 2 };

/* a decoded tile of either kind: plane i holds columns 4i .. 4i + 3 (the
 * 2-bit tile's half h is planes 4h .. 4h + 3), [j] rows 8j .. 8j + 7, one
 * dword a row */
typedef struct {
    __m256i w[8][2];
    __m256 sc[2][2]; /* 2-bit: [half][j] k s2 / 2; 4-bit: s in sc[0][j] */
    __m256 corr[2];  /* [j]: -128 sum w' times the scale, over both halves */
} tile;

INLINE __m256i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* each dword's sum of its 4 signed bytes, summed over n planes (stride
 * st vectors apart) */
INLINE __m256i sum_bytes(const __m256i *w, int n, int st) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i s = _mm256_setzero_si256();
    for (int i = 0; i < n; i++) s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, w[i * st]), ones16));
    return s;
}

INLINE void lo_decode(const block_mx2 *b, tile *D) {
    const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi32(15);
    const __m256i nib_sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i zsh = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    __m256 corr[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int h = 0; h < 2; h++) {
        uint16_t s2h;
        memcpy(&s2h, b->s2 + 2 * h, 2);
        const __m256 s2 = _mm256_set1_ps(0.5f * _cvtsh_ss(s2h));
        const __m256i z2 = _mm256_set1_epi32((b->z2 >> (4 * h)) & 15);
        for (int j = 0; j < 2; j++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(b->qs + 64 * h + 32 * j));
            /* z' = zero code + 1 of rows 8j .. 8j + 7, in every byte of the row's dword */
            const __m256i z = _mm256_add_epi32(
                _mm256_and_si256(_mm256_srlv_epi32(bcast32(b->z1 + 4 * h), _mm256_add_epi32(zsh, _mm256_set1_epi32(16 * j))),
                                 _mm256_set1_epi32(3)),
                _mm256_set1_epi32(1));
            const __m256i zb = _mm256_mullo_epi32(z, _mm256_set1_epi32(0x01010101));
            for (int t = 0; t < 4; t++) {
                const __m256i q = _mm256_and_si256(t == 0 ? x : _mm256_srli_epi16(x, 2 * t), m3);
                D->w[4 * h + t][j] = _mm256_sub_epi8(_mm256_add_epi8(q, q), zb);
            }
            const __m256i c = _mm256_and_si256(_mm256_srlv_epi32(bcast32(b->s1 + 8 * h + 4 * j), nib_sh), m15);
            D->sc[h][j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(c, z2)), s2);
            const __m256i sw = sum_bytes(&D->w[4 * h][j], 4, 2);
            corr[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(sw, _mm256_set1_epi32(-128))), D->sc[h][j], corr[j]);
        }
    }
    D->corr[0] = corr[0], D->corr[1] = corr[1];
}

INLINE void hi_decode(const block_mx4 *b, tile *D) {
    const __m256i m15 = _mm256_set1_epi8(15);
    const __m256i nib_sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    for (int j = 0; j < 2; j++) {
        const __m256i z = _mm256_and_si256(_mm256_srlv_epi32(bcast32(b->z + 4 * j), nib_sh), _mm256_set1_epi32(15));
        const __m256i zb = _mm256_mullo_epi32(z, _mm256_set1_epi32(0x01010101));
        for (int v = 0; v < 4; v++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(b->qs + 64 * v + 32 * j));
            D->w[2 * v][j] = _mm256_sub_epi8(_mm256_and_si256(x, m15), zb);
            D->w[2 * v + 1][j] = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(x, 4), m15), zb);
        }
        D->sc[0][j] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b->s + 8 * j)));
        const __m256i sw = sum_bytes(&D->w[0][j], 8, 2);
        D->corr[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(sw, _mm256_set1_epi32(-128))), D->sc[0][j]);
    }
}

/* the activations of one call (lb_mx_gemm_acts_avx2) */
typedef struct {
    const uint8_t *au;
    const float *d;
    int64_t G;
    size_t ld;
} acts;

/* acc[r][j] (activation row m0 + r, rows 8j .. 8j + 7 of the tile row) +=
 * the n decoded tiles of a chunk, 2-bit or (HI) 4-bit: planes 4k .. 4k + 3
 * summed in int16 and widened for k = 0, 1 (the 2-bit tile's halves); the
 * kinds differ in the float step only (per half, or once on the sum) */
INLINE void rows(const tile *T, const uint16_t *grp, int n, const acts *a, int m0, int R, __m256 acc[][2], const int HI) {
    const __m256i ones16 = _mm256_set1_epi16(1);
    for (int s = 0; s < n; s++) {
        const tile *D = &T[s];
        const int64_t g = grp[s];
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            const uint8_t *x = a->au + (size_t)(m0 + r) * a->ld + 32 * g;
            __m256 f[2] = {D->corr[0], D->corr[1]};
            __m256i sum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 2
            for (int k = 0; k < 2; k++) {
                __m256i xs[4];
#pragma GCC unroll 4
                for (int t = 0; t < 4; t++) xs[t] = bcast32(x + 16 * k + 4 * t);
#pragma GCC unroll 2
                for (int j = 0; j < 2; j++) {
                    __m256i p = _mm256_maddubs_epi16(xs[0], D->w[4 * k][j]);
#pragma GCC unroll 3
                    for (int t = 1; t < 4; t++) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(xs[t], D->w[4 * k + t][j]));
                    const __m256i v = _mm256_madd_epi16(p, ones16);
                    if (HI) sum[j] = _mm256_add_epi32(sum[j], v);
                    else f[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), D->sc[k][j], f[j]);
                }
            }
            const __m256 d = _mm256_set1_ps(a->d[(size_t)(m0 + r) * (size_t)a->G + g]);
#pragma GCC unroll 2
            for (int j = 0; j < 2; j++) {
                if (HI) f[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), D->sc[0][j], D->corr[j]);
                acc[r][j] = _mm256_fmadd_ps(f[j], d, acc[r][j]);
            }
        }
    }
}

/* P rows m0 .. m0 + R - 1 (16 floats each): = acc (first) or += acc */
INLINE void put(float *P, int m0, int R, __m256 acc[][2], int first) {
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            float *y = P + 16 * (size_t)(m0 + r) + 8 * j;
            _mm256_storeu_ps(y, first ? acc[r][j] : _mm256_add_ps(_mm256_loadu_ps(y), acc[r][j]));
        }
}

#define ROWS_PASS(NAME, HI)                                                                                      \
    LB_MXG2 static void NAME(const tile *T, const uint16_t *grp, int n, const acts *a, int M, float *P,          \
                             int first) {                                                                        \
        int m0 = 0;                                                                                              \
        for (; m0 + RB <= M; m0 += RB) {                                                                         \
            __m256 acc[RB][2];                                                                                   \
            _Pragma("GCC unroll 2") for (int r = 0; r < RB; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();    \
            rows(T, grp, n, a, m0, RB, acc, HI);                                                                 \
            put(P, m0, RB, acc, first);                                                                          \
        }                                                                                                        \
        for (; m0 < M; m0++) {                                                                                   \
            __m256 acc[RB][2];                                                                                   \
            acc[0][0] = acc[0][1] = _mm256_setzero_ps();                                                         \
            rows(T, grp, n, a, m0, 1, acc, HI);                                                                  \
            put(P, m0, 1, acc, first);                                                                           \
        }                                                                                                        \
    }
ROWS_PASS(lo_pass, 0)
ROWS_PASS(hi_pass, 1)

/* r[i][j] = r[j][i] (8 x 8 floats) */
INLINE void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

/* Y[m][n] += the outliers of rows [16 t0, 16 t1), 8 activation rows at a
 * time (xt: K x 8 floats: d q of those rows, by column) */
LB_MXG2 static void add_outliers(const lb_mx_view *v, int64_t t0, int64_t t1, const acts *a, int64_t K, int M,
                                 float *xt, float *Y, size_t ldy) {
    const __m128i flip = _mm_set1_epi8((char)0x80);
    for (int m0 = 0; m0 < M; m0 += 8) {
        const int mb = LB_MIN(8, M - m0);
        for (int64_t c = 0; c < K; c += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++) {
                if (i >= mb) {
                    r[i] = _mm256_setzero_ps();
                    continue;
                }
                const size_t m = (size_t)(m0 + i);
                const __m128i q = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(a->au + m * a->ld + (size_t)c)), flip);
                r[i] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)),
                                     _mm256_set1_ps(a->d[m * (size_t)a->G + (size_t)(c / 32)]));
            }
            transpose8(r);
            for (int j = 0; j < 8; j++) _mm256_store_ps(xt + 8 * (c + j), r[j]);
        }
        for (int64_t t = t0; t < t1; t++)
            for (int j = 0; j < 2; j++) { /* rows 16t + 8j .. + 7 */
                const int64_t n0 = 16 * t + 8 * j;
                if (v->row_ptr[n0] == v->row_ptr[n0 + 8]) continue;
                __m256 sr[8];
                for (int r = 0; r < 8; r++) {
                    __m256 acc = _mm256_setzero_ps();
                    for (uint32_t o = v->row_ptr[n0 + r]; o < v->row_ptr[n0 + r + 1]; o++) {
                        const uint32_t w = v->outliers[o];
                        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss((uint16_t)(w >> 16))), _mm256_load_ps(xt + 8 * (w & 0xffffu)), acc);
                    }
                    sr[r] = acc;
                }
                transpose8(sr);
                for (int i = 0; i < mb; i++) {
                    float *y = Y + (size_t)(m0 + i) * ldy + n0;
                    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_loadu_ps(y), sr[i]));
                }
            }
    }
}

LB_MXG2 void lb_mx_gemm_acts_avx2(const uint8_t *A, size_t a_row_size, int M, int64_t G, size_t ld, uint8_t *au,
                                  float *d) {
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int m = 0; m < M; m++) {
        const block_q8_0 *b = (const block_q8_0 *)(A + (size_t)m * a_row_size);
        for (int64_t g = 0; g < G; g++) {
            _mm256_storeu_si256((__m256i *)(au + (size_t)m * ld + 32 * g),
                                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)b[g].qs), flip));
            d[(size_t)m * (size_t)G + (size_t)g] = _cvtsh_ss(b[g].d);
        }
    }
}

LB_MXG2 int lb_mx_gemm_avx2(const lb_mx_view *v, int64_t t0, int64_t t1, const uint8_t *A, size_t a_row_size, int M,
                            float *Y, size_t ldy) {
    const int64_t K = v->K, G = K / LB_MX_M;
    const int outs = v->row_ptr && v->row_ptr[16 * t1] > v->row_ptr[16 * t0];
    const size_t ld = (size_t)K + 64, au_bytes = (size_t)M * ld, d_bytes = (size_t)M * (size_t)G * sizeof(float);
    const size_t p_bytes = (size_t)M * 16 * sizeof(float);
    /* kept per thread from call to call (thread_scratch.h: fresh pages per call came back zeroed) */
    uint8_t *buf = lb_thread_scratch(au_bytes + d_bytes + p_bytes + (outs ? (size_t)K * 8 * sizeof(float) : 0) + 256);
    if (!buf) return -1;
    buf = (uint8_t *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    uint8_t *au = buf;
    float *d = (float *)(buf + ((au_bytes + 63) & ~(size_t)63));
    float *P = (float *)((uint8_t *)d + ((d_bytes + 63) & ~(size_t)63));
    float *xt = (float *)((uint8_t *)P + p_bytes);
    lb_mx_gemm_acts_avx2(A, a_row_size, M, G, ld, au, d);
    const acts a = {au, d, G, ld};
    _Alignas(64) tile tt[CHUNK]; /* the chunk of either kind being run */
    for (int64_t t = t0; t < t1; t++) {
        int first = 1;
        for (int64_t l0 = 0; l0 < v->n_lo; l0 += CHUNK, first = 0) {
            const int n = (int)LB_MIN((int64_t)CHUNK, v->n_lo - l0);
            for (int s = 0; s < n; s++) lo_decode(&v->lo[t * v->n_lo + l0 + s], &tt[s]);
            lo_pass(tt, v->lo_group + l0, n, &a, M, P, first);
        }
        for (int64_t l0 = 0; l0 < v->n_hi; l0 += CHUNK) {
            const int n = (int)LB_MIN((int64_t)CHUNK, v->n_hi - l0);
            for (int s = 0; s < n; s++) hi_decode(&v->hi[t * v->n_hi + l0 + s], &tt[s]);
            hi_pass(tt, v->hi_group + l0, n, &a, M, P, 0);
        }
        for (int m = 0; m < M; m++) memcpy(Y + (size_t)m * ldy + 16 * t, P + 16 * (size_t)m, 16 * sizeof *P);
    }
    if (outs) add_outliers(v, t0, t1, &a, K, M, xt, Y, ldy);
    return 0;
}
#endif
