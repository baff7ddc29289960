/* AVX-512 VNNI kernels of MX (kernels/x86/mx_x86.h; tiles and view in
 * formats/mx.h). The tiles' codes are "lanes = rows" for exactly this: a
 * 64-byte half of a 2-bit tile is one zmm, dword r of it row r's 16 codes,
 * so each code plane against one activation dword broadcast to every lane
 * is one vpdpbusd adding into each row's own lane.
 *
 * 2-bit tile, per half h (16 rows x 16 columns): the planes are taken as
 * twice the codes ((v >> (2t - 1)) & 6), and the chain starts at
 * -(z1 code + 1) * S_h (S_h the half's activation sum, the multiple picked
 * by vpermd from {S, 2S, 3S, 4S}): after 4 vpdpbusd it holds
 * sum (2q - 2 z1) a exactly, which vpmulld scales by the row's 4-bit code
 * plus z2, then one float step by s2 and the activation's d.
 * 4-bit tile: the chain starts at -z S (S the block's sum), 8 vpdpbusd over
 * the low and high nibbles, then s d in float.
 * Decode (M < 4): 1 or 2 activation rows share each tile's planes; prefill
 * (M >= 4) is the GEMM of mx_gemm_avx512.c. Outliers as the other kernels
 * (mx_x86_impl.h).
 *
 * Decode is compute-bound at about 21 GB/s of tiles per thread from L2 on
 * an SPR-class Xeon, a little above one thread's share of the read
 * bandwidth; a variant taking the per-row fields by vpmultishiftqb (VBMI)
 * and planes off port 0 made that 1.05x and left tg unchanged, so it was
 * not kept (docs/mixed.md). */
#include "kernels/x86/mx_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "core/common.h"
#include "kernels/cpu.h"
#include "kernels/x86/mx_x86_impl.h"
#include "kernels/x86/prefetch_x86.h"

/* Software prefetch of the 2-bit and the 4-bit tile streams, this many
 * bytes ahead in each, one tile's lines per tile, as the AVX2 kernel does
 * (0: off). On the Xeon SPR-class VM (bench/kernels --cpu --no-gemm --shape
 * 5632x2048 --types MX, one thread, GB/s, two rounds; swept on the VBMI
 * variant below, which streams as fast as this kernel): 0: 8.2 / 8.6,
 * 1 KiB: 10.7 / 10.6, 2 KiB: 11.2 / 11.6, 3 KiB: 11.2 / 11.6, 4 KiB:
 * 10.9 / 11.3, 6 KiB: 10.7 / 10.9. Into L2 (lb_cpu_prefetch_l2: AMD) the
 * stream wants more: on Zen 4 (5632x2048, GB/s on 1 / 2 threads, two rounds)
 * 3 KiB 16.3-16.8 / 29.6-30.0, 6 KiB 22.2-22.4 / 31.4-34.4, 12 KiB
 * 19.7-21.9 / 34.4-38.9. */
#ifndef LB_MX512_PF_BYTES
#define LB_MX512_PF_BYTES 3072
#endif
#ifndef LB_MX512_PF_BYTES_L2
#define LB_MX512_PF_BYTES_L2 6144
#endif

/* gfni: the code planes by one vgf2p8affineqb each instead of a shift and a
 * mask (CPUs with GFNI: Ice Lake and later, Zen 4 and later) */
#define LB_MX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,gfni,avx2,fma,f16c")))
#define INLINE LB_MX512 static inline __attribute__((always_inline))

INLINE __m512i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* a decoded 2-bit tile: per half, twice the codes of each plane, z' = 2 z1
 * = zero code + 1 (1..4) and k = c + z2 (0..30) of every row, each in the
 * low int16 of its dword (so one vpmaddwd multiplies by it exactly) */
typedef struct {
    __m512i q2[2][4];
    __m512i z[2];
    __m512i k[2];
    float s2[2];
} lo_dec;

typedef struct {
    __m512i q[8]; /* nibble planes: columns 4p .. 4p + 3 of the 16 rows */
    __m512i z;
    __m512 s;
} hi_dec;

/* twice the 2-bit code at bits 2t of each byte: bits 1..2 of the output
 * byte are input bits 2t..2t+1 (output bit i = parity(matrix byte 7 - i &
 * input byte)) */
INLINE __m512i plane2(__m512i x, int t, int gf) {
    if (gf) {
        const uint64_t A = ((uint64_t)(1u << (2 * t)) << 48) | ((uint64_t)(1u << (2 * t + 1)) << 40);
        return _mm512_gf2p8affine_epi64_epi8(x, _mm512_set1_epi64((long long)A), 0);
    }
    const __m512i m6 = _mm512_set1_epi8(6);
    return _mm512_and_si512(t == 0 ? _mm512_add_epi8(x, x) : _mm512_srli_epi16(x, 2 * t - 1), m6);
}

INLINE void lo_decode(const block_mx2 *b, lo_dec *D, int gf) {
    const __m512i zsh = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m512i x = _mm512_loadu_si512(b->qs + 64 * h);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) D->q2[h][t] = plane2(x, t, gf);
        D->z[h] = _mm512_add_epi32(_mm512_and_si512(_mm512_srlv_epi32(bcast32(b->z1 + 4 * h), zsh), _mm512_set1_epi32(3)),
                                   _mm512_set1_epi32(1));
        D->k[h] = _mm512_add_epi32(lb_mx_nibbles16(b->s1 + 8 * h), _mm512_set1_epi32((b->z2 >> (4 * h)) & 15));
        uint16_t s2;
        memcpy(&s2, b->s2 + 2 * h, 2);
        D->s2[h] = _cvtsh_ss(s2);
    }
}

INLINE void hi_decode(const block_mx4 *b, hi_dec *D) {
    const __m512i m15 = _mm512_set1_epi8(15);
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
        const __m512i x = _mm512_loadu_si512(b->qs + 64 * v);
        D->q[2 * v] = _mm512_and_si512(x, m15);
        D->q[2 * v + 1] = _mm512_and_si512(_mm512_srli_epi16(x, 4), m15);
    }
    D->z = lb_mx_nibbles16(b->z);
    D->s = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b->s));
}

/* -v as an int16 in the low half of every dword: vpmaddwd by it gives x * -v
 * for any x that is an int16 in its dword's low half (the high half 0) */
INLINE __m512i neg16(int32_t v) { return _mm512_set1_epi32((int32_t)((uint32_t)-v & 0xffffu)); }

/* acc (16 rows) += the decoded 2-bit tile against one activation block.
 * Every operand of vpmaddwd fits an int16: z' <= 4, |S_h| <= 16 * 127,
 * k <= 30, |sum (2q - z') a| <= 16 * 5 * 127. */
INLINE __m512 lo_apply(const lo_dec *D, const int8_t *qs, const lb_mx_act *as, __m512 acc) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m512i c = _mm512_madd_epi16(D->z[h], neg16(as->s[h])); /* the chain starts at -z' S_h */
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) c = _mm512_dpbusd_epi32(c, D->q2[h][t], bcast32(qs + 16 * h + 4 * t));
        /* sum (2q - 2 z1) a times c + z2, times s2 and the activation's d
         * (as->d is half the block's d: the doubled sum) */
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(c, D->k[h])), _mm512_set1_ps(D->s2[h] * as->d), acc);
    }
    return acc;
}

/* z <= 15, |S| <= 32 * 127: -z S by one vpmaddwd as above */
INLINE __m512 hi_apply(const hi_dec *D, const int8_t *qs, const lb_mx_act *as, __m512 acc) {
    __m512i c = _mm512_madd_epi16(D->z, neg16(as->s01));
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) c = _mm512_dpbusd_epi32(c, D->q[i], bcast32(qs + 4 * i));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), _mm512_mul_ps(D->s, _mm512_set1_ps(2.0f * as->d)), acc);
}

/* Tile rows [t0, t1) x M <= 2 activation rows (a: row m's blocks at A + m *
 * a_row_size, sides[m * G ..]): each tile decoded once for both rows */
INLINE void rows_pass(const lb_mx_view *v, int64_t t0, int64_t t1, const uint8_t *A, size_t a_row_size,
                               int M, const lb_mx_act *sides, const float *xf, float *Y, size_t ldy, int gf) {
    const int64_t G = v->K / LB_MX_M;
    __m512 acc[2];
    lo_dec dl;
    hi_dec dh;
    const int l2 = lb_cpu_prefetch_l2();
    const size_t pf = l2 ? LB_MX512_PF_BYTES_L2 : LB_MX512_PF_BYTES;
    for (int64_t t = t0; t < t1; t++) {
        for (int m = 0; m < M; m++) acc[m] = _mm512_setzero_ps();
        const block_mx2 *lo = v->lo + t * v->n_lo;
        for (int64_t l = 0; l < v->n_lo; l++) {
            if (pf) lb_prefetch_span((const char *)&lo[l] + pf, sizeof *lo, l2);
            lo_decode(&lo[l], &dl, gf);
            const int64_t g = v->lo_group[l];
            for (int m = 0; m < M; m++)
                acc[m] = lo_apply(&dl, ((const block_q8_0 *)(A + (size_t)m * a_row_size))[g].qs, &sides[m * G + g], acc[m]);
        }
        const block_mx4 *hi = v->hi + t * v->n_hi;
        for (int64_t l = 0; l < v->n_hi; l++) {
            if (pf) lb_prefetch_span((const char *)&hi[l] + pf, sizeof *hi, l2);
            hi_decode(&hi[l], &dh);
            const int64_t g = v->hi_group[l];
            for (int m = 0; m < M; m++)
                acc[m] = hi_apply(&dh, ((const block_q8_0 *)(A + (size_t)m * a_row_size))[g].qs, &sides[m * G + g], acc[m]);
        }
        for (int m = 0; m < M; m++) {
            float yr[16];
            _mm512_storeu_ps(yr, acc[m]);
            if (xf && v->row_ptr) lb_mx_add_outliers_x(v, t, xf + (size_t)m * (size_t)v->K, yr);
            else lb_mx_add_outliers(v, t, (const block_q8_0 *)(A + (size_t)m * a_row_size), sides + m * G, yr);
            memcpy(Y + (size_t)m * ldy + 16 * t, yr, sizeof yr);
        }
    }
}

/* the pass specialised for 1 and 2 rows (decode), so the accumulators and
 * the decoded planes stay in registers; with and without GFNI */
#define MX512_PASSES(SFX, GF)                                                                                   \
    LB_MX512 static void rows_pass1##SFX(const lb_mx_view *v, int64_t t0, int64_t t1, const uint8_t *A,        \
                                         size_t ars, const lb_mx_act *sides, const float *xf, float *Y,        \
                                         size_t ldy) {                                                         \
        rows_pass(v, t0, t1, A, ars, 1, sides, xf, Y, ldy, GF);                                                \
    }                                                                                                          \
    LB_MX512 static void rows_pass2##SFX(const lb_mx_view *v, int64_t t0, int64_t t1, const uint8_t *A,        \
                                         size_t ars, const lb_mx_act *sides, const float *xf, float *Y,        \
                                         size_t ldy) {                                                         \
        rows_pass(v, t0, t1, A, ars, 2, sides, xf, Y, ldy, GF);                                                \
    }
MX512_PASSES(, 0)
MX512_PASSES(_gf, 1)

typedef void (*pass_fn)(const lb_mx_view *, int64_t, int64_t, const uint8_t *, size_t, const lb_mx_act *,
                        const float *, float *, size_t);

/* Prefill (M >= 4) goes to the GEMM (mx_gemm_avx512.c); decode, or a GEMM
 * without memory for its scratch, runs here 2 rows at a time */
static void gemv(pass_fn p1, pass_fn p2, int64_t K, const void *W, int n0, int n1, const void *A, size_t a_row_size,
                 int M, float *Y, size_t ldy) {
    const lb_mx_view *v = W;
    if (M >= 4 && lb_mx_gemm_avx512(v, n0 / 16, n1 / 16, A, a_row_size, M, Y, ldy) == 0) return;
    const int64_t G = K / LB_MX_M; /* <= 2048: a view's K is at most 65536 */
    lb_mx_act sides[2 * 2048];
    /* with outliers: the activations as floats for them (mx_x86_impl.h) */
    float *xf = v->row_ptr ? lb_malloc_aligned((size_t)(2 * K) * sizeof *xf) : NULL;
    for (int m0 = 0; m0 < M; m0 += 2) {
        const int mb = LB_MIN(2, M - m0);
        const uint8_t *a = (const uint8_t *)A + (size_t)m0 * a_row_size;
        for (int m = 0; m < mb; m++) {
            lb_mx_act_sides_avx2((const block_q8_0 *)(a + (size_t)m * a_row_size), G, sides + m * G);
            if (xf) lb_mx_act_floats_avx2((const block_q8_0 *)(a + (size_t)m * a_row_size), sides + m * G, G, xf + (size_t)m * K);
        }
        (mb == 1 ? p1 : p2)(v, n0 / 16, n1 / 16, a, a_row_size, sides, xf, Y + (size_t)m0 * ldy, ldy);
    }
    lb_free_aligned(xf);
}

void lb_gemv_mx_q8_0_avx512(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                            size_t a_row_size, int M, float *Y, size_t ldy) {
    (void)w_row_size;
    gemv(rows_pass1, rows_pass2, K, W, n0, n1, A, a_row_size, M, Y, ldy);
}

void lb_gemv_mx_q8_0_avx512gfni(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                                size_t a_row_size, int M, float *Y, size_t ldy) {
    (void)w_row_size;
    gemv(rows_pass1_gf, rows_pass2_gf, K, W, n0, n1, A, a_row_size, M, Y, ldy);
}
#endif
