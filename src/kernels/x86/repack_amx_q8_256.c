/* AMX-INT8 GEMM (prefill) on the interleaved Q4_0 / IQ4_NL / MXFP4_NL / Q8_0
 * layouts, both operands requantized to int8 in chunks of 256 along K
 * (formats/q8_256.h: the codes, scales and why). Names:
 * lb_gemm_<weights>x<R>_q8_256x16_<R>x<C>_amx.
 *
 * Per chunk of 256 the tile unit runs 4 full-width tdpbssd steps (K = 64:
 * the instruction's whole rate, where a 32-value block uses half of it) into
 * int32 tiles, and the vector units scale each finished tile once (per row:
 * cvt, the row scale times the column scales, fma into the fp32 partial
 * sums): a sixteenth of the per-block kernel's vector work per multiply.
 *
 * Blocking: columns in blocks of 16 tiles; per K chunk and group of four
 * 16-column tiles, the weight tiles (4 x 4 KiB) are requantized once into
 * L1, and every 16-row activation tile of the call passes over them (1 x 4
 * output tiles: one A tile load serves four tdpbssd; measured 1.03-1.09x
 * the 2 x 2 blocking of the AMX-BF16 core); fp32 partial sums in a
 * per-thread scratch in tile order, as there (amx_bf16_impl.h). The int32
 * tiles of row tile i are stored while row tile i - 1's are scaled, and the
 * next item's weight tiles are requantized a block at a time between row
 * tiles. Measured on the Xeon (docs/kernels.md): the tile loop alone, with
 * no scaling or requantization, runs at about 40 % of the resident-tile
 * peak (every tdpbssd needs a 1 KiB tile load); the scaling and the
 * requantization each add about a third, and overlap the tile unit little.
 * Rows beyond a multiple of 16 go to the AVX-512 VNNI GEMV (the entry's gemv). */
#include "kernels/x86/repack_amx.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/thread_scratch.h"
#include "kernels/x86/amx_config.h"
#include "kernels/x86/amx_tiles_impl.h"
#include "kernels/x86/repack_avx512_impl.h"

#define LB_AMX8 __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE8 LB_AMX8 static inline __attribute__((always_inline))

enum {
    CB = 8,     /* blocks of 32 per chunk */
    NS = 4,     /* tdpbssd steps of 64 per chunk */
    NBT8 = 16,  /* 16-column tiles per column block */
    TL = 256,   /* int32 or floats per tile */
    STK_MT = 2, /* row tiles per pass when the scratch cannot be allocated */
};

/* Tiles 0-3: C (16 x 16 int32), 4: A (16 rows x 64 bytes), 5-7: B (16 rows of 16 x 4 bytes). */
static const lb_amx_config q8_cfg __attribute__((aligned(64))) = {
    .palette_id = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

typedef struct {
    geom G;
    __m512i idx[8];
    int wt, n1, qmax, sh;
    const void *W;
} q8_ctx;

/* One column tile's requantized chunk: 4 B tiles and the 16 columns' scales. */
typedef struct {
    __m512i t[NS][16];
    float s[16];
} wtile;

/* Block b of the 16 columns from n, requantized into rows 8 (b % 2) .. + 7
 * of step (b - kb) / 2, the codes times B (r = d / s in fixed point) with
 * vpmulhrsw's rounding, as lb_requant_q8_256_ref. */
INLINE8 void requant_block(const q8_ctx *c, const rows16 *r, int64_t b, __m512 s, __m512i *rows) {
    const __m512 d = scales16(&c->G, r, b);
    const __mmask16 live = _mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_GT_OQ);
    const __m512 ratio = _mm512_maskz_div_ps(live, d, s);
    const __m512i B = _mm512_cvtps_epi32(_mm512_mul_ps(ratio, _mm512_set1_ps((float)(1 << (15 - c->sh)))));
    /* words 4n .. 4n + 3 of the low (high) half: column n's (n + 8's) factor */
    const __m512i ilo = _mm512_set_epi16(14, 14, 14, 14, 12, 12, 12, 12, 10, 10, 10, 10, 8, 8, 8, 8, 6, 6, 6, 6, 4,
                                         4, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0);
    const __m512i Blo = _mm512_permutexvar_epi16(ilo, B);
    const __m512i Bhi = _mm512_permutexvar_epi16(_mm512_add_epi16(ilo, _mm512_set1_epi16(16)), B);
    __m512i w[8];
    decode16(c->wt, 1, &c->G, c->idx, r, b, w);
    const __m128i sh = _mm_cvtsi32_si128(c->sh);
#pragma GCC unroll 8
    for (int kk = 0; kk < 8; kk++) {
        const __m512i lo = _mm512_sll_epi16(_mm512_cvtepi8_epi16(_mm512_castsi512_si256(w[kk])), sh);
        const __m512i hi = _mm512_sll_epi16(_mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(w[kk], 1)), sh);
        const __m256i qlo = _mm512_cvtepi16_epi8(_mm512_mulhrs_epi16(lo, Blo));
        const __m256i qhi = _mm512_cvtepi16_epi8(_mm512_mulhrs_epi16(hi, Bhi));
        rows[kk] = _mm512_inserti64x4(_mm512_castsi256_si512(qlo), qhi, 1);
    }
}

/* Work item q of a column block of ntn tiles: chunk q / ngroups (blocks
 * [kb, kb + kc)), column tiles j .. j + nt - 1 (nt <= NTI). */
enum { NTI = 4 };
typedef struct {
    int64_t kb;
    int kc, j, nt;
} q8_item;

INLINE8 q8_item q8_item_at(int ntn, int64_t nb, int q) {
    const int ng = (ntn + NTI - 1) / NTI;
    q8_item it;
    it.kb = (int64_t)(q / ng) * CB;
    it.kc = (int)LB_MIN((int64_t)CB, nb - it.kb);
    it.j = NTI * (q % ng);
    it.nt = LB_MIN(NTI, ntn - it.j);
    return it;
}

/* An item's weight tiles, requantized one block at a time: unit u is block
 * u % kc of column tile u / kc; a column tile's first unit finds its scales. */
typedef struct {
    q8_item it;
    int count, done;
    rows16 r[NTI];
} q8_decoder;

INLINE8 void dec_start(q8_decoder *d, const q8_ctx *c, int nb0, q8_item it) {
    d->it = it;
    d->count = it.nt * it.kc;
    d->done = 0;
    for (int t = 0; t < it.nt; t++) d->r[t] = rows_at(&c->G, c->W, nb0 + 16 * (it.j + t), c->n1);
}

INLINE8 void dec_units(q8_decoder *d, const q8_ctx *c, int n, wtile *out) {
    for (const int end = LB_MIN(d->count, d->done + n); d->done < end; d->done++) {
        const int t = d->done / d->it.kc, b = d->done % d->it.kc;
        wtile *w = &out[t];
        if (b == 0) {
            __m512 D = _mm512_setzero_ps();
            for (int i = 0; i < d->it.kc; i++) D = _mm512_max_ps(D, _mm512_abs_ps(scales16(&c->G, &d->r[t], d->it.kb + i)));
            _mm512_storeu_ps(w->s, _mm512_div_ps(_mm512_mul_ps(D, _mm512_set1_ps((float)c->qmax)), _mm512_set1_ps(127.0f)));
        }
        requant_block(c, &d->r[t], d->it.kb + b, _mm512_loadu_ps(w->s), &w->t[b / 2][8 * (b % 2)]);
        if (b == d->it.kc - 1 && b % 2 == 0) /* a lone half step: its other half zero */
            for (int kk = 8; kk < 16; kk++) w->t[b / 2][kk] = _mm512_setzero_si512();
    }
}

/* One row tile's int32 tiles against nt column tiles over the item's steps,
 * into tiles 0 .. nt - 1 (A in 4, B in 5, 6, 7 in turn). Tile numbers are
 * constants: one body per nt. */
#define Q8_TDP(NT)                                                 \
    do {                                                           \
        _tile_zero(0);                                             \
        if (NT > 1) _tile_zero(1);                                 \
        if (NT > 2) _tile_zero(2);                                 \
        if (NT > 3) _tile_zero(3);                                 \
        for (int s = 0; s < ns; s++) {                             \
            _tile_loadd(4, a + (size_t)s * 1024, 64);              \
            _tile_loadd(5, w[0].t[s], 64);                         \
            _tile_dpbssd(0, 4, 5);                                 \
            if (NT > 1) {                                          \
                _tile_loadd(6, w[1].t[s], 64);                     \
                _tile_dpbssd(1, 4, 6);                             \
            }                                                      \
            if (NT > 2) {                                          \
                _tile_loadd(7, w[2].t[s], 64);                     \
                _tile_dpbssd(2, 4, 7);                             \
            }                                                      \
            if (NT > 3) {                                          \
                _tile_loadd(5, w[3].t[s], 64);                     \
                _tile_dpbssd(3, 4, 5);                             \
            }                                                      \
        }                                                          \
    } while (0)

#define Q8_STORE(NT)                                               \
    do {                                                           \
        _tile_stored(0, cst, 64);                                  \
        if (NT > 1) _tile_stored(1, cst + TL, 64);                 \
        if (NT > 2) _tile_stored(2, cst + 2 * TL, 64);             \
        if (NT > 3) _tile_stored(3, cst + 3 * TL, 64);             \
    } while (0)

INLINE8 void tdp_q8(int nt, int ns, const int8_t *a, const wtile *w) {
    switch (nt) {
    case 4: Q8_TDP(4); break;
    case 3: Q8_TDP(3); break;
    case 2: Q8_TDP(2); break;
    default: Q8_TDP(1); break;
    }
}

INLINE8 void store_q8(int nt, int32_t *cst) {
    switch (nt) {
    case 4: Q8_STORE(4); break;
    case 3: Q8_STORE(3); break;
    case 2: Q8_STORE(2); break;
    default: Q8_STORE(1); break;
    }
}

/* A stored row of tiles into the partial sums: c[j] += tile j * (sa[row] * sw[j]). */
typedef struct {
    const int32_t *cst;
    const float *sa; /* the row tile's scales for the chunk */
    const wtile *w;
    float *c;        /* partial sums of its first tile; tile j at + j * TL */
    int nt, first;
} q8_pending;

INLINE8 void scale_tile(const int32_t *t, const float *sa, const float *sw, float *c, int first) {
    const __m512 w = _mm512_loadu_ps(sw);
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        const __m512 s = _mm512_mul_ps(_mm512_set1_ps(sa[r]), w);
        const __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512(t + 16 * r));
        _mm512_store_ps(c + 16 * r, first ? _mm512_mul_ps(v, s) : _mm512_fmadd_ps(v, s, _mm512_load_ps(c + 16 * r)));
    }
}

INLINE8 void scale_pending(const q8_pending *p) {
    for (int j = 0; j < p->nt; j++) scale_tile(p->cst + j * TL, p->sa, p->w[j].s, p->c + j * TL, p->first);
}

INLINE8 void gemm_q8_256(int wt, int base, int R, int C, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                         const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    q8_ctx c;
    geom_init(&c.G, R, C, wt == WQ8 ? 32 : 16, w_row_size);
    for (int t = 0; t < c.G.ntgt; t++) c.idx[t] = _mm512_loadu_si512(c.G.idx[t]);
    c.wt = wt, c.n1 = n1, c.W = W;
    c.qmax = lb_q8_256_qmax(base), c.sh = lb_q8_256_shift(base);
    const int64_t nb = K / 32;
    const size_t sa_at = lb_q8_256x16_scales_at(K);
    const int mt_all = M / 16;
    float stack_c[STK_MT * NBT8 * TL] __attribute__((aligned(64)));
    float *heap_c = lb_thread_scratch((size_t)LB_MAX(mt_all, 1) * NBT8 * TL * sizeof(float));
    float *cbuf = heap_c ? heap_c : stack_c;
    const int mt_pass = heap_c ? mt_all : STK_MT;
    wtile wt2[2][NTI] __attribute__((aligned(64))); /* the current item's tiles and the next's */
    int32_t cst[2][NTI * TL] __attribute__((aligned(64))); /* int32 tiles, stored and scaled alternately */
    _tile_loadconfig(&q8_cfg);
    for (int nb0 = n0; nb0 < n1; nb0 += NBT8 * 16) {
        const int nbe = LB_MIN(nb0 + NBT8 * 16, n1), ntn = (nbe - nb0 + 15) / 16;
        const int nitems = (ntn + NTI - 1) / NTI * (int)((nb + CB - 1) / CB);
        for (int mt0 = 0; mt0 < mt_all; mt0 += mt_pass) {
            const int mtn = LB_MIN(mt_pass, mt_all - mt0);
            const char *Ap = (const char *)A + (size_t)mt0 * a_row_size;
            q8_decoder dec;
            dec_start(&dec, &c, nb0, q8_item_at(ntn, nb, 0));
            dec_units(&dec, &c, dec.count, wt2[0]);
            q8_pending pend = {0};
            int have = 0, flip = 0;
            for (int q = 0; q < nitems; q++) {
                const q8_item it = dec.it;
                const wtile *cur = wt2[q & 1];
                const int more = q + 1 < nitems;
                if (more) dec_start(&dec, &c, nb0, q8_item_at(ntn, nb, q + 1));
                const int per = more ? (dec.count + mtn - 1) / mtn : 0;
                const int ns = (it.kc + 1) / 2;
                for (int i = 0; i < mtn; i++) {
                    const char *g = Ap + (size_t)i * a_row_size;
                    tdp_q8(it.nt, ns, (const int8_t *)g + (size_t)(it.kb / 2) * 1024, cur);
                    if (have) scale_pending(&pend); /* the previous row, while the tile unit works */
                    store_q8(it.nt, cst[flip]);
                    pend = (q8_pending){cst[flip], (const float *)(g + sa_at) + (it.kb / CB) * 16, cur,
                                        cbuf + ((size_t)i * NBT8 + it.j) * TL, it.nt, it.kb == 0};
                    have = 1, flip ^= 1;
                    if (more) dec_units(&dec, &c, per, wt2[(q & 1) ^ 1]);
                }
            }
            if (have) scale_pending(&pend);
            lb_amx_write_back(cbuf, NBT8, mtn, ntn, nb0, nbe, Y + (size_t)mt0 * 16 * ldy, ldy);
        }
    }
    _tile_release();
}

/* Bit-identical to lb_quantize_q8_256x16_ref for finite inputs. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) void lb_quantize_q8_256x16_avx512(const float *x, size_t ldx,
                                                                                       void *vy, int64_t k) {
    int8_t *tiles = vy;
    float *scales = (float *)((char *)vy + lb_q8_256x16_scales_at(k));
    const int64_t nb = k / 32;
    if (nb % 2) /* the lone half step's upper halves */
        for (int m = 0; m < 16; m++) memset(tiles + (nb / 2) * 1024 + m * 64 + 32, 0, 32);
    for (int64_t c0 = 0; c0 < k; c0 += 256) {
        const int64_t c1 = LB_MIN(c0 + 256, k);
        for (int m = 0; m < 16; m++) {
            const float *row = x + (size_t)m * ldx;
            __m512 mx = _mm512_setzero_ps();
            for (int64_t i = c0; i < c1; i += 16) mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_loadu_ps(row + i)));
            const float amax = _mm512_reduce_max_ps(mx);
            const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
            scales[(c0 / 256) * 16 + m] = amax / 127.0f;
            for (int64_t i = c0; i < c1; i += 16) {
                const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(row + i), id));
                _mm_storeu_si128((__m128i *)(tiles + (i / 64) * 1024 + m * 64 + i % 64), _mm512_cvtsepi32_epi8(q));
            }
        }
    }
}

#define KERNELS8(w, R, C, WT, BASE)                                                                           \
    LB_AMX8 void lb_gemm_##w##x##R##_q8_256x16_##R##x##C##_amx(int64_t K, const void *W, size_t wrs, int n0,  \
                                                               int n1, const void *A, size_t ars, int M,      \
                                                               float *Y, size_t ldy) {                        \
        gemm_q8_256(WT, BASE, R, C, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                   \
    }
#define KERNELS(w, R, C, WT) KERNELS8(w, R, C, WT, WT == WQ4 ? LB_TYPE_Q4_0 : WT == WIQ4 ? LB_TYPE_IQ4_NL : WT == WQ8 ? LB_TYPE_Q8_0 : LB_TYPE_MXFP4_NL)
LB_REPACK_LAYOUTS(KERNELS)
#endif
