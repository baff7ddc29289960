/* AMX-BF16 GEMM (prefill) on the interleaved Q4_0 / IQ4_NL / Q8_0 layouts of
 * formats/repack.h, against bf16 activations (lb_block_bf16x16).
 *
 * Why bf16 and not the int8 tiles of repack_amx.c: a weight block's scale
 * changes every 32 weights, so an int8 tdpbssd can only take K = 32 (half
 * its width: tdpbssd costs the same 16 cycles at K = 32 as at 64, measured
 * on the Xeon this was written on) and each block's int32 tile must go
 * through memory to be scaled by AVX-512 (three vector operations per output
 * and block: about 24 cycles per 16 cycles of tile work). That path peaks at
 * a third of the AMX int8 rate and runs at about 11 % of it. Here each weight
 * tile is decoded once to bf16 (the block's scale folded in, q * d rounded to
 * nearest even), reused by every 16-row activation tile of the call, and
 * tdpbf16ps accumulates whole K chunks in fp32 tiles with no vector work per
 * block: its ceiling is half the int8 rate (16 x 16 x 32 per 16 cycles).
 *
 * Rounding: q * d is exact in fp32 and rounded once to bf16 (relative error
 * <= 2^-9, a small fraction of the 4-bit step); the activations are rounded
 * to bf16 (<= 2^-9 relative, finer than Q8_0's step of max/127 per block).
 * tests/test_repack_kernels.c checks the outputs against a double sum of
 * exactly these bf16 values.
 *
 * Blocking (measured on the Xeon: the tiles' 8 registers allow 2 x 2 output
 * tiles, so every tdpbf16ps needs one 1 KiB tile load, and AMX only runs
 * near its rate when one operand is in L1):
 *   columns in blocks of NBT tiles (256 columns: 16 gave 1.09x 8, 24 no more);
 *   K in chunks of KC blocks (256 values): one pair of 16-column weight
 *   tiles (2 x 8 KiB of bf16, L1) is decoded, then every activation tile pair
 *   of the call (M x 256 bf16 = 256 KiB at M = 512: L2) passes over it;
 *   fp32 partial sums in tile order in a scratch (M x 256 x 4 bytes), not in
 *   Y: 16 tile rows 22 KiB apart cost twice as much to load and store;
 *   the weight decode for the next column tile pair interleaved with the
 *   tile work on the current one (1.12x over decoding before the row loop).
 * Rows beyond a multiple of 16 go to the AVX-512 VNNI GEMV (the entry's gemv). */
#include "kernels/x86/repack_amx.h"

#if LB_HAVE_X86_KERNELS
#include <pthread.h>
#include <stdlib.h>

#include "kernels/x86/amx_config.h"
#include "kernels/x86/repack_avx512_impl.h"

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
    TILE = 256,    /* floats (or bf16 pairs) per tile: 16 x 16 */
    STACK_MT = 2,  /* row tiles per pass when the scratch cannot be allocated */
};

/* Tiles 0-3: C (16 x 16 fp32), 4/5: A (16 rows x 32 bf16), 6/7: B (16 pair rows x 16 columns). */
static const lb_amx_config bf_cfg __attribute__((aligned(64))) = {
    .palette_id = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* B tile of one block for 16 weight rows (Y's columns): pair row p holds,
 * for each column n, bf16(w[n][2p]) and bf16(w[n][2p + 1]). decode16's vector
 * kk has w[n][4kk..4kk+3] in dword n: its bytes, scaled, become pair rows
 * 2kk and 2kk + 1. */
INLINE_BF void bf16_tile(int wt, const geom *G, const __m512i *idx, const rows16 *r, int64_t b, __m512i out[16]) {
    __m512i w[8];
    decode16(wt, 1, G, idx, r, b, w);
    const __m512 d = scales16(G, r, b);
    /* cvtne2ps(f1, f0) gives words 0-15 = f0, 16-31 = f1; a pair row wants
     * word 2n = f0[n], word 2n + 1 = f1[n] */
    const __m512i pairs = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                           6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
#pragma GCC unroll 8
    for (int kk = 0; kk < 8; kk++) {
        const __m512i v = w[kk];
        const __m512 f0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(v, 24), 24)), d);
        const __m512 f1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(v, 16), 24)), d);
        const __m512 f2 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(v, 8), 24)), d);
        const __m512 f3 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srai_epi32(v, 24)), d);
        out[2 * kk] = _mm512_permutexvar_epi16(pairs, (__m512i)_mm512_cvtne2ps_pbh(f1, f0));
        out[2 * kk + 1] = _mm512_permutexvar_epi16(pairs, (__m512i)_mm512_cvtne2ps_pbh(f3, f2));
    }
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

/* Y rows [0, 16 * mtn) of the pass starting at row tile mt0, columns of the
 * block [nb0, nbe), from the scratch. */
INLINE_BF void write_back(const float *cbuf, int mtn, int ntn, int nb0, int nbe, float *Y, size_t ldy) {
    /* row after row of Y (its 16 tiles' rows are contiguous there) */
    for (int i = 0; i < mtn; i++)
        for (int r = 0; r < 16; r++) {
            const float *c = cbuf + (size_t)i * NBT * TILE + 16 * r;
            float *y = Y + (size_t)(16 * i + r) * ldy + nb0;
            for (int j = 0; j < ntn; j++)
                _mm512_mask_storeu_ps(y + 16 * j, row_mask(nb0 + 16 * j, nbe), _mm512_load_ps(c + (size_t)j * TILE));
        }
}

/* The weight tiles of work item q of a column block (K chunk q / npairs,
 * column tile pair q % npairs), decoded a few at a time. */
typedef struct {
    rows16 r[2];
    int64_t kb;
    int kc, count, done;
} decoder;

INLINE_BF void decoder_start(decoder *d, const geom *G, const void *W, int n1, int nb0, int ntn, int64_t nb, int q) {
    const int npairs = (ntn + 1) / 2, j = 2 * (q % npairs), two_n = j + 1 < ntn;
    d->kb = (int64_t)(q / npairs) * KC;
    d->kc = (int)LB_MIN((int64_t)KC, nb - d->kb);
    for (int t = 0; t <= two_n; t++) d->r[t] = rows_at(G, W, nb0 + 16 * (j + t), n1);
    d->count = (1 + two_n) * d->kc;
    d->done = 0;
}

INLINE_BF void decode_tiles(decoder *d, int wt, const geom *G, const __m512i *idx, int n, __m512i (*out)[KC][16]) {
    for (const int end = LB_MIN(d->count, d->done + n); d->done < end; d->done++) {
        const int t = d->done / d->kc, b = d->done % d->kc;
        bf16_tile(wt, G, idx, &d->r[t], d->kb + b, out[t][b]);
    }
}

/* The partial-sum scratch, kept per thread from call to call (freed when
 * the thread ends): a fresh 0.5 MiB per call came back from the kernel as
 * zeroed pages (clear_page in a pp512 profile, and a noisy pp). NULL when
 * it cannot grow to bytes. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
typedef struct {
    void *p;
    size_t n;
} scratch_buf;
static void scratch_free(void *v) {
    scratch_buf *b = v;
    free(b->p);
    free(b);
}
static void scratch_init(void) {
    if (pthread_key_create(&scratch_key, scratch_free)) scratch_key = (pthread_key_t)-1;
}
static void *thread_scratch(size_t bytes) {
    pthread_once(&scratch_once, scratch_init);
    if (scratch_key == (pthread_key_t)-1) return NULL;
    scratch_buf *b = pthread_getspecific(scratch_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        if (pthread_setspecific(scratch_key, b)) {
            free(b);
            return NULL;
        }
    }
    if (b->n < bytes) {
        free(b->p);
        b->n = 0;
        if (!(b->p = aligned_alloc(64, (bytes + 63) & ~(size_t)63))) return NULL;
        b->n = bytes;
    }
    return b->p;
}

/* A: M/16 groups of lb_block_bf16x16 (a_row_size bytes each), M % 16 == 0. */
INLINE_BF void gemm_bf16(int wt, int R, int C, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                         const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    geom G;
    geom_init(&G, R, C, wt == WQ8 ? 32 : 16, w_row_size);
    __m512i idx[8];
    for (int t = 0; t < G.ntgt; t++) idx[t] = _mm512_loadu_si512(G.idx[t]);
    const int64_t nb = K / 32;
    const int mt_all = M / 16;
    /* the scratch for every row tile of the call, or (allocation failed) a
     * few at a time on the stack: slower, as each pass decodes the weights */
    float stack_c[STACK_MT * NBT * TILE] __attribute__((aligned(64)));
    float *heap_c = thread_scratch((size_t)LB_MAX(mt_all, 1) * NBT * TILE * sizeof(float));
    float *cbuf = heap_c ? heap_c : stack_c;
    const int mt_pass = heap_c ? mt_all : STACK_MT;
    /* weight tiles of one column tile pair and K chunk, twice: the vector
     * units decode the next pair's tiles between the tile unit's work on the
     * current one (a few tiles after each row tile pair), so the two overlap */
    __m512i bt[2][2][KC][16];
    _tile_loadconfig(&bf_cfg);
    for (int nb0 = n0; nb0 < n1; nb0 += NBT * 16) {
        const int nbe = LB_MIN(nb0 + NBT * 16, n1), ntn = (nbe - nb0 + 15) / 16;
        const int npairs = (ntn + 1) / 2, nitems = npairs * (int)((nb + KC - 1) / KC);
        for (int mt0 = 0; mt0 < mt_all; mt0 += mt_pass) {
            const int mtn = LB_MIN(mt_pass, mt_all - mt0), iters = (mtn + 1) / 2;
            const char *Ap = (const char *)A + (size_t)mt0 * a_row_size;
            decoder dec;
            decoder_start(&dec, &G, W, n1, nb0, ntn, nb, 0);
            decode_tiles(&dec, wt, &G, idx, dec.count, bt[0]);
            for (int q = 0; q < nitems; q++) {
                const int64_t kb = (int64_t)(q / npairs) * KC;
                const int j = 2 * (q % npairs), kc = (int)LB_MIN((int64_t)KC, nb - kb), two_n = j + 1 < ntn;
                __m512i(*cur)[KC][16] = bt[q & 1], (*nxt)[KC][16] = bt[(q & 1) ^ 1];
                const int more = q + 1 < nitems;
                if (more) decoder_start(&dec, &G, W, n1, nb0, ntn, nb, q + 1);
                const int per = more ? (dec.count + iters - 1) / iters : 0;
                for (int i = 0; i < mtn; i += 2) {
                    const int two_m = i + 1 < mtn;
                    const uint16_t *a0 = (const uint16_t *)(Ap + (size_t)i * a_row_size) + (size_t)kb * TILE * 2;
                    const uint16_t *a1 = (const uint16_t *)((const char *)a0 + a_row_size);
                    float *c00 = cbuf + ((size_t)i * NBT + j) * TILE;
                    tdp_tiles(two_m, two_n, kb == 0, kc, a0, a1, (const __m512i(*)[16])cur[0],
                              (const __m512i(*)[16])cur[1], c00, c00 + TILE, c00 + NBT * TILE,
                              c00 + NBT * TILE + TILE);
                    if (more) decode_tiles(&dec, wt, &G, idx, per, nxt);
                }
            }
            write_back(cbuf, mtn, ntn, nb0, nbe, Y + (size_t)mt0 * 16 * ldy, ldy);
        }
    }
    _tile_release();
}

/* Bit-identical to lb_pack_bf16x16_ref (round to nearest even, NaN quieted,
 * denormal inputs to zero as the instruction does). */
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void lb_pack_bf16x16_avx512(const float *x, size_t ldx,
                                                                                   void *vy, int64_t k) {
    lb_block_bf16x16 *y = vy;
    for (int64_t b = 0; b < k / 32; b++)
        for (int m = 0; m < 16; m++) {
            const float *s = x + (size_t)m * ldx + b * 32;
            _mm512_storeu_si512(y[b].v[m], (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + 16), _mm512_loadu_ps(s)));
        }
}

#define KERNELS(w, R, C, WT)                                                                                  \
    LB_AMXBF16 void lb_gemm_##w##x##R##_bf16x16_##R##x##C##_amxbf16(int64_t K, const void *W, size_t wrs,   \
                                                                    int n0, int n1, const void *A, size_t ars, \
                                                                    int M, float *Y, size_t ldy) {            \
        gemm_bf16(WT, R, C, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                           \
    }
LB_REPACK_LAYOUTS(KERNELS)
#endif
