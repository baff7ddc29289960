/* AVX-512 VNNI GEMV / GEMM on the interleaved layouts of formats/repack.h
 * (Q4_0, IQ4_NL, Q8_0 in 4x4, 4x8, 8x8) against Q8_0 activations.
 *
 * One register = 16 output rows. Whatever the layout, 16 consecutive rows
 * (two 8-row groups or four 4-row groups) of one block are gathered with
 * vpermt2d into 8 vectors "kk = 0..7", vector kk holding weights 4kk..4kk+3
 * of rows 0..15 (one dword per row). A vpdpbusd against activation bytes
 * 4kk..4kk+3 broadcast to every lane then adds 4 products into each row's
 * own lane: no horizontal sum anywhere, and each block needs 8 VNNI per 16
 * rows before its one float scaling (cvt + mul + fma), the best ratio a
 * 32-weight block allows. The x86 layouts of seed 000 (8x8 above all) are
 * consumed as stored; the gather costs one or three shuffles per vector.
 *
 * vpdpbusd multiplies unsigned by signed bytes, so weights are made
 * unsigned and the offset comes off with the activation block sums:
 *   Q4_0:  q = nibble ^ 8 (0..15, one vpternlogd: the layout's toggled top
 *          bit is the two's complement nibble), w = q - 8: subtract 8*sum(a);
 *   IQ4_NL: codebook + 128 by vpshufb (register table lookup), subtract
 *          128*sum(a);  Q8_0: w ^ 0x80 = w + 128, subtract 128*sum(a).
 * The subtraction is free: each block's int32 accumulator starts at
 * -off*sum(a) (a broadcast load) instead of zero. All integer sums are
 * exact; floats differ from the reference only in rounding of the scaling.
 *
 * GEMV (decode, M < 4 plain Q8_0 rows; repack_gemv_avx512.c, its own
 * translation unit so a build compiles the two halves in parallel: clang
 * with ASan + UBSan takes minutes on each): decode in registers, stream the
 * weights once with software prefetch: bandwidth bound.
 * GEMM (prefill): the weights of 48 rows x 16 blocks are decoded once into
 * an L1-resident buffer, then every 4-row activation group runs over it (4
 * rows x 3 vectors = 12 accumulator chains, enough to hide the VNNI
 * latency): the decode is paid once per 48x512 weights and M rows, not per
 * tile (ik_llama.cpp's prompt-batch idea, here without leaving L1).
 * Activations come as lb_block_q8_0x4v (4 rows, per-row bytes, both bias
 * sums). Measured on one core: ~540 GOPS in the tile loop, ~66% of the
 * 822 GOPS vpdpbusd peak (the block's cvt/mul/fma cap it at 73%). */
#include "kernels/x86/repack_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/repack_avx512_impl.h"

LB_AVX512 void lb_quantize_q8_0x4v_avx512(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_0x4v *y = vy;
    for (int64_t b = 0; b < k / 32; b++)
        for (int m = 0; m < 4; m++) {
            int32_t s;
            quantize_block32(x + m * ldx + b * 32, y[b].qs[m], &y[b].d[m], &s);
            y[b].b8[m] = -8 * s;
            y[b].b128[m] = -128 * s;
        }
}

/* ---- GEMM: decode 48 rows x GEMM_KC blocks once, then every row group ---- */

enum { GEMM_KC = 16, GEMM_NV = 3 };

typedef struct {
    __m512i w[GEMM_KC][GEMM_NV][8]; /* [block][16-row third][kk] unsigned weights */
    __m512 d[GEMM_KC][GEMM_NV];     /* their scales */
} gemm_buf;

/* A broadcast load the compiler may not merge with an identical one: each
 * accumulator starts from its own load (a load-port uop) instead of a
 * register copy (an ALU uop, where the VNNI run). */
INLINE __m512i bcast_load(const int32_t *p) {
    __m512i r;
    __asm__("vpbroadcastd %1, %0" : "=v"(r) : "m"(*p));
    return r;
}

/* Y rows [m0, m0 + 4) (one activation group) x 16*NV columns at n: += or =
 * the kc blocks of buf. 4 rows x 3 vectors = 12 accumulator chains, enough
 * to cover the VNNI latency at two per cycle. */
INLINE void gemm_tile(int wt, int NV, const gemm_buf *buf, int64_t kc, const lb_block_q8_0x4v *ab, float *Y,
                      size_t ldy, int n, int n1, int add) {
    __m512 acc[GEMM_NV][4];
#pragma GCC unroll 3
    for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) acc[v][m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kc; b++) {
        const lb_block_q8_0x4v *a = ab + b;
        __m512i s[GEMM_NV][4];
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) s[v][m] = bcast_load(wt == WQ4 ? &a->b8[m] : &a->b128[m]);
#pragma GCC unroll 8
        for (int kk = 0; kk < 8; kk++) {
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                int32_t a4;
                memcpy(&a4, a->qs[m] + 4 * kk, 4);
                const __m512i av = _mm512_set1_epi32(a4);
#pragma GCC unroll 3
                for (int v = 0; v < NV; v++) s[v][m] = _mm512_dpbusd_epi32(s[v][m], buf->w[b][v][kk], av);
            }
        }
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++)
                acc[v][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[v][m]),
                                            _mm512_mul_ps(buf->d[b][v], _mm512_set1_ps(a->d[m])), acc[v][m]);
    }
#pragma GCC unroll 3
    for (int v = 0; v < NV; v++) {
        const __mmask16 k = row_mask(n + 16 * v, n1);
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            float *p = Y + (size_t)m * ldy + n + 16 * v;
            __m512 o = acc[v][m];
            if (add) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(k, p));
            _mm512_mask_storeu_ps(p, k, o);
        }
    }
}

INLINE void gemm(int wt, int R, int C, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                 size_t a_row_size, int M, float *Y, size_t ldy) {
    geom G;
    geom_init(&G, R, C, wt == WQ8 ? 32 : 16, w_row_size);
    __m512i idx[8];
    for (int t = 0; t < G.ntgt; t++) idx[t] = _mm512_loadu_si512(G.idx[t]);
    const int64_t nb = K / 32;
    gemm_buf bufs __attribute__((aligned(64)));
    gemm_buf *buf = &bufs;
    for (int n = n0; n < n1; n += 16 * GEMM_NV) {
        rows16 r[GEMM_NV];
        int nv = 0;
        for (; nv < GEMM_NV && n + 16 * nv < n1; nv++) r[nv] = rows_at(&G, W, n + 16 * nv, n1);
        for (int64_t b0 = 0; b0 < nb; b0 += GEMM_KC) {
            const int64_t kc = LB_MIN((int64_t)GEMM_KC, nb - b0);
            for (int64_t b = 0; b < kc; b++)
                for (int v = 0; v < nv; v++) {
                    decode16(wt, 0, &G, idx, &r[v], b0 + b, buf->w[b][v]);
                    buf->d[b][v] = scales16(&G, &r[v], b0 + b);
                }
            /* M is a multiple of 4: whole activation groups */
            for (int m = 0; m < M; m += 4) {
                const lb_block_q8_0x4v *ab = (const lb_block_q8_0x4v *)((const char *)A + (size_t)(m / 4) * a_row_size) + b0;
                float *y = Y + (size_t)m * ldy;
                if (nv == 3) gemm_tile(wt, 3, buf, kc, ab, y, ldy, n, n1, b0 > 0);
                else if (nv == 2) gemm_tile(wt, 2, buf, kc, ab, y, ldy, n, n1, b0 > 0);
                else gemm_tile(wt, 1, buf, kc, ab, y, ldy, n, n1, b0 > 0);
            }
        }
    }
}

/* GEMVs: repack_gemv_avx512.c */
#define KERNELS(w, R, C, WT)                                                                                \
    LB_AVX512 void lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_avx512vnni(int64_t K, const void *W, size_t wrs,  \
                                                                     int n0, int n1, const void *A,         \
                                                                     size_t ars, int M, float *Y,           \
                                                                     size_t ldy) {                          \
        gemm(WT, R, C, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                               \
    }
LB_REPACK_LAYOUTS(KERNELS)
#endif
