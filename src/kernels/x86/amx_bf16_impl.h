/* The AMX-BF16 GEMM core shared by the interleaved Q4_0 / IQ4_NL / Q8_0
 * layouts (repack_amx_bf16.c) and the 16-row K-quant layouts
 * (kx_amx_bf16.c): Y = A (bf16 activation groups, lb_block_bf16x16) times
 * W transposed, where a layout only supplies the decode of one weight tile
 * (16 weight rows = Y columns, one block of 32 along K) to bf16 pairs.
 * Why bf16: repack_amx_bf16.c's head comment and docs/kernels.md.
 *
 * Blocking (measured on the Xeon: the tiles' 8 registers allow 2 x 2 output
 * tiles, so every tdpbf16ps needs one 1 KiB tile load, and AMX only runs
 * near its rate when one operand is in L1):
 *   columns in blocks of NBT tiles (256 columns: 16 gave 1.09x 8, 24 no more);
 *   K in chunks of KC blocks (256 values): one pair of 16-column weight
 *   tiles (2 x 8 KiB of bf16; with the next pair's, 32 KiB of L1) is
 *   decoded, then every activation tile pair of the call (M x 256 bf16 =
 *   256 KiB at M = 512: L2) passes over it;
 *   fp32 partial sums in tile order in a scratch (M x 256 x 4 bytes), not in
 *   Y: 16 tile rows 22 KiB apart cost twice as much to load and store;
 *   the weight decode for the next column tile pair interleaved with the
 *   tile work on the current one (1.12x over decoding before the row loop).
 * Included only by x86 kernel files. */
#ifndef LB_AMX_BF16_IMPL_H
#define LB_AMX_BF16_IMPL_H

#include <immintrin.h>
#include <stdint.h>

#include "core/common.h"
#include "kernels/x86/amx_config.h"
#include "kernels/x86/amx_tiles_impl.h"
#include "kernels/thread_scratch.h"

#define LB_AMXBF16                                                                                                \
    __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16,avx2,fma,f16c")))
#define INLINE_BF LB_AMXBF16 static inline __attribute__((always_inline))

#ifndef LB_BF16_KC
#define LB_BF16_KC 8
#endif
#ifndef LB_BF16_NBT
#define LB_BF16_NBT 16
#endif
enum {
    KC = LB_BF16_KC,   /* blocks of 32 per K chunk */
    NBT = LB_BF16_NBT, /* 16-column tiles per column block */
    TILE = 256,        /* floats (or bf16 pairs) per tile: 16 x 16 */
    STACK_MT = 2,      /* row tiles per pass when the scratch cannot be allocated */
};

/* Tiles (lb_amx_cfg_full) 0-3: C (16 x 16 fp32), 4/5: A (16 rows x 32 bf16), 6/7: B (16 pair rows x 16 columns). */

/* One weight tile: the 16 columns from n, block b (weights 32b..32b+31),
 * as 16 B-tile rows; ctx is the layout's own description of W. */
typedef void (*lb_bf16_tile_fn)(const void *ctx, int n, int64_t b, __m512i out[16]);

/* The context of a layout in groups of 16 rows (gstride bytes each, its
 * x-blocks of xbs bytes one after another along K), as the GQ, BCQ and
 * 16-row K-quant decoders take it; kind: the layout's sub-kind where one
 * decoder serves several (kx_avx512_impl.h's KQ3, ...). */
typedef struct {
    const uint8_t *W;
    size_t gstride;
    int kind;
} bf16_groups;

/* x-block xi of the group holding row n */
INLINE_BF const uint8_t *bf16_xblock(const bf16_groups *c, int n, int64_t xi, size_t xbs) {
    return c->W + (size_t)(n / 16) * c->gstride + (size_t)xi * xbs;
}

/* The signed byte e of every dword, as float. */
INLINE_BF __m512 bf16_byte_ps(__m512i v, int e) {
    return _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(v, (unsigned)(24 - 8 * e)), 24));
}

/* Output tiles (2 or 1 row tiles) x (2 or 1 column tiles) over kc blocks:
 * c[i][j] in the scratch (zeroed when first), a[i] the activation tiles of
 * the chunk's first block (1 KiB each per block), bt[j] the decoded weight
 * tiles. Tile numbers must be constants: one body per shape. */
#define TDP_BODY(TWO_M, TWO_N)                                                     \
    do {                                                                           \
        if (first) {                                                               \
            _tile_zero(0);                                                         \
            if (TWO_N) _tile_zero(1);                                              \
            if (TWO_M) _tile_zero(2);                                              \
            if (TWO_M && TWO_N) _tile_zero(3);                                     \
        } else {                                                                   \
            _tile_loadd(0, c00, 64);                                               \
            if (TWO_N) _tile_loadd(1, c01, 64);                                    \
            if (TWO_M) _tile_loadd(2, c10, 64);                                    \
            if (TWO_M && TWO_N) _tile_loadd(3, c11, 64);                           \
        }                                                                          \
        for (int b = 0; b < kc; b++) {                                             \
            _tile_loadd(4, a0 + (size_t)b * 2 * TILE, 64);                             \
            _tile_loadd(6, bt0[b], 64);                                            \
            _tile_dpbf16ps(0, 4, 6);                                               \
            if (TWO_N) {                                                           \
                _tile_loadd(7, bt1[b], 64);                                        \
                _tile_dpbf16ps(1, 4, 7);                                           \
            }                                                                      \
            if (TWO_M) {                                                           \
                _tile_loadd(5, a1 + (size_t)b * 2 * TILE, 64);                         \
                _tile_dpbf16ps(2, 5, 6);                                           \
                if (TWO_N) _tile_dpbf16ps(3, 5, 7);                                \
            }                                                                      \
        }                                                                          \
        _tile_stored(0, c00, 64);                                                  \
        if (TWO_N) _tile_stored(1, c01, 64);                                       \
        if (TWO_M) _tile_stored(2, c10, 64);                                       \
        if (TWO_M && TWO_N) _tile_stored(3, c11, 64);                              \
    } while (0)

INLINE_BF void tdp_tiles(int two_m, int two_n, int first, int kc, const uint16_t *a0, const uint16_t *a1,
                         const __m512i (*bt0)[16], const __m512i (*bt1)[16], float *c00, float *c01, float *c10,
                         float *c11) {
    if (two_m && two_n) TDP_BODY(1, 1);
    else if (two_m) TDP_BODY(1, 0);
    else if (two_n) TDP_BODY(0, 1);
    else TDP_BODY(0, 0);
}

/* Work item q of a column block of ntn tiles: K chunk q / npairs (blocks
 * [kb, kb + kc)), column tile pair q % npairs (tiles j and, with two_n, j + 1). */
typedef struct {
    int64_t kb;
    int kc, j, two_n;
} bf16_item;

INLINE_BF bf16_item item_at(int ntn, int64_t nb, int q) {
    const int npairs = (ntn + 1) / 2;
    bf16_item it;
    it.kb = (int64_t)(q / npairs) * KC;
    it.kc = (int)LB_MIN((int64_t)KC, nb - it.kb);
    it.j = 2 * (q % npairs);
    it.two_n = it.j + 1 < ntn;
    return it;
}

/* An item's weight tiles (its column block starting at nb0), decoded a few
 * at a time. */
typedef struct {
    bf16_item it;
    int nb0, count, done;
} bf16_decoder;

INLINE_BF void decoder_start(bf16_decoder *d, int nb0, bf16_item it) {
    d->it = it;
    d->nb0 = nb0;
    d->count = (1 + it.two_n) * it.kc;
    d->done = 0;
}

INLINE_BF void decode_tiles(bf16_decoder *d, lb_bf16_tile_fn tile, const void *ctx, int n, __m512i (*out)[KC][16]) {
    for (const int end = LB_MIN(d->count, d->done + n); d->done < end; d->done++) {
        const int t = d->done / d->it.kc, b = d->done % d->it.kc;
        tile(ctx, d->nb0 + 16 * (d->it.j + t), d->it.kb + b, out[t][b]);
    }
}

/* Y rows [0, M) x columns [n0, n1) (tiles past n1 are decoded by tile as it
 * likes, and not stored). A: M/16 groups of lb_block_bf16x16 (a_row_size
 * bytes each), M % 16 == 0. tile and ctx: constants after inlining. */
INLINE_BF void lb_amx_bf16_gemm(lb_bf16_tile_fn tile, const void *ctx, int64_t K, int n0, int n1, const void *A,
                                size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    const int mt_all = M / 16;
    /* the scratch for every row tile of the call, or (allocation failed) a
     * few at a time on the stack: slower, as each pass decodes the weights */
    float stack_c[STACK_MT * NBT * TILE] __attribute__((aligned(64)));
    float *heap_c = lb_thread_scratch((size_t)LB_MAX(mt_all, 1) * NBT * TILE * sizeof(float));
    float *cbuf = heap_c ? heap_c : stack_c;
    const int mt_pass = heap_c ? mt_all : STACK_MT;
    /* weight tiles of one column tile pair and K chunk, twice: the vector
     * units decode the next pair's tiles between the tile unit's work on the
     * current one (a few tiles after each row tile pair), so the two overlap */
    __m512i bt[2][2][KC][16];
    _tile_loadconfig(lb_amx_cfg_full());
    for (int nb0 = n0; nb0 < n1; nb0 += NBT * 16) {
        const int nbe = LB_MIN(nb0 + NBT * 16, n1), ntn = (nbe - nb0 + 15) / 16;
        const int nitems = (ntn + 1) / 2 * (int)((nb + KC - 1) / KC);
        for (int mt0 = 0; mt0 < mt_all; mt0 += mt_pass) {
            const int mtn = LB_MIN(mt_pass, mt_all - mt0), iters = (mtn + 1) / 2;
            const char *Ap = (const char *)A + (size_t)mt0 * a_row_size;
            bf16_decoder dec;
            decoder_start(&dec, nb0, item_at(ntn, nb, 0));
            decode_tiles(&dec, tile, ctx, dec.count, bt[0]);
            for (int q = 0; q < nitems; q++) {
                const bf16_item it = dec.it; /* decoded into bt[q & 1] */
                __m512i(*cur)[KC][16] = bt[q & 1], (*nxt)[KC][16] = bt[(q & 1) ^ 1];
                const int more = q + 1 < nitems;
                if (more) decoder_start(&dec, nb0, item_at(ntn, nb, q + 1));
                const int per = more ? (dec.count + iters - 1) / iters : 0;
                for (int i = 0; i < mtn; i += 2) {
                    const int two_m = i + 1 < mtn;
                    const uint16_t *a0 = (const uint16_t *)(Ap + (size_t)i * a_row_size) + (size_t)it.kb * TILE * 2;
                    const uint16_t *a1 = (const uint16_t *)((const char *)a0 + a_row_size);
                    float *c00 = cbuf + ((size_t)i * NBT + it.j) * TILE;
                    tdp_tiles(two_m, it.two_n, it.kb == 0, it.kc, a0, a1, (const __m512i(*)[16])cur[0],
                              (const __m512i(*)[16])cur[1], c00, c00 + TILE, c00 + NBT * TILE,
                              c00 + NBT * TILE + TILE);
                    if (more) decode_tiles(&dec, tile, ctx, per, nxt);
                }
            }
            lb_amx_write_back(cbuf, NBT, mtn, ntn, nb0, nbe, Y + (size_t)mt0 * 16 * ldy, ldy);
        }
    }
    _tile_release();
}

#endif
