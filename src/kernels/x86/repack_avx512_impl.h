/* Shared by the AVX-512 VNNI (repack_avx512.c, repack_gemv_avx512.c) and AMX (repack_amx.c)
 * kernels on the interleaved layouts of formats/repack.h: the geometry that
 * gathers 16 rows of one block into 8 vectors "kk" (weights 4kk..4kk+3 of
 * rows 0..15, one dword per row), their decode to unsigned (VNNI) or signed
 * (AMX) bytes, the rows' scales, and the Q8_0 block quantizer. Included
 * only by x86 kernel files compiled with these target attributes. */
#ifndef LB_REPACK_AVX512_IMPL_H
#define LB_REPACK_AVX512_IMPL_H

#include <immintrin.h>
#include <string.h>

#include "formats/kquants.h"
#include "formats/mxfp4.h"
#include "formats/repack.h"

#define LB_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE LB_AVX512 static inline __attribute__((always_inline))

enum { WQ4, WIQ4, WQ8, WMX }; /* weight kind (WMX: MXFP4_NL, IQ4_NL's layout with MXFP4's table) */

/* Every interleaved layout these kernels serve, as X(name, R, C, kind): each
 * kernel file instantiates its entry points from this one list. */
#define LB_REPACK_LAYOUTS(X)                                                          \
    X(q4_0, 4, 4, WQ4) X(q4_0, 4, 8, WQ4) X(q4_0, 8, 8, WQ4)                          \
    X(iq4_nl, 4, 4, WIQ4) X(iq4_nl, 4, 8, WIQ4) X(iq4_nl, 8, 8, WIQ4)                 \
    X(q8_0, 4, 4, WQ8) X(q8_0, 4, 8, WQ8) X(q8_0, 8, 8, WQ8)                          \
    X(mxfp4_nl, 4, 4, WMX) X(mxfp4_nl, 4, 8, WMX) X(mxfp4_nl, 8, 8, WMX)

/* ---- layout geometry ---- */

typedef struct {
    int R, C, Q;       /* rows per group, chunk bytes, quant bytes per row and block */
    int ntgt;          /* dwords per row and block: Q / 4 */
    size_t xbs;        /* bytes per x-block: R * (2 + Q) */
    size_t gstride;    /* bytes per group: R * w_row_size */
    int zoff[8];       /* per dword t: offset in qs of the 64 bytes holding it for every row of a group */
    int32_t idx[8][16]; /* per dword t: vpermt2d indices gathering rows 0..15 */
} geom;

static void geom_init(geom *g, int R, int C, int Q, size_t w_row_size) {
    g->R = R;
    g->C = C;
    g->Q = Q;
    g->ntgt = Q / 4;
    g->xbs = (size_t)R * (size_t)(2 + Q);
    g->gstride = (size_t)R * w_row_size;
    for (int t = 0; t < g->ntgt; t++) {
        const int o = 4 * t;                  /* byte of the row */
        const int start = (o / C) * R * C;    /* the R rows' chunks are contiguous here */
        g->zoff[t] = start & ~63;
        for (int l = 0; l < 16; l++) {
            const int rr = l % R;              /* row within its group */
            const int pos = ((o / C) * R + rr) * C + o % C - g->zoff[t];
            /* R = 8: lanes 0-7 from group A, 8-15 from B; R = 4: groups
             * alternate first/second table, two gathers blended */
            const int second = R == 8 ? l / 8 : (l / 4) & 1;
            g->idx[t][l] = second * 16 + pos / 4;
        }
    }
}

/* The x-block b of the groups covering 16 rows: g[0..1] (R = 8) or g[0..3]. */
typedef struct {
    const uint8_t *g[4];
} rows16;

INLINE __m512i gather_dwords(const geom *G, const rows16 *r, int64_t b, int t, __m512i idx) {
    const size_t off = (size_t)b * G->xbs + 2 * (size_t)G->R + (size_t)G->zoff[t];
    if (G->R == 8) {
        const __m512i a = _mm512_loadu_si512(r->g[0] + off), c = _mm512_loadu_si512(r->g[1] + off);
        return _mm512_permutex2var_epi32(a, idx, c);
    }
    const __m512i p = _mm512_permutex2var_epi32(_mm512_loadu_si512(r->g[0] + off), idx, _mm512_loadu_si512(r->g[1] + off));
    const __m512i q = _mm512_permutex2var_epi32(_mm512_loadu_si512(r->g[2] + off), idx, _mm512_loadu_si512(r->g[3] + off));
    return _mm512_mask_blend_epi32(0xFF00, p, q);
}

/* Weights of 16 rows, block b: w[kk] = weights 4kk..4kk+3, unsigned
 * (q = w + 8 for Q4_0, w + 128 otherwise: VNNI's u8 operand) or, with sgn,
 * the signed weights themselves (AMX's s8 x s8). */
INLINE void decode16(int wt, int sgn, const geom *G, const __m512i *idx, const rows16 *r, int64_t b, __m512i w[8]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    if (wt == WQ8) {
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) {
            const __m512i v = gather_dwords(G, r, b, t, idx[t]);
            w[t] = sgn ? v : _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80));
        }
        return;
    }
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        const __m512i v = gather_dwords(G, r, b, t, idx[t]);
        const __m512i h = _mm512_srli_epi16(v, 4);
        if (wt == WQ4) {
            /* (v & 0x0F) ^ 0x08: the toggled nibble back to q = w + 8 */
            w[t] = _mm512_ternarylogic_epi32(v, m4, _mm512_set1_epi8(0x08), 0x6A);
            w[t + 4] = _mm512_ternarylogic_epi32(h, m4, _mm512_set1_epi8(0x08), 0x6A);
            if (sgn) {
                w[t] = _mm512_sub_epi8(w[t], _mm512_set1_epi8(8));
                w[t + 4] = _mm512_sub_epi8(w[t + 4], _mm512_set1_epi8(8));
            }
        } else {
            /* lb_kvalues_iq4nl or lb_kvalues_mxfp4 (+ 128 unless sgn) in every 128-bit lane */
            const int8_t *kv = wt == WMX ? lb_kvalues_mxfp4 : lb_kvalues_iq4nl;
            const __m512i book = _mm512_xor_si512(
                _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)kv)),
                _mm512_set1_epi8(sgn ? 0 : (char)0x80));
            w[t] = _mm512_shuffle_epi8(book, _mm512_and_si512(v, m4));
            w[t + 4] = _mm512_shuffle_epi8(book, _mm512_and_si512(h, m4));
        }
    }
}

/* The 16 rows' fp16 scales of block b, widened. */
INLINE __m512 scales16(const geom *G, const rows16 *r, int64_t b) {
    const size_t off = (size_t)b * G->xbs;
    __m256i h;
    if (G->R == 8) {
        h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(r->g[0] + off))),
                                    _mm_loadu_si128((const __m128i *)(r->g[1] + off)), 1);
    } else {
        const __m128i lo = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(r->g[0] + off)),
                                              _mm_loadl_epi64((const __m128i *)(r->g[1] + off)));
        const __m128i hi = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(r->g[2] + off)),
                                              _mm_loadl_epi64((const __m128i *)(r->g[3] + off)));
        h = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    }
    return _mm512_cvtph_ps(h);
}

/* Groups for rows [n, n + 16): missing groups past n1 repeat the first one
 * (valid memory; their lanes are masked at the store). */
INLINE rows16 rows_at(const geom *G, const void *W, int n, int n1) {
    rows16 r;
    const uint8_t *g0 = (const uint8_t *)W + (size_t)(n / G->R) * G->gstride;
    for (int i = 0; i < 16 / G->R; i++) r.g[i] = n + i * G->R < n1 ? g0 + (size_t)i * G->gstride : g0;
    for (int i = 16 / G->R; i < 4; i++) r.g[i] = g0;
    return r;
}

INLINE __mmask16 row_mask(int n, int n1) {
    const int k = n1 - n;
    return k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << k) - 1);
}

INLINE int wt_offset(int wt) { return wt == WQ4 ? 8 : 128; }

/* ---- activations for the GEMM: 4 rows, quantized as Q8_0 ---- */

INLINE __m512i round_away(__m512 x) {
    const __m512 t = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(x, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u));
    const __m512 step = _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_castps_si512(_mm512_set1_ps(1.0f))));
    return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, step));
}

/* One block of 32 as lb_quantize_row_q8_0_ref: bytes, widened scale, sum. */
INLINE void quantize_block32(const float *x, int8_t *qs, float *d_out, int32_t *sum) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *d_out = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m512i i0 = round_away(_mm512_mul_ps(v0, _mm512_set1_ps(id)));
    const __m512i i1 = round_away(_mm512_mul_ps(v1, _mm512_set1_ps(id)));
    *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
    _mm_storeu_si128((__m128i *)qs, _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128((__m128i *)(qs + 16), _mm512_cvtepi32_epi8(i1));
}

#endif
