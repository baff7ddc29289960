/* AMX-INT8 GEMM (prefill) on the interleaved layouts of formats/repack.h
 * (Q4_0, IQ4_NL, Q8_0 in 4x4, 4x8, 8x8) against Q8_0 activations.
 *
 * One tdpbssd multiplies a 16x32 activation tile (16 rows, one block) by a
 * 32x16 weight tile into 16x16 int32: 8192 multiply-adds where vpdpbusd
 * does 64, at the cost of one block per instruction (the scales change
 * every 32 weights, so each block's products need their own float scaling).
 *
 * Weights: 16 rows x AMX_KC blocks are gathered and decoded to signed bytes
 * once (repack_avx512_impl.h): the decode of one block, 8 vectors "kk" with
 * weights 4kk..4kk+3 of rows 0..15, is exactly the B tile's VNNI layout (row
 * kk = 16 columns x 4 bytes), so it is stored as is. Signed weights times
 * signed activations (tdpbssd) need no bias term.
 * Activations: lb_block_q8_0x16 groups (16 rows of a block contiguous: the
 * A tile, row stride 32) with float scales, written by the driver's fused
 * quantizer.
 * Per block the int32 tile goes through memory to AVX-512: per row
 * cvt + mul (column scales x row scale) + fma into 16 register accumulators
 * that live across all K, so Y is touched once per 16x16 tile and K chunk.
 * Two tile sets alternate between even and odd blocks so the tile unit and
 * the float work overlap. Rows beyond a multiple of 16 go to the AVX-512
 * VNNI GEMV (the entry's gemv). */
#include "kernels/x86/repack_amx.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/repack_avx512_impl.h"
#include "kernels/x86/amx_config.h"

#define LB_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE_AMX LB_AMX static inline __attribute__((always_inline))

enum { AMX_KC = 64 }; /* blocks decoded per pass: 32 KiB of weight tiles */

typedef struct {
    __m512i w[AMX_KC][8]; /* B tiles: [block][kk] = 16 columns x 4 bytes */
    __m512 d[AMX_KC];     /* the 16 rows' scales per block */
} amx_wbuf;

/* Tiles 0/1: C (16 x 16 int32), 2/3: A (16 rows x 32 bytes), 4/5: B (8 x 64).
 * A constant in memory: GCC 12 drops stores to a local configuration it
 * only sees passed to ldtilecfg. */
static const lb_amx_config amx_cfg __attribute__((aligned(64))) = {
    .palette_id = 1,
    .colsb = {64, 64, 32, 32, 64, 64},
    .rows = {16, 16, 16, 16, 8, 8},
};

LB_AMX static void amx_configure(void) { _tile_loadconfig(&amx_cfg); }

/* acc[r] += C[r] * (dw * da[r]) for the 16 rows of one block's product. */
INLINE void amx_scale_add(const int32_t (*c)[16], __m512 dw, const float *da, __m512 acc[16]) {
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++)
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[r])), _mm512_mul_ps(dw, _mm512_set1_ps(da[r])),
                                 acc[r]);
}

/* Y rows [0, 16) x columns [n, n + 16) (masked) over the kc blocks in buf. */
INLINE_AMX void amx_tile(const amx_wbuf *buf, int64_t kc, const lb_block_q8_0x16 *ab, float *y, size_t ldy,
                         __mmask16 mask, int add) {
    /* two buffer pairs: the tile unit stores pair p while the vector units
     * scale pair p - 1 (software pipelining: neither waits on the other's
     * memory) */
    int32_t c[4][16][16] __attribute__((aligned(64)));
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) acc[r] = add ? _mm512_maskz_loadu_ps(mask, y + (size_t)r * ldy) : _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= kc; b += 2) {
        const int s = (int)(b / 2) & 1;
        _tile_zero(0);
        _tile_zero(1);
        _tile_loadd(2, ab[b].qs, 32);
        _tile_loadd(4, buf->w[b], 64);
        _tile_loadd(3, ab[b + 1].qs, 32);
        _tile_loadd(5, buf->w[b + 1], 64);
        _tile_dpbssd(0, 2, 4);
        _tile_dpbssd(1, 3, 5);
        _tile_stored(0, c[2 * s], 64);
        _tile_stored(1, c[2 * s + 1], 64);
        if (b >= 2) {
            amx_scale_add(c[2 * (s ^ 1)], buf->d[b - 2], ab[b - 2].d, acc);
            amx_scale_add(c[2 * (s ^ 1) + 1], buf->d[b - 1], ab[b - 1].d, acc);
        }
    }
    if (b >= 2) {
        const int s = (int)(b / 2 - 1) & 1;
        amx_scale_add(c[2 * s], buf->d[b - 2], ab[b - 2].d, acc);
        amx_scale_add(c[2 * s + 1], buf->d[b - 1], ab[b - 1].d, acc);
    }
    if (b < kc) {
        _tile_zero(0);
        _tile_loadd(2, ab[b].qs, 32);
        _tile_loadd(4, buf->w[b], 64);
        _tile_dpbssd(0, 2, 4);
        _tile_stored(0, c[0], 64);
        amx_scale_add(c[0], buf->d[b], ab[b].d, acc);
    }
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) _mm512_mask_storeu_ps(y + (size_t)r * ldy, mask, acc[r]);
}

/* A: M/16 groups of lb_block_q8_0x16 (a_row_size bytes each), M % 16 == 0. */
INLINE_AMX void amx_gemm(int wt, int R, int C, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                     const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    geom G;
    geom_init(&G, R, C, wt == WQ8 ? 32 : 16, w_row_size);
    __m512i idx[8];
    for (int t = 0; t < G.ntgt; t++) idx[t] = _mm512_loadu_si512(G.idx[t]);
    const int64_t nb = K / 32;
    amx_wbuf bufs __attribute__((aligned(64)));
    amx_wbuf *buf = &bufs;
    amx_configure();
    for (int n = n0; n < n1; n += 16) {
        const rows16 r = rows_at(&G, W, n, n1);
        const __mmask16 mask = row_mask(n, n1);
        for (int64_t b0 = 0; b0 < nb; b0 += AMX_KC) {
            const int64_t kc = LB_MIN((int64_t)AMX_KC, nb - b0);
            for (int64_t b = 0; b < kc; b++) {
                decode16(wt, 1, &G, idx, &r, b0 + b, buf->w[b]);
                buf->d[b] = scales16(&G, &r, b0 + b);
            }
            for (int m = 0; m < M; m += 16) {
                const lb_block_q8_0x16 *ab = (const lb_block_q8_0x16 *)((const char *)A + (size_t)(m / 16) * a_row_size) + b0;
                amx_tile(buf, kc, ab, Y + (size_t)m * ldy + n, ldy, mask, b0 > 0);
            }
        }
    }
    _tile_release();
}

LB_AVX512 void lb_quantize_q8_0x16_avx512(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_0x16 *y = vy;
    for (int64_t b = 0; b < k / 32; b++)
        for (int m = 0; m < 16; m++) {
            int32_t s;
            quantize_block32(x + m * ldx + b * 32, y[b].qs[m], &y[b].d[m], &s);
        }
}

#define KERNELS(w, R, C, WT)                                                                             \
    LB_AMX void lb_gemm_##w##x##R##_q8_0x16_##R##x##C##_amx(int64_t K, const void *W, size_t wrs, int n0, \
                                                            int n1, const void *A, size_t ars, int M,     \
                                                            float *Y, size_t ldy) {                       \
        amx_gemm(WT, R, C, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                        \
    }
LB_REPACK_LAYOUTS(KERNELS)
#endif
