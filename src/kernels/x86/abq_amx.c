/* AMX-INT8 GEMM (prefill) of ABQ's code layouts (formats/abq.h: ABQ_W{q}_C4
 * / _C2, made at load), bit-identical to the reference like every ABQ kernel.
 *
 * The integer group dot of a weight row n and an activation row m,
 *     I = sum_j (cw_j - zw)(ca_j - za)
 *       = sum_j (cw_j - zw)(ca_j - 128) + (128 - za) (sw - 128 zw),
 * is a tdpbssd product: the activation blocks hold ca - 128 as signed bytes
 * (block_abq_act.c) and cw - zw fits a signed byte (|cw - zw| <= 15 for
 * 4-bit codes). Two tdpbssd (K = 64 each) give one group's 16 x 16 integer
 * dots exactly (|I| <= 128 * 15 * 255).
 *
 * Per call (the driver hands this whole_m kernel its thread's whole range of
 * weight rows and up to 3/4 of the L2 of activation rows):
 *   the activation codes of every 16 rows are packed once into A tiles of
 *   aligned lines (in the rows, each group's 64 bytes straddle two lines);
 *   then per 16 weight rows (Y columns), every group is decoded once into B
 *   tiles (codes minus the zero point, transposed by dwords into the VNNI
 *   layout: tile row kk = 16 columns x weights 4kk..4kk+3) beside the
 *   group's scales as doubles and sw - 128 zw (2240 bytes a group, in a
 *   per-thread scratch), and every 16-row activation tile passes over them.
 * Per group the int32 tile goes through memory to AVX-512: + (128 - za)
 * (sw - 128 zw) (vpmaddwd), to double, d I added to the 16 x 16 double sums
 * (exact product, so the fused add rounds as the reference's add), groups in
 * order: y = (float)(da sum_g d_g I_g), the reference's float.
 *
 * Measured (bench/kernels, Xeon SPR VM, 5632 x 2048, M = 512): the tile
 * store and the double sums of each group's 16 x 16 products take most of
 * the time, and they do not overlap each other; 8-row tiles with the sums in
 * registers, 2 x 2 output tiles per group (half the operand loads), all of
 * a tile's products first with the sums after, and the sums issued before
 * the next tile store were each no faster. Rows past a
 * multiple of 16, and decode (M < 16), go to the AVX-512 level's kernel
 * (abq_codes_avx512.c: its VNNI GEMM and decode). */
#include "kernels/x86/abq_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "kernels/x86/amx_config.h"
#include "kernels/thread_scratch.h"

#define LB_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#define INLINE LB_AMX static inline __attribute__((always_inline))

/* Tiles 0/1: C (16 x 16 int32); 2, 4, 6: A (16 rows x 64 bytes); 3, 5, 7: B
 * (16 x 64). */
static const lb_amx_config abq_cfg __attribute__((aligned(64))) = {
    .palette_id = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* One group of the call's 16 weight rows, decoded. */
typedef struct {
    int8_t b[2][16][64]; /* B tiles of weights 0..63 and 64..127 */
    double d[16];        /* the rows' scales (0 past n1) */
    int32_t swz[16];     /* sw - 128 zw in the low 16 bits, high 16 bits 0 (vpmaddwd) */
} wgroup;
static_assert(sizeof(wgroup) == 2240 && sizeof(wgroup) % 64 == 0, "ABQ AMX weight group");

/* 16 rows of 16 dwords transposed: out[kk] dword n = r[n] dword kk. */
INLINE void transpose16(__m512i r[16]) {
    __m512i a[16], b[16];
    for (int i = 0; i < 8; i++) {
        a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* b[4i + c]: lane L = column 4L + c of rows 4i..4i+3 */
        b[4 * i] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        const __m512i s0 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0x88), s1 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0xDD);
        const __m512i s2 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0x88);
        const __m512i s3 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0xDD);
        r[c] = _mm512_shuffle_i32x4(s0, s2, 0x88);
        r[8 + c] = _mm512_shuffle_i32x4(s0, s2, 0xDD);
        r[4 + c] = _mm512_shuffle_i32x4(s1, s3, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(s1, s3, 0xDD);
    }
}

/* Weights 0..63 (h[0]) and 64..127 (h[1]) of a group as bytes c - z, in order. */
INLINE void group_bytes(int w, const uint8_t *qs, int z, __m512i h[2]) {
    const __m256i zv = _mm256_set1_epi8((char)z);
    __m256i c[4];
    lb_abq_group_codes(qs, w, c);
    for (int i = 0; i < 2; i++)
        h[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_sub_epi8(c[2 * i], zv)), _mm256_sub_epi8(c[2 * i + 1], zv),
                                  1);
}

/* Rows [n0, n1) (n1 - n0 <= 16), every group, into wg[0..nb). */
INLINE void decode_rows(int w, const uint8_t *W, size_t w_row_size, int n0, int n1, int64_t nb, wgroup *wg) {
    lb_abq_code_row p[16];
    for (int r = 0; r < n1 - n0; r++) p[r] = lb_abq_code_row_of(W + (size_t)(n0 + r) * w_row_size, nb);
    const int qb = 16 * w;
    for (int64_t g = 0; g < nb; g++) {
        __m512i h[2][16];
        for (int r = 0; r < 16; r++) {
            if (r < n1 - n0) {
                __m512i t[2];
                group_bytes(w, p[r].qs + (size_t)qb * (size_t)g, p[r].z[g], t);
                h[0][r] = t[0], h[1][r] = t[1];
                wg[g].d[r] = (double)p[r].d[g];
                wg[g].swz[r] = (int32_t)(uint16_t)(int16_t)(p[r].sw[g] - 128 * p[r].z[g]);
            } else {
                h[0][r] = h[1][r] = _mm512_setzero_si512();
                wg[g].d[r] = 0.0;
                wg[g].swz[r] = 0;
            }
        }
        for (int i = 0; i < 2; i++) {
            transpose16(h[i]);
            for (int kk = 0; kk < 16; kk++) _mm512_store_si512(wg[g].b[i][kk], h[i][kk]);
        }
    }
}

/* acc[2r], acc[2r + 1] += d (C[r] + c1[r] swz) for the 16 rows of a group's
 * product (the 16 x 16 double sums: 32 vectors, partly spilled) */
INLINE void accumulate(const int32_t (*c)[16], const wgroup *wg, const int32_t *c1, __m512d acc[16]) {
    const __m512d d0 = _mm512_load_pd(wg->d), d1 = _mm512_load_pd(wg->d + 8);
    const __m512i swz = _mm512_load_si512(wg->swz);
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        const __m512i I = _mm512_add_epi32(_mm512_load_si512(c[r]), _mm512_madd_epi16(swz, _mm512_set1_epi32(c1[r])));
        /* d I is exact in double: the fused add rounds as the reference's add */
        acc[2 * r] = _mm512_fmadd_pd(d0, _mm512_cvtepi32_pd(_mm512_castsi512_si256(I)), acc[2 * r]);
        acc[2 * r + 1] = _mm512_fmadd_pd(d1, _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(I, 1)), acc[2 * r + 1]);
    }
}

/* Activation codes packed per 16 rows: group g of row 16s + r, weights 64h
 * .. 64h + 63, at (s nb + g) ACT_GROUP + h ACT_GROUP / 2 + 64 r: A tiles of
 * contiguous aligned lines (in the rows, a group's 64 bytes straddle two). */
enum { ACT_GROUP = 16 * LB_ABQ_G };

/* One group's two tdpbssd into C tile T: weights 0..63 through operand
 * tiles (A0, B0), 64..127 through (A1, B1). */
#define GROUP_DOT(T, A0, B0, A1, B1)                                                                                   \
    do {                                                                                                               \
        _tile_zero(T);                                                                                                 \
        _tile_loadd(A0, ap + (size_t)g * ACT_GROUP, 64);                                                               \
        _tile_loadd(B0, wg[g].b[0], 64);                                                                               \
        _tile_dpbssd(T, A0, B0);                                                                                       \
        _tile_loadd(A1, ap + (size_t)g * ACT_GROUP + ACT_GROUP / 2, 64);                                               \
        _tile_loadd(B1, wg[g].b[1], 64);                                                                               \
        _tile_dpbssd(T, A1, B1);                                                                                       \
    } while (0)

/* Group g's products into C tile g % 2. A load into a tile waits for the
 * product that last read it, so the halves take the three operand pairs
 * (2, 3), (4, 5), (6, 7) in turn: a load waits on the product three halves
 * back, not the one just issued (one pair per half measured 5 % slower, at
 * the edge of this VM's noise). Tile numbers must be constants: one case
 * per (g mod 6). */
INLINE void group_dot(int64_t g, const uint8_t *ap, const wgroup *wg) {
    switch (g % 6) {
    case 0: GROUP_DOT(0, 2, 3, 4, 5); break;
    case 1: GROUP_DOT(1, 6, 7, 2, 3); break;
    case 2: GROUP_DOT(0, 4, 5, 6, 7); break;
    case 3: GROUP_DOT(1, 2, 3, 4, 5); break;
    case 4: GROUP_DOT(0, 6, 7, 2, 3); break;
    default: GROUP_DOT(1, 4, 5, 6, 7); break;
    }
}

/* Y rows [0, 16) x columns [n0, n0 + 16) (mask) from one packed 16-row tile. */
INLINE void row_tile(const wgroup *wg, int64_t nb, const uint8_t *ap, const int32_t *c1, const double *da, float *Y,
                     size_t ldy, __mmask16 mask) {
    int32_t c[2][16][16] __attribute__((aligned(64)));
    __m512d acc[32];
#pragma GCC unroll 32
    for (int i = 0; i < 32; i++) acc[i] = _mm512_setzero_pd();
    /* a C tile is stored (and its sums taken) only after the next group's
     * products are issued, so the store does not wait on the products it
     * follows */
    for (int64_t g = 0; g <= nb; g++) {
        if (g < nb) group_dot(g, ap, wg);
        if (g == 0) continue;
        int32_t(*cg)[16] = c[(g - 1) % 2];
        if ((g - 1) % 2) _tile_stored(1, cg, 64);
        else _tile_stored(0, cg, 64);
        accumulate((const int32_t(*)[16])cg, &wg[g - 1], c1, acc);
    }
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        const __m512d s = _mm512_set1_pd(da[r]);
        const __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(acc[2 * r], s));
        const __m256 hi = _mm512_cvtpd_ps(_mm512_mul_pd(acc[2 * r + 1], s));
        _mm512_mask_storeu_ps(Y + (size_t)r * ldy, mask, _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1));
    }
}

/* The call's first M16 activation rows (a multiple of 16) packed, with
 * their 128 - za and da. */
INLINE void pack_act(const uint8_t *A, size_t a_row_size, int M16, int64_t nb, uint8_t *ap, int32_t *c1, double *da) {
    for (int m = 0; m < M16; m++) {
        const block_abq_act *a = (const block_abq_act *)(A + (size_t)m * a_row_size);
        c1[m] = 128 - a->z;
        da[m] = (double)a->d;
        uint8_t *dst = ap + ((size_t)(m / 16) * (size_t)nb) * ACT_GROUP + 64 * (m % 16);
        for (int64_t g = 0; g < nb; g++) {
            const __m512i lo = _mm512_loadu_si512(a[g].c), hi = _mm512_loadu_si512(a[g].c + 64);
            _mm512_store_si512(dst + (size_t)g * ACT_GROUP, lo);
            _mm512_store_si512(dst + (size_t)g * ACT_GROUP + ACT_GROUP / 2, hi);
        }
    }
}

/* The whole call: 16-row activation tiles on AMX. Returns the first row left
 * to the caller (0 when the scratch cannot be had). */
INLINE int gemm(int w, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size,
                int M, float *Y, size_t ldy) {
    const int64_t nb = K / LB_ABQ_G;
    const int M16 = M & ~15;
    if (M16 == 0 || nb == 0) return 0;
    const size_t act_bytes = (size_t)M16 * (size_t)nb * LB_ABQ_G, w_bytes = (size_t)nb * sizeof(wgroup);
    uint8_t *buf = lb_thread_scratch(act_bytes + w_bytes + (size_t)M16 * (sizeof(double) + sizeof(int32_t)));
    if (!buf) return 0;
    uint8_t *ap = buf;
    wgroup *wg = (wgroup *)(buf + act_bytes);
    double *da = (double *)(buf + act_bytes + w_bytes);
    int32_t *c1 = (int32_t *)(da + M16);
    pack_act(A, a_row_size, M16, nb, ap, c1, da);
    _tile_loadconfig(&abq_cfg);
    for (int nt = n0; nt < n1; nt += 16) {
        const int ne = LB_MIN(nt + 16, n1);
        const __mmask16 mask = ne - nt >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (ne - nt)) - 1);
        decode_rows(w, W, w_row_size, nt, ne, nb, wg);
        for (int m = 0; m < M16; m += 16)
            row_tile(wg, nb, ap + (size_t)(m / 16) * (size_t)nb * ACT_GROUP, c1 + m, da + m, Y + (size_t)m * ldy + nt,
                     ldy, mask);
    }
    _tile_release();
    return M16;
}

#define ABQ_CODES_AMX(name, NAME, W)                                                                             \
    LB_AMX void lb_gemm_##name##_amx(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A, \
                                     size_t a_row_size, int M, float *Y, size_t ldy) {                            \
        const int done = gemm(W, K, Wt, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                            \
        if (done < M)                                                                                            \
            lb_gemm_##name##_avx512(K, Wt, w_row_size, n0, n1, (const uint8_t *)A + (size_t)done * a_row_size,    \
                                  a_row_size, M - done, Y + (size_t)done * ldy, ldy);                             \
    }
LB_ABQ_CODES_LIST(ABQ_CODES_AMX)
#undef ABQ_CODES_AMX

#endif
