/* AVX-512 VNNI prefill GEMM of MX (formats/mx.h), for M >= 4 activation
 * rows: what CPUs without AMX-BF16 (Zen 4 / 5, Xeons before Sapphire
 * Rapids) run for prompt processing, and the AMX level's row tails.
 *
 * The decode kernel's way (mx_avx512.c) starts each half tile's int32 chain
 * at -z' S_h, which depends on the activation row (a vpmaddwd and a
 * broadcast per half, row and tile), and used to pass over all weights once
 * per 32 activation rows. Here:
 *  - the activations become unsigned bytes a + 128 once per call (one xor,
 *    lb_mx_gemm_acts_avx2),
 *    so the weights can be vpdpbusd's signed operand: each tile is decoded
 *    once per call into signed codes w' = 2q - z' (2-bit: the half-step zero
 *    in integers, -4..6) or q - z (4-bit, -15..15). sum (a + 128) w' =
 *    sum a w' + 128 sum w', and the second term is the tile's own: every
 *    chain starts at zero, and the float step starts at the tile's
 *    -128 sum w' times the row's scale (corr), decoded with the tile;
 *  - a chunk of CHUNK slots of two tile rows (32 output rows) is decoded
 *    into L1 (704 bytes a tile), then every activation row passes
 *    over it, RB = 4 at a time: each activation dword broadcast feeds the two
 *    tile rows' vpdpbusd. Per activation row and 2-bit tile 8 vpdpbusd and 5
 *    float operations (two conversions, two fma by the half scales k s2 / 2,
 *    the block's d), per 4-bit tile 8 and 3. Partial sums go to a compact
 *    M x 32 scratch (P), copied to Y once per tile row pair;
 *  - the outliers after the dense part, 16 activation rows at a time: their
 *    dequantized activations d q transposed to [K][16] floats, so an
 *    outlier is one fma over 16 rows, and a tile row's 16 x 16 sums are
 *    transposed back and added to Y by whole vectors.
 * On Zen 4 each float operation takes a vector slot as a vpdpbusd does, so
 * a 2-bit tile runs at most 8 / (8 + 5) = 62 % of the VNNI peak (a 4-bit
 * one 73 %): measured 63-65 % over the matrix (bench/kernels 5632x2048,
 * M = 512, one thread). Q2_K folds its sub-block scales into the weight
 * bytes and pays about 1 float op per 256 weights; MX's two half scales
 * are floats (k s2 / 2 with a per-half fp16 s2), which no integer folding
 * represents exactly, so this gap to Q2_K's GEMM is the format's.
 * Within 1e-5 of the reference (float sums in another order, and the
 * a + 128 bias taken off in float); bit for bit where every value is an
 * integer (tests/test_mx_kernels.c).
 *
 * Measured (docs/mixed.md, Intel Xeon SPR-class VM, --isa avx512, 2 threads,
 * 5632 x 2048, M = 512): 261-286 GOPS with the decode kernel's pass, 760-790
 * with this one (no outliers; 0.2 % outliers cost about 10-15 %). */
#include "kernels/x86/mx_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "core/common.h"
#include "kernels/thread_scratch.h"
#include "kernels/x86/mx_x86_impl.h"

#define LB_MXG __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE LB_MXG static inline __attribute__((always_inline))

/* slots decoded per chunk: 2 tile rows x 8 x 704 bytes (11 KiB) stay in L1
 * (32 KiB on Zen 4) beside the activation rows' bytes
 * of those groups; 16 and 32 ran no faster on the Xeon. RB: activation rows
 * per pass (2 and 3 slower, 6 the same) */
enum { CHUNK = 8, RB = 4 };

/* a decoded tile of either kind: plane i holds columns 4i .. 4i + 3 of the
 * 16 rows (one dword a row; the 2-bit tile's half h is planes 4h .. 4h + 3) */
typedef struct {
    __m512i w[8];
    __m512 sc[2]; /* 2-bit: k s2 / 2 of each row's half (the first-order scale, halved for the doubled
                   * sums); 4-bit: s in sc[0] */
    __m512 corr;  /* -128 sum w' times the scale (over both halves): what the a + 128 bias adds */
} tile;

INLINE __m512i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* -128 times each dword's sum of its 4 signed bytes, summed over n planes */
INLINE __m512i neg128_sum(const __m512i *w, int n) {
    __m512i s = _mm512_setzero_si512();
    #pragma GCC unroll 8
    for (int i = 0; i < n; i++) s = _mm512_dpbusd_epi32(s, _mm512_set1_epi8(1), w[i]);
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(s, 7));
}

INLINE void lo_decode(const block_mx2 *b, tile *D) {
    const __m512i zsh = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i m6 = _mm512_set1_epi8(6);
    #pragma GCC unroll 8
    for (int h = 0; h < 2; h++) {
        const __m512i x = _mm512_loadu_si512(b->qs + 64 * h);
        /* z' = zero code + 1 = 2 z1, in every byte of its row's dword */
        const __m512i z = _mm512_add_epi32(_mm512_and_si512(_mm512_srlv_epi32(bcast32(b->z1 + 4 * h), zsh), _mm512_set1_epi32(3)),
                                           _mm512_set1_epi32(1));
        const __m512i zb = _mm512_mullo_epi32(z, _mm512_set1_epi32(0x01010101));
        #pragma GCC unroll 8
        for (int t = 0; t < 4; t++) {
            const __m512i q2 = _mm512_and_si512(t == 0 ? _mm512_add_epi8(x, x) : _mm512_srli_epi16(x, 2 * t - 1), m6);
            D->w[4 * h + t] = _mm512_sub_epi8(q2, zb);
        }
        const __m512i k = _mm512_add_epi32(lb_mx_nibbles16(b->s1 + 8 * h), _mm512_set1_epi32((b->z2 >> (4 * h)) & 15));
        uint16_t s2;
        memcpy(&s2, b->s2 + 2 * h, 2);
        D->sc[h] = _mm512_mul_ps(_mm512_cvtepi32_ps(k), _mm512_set1_ps(0.5f * _cvtsh_ss(s2)));
    }
    D->corr = _mm512_fmadd_ps(_mm512_cvtepi32_ps(neg128_sum(D->w + 4, 4)), D->sc[1],
                              _mm512_mul_ps(_mm512_cvtepi32_ps(neg128_sum(D->w, 4)), D->sc[0]));
}

INLINE void hi_decode(const block_mx4 *b, tile *D) {
    const __m512i m15 = _mm512_set1_epi8(15);
    const __m512i zb = _mm512_mullo_epi32(lb_mx_nibbles16(b->z), _mm512_set1_epi32(0x01010101));
    #pragma GCC unroll 8
    for (int v = 0; v < 4; v++) {
        const __m512i x = _mm512_loadu_si512(b->qs + 64 * v);
        D->w[2 * v] = _mm512_sub_epi8(_mm512_and_si512(x, m15), zb);
        D->w[2 * v + 1] = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(x, 4), m15), zb);
    }
    D->sc[0] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b->s));
    D->corr = _mm512_mul_ps(_mm512_cvtepi32_ps(neg128_sum(D->w, 8)), D->sc[0]);
}

/* The activations of one call: row m's bytes a + 128 at au + m K (group g's
 * 32 at 32 g), its blocks' d at d + m G. */
typedef struct {
    const uint8_t *au;
    const float *d;
    int64_t K, G;
    size_t ld; /* bytes from one row of au to the next: K + 64, off the power-of-two strides whose rows
                * would all fall into the same few L1 sets */
} acts;

/* acc[v][r] (tile row v of the NV decoded side by side, activation row
 * m0 + r, r < R) += the n decoded tiles of a chunk, T[v * CHUNK + s], of
 * the 2-bit kind or (HI) the 4-bit one: two chains a tile, planes 0-3 and
 * 4-7 (the 2-bit tile's halves), each plane against the activation dword of
 * its columns; the kinds differ in the float step only. The NV tile rows
 * share each activation broadcast (same groups: the map is the matrix's). */
INLINE void rows(const tile *T, const uint16_t *grp, int n, const acts *a, int m0, int NV, int R, __m512 acc[][RB],
                 const int HI) {
    for (int s = 0; s < n; s++) {
        const int64_t g = grp[s];
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const uint8_t *x = a->au + (size_t)(m0 + r) * a->ld + 32 * g;
            __m512i c[2][2];
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) c[v][0] = c[v][1] = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) {
                const __m512i x0 = bcast32(x + 4 * t), x1 = bcast32(x + 16 + 4 * t);
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++) {
                    /* HI: one chain (one scale; the 8 chains in flight cover the latency) */
                    c[v][0] = _mm512_dpbusd_epi32(c[v][0], x0, T[v * CHUNK + s].w[t]);
                    c[v][HI ? 0 : 1] = _mm512_dpbusd_epi32(c[v][HI ? 0 : 1], x1, T[v * CHUNK + s].w[4 + t]);
                }
            }
            const __m512 d = _mm512_set1_ps(a->d[(size_t)(m0 + r) * (size_t)a->G + g]);
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) {
                const tile *D = &T[v * CHUNK + s];
                const __m512 f =
                    HI ? _mm512_fmadd_ps(_mm512_cvtepi32_ps(c[v][0]), D->sc[0], D->corr)
                       : _mm512_fmadd_ps(_mm512_cvtepi32_ps(c[v][1]), D->sc[1],
                                         _mm512_fmadd_ps(_mm512_cvtepi32_ps(c[v][0]), D->sc[0], D->corr));
                acc[v][r] = _mm512_fmadd_ps(f, d, acc[v][r]);
            }
        }
    }
}

/* P rows m0 .. m0 + R - 1 (32 floats each: the tile row pair's partial
 * sums, contiguous, where Y's rows lie a row of the matrix apart), columns
 * 16v .. 16v + 15 for v < NV: = acc (first) or += acc */
INLINE void put(float *P, int m0, int NV, int R, __m512 acc[][RB], int first) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            float *y = P + 32 * (size_t)(m0 + r) + 16 * v;
            _mm512_storeu_ps(y, first ? acc[v][r] : _mm512_add_ps(_mm512_loadu_ps(y), acc[v][r]));
        }
}

/* One chunk of NV tile rows (already decoded) against all M rows, RB at a
 * time, then one at a time; NV and the row count are constants in each
 * expansion, so the accumulators stay in registers */
#define ROWS_PASS(NAME, HI, NV)                                                                                   \
    LB_MXG static void NAME(const tile *T, const uint16_t *grp, int n, const acts *a, int M, float *P,            \
                            int first) {                                                                          \
        int m0 = 0;                                                                                               \
        for (; m0 + RB <= M; m0 += RB) {                                                                          \
            __m512 acc[NV][RB];                                                                                   \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                                                  \
                _Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) acc[v][r] = _mm512_setzero_ps();             \
            rows(T, grp, n, a, m0, NV, RB, acc, HI);                                                                  \
            put(P, m0, NV, RB, acc, first);                                                               \
        }                                                                                                         \
        for (; m0 < M; m0++) {                                                                                    \
            __m512 acc[NV][RB];                                                                                   \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) acc[v][0] = _mm512_setzero_ps();                 \
            rows(T, grp, n, a, m0, NV, 1, acc, HI);                                                                   \
            put(P, m0, NV, 1, acc, first);                                                                \
        }                                                                                                         \
    }
ROWS_PASS(lo_pass1, 0, 1)
ROWS_PASS(lo_pass2, 0, 2)
ROWS_PASS(hi_pass1, 1, 1)
ROWS_PASS(hi_pass2, 1, 2)

/* r[i][j] = r[j][i] (16 x 16 floats) */
INLINE void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
        t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xdd);
        t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
        t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
        r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd);
        r[4 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0x88);
        r[12 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0xdd);
    }
}

/* Y[m][n] += the outliers of rows [16 t0, 16 t1), 16 activation rows at a
 * time: xt[c][i] = d q of row m0 + i (0 past the last row; the reference's
 * d * q), built 16 columns at a time and transposed, so each outlier is one
 * fma over the 16 rows (xt: K x 16 floats of scratch) */
LB_MXG static void add_outliers(const lb_mx_view *v, int64_t t0, int64_t t1, const acts *a, int M, float *xt,
                                float *Y, size_t ldy) {
    const int64_t K = a->K;
    const __m128i flip = _mm_set1_epi8((char)0x80);
    for (int m0 = 0; m0 < M; m0 += 16) {
        const int mb = LB_MIN(16, M - m0);
        for (int64_t c = 0; c < K; c += 16) {
            __m512 r[16];
            for (int i = 0; i < 16; i++) {
                if (i >= mb) {
                    r[i] = _mm512_setzero_ps();
                    continue;
                }
                const size_t m = (size_t)(m0 + i);
                const __m128i q = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a->au + m * a->ld + (size_t)c)), flip);
                r[i] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)),
                                     _mm512_set1_ps(a->d[m * (size_t)a->G + (size_t)(c / 32)]));
            }
            transpose16(r);
            for (int j = 0; j < 16; j++) _mm512_store_ps(xt + 16 * (c + j), r[j]);
        }
        /* per tile row: the 16 rows' sums over the 16 activation rows in
         * registers, transposed to 16 activation rows of 16 outputs, added
         * to Y by whole vectors */
        for (int64_t t = t0; t < t1; t++) {
            if (v->row_ptr[16 * t] == v->row_ptr[16 * t + 16]) continue;
            __m512 sr[16];
            for (int r = 0; r < 16; r++) {
                __m512 acc = _mm512_setzero_ps();
                for (uint32_t o = v->row_ptr[16 * t + r]; o < v->row_ptr[16 * t + r + 1]; o++) {
                    const uint32_t w = v->outliers[o];
                    acc = _mm512_fmadd_ps(_mm512_set1_ps(_cvtsh_ss((uint16_t)(w >> 16))), _mm512_load_ps(xt + 16 * (w & 0xffffu)), acc);
                }
                sr[r] = acc;
            }
            transpose16(sr);
            for (int i = 0; i < mb; i++) {
                float *y = Y + (size_t)(m0 + i) * ldy + 16 * t;
                _mm512_storeu_ps(y, _mm512_add_ps(_mm512_loadu_ps(y), sr[i]));
            }
        }
    }
}

/* Into L1 while the chunk before runs: the next chunk's tiles of tile rows
 * t, t + 1 (kind 0: 2-bit from slot l, 1: 4-bit), or where the kind's
 * slots end the next kind's first chunk, or the next tile row pair's. The
 * hardware prefetcher follows the slots only as the decode demands them,
 * after a pass of every activation row over the chunk before: the decode's
 * first loads missed (a fifth of this function's own time, perf, Zen 4). */
LB_MXG static void prefetch_chunk(const lb_mx_view *v, int64_t t, int64_t t1, int kind, int64_t l) {
    for (;;) {
        if (t >= t1) return;
        const int64_t n = kind ? v->n_hi : v->n_lo;
        if (l < n) break;
        if (kind) t += 2;
        kind = !kind, l = 0;
    }
    const int64_t n = kind ? v->n_hi : v->n_lo, c = LB_MIN((int64_t)CHUNK, n - l);
    const size_t bs = kind ? sizeof(block_mx4) : sizeof(block_mx2);
    for (int64_t u = t; u < LB_MIN(t + 2, t1); u++) {
        const char *p = kind ? (const char *)&v->hi[u * n + l] : (const char *)&v->lo[u * n + l];
        for (size_t o = 0; o < (size_t)c * bs; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
    }
}

LB_MXG int lb_mx_gemm_avx512(const lb_mx_view *v, int64_t t0, int64_t t1, const uint8_t *A, size_t a_row_size, int M,
                      float *Y, size_t ldy) {
    const int64_t K = v->K, G = K / LB_MX_M;
    const int outs = v->row_ptr && v->row_ptr[16 * t1] > v->row_ptr[16 * t0];
    const size_t ld = (size_t)K + 64, au_bytes = (size_t)M * ld, d_bytes = (size_t)M * (size_t)G * sizeof(float);
    const size_t p_bytes = (size_t)M * 32 * sizeof(float);
    /* kept per thread from call to call (thread_scratch.h: fresh pages per call came back zeroed) */
    uint8_t *buf = lb_thread_scratch(au_bytes + d_bytes + p_bytes + (outs ? (size_t)K * 16 * sizeof(float) : 0) + 256);
    if (!buf) return -1;
    buf = (uint8_t *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    uint8_t *au = buf;
    float *d = (float *)(buf + ((au_bytes + 63) & ~(size_t)63));
    float *P = (float *)((uint8_t *)d + ((d_bytes + 63) & ~(size_t)63));
    float *xt = (float *)((uint8_t *)P + p_bytes);
    lb_mx_gemm_acts_avx2(A, a_row_size, M, G, ld, au, d);
    const acts a = {au, d, K, G, ld};
    _Alignas(64) tile tt[2 * CHUNK]; /* the chunk of either kind being run */
    for (int64_t t = t0; t < t1; t += 2) {
        const int nv = t + 1 < t1 ? 2 : 1;
        int first = 1;
        for (int64_t l0 = 0; l0 < v->n_lo; l0 += CHUNK, first = 0) {
            const int n = (int)LB_MIN((int64_t)CHUNK, v->n_lo - l0);
            for (int u = 0; u < nv; u++)
                for (int s = 0; s < n; s++) lo_decode(&v->lo[(t + u) * v->n_lo + l0 + s], &tt[u * CHUNK + s]);
            prefetch_chunk(v, t, t1, 0, l0 + CHUNK);
            (nv == 2 ? lo_pass2 : lo_pass1)(tt, v->lo_group + l0, n, &a, M, P, first);
        }
        for (int64_t l0 = 0; l0 < v->n_hi; l0 += CHUNK) {
            const int n = (int)LB_MIN((int64_t)CHUNK, v->n_hi - l0);
            for (int u = 0; u < nv; u++)
                for (int s = 0; s < n; s++) hi_decode(&v->hi[(t + u) * v->n_hi + l0 + s], &tt[u * CHUNK + s]);
            prefetch_chunk(v, t, t1, 1, l0 + CHUNK);
            (nv == 2 ? hi_pass2 : hi_pass1)(tt, v->hi_group + l0, n, &a, M, P, 0);
        }
        /* whole vectors: memcpy's rep movsq of 64 or 128 bytes took a
         * fifth of this function's own time (perf, Zen 4) */
        for (int m = 0; m < M; m++)
            for (int u = 0; u < nv; u++)
                _mm512_storeu_ps(Y + (size_t)m * ldy + 16 * (t + u), _mm512_loadu_ps(P + 32 * (size_t)m + 16 * u));
    }
    if (outs) add_outliers(v, t0, t1, &a, M, xt, Y, ldy);
    return 0;
}
#endif
