/* GPTQ rounding onto the grids of llama.cpp's types and ours (formats/grid.h).
 *
 * Every supported type decodes one weight as
 *     value = a * L + b,   L = code - off (uniform) or L = table[code]
 * with a and b read from the block's fixed parameters (scales, mins, the
 * chosen codebook). A cell describes that for one column; round() picks the
 * code whose value is nearest to x and computes the value with the same
 * float operations as the type's dequantizer, so what GPTQ feeds back is
 * exactly what a reader of the file will see (tests/test_gptq.c checks it
 * against to_float for every type). */
#include <math.h>

#include "formats/bcq.h"
#include "formats/cb.h"
#include "formats/gq.h"
#include "formats/grid.h"
#include "formats/legacy.h"

/* value = a * L + b is also how the dequantizers order it; no fused
 * multiply-add, or the two could differ in the last bit */
#include "core/fp_strict.h"

typedef struct {
    float a, b;
    int n;              /* codes 0..n-1 */
    int off;            /* uniform: L = code - off */
    const int8_t *tab;  /* non-uniform: L = tab[code] */
} cell;

static float cell_value(const cell *c, int code) {
    const int L = c->tab ? c->tab[code] : code - c->off;
    return c->a * (float)L + c->b;
}

/* The code whose value is nearest x (ties: the lower code). */
static int cell_nearest(const cell *c, float x) {
    int best = 0;
    if (c->tab || c->n <= 8) {
        float bd = INFINITY;
        for (int q = 0; q < c->n; q++) {
            const float d = fabsf(cell_value(c, q) - x);
            if (d < bd) bd = d, best = q;
        }
        return best;
    }
    if (c->a == 0.0f || !isfinite(c->a)) return LB_MAX(0, LB_MIN(c->n - 1, c->off));
    const float t = (x - c->b) / c->a + (float)c->off;
    const int q0 = t < 0.0f ? 0 : t > (float)(c->n - 1) ? c->n - 1 : (int)lrintf(t);
    /* the division rounds: settle between the neighbours on exact values */
    float bd = INFINITY;
    for (int q = LB_MAX(0, q0 - 1); q <= LB_MIN(c->n - 1, q0 + 1); q++) {
        const float d = fabsf(cell_value(c, q) - x);
        if (d < bd) bd = d, best = q;
    }
    return best;
}

static inline void set_nibble(uint8_t *qs, int col, int half, int code) {
    /* 32-weight blocks: weights 0..15 in the low nibbles, 16..31 in the high */
    const int j = col % half, sh = col < half ? 0 : 4;
    qs[j] = (uint8_t)((qs[j] & ~(0xF << sh)) | (code << sh));
}
static inline void set_bit(uint8_t *bits, int i, int v) {
    bits[i / 8] = (uint8_t)((bits[i / 8] & ~(1 << (i % 8))) | (v << (i % 8)));
}

/* ---- 32-weight blocks ---- */

static void q8_0_cell(void *blk, int col, cell *c) {
    (void)col;
    *c = (cell){lb_fp16_to_f32(((block_q8_0 *)blk)->d), 0.0f, 255, 127, NULL}; /* -127..127: ggml's range */
}
static void q8_0_set(void *blk, int col, int code) { ((block_q8_0 *)blk)->qs[col] = (int8_t)(code - 127); }

static void q4_0_cell(void *blk, int col, cell *c) {
    (void)col;
    *c = (cell){lb_fp16_to_f32(((block_q4_0 *)blk)->d), 0.0f, 16, 8, NULL};
}
static void q4_0_set(void *blk, int col, int code) { set_nibble(((block_q4_0 *)blk)->qs, col, 16, code); }

static void q4_1_cell(void *blk, int col, cell *c) {
    (void)col;
    const block_q4_1 *b = blk;
    *c = (cell){lb_fp16_to_f32(b->d), lb_fp16_to_f32(b->m), 16, 0, NULL};
}
static void q4_1_set(void *blk, int col, int code) { set_nibble(((block_q4_1 *)blk)->qs, col, 16, code); }

static void q5_0_cell(void *blk, int col, cell *c) {
    (void)col;
    *c = (cell){lb_fp16_to_f32(((block_q5_0 *)blk)->d), 0.0f, 32, 16, NULL};
}
static void q5_0_set(void *blk, int col, int code) {
    block_q5_0 *b = blk;
    set_nibble(b->qs, col, 16, code & 0xF);
    set_bit(b->qh, col, code >> 4);
}

static void q5_1_cell(void *blk, int col, cell *c) {
    (void)col;
    const block_q5_1 *b = blk;
    *c = (cell){lb_fp16_to_f32(b->d), lb_fp16_to_f32(b->m), 32, 0, NULL};
}
static void q5_1_set(void *blk, int col, int code) {
    block_q5_1 *b = blk;
    set_nibble(b->qs, col, 16, code & 0xF);
    set_bit(b->qh, col, code >> 4);
}

static void iq4_nl_cell(void *blk, int col, cell *c) {
    (void)col;
    *c = (cell){lb_fp16_to_f32(((block_iq4_nl *)blk)->d), 0.0f, 16, 0, lb_kvalues_iq4nl};
}
static void iq4_nl_set(void *blk, int col, int code) { set_nibble(((block_iq4_nl *)blk)->qs, col, 16, code); }

/* ---- 256-weight super-blocks ---- */

/* Q2_K, Q3_K, CB2, CB3: weight 128n + 32t + l has its low two bits at bits
 * 2t of qs[32n + l]; Q3_K's and CB3's third bit is bit 4n + t of (h)mask[l] */
static inline void q2_set(uint8_t *qs, int col, int v) {
    uint8_t *p = &qs[32 * (col / 128) + col % 32];
    const int sh = 2 * ((col % 128) / 32);
    *p = (uint8_t)((*p & ~(3 << sh)) | (v << sh));
}
static inline int hbit_index(int col) { return 4 * (col / 128) + (col % 128) / 32; }

static void q2_K_cell(void *blk, int col, cell *c) {
    const block_q2_K *b = blk;
    const uint8_t sc = b->scales[col / 16];
    const float dl = lb_fp16_to_f32(b->d) * (float)(sc & 0xF), ml = lb_fp16_to_f32(b->dmin) * (float)(sc >> 4);
    *c = (cell){dl, -ml, 4, 0, NULL};
}
static void q2_K_set(void *blk, int col, int code) { q2_set(((block_q2_K *)blk)->qs, col, code); }

static void q3_K_cell(void *blk, int col, cell *c) {
    const block_q3_K *b = blk;
    const int j = col / 16;
    const int low = j < 8 ? b->scales[j] & 0xF : b->scales[j - 8] >> 4;
    const int sc = low | (((b->scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
    *c = (cell){lb_fp16_to_f32(b->d) * (float)(sc - 32), 0.0f, 8, 4, NULL};
}
static void q3_K_set(void *blk, int col, int code) {
    block_q3_K *b = blk;
    q2_set(b->qs, col, code & 3);
    const int bit = hbit_index(col);
    b->hmask[col % 32] = (uint8_t)((b->hmask[col % 32] & ~(1 << bit)) | ((code >> 2) << bit));
}

/* Q4_K, Q5_K: weight 64c + 32h + l is nibble h of qs[32c + l], sub-block 2c + h;
 * Q5_K's fifth bit is bit 2c + h of qh[l] */
static void k4_cell(const uint8_t *scales, lb_fp16 d, lb_fp16 dmin, int col, int n, cell *c) {
    uint8_t sc, m;
    lb_get_scale_min_k4(col / 32, scales, &sc, &m);
    const float d1 = lb_fp16_to_f32(d) * (float)sc, m1 = lb_fp16_to_f32(dmin) * (float)m;
    *c = (cell){d1, -m1, n, 0, NULL};
}
static inline void k4_set_nibble(uint8_t *qs, int col, int v) {
    uint8_t *p = &qs[32 * (col / 64) + col % 32];
    const int sh = (col % 64) < 32 ? 0 : 4;
    *p = (uint8_t)((*p & ~(0xF << sh)) | (v << sh));
}
static void q4_K_cell(void *blk, int col, cell *c) {
    const block_q4_K *b = blk;
    k4_cell(b->scales, b->d, b->dmin, col, 16, c);
}
static void q4_K_set(void *blk, int col, int code) { k4_set_nibble(((block_q4_K *)blk)->qs, col, code); }
static void q5_K_cell(void *blk, int col, cell *c) {
    const block_q5_K *b = blk;
    k4_cell(b->scales, b->d, b->dmin, col, 32, c);
}
static void q5_K_set(void *blk, int col, int code) {
    block_q5_K *b = blk;
    k4_set_nibble(b->qs, col, code & 0xF);
    const int bit = col / 32; /* 2c + h */
    b->qh[col % 32] = (uint8_t)((b->qh[col % 32] & ~(1 << bit)) | ((code >> 4) << bit));
}

/* Q6_K: weight 128n + 32r + l: low nibble of ql[64n + l + 32(r&1)], nibble
 * r/2; high two bits at 2r of qh[32n + l]; scale 8n + l/16 + 2r */
static void q6_K_cell(void *blk, int col, cell *c) {
    const block_q6_K *b = blk;
    const int n = col / 128, r = (col % 128) / 32, l = col % 32;
    *c = (cell){lb_fp16_to_f32(b->d) * (float)b->scales[8 * n + l / 16 + 2 * r], 0.0f, 64, 32, NULL};
}
static void q6_K_set(void *blk, int col, int code) {
    block_q6_K *b = blk;
    const int n = col / 128, r = (col % 128) / 32, l = col % 32;
    uint8_t *ql = &b->ql[64 * n + l + 32 * (r & 1)], *qh = &b->qh[32 * n + l];
    const int sh = 4 * (r / 2);
    *ql = (uint8_t)((*ql & ~(0xF << sh)) | ((code & 0xF) << sh));
    *qh = (uint8_t)((*qh & ~(3 << (2 * r))) | ((code >> 4) << (2 * r)));
}

/* IQ4_XS: 32-weight groups with a 6-bit scale each, IQ4_NL's codebook */
static void iq4_xs_cell(void *blk, int col, cell *c) {
    const block_iq4_xs *b = blk;
    const int ib = col / 32;
    const int ls = ((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((b->scales_h >> 2 * ib) & 3) << 4);
    *c = (cell){lb_fp16_to_f32(b->d) * (float)(ls - 32), 0.0f, 16, 0, lb_kvalues_iq4nl};
}
static void iq4_xs_set(void *blk, int col, int code) {
    set_nibble(((block_iq4_xs *)blk)->qs + 16 * (col / 32), col % 32, 16, code);
}

/* CB2 / CB3: the sub-group's book and scale from its field */
static void cb_cell(int type, const uint8_t *meta, lb_fp16 d, int col, cell *c) {
    const lb_cb_set *set = lb_cb_current(type);
    uint8_t f[CB_NSUB];
    lb_cb_unpack_meta(meta, f);
    const int j = col / CB_SUB;
    const float scale = lb_fp16_to_f32(d) * (float)((f[j] >> set->cbits) + 1);
    *c = (cell){scale, 0.0f, set->books.k, 0, set->books.v[f[j] & (set->books.count - 1)]};
}
static void cb2_cell(void *blk, int col, cell *c) {
    const block_cb2 *b = blk;
    cb_cell(LB_TYPE_CB2, b->meta, b->d, col, c);
}
static void cb2_set(void *blk, int col, int code) { q2_set(((block_cb2 *)blk)->qs, col, code); }
static void cb3_cell(void *blk, int col, cell *c) {
    const block_cb3 *b = blk;
    cb_cell(LB_TYPE_CB3, b->meta, b->d, col, c);
}
static void cb3_set(void *blk, int col, int code) {
    block_cb3 *b = blk;
    q2_set(b->qs, col, code & 3);
    const int bit = hbit_index(col);
    b->qh[col % 32] = (uint8_t)((b->qh[col % 32] & ~(1 << bit)) | ((code >> 2) << bit));
}

/* ---- fix and round per type ---- */

/* The type's own quantizer (with the importance where it takes one). */
static void fix_with(int type, void *blk, const float *x, const float *imp) {
    const lb_type_traits *t = lb_traits(type);
    if (!imp || !lb_quantize_row_weighted(type, x, blk, t->blck, imp)) t->from_float(x, blk, t->blck);
}

#define GRID_FNS(T, ID)                                                                        \
    static void T##_fix(void *blk, int col, const float *x, const float *imp) {                \
        (void)col;                                                                             \
        fix_with(ID, blk, x, imp);                                                             \
    }                                                                                          \
    static float T##_round(void *blk, int col, float x) {                                      \
        cell c;                                                                                \
        T##_cell(blk, col, &c);                                                                \
        const int q = cell_nearest(&c, x);                                                     \
        T##_set(blk, col, q);                                                                  \
        return cell_value(&c, q);                                                              \
    }
#define GRID(T, ID, W) \
    GRID_FNS(T, ID)    \
    static const lb_grid T##_grid = {W, T##_fix, T##_round, NULL, NULL};

/* The 32-weight types with one scale d and no offset (value = d * L):
 * their grids also have the scale refit's hooks (model/gptq_refit.h) */
static inline int nibble_of(const uint8_t *qs, int col) { return col < 16 ? qs[col] & 0xF : qs[col - 16] >> 4; }
static int q8_0_get(const void *blk, int col) { return ((const block_q8_0 *)blk)->qs[col] + 127; }
static int q4_0_get(const void *blk, int col) { return nibble_of(((const block_q4_0 *)blk)->qs, col); }
static int q5_0_get(const void *blk, int col) {
    const block_q5_0 *b = blk;
    return nibble_of(b->qs, col) | ((b->qh[col / 8] >> (col % 8)) & 1) << 4;
}
static int iq4_nl_get(const void *blk, int col) { return nibble_of(((const block_iq4_nl *)blk)->qs, col); }

#define GRID_D(T, ID, BLOCK)                                                                   \
    GRID_FNS(T, ID)                                                                            \
    static float T##_codes(const void *blk, int col, float *c) {                               \
        cell ce;                                                                               \
        T##_cell((void *)blk, col, &ce);                                                       \
        for (int j = 0; j < 32; j++) {                                                         \
            const int q = T##_get(blk, j);                                                     \
            c[j] = (float)(ce.tab ? ce.tab[q] : q - ce.off);                                   \
        }                                                                                      \
        return ce.a;                                                                           \
    }                                                                                          \
    static float T##_set_scale(void *blk, int col, float s) {                                  \
        (void)col;                                                                             \
        ((BLOCK *)blk)->d = lb_f32_to_fp16(s);                                                 \
        return lb_fp16_to_f32(((BLOCK *)blk)->d);                                              \
    }                                                                                          \
    static const lb_grid T##_grid = {32, T##_fix, T##_round, T##_codes, T##_set_scale};

GRID_D(q8_0, LB_TYPE_Q8_0, block_q8_0)
GRID_D(q4_0, LB_TYPE_Q4_0, block_q4_0)
GRID(q4_1, LB_TYPE_Q4_1, 32)
GRID_D(q5_0, LB_TYPE_Q5_0, block_q5_0)
GRID(q5_1, LB_TYPE_Q5_1, 32)
GRID_D(iq4_nl, LB_TYPE_IQ4_NL, block_iq4_nl)
GRID(q2_K, LB_TYPE_Q2_K, 256)
GRID(q3_K, LB_TYPE_Q3_K, 256)
GRID(q4_K, LB_TYPE_Q4_K, 256)
GRID(q5_K, LB_TYPE_Q5_K, 256)
GRID(q6_K, LB_TYPE_Q6_K, 256)
GRID(iq4_xs, LB_TYPE_IQ4_XS, 256)
GRID(cb2, LB_TYPE_CB2, 256)
GRID(cb3, LB_TYPE_CB3, 256)

const lb_grid *lb_grid_get(int type) {
    switch (type) {
    case LB_TYPE_Q8_0: return &q8_0_grid;
    case LB_TYPE_Q4_0: return &q4_0_grid;
    case LB_TYPE_Q4_1: return &q4_1_grid;
    case LB_TYPE_Q5_0: return &q5_0_grid;
    case LB_TYPE_Q5_1: return &q5_1_grid;
    case LB_TYPE_IQ4_NL: return &iq4_nl_grid;
    case LB_TYPE_Q2_K: return &q2_K_grid;
    case LB_TYPE_Q3_K: return &q3_K_grid;
    case LB_TYPE_Q4_K: return &q4_K_grid;
    case LB_TYPE_Q5_K: return &q5_K_grid;
    case LB_TYPE_Q6_K: return &q6_K_grid;
    case LB_TYPE_IQ4_XS: return &iq4_xs_grid;
    case LB_TYPE_CB2: return &cb2_grid;
    case LB_TYPE_CB3: return &cb3_grid;
    default: return lb_gq_grid(type) ? lb_gq_grid(type) : lb_bcq_grid(type); /* formats/bcq.h */
    }
}

const lb_grid *lb_grid_get_sym(int type) { return lb_gq_grid_sym(type); }
