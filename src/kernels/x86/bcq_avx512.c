/* AVX-512 (F, BW, VL, VNNI) kernel of the BCQ types (kernels/x86/bcq_x86.h;
 * layout and order of operations in formats/bcq.h). test_bcq checks it
 * against the reference at the avx512 and amx levels where the CPU has them.
 *
 * mu = 4 GEMV, per 16 rows (one _LUT x-block per group) and activation row.
 * A 64-byte load of a plane holds its bytes k = 0..3 of a Q8_0 block for the
 * 16 rows (lane k, row r at byte r), whose low nibbles index slice 2k and
 * high nibbles slice 2k+1; the four lanes' lookups must be summed per row.
 * Without VBMI two ways, chosen by q (measured, docs/bcq.md); with it a third:
 *
 * folded (q >= 2): as in the AVX2 kernel the tables are split once per call
 * into L = T & 31 (0..31) and H = T >> 5 (-16..15), so a row's 8 lookups in
 * a block add as bytes (L <= 248 unsigned, -128 <= H <= 120 signed), four
 * zmm per block (lanes = slices 0,2,4,6 or 1,3,5,7). Per plane and block
 * four vpshufb and two byte adds; the lanes of up to four planes are then
 * folded into one register
 * (lane = plane) by six lane shuffles, and two vpdpbusd per byte position t
 * of a dword (L as the unsigned operand, then H as the signed one against
 * 32) give the exact int32 sums L + 32 H of rows 4m + t of
 * every plane at once. p_t += d * sums per block (lane = plane, element m =
 * row 4m + t); at the end of a group a 4x4 transpose puts each plane's 16
 * rows in order.
 *
 * lanes (q = 1): the block's tables as stored, per plane four vpshufb,
 * unpacks to int16 and lane shuffles to sum the four slices' lanes, one zmm
 * of 16 rows per plane and block.
 *
 * perm (every q, CPUs with VBMI: the _avx512vbmi entries): the split tables
 * as folded, but each plane alone: one vpermb per byte vector puts a row's
 * four lanes in its dword and two vpdpbusd give the 16 rows' int32 sums in
 * row order.
 *
 * All three scale in the reference's order (p += d * sum per block; y += z * zs,
 * y += alpha_i * p_i per group; separate multiplies and adds): every output
 * is the reference's float, bit for bit. */
#include "kernels/x86/bcq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>

#include "core/common.h"
#include "kernels/cpu.h"
#include "kernels/x86/prefetch_x86.h"
#include "kernels/thread_scratch.h"

/* the reference's float steps, unfused */
#include "core/fp_strict.h"

#define LB_BCQ512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE LB_BCQ512 static inline __attribute__((always_inline))
#define LB_BCQ512V __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#define INLINE_VBMI LB_BCQ512V static inline __attribute__((always_inline))

/* The folded kernel splits the tables of up to M_TILE activation rows, 256
 * bytes a block, into the thread's scratch (or, where that fails, of one row
 * in chunks of CHUNK blocks on the stack); those rows share each x-block
 * while it is in L1. The x-block some groups on is prefetched, by where
 * lb_cpu_prefetch_l2 puts the lines: into L1 PF_L1 groups on (from memory,
 * one thread, Xeon: 17.6 Gweights/s without, 20.0 with 1 or 2 ahead, 18.0
 * with 3), into L2 (AMD) PF_L2 on (Zen 4, one thread, BCQ4_G128 from
 * memory, Gweights/s: 16-22 with L1 2 ahead, 19-20 with L1 8 ahead, 23-25
 * with L2 2 ahead, 32-33 with L2 8 ahead, 31-32 with 12 or 16;
 * docs/bcq.md). */
enum { CHUNK = 64, PF_L1 = 2, PF_L2 = 8, M_TILE = 4 };

INLINE __m512 load_h16(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }

INLINE __m512i load_2x256(const uint8_t *lo, const uint8_t *hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lo)),
                              _mm256_loadu_si256((const __m256i *)hi), 1);
}

/* The split tables of nb Q8_0_LUT4 blocks, 4 zmm per block: L and H of the
 * even slices (lane j: slice 2j), then of the odd ones (lb_lut4_pos: the
 * low / high bytes of slices 0, 2 sit at t, t + 32, those of 4, 6 at
 * t + 128, t + 160; the odd slices 64 bytes on). */
INLINE void split_tables(const block_q8_0_lut4 *a, int nb, __m512i *out) {
    const __m512i m31 = _mm512_set1_epi8(31), m7 = _mm512_set1_epi8(7), mF8 = _mm512_set1_epi8((char)0xF8);
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < 2; j++) {
            const uint8_t *t = a[b].t + 64 * j;
            const __m512i lo = load_2x256(t, t + 128), hi = load_2x256(t + 32, t + 160);
            /* T >> 5 = 8 hi + (lo >> 5), per byte */
            const __m512i h = _mm512_or_si512(_mm512_and_si512(_mm512_slli_epi16(hi, 3), mF8),
                                              _mm512_and_si512(_mm512_srli_epi16(lo, 5), m7));
            out[4 * b + 2 * j] = _mm512_and_si512(lo, m31);
            out[4 * b + 2 * j + 1] = h;
        }
}

/* One plane over one block: the byte sums of slices 2k, 2k+1 in lane k */
INLINE void plane_bytes(const uint8_t *pl, const __m512i *T, __m512i *L, __m512i *H) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i v = _mm512_loadu_si512((const void *)pl);
    const __m512i ie = _mm512_and_si512(v, m4), io = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    *L = _mm512_add_epi8(_mm512_shuffle_epi8(T[0], ie), _mm512_shuffle_epi8(T[2], io));
    *H = _mm512_add_epi8(_mm512_shuffle_epi8(T[1], ie), _mm512_shuffle_epi8(T[3], io));
}

/* [a: k0+k2, k1+k3 | b: k0+k2, k1+k3] */
INLINE __m512i fold2(__m512i a, __m512i b) {
    return _mm512_add_epi8(_mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}
/* two fold2 results -> lane i = all four lanes of plane i */
INLINE __m512i fold4(__m512i s01, __m512i s23) {
    return _mm512_add_epi8(_mm512_shuffle_i64x2(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_i64x2(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* planes' lane sums (Q >= 2) -> one register, lane i = plane i (Q = 2: repeated) */
INLINE __m512i fold_planes(const int Q, const __m512i *x) {
    const __m512i s01 = fold2(x[0], x[1]);
    const __m512i s23 = Q > 2 ? fold2(x[2], Q > 3 ? x[3] : _mm512_setzero_si512()) : s01;
    return fold4(s01, s23);
}

/* p_t[lane i][m] = plane i, row 4m + t  ->  P[i] = plane i's rows in order
 * (Q >= 2) */
INLINE void rows_in_order(const int Q, const __m512 *p, __m512 *P) {
    const __m512 t0 = _mm512_unpacklo_ps(p[0], p[1]), t1 = _mm512_unpackhi_ps(p[0], p[1]);
    const __m512 t2 = _mm512_unpacklo_ps(p[2], p[3]), t3 = _mm512_unpackhi_ps(p[2], p[3]);
    /* r_m[lane i] = plane i, rows 4m .. 4m+3 */
    const __m512 r0 = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 r1 = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 r2 = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 r3 = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 u0 = _mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 u2 = _mm512_shuffle_f32x4(r2, r3, _MM_SHUFFLE(1, 0, 1, 0));
    P[0] = _mm512_shuffle_f32x4(u0, u2, _MM_SHUFFLE(2, 0, 2, 0));
    P[1] = _mm512_shuffle_f32x4(u0, u2, _MM_SHUFFLE(3, 1, 3, 1));
    if (Q > 2) {
        const __m512 u1 = _mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(3, 2, 3, 2));
        const __m512 u3 = _mm512_shuffle_f32x4(r2, r3, _MM_SHUFFLE(3, 2, 3, 2));
        P[2] = _mm512_shuffle_f32x4(u1, u3, _MM_SHUFFLE(2, 0, 2, 0));
        if (Q > 3) P[3] = _mm512_shuffle_f32x4(u1, u3, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* activation row m's blocks from b0 on */
INLINE const block_q8_0_lut4 *act_row(const void *A, size_t a_row_size, int m, int b0) {
    return (const block_q8_0_lut4 *)((const char *)A + (size_t)m * a_row_size) + b0;
}

/* P[i] = plane i's sums over the group of NC blocks at xb, rows in order:
 * the lanes of all planes folded into one register per block, their byte
 * sums taken out by vpdpbusd per byte position t (p_t[lane i][m] = plane
 * i, row 4m + t), transposed at the end of the group. */
INLINE void group_sums_fold(const int Q, const int G, const uint8_t *xb, const __m512i *tab, const block_q8_0_lut4 *a,
                            __m512 *P) {
    const size_t plane = (size_t)(G / 8) * LB_BCQ_ROWS;
    __m512 p[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
#pragma GCC unroll 4
    for (int c = 0; c < G / 32; c++) {
        __m512i L[LB_BCQ_MAX_Q], H[LB_BCQ_MAX_Q];
#pragma GCC unroll 4
        for (int i = 0; i < Q; i++) plane_bytes(xb + 32 * (Q + 1) + (size_t)i * plane + 64 * c, tab + 4 * c, &L[i], &H[i]);
        const __m512i FL = fold_planes(Q, L), FH = fold_planes(Q, H);
        const __m512 d = _mm512_set1_ps(a[c].d);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            /* byte t of each dword: L (unsigned) + 32 H (signed) = the exact sum */
            __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), FL, _mm512_set1_epi32(1 << (8 * t)));
            s = _mm512_dpbusd_epi32(s, _mm512_set1_epi32(32 << (8 * t)), FH);
            p[t] = _mm512_add_ps(p[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(s)));
        }
    }
    rows_in_order(Q, p, P);
}

/* The same sums with VBMI, plane by plane: one vpermb gathers each row's
 * four lanes into its dword (byte 4r + k <- lane k, row r), so vpdpbusd
 * sums them into row r's int32 directly (L against ones, then 32 against
 * H): no folding of planes, no per-byte extraction, no transpose, and no
 * lane idle for q < 4 (bench/kernels from L2 on a Zen 4 VM: 1.2-1.6x the
 * folded and lanes kernels; docs/bcq.md). */
INLINE_VBMI void group_sums_perm(const int Q, const int G, const uint8_t *xb, const __m512i *tab,
                                 const block_q8_0_lut4 *a, __m512 *P) {
    const size_t plane = (size_t)(G / 8) * LB_BCQ_ROWS;
    const __m512i rows = _mm512_set_epi8(63, 47, 31, 15, 62, 46, 30, 14, 61, 45, 29, 13, 60, 44, 28, 12, 59, 43, 27,
                                         11, 58, 42, 26, 10, 57, 41, 25, 9, 56, 40, 24, 8, 55, 39, 23, 7, 54, 38, 22, 6,
                                         53, 37, 21, 5, 52, 36, 20, 4, 51, 35, 19, 3, 50, 34, 18, 2, 49, 33, 17, 1, 48,
                                         32, 16, 0);
    const __m512i ones = _mm512_set1_epi8(1), c32 = _mm512_set1_epi8(32);
#pragma GCC unroll 4
    for (int i = 0; i < Q; i++) P[i] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int c = 0; c < G / 32; c++) {
        const __m512 d = _mm512_set1_ps(a[c].d);
#pragma GCC unroll 4
        for (int i = 0; i < Q; i++) {
            __m512i L, H;
            plane_bytes(xb + 32 * (Q + 1) + (size_t)i * plane + 64 * c, tab + 4 * c, &L, &H);
            __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_permutexvar_epi8(rows, L), ones);
            s = _mm512_dpbusd_epi32(s, c32, _mm512_permutexvar_epi8(rows, H));
            P[i] = _mm512_add_ps(P[i], _mm512_mul_ps(d, _mm512_cvtepi32_ps(s)));
        }
    }
}

/* The driver once per way of taking the sums (kernels/x86/bcq_avx512_tmpl.h) */
#define ATTR_INLINE INLINE
#define SFX(name) name##_fold
#include "kernels/x86/bcq_avx512_tmpl.h"
#undef SFX
#undef ATTR_INLINE
#define ATTR_INLINE INLINE_VBMI
#define SFX(name) name##_perm
#include "kernels/x86/bcq_avx512_tmpl.h"
#undef SFX
#undef ATTR_INLINE

/* ---- q = 1: lanes = slices, widened and summed per plane ---- */

/* The tables of one Q8_0_LUT4 block, lane j of: le / he the low / high
 * bytes of slice 2j, lo / ho those of slice 2j+1 (lb_lut4_pos). */
typedef struct {
    __m512i le, he, lo, ho;
} bcq_tables4;

INLINE bcq_tables4 load_tables4(const block_q8_0_lut4 *a) {
    const uint8_t *t = a->t;
    return (bcq_tables4){load_2x256(t, t + 128), load_2x256(t + 32, t + 160), load_2x256(t + 64, t + 192),
                         load_2x256(t + 96, t + 224)};
}

/* One plane over one Q8_0 block for 16 rows: the exact integer sums as
 * floats, row r in element r. pl: plane bytes 4c .. 4c+3 of the 16 rows. */
INLINE __m512 plane_block_lanes(const uint8_t *pl, const bcq_tables4 *T) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i v = _mm512_loadu_si512((const void *)pl);
    const __m512i ie = _mm512_and_si512(v, m4), io = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    const __m512i le = _mm512_shuffle_epi8(T->le, ie), he = _mm512_shuffle_epi8(T->he, ie);
    const __m512i lo = _mm512_shuffle_epi8(T->lo, io), ho = _mm512_shuffle_epi8(T->ho, io);
    /* int16, lane j: rows 0-7 (a) and 8-15 (b), slices 2j and 2j+1 */
    const __m512i a = _mm512_add_epi16(_mm512_unpacklo_epi8(le, he), _mm512_unpacklo_epi8(lo, ho));
    const __m512i b = _mm512_add_epi16(_mm512_unpackhi_epi8(le, he), _mm512_unpackhi_epi8(lo, ho));
    /* [a0 + a2 | a1 + a3 | b0 + b2 | b1 + b3], then lanes 0 + 1 and 2 + 3 */
    const __m512i t = _mm512_add_epi16(_mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                       _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512i u = _mm512_add_epi16(t, _mm512_shuffle_i64x2(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m256i rows = _mm512_castsi512_si256(_mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(2, 0, 2, 0)));
    return _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(rows));
}

INLINE void gemv_lut4_lanes(const int Q, const int G, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                            const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const size_t xs = LB_BCQ_XSIZE(Q, G), plane = (size_t)(G / 8) * LB_BCQ_ROWS;
    const int NC = G / 32;
    for (int n = n0; n < n1; n += LB_BCQ_ROWS) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)n * w_row_size;
        for (int m = 0; m < M; m++) {
            const block_q8_0_lut4 *a = (const block_q8_0_lut4 *)((const char *)A + (size_t)m * a_row_size);
            __m512 y = _mm512_setzero_ps();
            const uint8_t *xb = xg;
            for (int64_t gi = 0; gi < K / G; gi++, xb += xs, a += NC) {
                float zs = 0.0f;
                for (int c = 0; c < NC; c++) zs += a[c].ds;
                y = _mm512_add_ps(y, _mm512_mul_ps(load_h16(xb + 32 * Q), _mm512_set1_ps(zs)));
                /* the planes' sums, each over the blocks in order as in the reference */
                __m512 p[LB_BCQ_MAX_Q];
                for (int i = 0; i < Q; i++) p[i] = _mm512_setzero_ps();
                for (int c = 0; c < NC; c++) {
                    const bcq_tables4 T = load_tables4(&a[c]);
                    const __m512 d = _mm512_set1_ps(a[c].d);
                    for (int i = 0; i < Q; i++) {
                        const uint8_t *pl = xb + 32 * (Q + 1) + (size_t)i * plane + 64 * c;
                        p[i] = _mm512_add_ps(p[i], _mm512_mul_ps(d, plane_block_lanes(pl, &T)));
                    }
                }
                for (int i = 0; i < Q; i++) y = _mm512_add_ps(y, _mm512_mul_ps(load_h16(xb + 32 * i), p[i]));
            }
            _mm512_storeu_ps(Y + (size_t)m * ldy + n, y);
        }
    }
}

/* q >= 2: the folded kernel; q = 1 keeps the lanes kernel, whose per-plane
 * widening costs less than the folded one's per-block extraction and
 * transpose when one plane alone bears them (docs/bcq.md). With VBMI the
 * per-plane vpermb way for every q. */
INLINE void gemv_lut4(const int Q, const int G, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                      const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    /* prefill: the planes as +-1 bytes for vpdpbusd (bcq_gemm_avx512.c) */
    if (M >= LB_BCQ_GEMM_MIN_M(Q) && lb_bcq_gemm_vnni_avx512(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy) == 0)
        return;
    if (Q >= 2)
        gemv_lut4_fold(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);
    else
        gemv_lut4_lanes(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);
}

/* With VBMI the lookup runs every M (gemv_lut4_perm, no hand-off): on a
 * Zen 4 VM it beat the VNNI GEMM at every M from 4 to 512 and q
 * (bench/kernels 2048 x 5632, one thread: q = 4 85-88 against 63-74 GOPS,
 * q = 2 154-160 against 116-154; pp512 of BCQ4 1.16x, BCQ2 0.97-1.03x;
 * docs/bcq.md). Not measured on Intel. */
#define BCQ_AVX512_DEFINE(name, NAME, Q, G)                                                                    \
    LB_BCQ512 void lb_gemv_##name##_lut_q8_0_lut4_1x16_avx512(int64_t K, const void *W, size_t w_row_size,    \
                                                              int n0, int n1, const void *A, size_t a_row_size, \
                                                              int M, float *Y, size_t ldy) {                   \
        gemv_lut4(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                                    \
    }                                                                                                          \
    LB_BCQ512V void lb_gemv_##name##_lut_q8_0_lut4_1x16_avx512vbmi(int64_t K, const void *W, size_t w_row_size, \
                                                                   int n0, int n1, const void *A,              \
                                                                   size_t a_row_size, int M, float *Y,         \
                                                                   size_t ldy) {                               \
        gemv_lut4_perm(Q, G, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                               \
    }
LB_BCQ_LIST(BCQ_AVX512_DEFINE)
#undef BCQ_AVX512_DEFINE
#endif
