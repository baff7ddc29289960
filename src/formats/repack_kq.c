/* The 16-row interleaved layouts of the 256-weight super-block formats
 * Q2_K, CB2 and CB3 (Q2_K_16X4, CB2_16X4, CB3_16X4; layout in
 * formats/repack.h): repack / unpack of whole tensors, group to_float, the
 * 4-row Q8_K activation quantizer, and the scalar reference GEMV / GEMM that
 * every fast kernel is tested against. The reference kernels read the layout
 * bit by bit (the accessors below are its definition in code) and form the
 * same integers and the same float expressions, in the same order, as the
 * plain references lb_vec_dot_q2_K_q8_K_ref and lb_vec_dot_cb*_q8_K_ref: so
 * their results are bit-identical to those on the unpacked rows. */
#include "formats/cb.h"
#include "formats/repack.h"

#include <omp.h>

/* no FMA contraction, as the plain references (q2_k.c) */
#include "core/fp_strict.h"

enum { KR = 16 }; /* rows per group */

/* x-block offsets (formats/repack.h) */
enum {
    QS_OFF = 0,
    QH_OFF = 1024,      /* CB3 */
    Q2K_NP_OFF = 1024,  /* Q2_K scales, then mins */
    Q2K_MP_OFF = 1152,
    Q2K_D_OFF = 1280,
    Q2K_DMIN_OFF = 1312,
    CB2_META_OFF = 1024,
    CB2_D_OFF = 1216,
    CB3_META_OFF = 1536,
    CB3_D_OFF = 1728,
};

int lb_repack_is_kq(int base) { return base == LB_TYPE_Q2_K || base == LB_TYPE_CB2 || base == LB_TYPE_CB3; }

static size_t plain_bs(int base) {
    return base == LB_TYPE_Q2_K ? sizeof(block_q2_K) : base == LB_TYPE_CB2 ? sizeof(block_cb2) : sizeof(block_cb3);
}

/* ---- the layout, bit by bit ---- */

/* In the plain blocks the low 2 bits of weight w are (qs[32 (w / 128) +
 * w % 32] >> 2 ((w % 128) / 32)) & 3 (Q2_K and CB share the order) and
 * CB3's third bit is (qh[w % 32] >> (4 (w / 128) + (w % 128) / 32)) & 1. */

/* x-block positions: (byte, bit) of weight w of row r */
static inline int xq_byte(int r, int w) { return QS_OFF + 64 * (w / 16) + 4 * r + w % 4; }
static inline int xq_shift(int w) { return 2 * ((w % 16) / 4); }
static inline int xh_byte(int r, int w) { return QH_OFF + 64 * (w / 32) + 4 * r + w % 4; }
static inline int xh_shift(int w) { return 4 * ((w / 16) % 2) + (w % 16) / 4; }
/* nibble plane (NP0/NP1 or MP0/MP1 at off): sub-group j of row r */
static inline int np_byte(int off, int r, int j) { return off + 64 * (j / 8) + 4 * r + j % 4; }
static inline int np_shift(int j) { return 4 * ((j / 4) % 2); }
/* top plane of the CB fields */
static inline int tp_byte(int off, int r, int j) { return off + 4 * r + j % 4; }
static inline int tp_shift(int j) { return 2 * (j / 4); }

static inline int get_bits(const uint8_t *p, int byte, int shift, int mask) { return (p[byte] >> shift) & mask; }
static inline void put_bits(uint8_t *p, int byte, int shift, int v) { p[byte] |= (uint8_t)(v << shift); }

static int meta_off(int base) { return base == LB_TYPE_CB2 ? CB2_META_OFF : CB3_META_OFF; }
static int d_off(int base) { return base == LB_TYPE_Q2_K ? Q2K_D_OFF : base == LB_TYPE_CB2 ? CB2_D_OFF : CB3_D_OFF; }

/* Index (Q2_K: quant) of weight w of row r in an x-block. */
static inline int x_index(int base, const uint8_t *xb, int r, int w) {
    int q = get_bits(xb, xq_byte(r, w), xq_shift(w), 3);
    if (base == LB_TYPE_CB3) q |= get_bits(xb, xh_byte(r, w), xh_shift(w), 1) << 2;
    return q;
}

/* 6-bit CB field of sub-group j of row r. */
static inline int x_field(int base, const uint8_t *xb, int r, int j) {
    const int off = meta_off(base);
    return get_bits(xb, np_byte(off, r, j), np_shift(j), 15) | get_bits(xb, tp_byte(off + 128, r, j), tp_shift(j), 3) << 4;
}

static inline lb_fp16 x_fp16(const uint8_t *xb, int off, int r) {
    lb_fp16 h;
    memcpy(&h, xb + off + 2 * r, 2);
    return h;
}

/* Fast equivalents of the bit-by-bit definition above for the QS and QH
 * planes, 4 bytes at a time (repacking at load must keep up with memory):
 * the 16 weights of sub-group j are plain bytes 32 (j / 8) + 16 (j % 2) ..
 * + 15, all at bit shift s = 2 ((j % 8) / 2) (QS) or 4 (j / 8) + (j % 8) / 2
 * (QH); the plain bytes 4t .. 4t + 3 of them are the x-block bytes 0..3 of
 * row r's dword at bits 2t (QS) or 4 (j % 2) + t (QH). */
static inline uint32_t ld32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static void pack_qs(const uint8_t *qs, uint8_t *xb, int r) {
    for (int j = 0; j < 16; j++) {
        const uint8_t *src = qs + 32 * (j / 8) + 16 * (j % 2);
        const int sh = 2 * ((j % 8) / 2);
        uint32_t v = 0;
        for (int t = 0; t < 4; t++) v |= ((ld32(src + 4 * t) >> sh) & 0x03030303u) << (2 * t);
        st32(xb + QS_OFF + 64 * j + 4 * r, v);
    }
}

static void unpack_qs(const uint8_t *xb, int r, uint8_t *qs) {
    for (int j = 0; j < 16; j++) {
        uint8_t *dst = qs + 32 * (j / 8) + 16 * (j % 2);
        const int sh = 2 * ((j % 8) / 2);
        const uint32_t v = ld32(xb + QS_OFF + 64 * j + 4 * r);
        for (int t = 0; t < 4; t++) st32(dst + 4 * t, ld32(dst + 4 * t) | ((v >> (2 * t)) & 0x03030303u) << sh);
    }
}

static void pack_qh(const uint8_t *qh, uint8_t *xb, int r) {
    for (int j = 0; j < 16; j++) {
        const uint8_t *src = qh + 16 * (j % 2);
        const int sh = 4 * (j / 8) + (j % 8) / 2;
        uint32_t v = 0;
        for (int t = 0; t < 4; t++) v |= ((ld32(src + 4 * t) >> sh) & 0x01010101u) << (4 * (j % 2) + t);
        uint8_t *d = xb + QH_OFF + 64 * (j / 2) + 4 * r;
        st32(d, ld32(d) | v);
    }
}

static void unpack_qh(const uint8_t *xb, int r, uint8_t *qh) {
    for (int j = 0; j < 16; j++) {
        uint8_t *dst = qh + 16 * (j % 2);
        const int sh = 4 * (j / 8) + (j % 8) / 2;
        const uint32_t v = ld32(xb + QH_OFF + 64 * (j / 2) + 4 * r);
        for (int t = 0; t < 4; t++)
            st32(dst + 4 * t, ld32(dst + 4 * t) | ((v >> (4 * (j % 2) + t)) & 0x01010101u) << sh);
    }
}

/* 16 plain blocks (row r at rows[r]) -> one x-block. */
static void pack_xblock(int base, const uint8_t *const *rows, uint8_t *xb) {
    memset(xb, 0, KR * plain_bs(base));
    for (int r = 0; r < KR; r++) {
        const uint8_t *blk = rows[r];
        if (base == LB_TYPE_Q2_K) {
            const block_q2_K *b = (const block_q2_K *)blk;
            pack_qs(b->qs, xb, r);
            for (int j = 0; j < 16; j++) {
                put_bits(xb, np_byte(Q2K_NP_OFF, r, j), np_shift(j), b->scales[j] & 15);
                put_bits(xb, np_byte(Q2K_NP_OFF + 128, r, j), np_shift(j), b->scales[j] >> 4);
            }
            memcpy(xb + Q2K_D_OFF + 2 * r, &b->d, 2);
            memcpy(xb + Q2K_DMIN_OFF + 2 * r, &b->dmin, 2);
            continue;
        }
        /* CB2 and CB3 share meta[12] then qs[64] */
        const uint8_t *qs = blk + 12;
        pack_qs(qs, xb, r);
        if (base == LB_TYPE_CB3) pack_qh(qs + 64, xb, r);
        uint8_t f[CB_NSUB];
        lb_cb_unpack_meta(blk, f);
        const int off = meta_off(base);
        for (int j = 0; j < CB_NSUB; j++) {
            put_bits(xb, np_byte(off, r, j), np_shift(j), f[j] & 15);
            put_bits(xb, tp_byte(off + 128, r, j), tp_shift(j), f[j] >> 4);
        }
        memcpy(xb + d_off(base) + 2 * r, blk + plain_bs(base) - 2, 2);
    }
}

/* One x-block -> 16 plain blocks. */
static void unpack_xblock(int base, const uint8_t *xb, uint8_t *const *rows) {
    for (int r = 0; r < KR; r++) {
        uint8_t *blk = rows[r];
        memset(blk, 0, plain_bs(base));
        if (base == LB_TYPE_Q2_K) {
            block_q2_K *b = (block_q2_K *)blk;
            unpack_qs(xb, r, b->qs);
            for (int j = 0; j < 16; j++)
                b->scales[j] = (uint8_t)(get_bits(xb, np_byte(Q2K_NP_OFF, r, j), np_shift(j), 15) |
                                         get_bits(xb, np_byte(Q2K_NP_OFF + 128, r, j), np_shift(j), 15) << 4);
            b->d = x_fp16(xb, Q2K_D_OFF, r);
            b->dmin = x_fp16(xb, Q2K_DMIN_OFF, r);
            continue;
        }
        uint8_t *qs = blk + 12;
        unpack_qs(xb, r, qs);
        if (base == LB_TYPE_CB3) unpack_qh(xb, r, qs + 64);
        uint8_t f[CB_NSUB];
        for (int j = 0; j < CB_NSUB; j++) f[j] = (uint8_t)x_field(base, xb, r, j);
        lb_cb_pack_meta(f, blk);
        const lb_fp16 d = x_fp16(xb, d_off(base), r);
        memcpy(blk + plain_bs(base) - 2, &d, 2);
    }
}

static void kq_tensor(const lb_repack_layout *L, const void *src, void *dst, int64_t K, int64_t N, int pack) {
    const int64_t nb = K / QK_K, groups = N / KR;
    const size_t bs = plain_bs(L->base), row_size = (size_t)nb * bs, gsize = row_size * KR;
#pragma omp parallel for schedule(static) if (groups * nb > 256)
    for (int64_t g = 0; g < groups; g++) {
        const uint8_t *s = (const uint8_t *)src + (size_t)g * gsize;
        uint8_t *d = (uint8_t *)dst + (size_t)g * gsize;
        for (int64_t b = 0; b < nb; b++) {
            if (pack) {
                const uint8_t *rows[KR];
                for (int r = 0; r < KR; r++) rows[r] = s + (size_t)r * row_size + (size_t)b * bs;
                pack_xblock(L->base, rows, d + (size_t)b * KR * bs);
            } else {
                uint8_t *rows[KR];
                for (int r = 0; r < KR; r++) rows[r] = d + (size_t)r * row_size + (size_t)b * bs;
                unpack_xblock(L->base, s + (size_t)b * KR * bs, rows);
            }
        }
    }
    memcpy((uint8_t *)dst + (size_t)groups * gsize, (const uint8_t *)src + (size_t)groups * gsize,
           (size_t)(N % KR) * row_size);
}

void lb_repack_kq_tensor(const lb_repack_layout *L, const void *plain, void *packed, int64_t K, int64_t N) {
    kq_tensor(L, plain, packed, K, N, 1);
}

void lb_unpack_kq_tensor(const lb_repack_layout *L, const void *packed, void *plain, int64_t K, int64_t N) {
    kq_tensor(L, packed, plain, K, N, 0);
}

/* ---- traits ---- */

/* One group: k = 16 rows of k/16 values (anything else decodes to zeros). */
static void group_to_float(int base, const void *src, float *dst, int64_t k) {
    const int64_t K = k / KR;
    if (k % ((int64_t)QK_K * KR)) {
        for (int64_t i = 0; i < k; i++) dst[i] = 0.0f;
        return;
    }
    const size_t bs = plain_bs(base);
    const lb_type_traits *bt = lb_traits(base);
    uint8_t blocks[KR][sizeof(block_cb3)];
    uint8_t *rows[KR];
    for (int r = 0; r < KR; r++) rows[r] = blocks[r];
    for (int64_t b = 0; b < K / QK_K; b++) {
        unpack_xblock(base, (const uint8_t *)src + (size_t)b * KR * bs, rows);
        for (int r = 0; r < KR; r++) bt->to_float(blocks[r], dst + r * K + b * QK_K, QK_K);
    }
}

static void to_float_q2_K(const void *s, float *d, int64_t k) { group_to_float(LB_TYPE_Q2_K, s, d, k); }
static void to_float_cb2(const void *s, float *d, int64_t k) { group_to_float(LB_TYPE_CB2, s, d, k); }
static void to_float_cb3(const void *s, float *d, int64_t k) { group_to_float(LB_TYPE_CB3, s, d, k); }

static const lb_type_traits kq_traits[3] = {
    {"Q2_K_16X4", QK_K, sizeof(block_q2_K), 1, LB_TYPE_Q8_K, to_float_q2_K, NULL, NULL},
    {"CB2_16X4", QK_CB, sizeof(block_cb2), 1, LB_TYPE_Q8_K, to_float_cb2, NULL, NULL},
    {"CB3_16X4", QK_CB, sizeof(block_cb3), 1, LB_TYPE_Q8_K, to_float_cb3, NULL, NULL},
};

const lb_type_traits *lb_repack_kq_traits(int type) {
    switch (type) {
    case LB_TYPE_Q2_K_16X4: return &kq_traits[0];
    case LB_TYPE_CB2_16X4: return &kq_traits[1];
    case LB_TYPE_CB3_16X4: return &kq_traits[2];
    default: return NULL;
    }
}

/* ---- activations ---- */

void lb_q8_K_bsum_forms(const int16_t *bsums, int32_t b64[16], int16_t bsp[16], int32_t *b128) {
    int32_t all = 0;
    for (int j = 0; j < 16; j++) b64[j] = -64 * bsums[j], all += bsums[j];
    *b128 = -128 * all;
    for (int p = 0; p < 8; p++) {
        const int lo = p + 4 * (p / 4);
        bsp[2 * p] = (int16_t)(16 * bsums[lo]);
        bsp[2 * p + 1] = bsums[lo + 4];
    }
}

void lb_quantize_q8_Kx4_ref(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_Kx4 *y = vy;
    block_q8_K blk;
    for (int64_t b = 0; b < k / QK_K; b++)
        for (int m = 0; m < 4; m++) {
            lb_quantize_row_q8_K_ref(x + m * ldx + b * QK_K, &blk, QK_K);
            y[b].d[m] = blk.d;
            memcpy(y[b].qs[m], blk.qs, QK_K);
            lb_q8_K_bsum_forms(blk.bsums, y[b].b64[m], y[b].bsp[m], &y[b].b128[m]);
        }
}

/* bf16 of a small integer (|v| < 256: exact, the top half of its float). */
static uint16_t bf16_of_int(int v) {
    const float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

void lb_q8_K_bsum_digits(const int16_t *bsums, uint16_t bsd[32]) {
    for (int j = 0; j < 16; j++) {
        const int b = bsums[j];
        const int h = b >= 0 ? b / 64 : -((-b + 63) / 64); /* floor(b / 64), so 0 <= b - 64 h < 64 */
        bsd[2 * j] = bf16_of_int(h);
        bsd[2 * j + 1] = bf16_of_int(b - 64 * h);
    }
}

void lb_quantize_q8_Kx16_ref(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_Kx16 *y = vy;
    block_q8_K blk;
    for (int64_t b = 0; b < k / QK_K; b++)
        for (int m = 0; m < 16; m++) {
            lb_quantize_row_q8_K_ref(x + m * ldx + b * QK_K, &blk, QK_K);
            y[b].d[m] = blk.d;
            memcpy(y[b].qs[m], blk.qs, QK_K);
            lb_q8_K_bsum_digits(blk.bsums, y[b].bsd[m]);
        }
}

/* ---- reference kernels ---- */

/* One activation block as the plain references see it. */
typedef struct {
    float d;
    const int8_t *qs;
    int16_t bsums[16];
} act_blk;

static inline act_blk act_plain(const void *row, int64_t b) {
    const block_q8_K *a = (const block_q8_K *)row + b;
    act_blk o = {a->d, a->qs, {0}};
    memcpy(o.bsums, a->bsums, sizeof o.bsums);
    return o;
}

static inline act_blk act_x4(const void *group, int64_t b, int m) {
    const lb_block_q8_Kx4 *a = (const lb_block_q8_Kx4 *)group + b;
    act_blk o = {a->d[m], a->qs[m], {0}};
    for (int j = 0; j < 16; j++) o.bsums[j] = (int16_t)(a->b64[m][j] / -64);
    return o;
}

/* Row r of the group at xg (nb x-blocks) against nb activation blocks. */
static float dot_ref(int base, const uint8_t *xg, int r, int64_t nb, const void *A, int m, int x4) {
    const size_t xbs = KR * plain_bs(base);
    const lb_cb_set *set = base == LB_TYPE_Q2_K ? NULL : lb_cb_current(base);
    float sumf = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = xg + (size_t)b * xbs;
        const act_blk a = x4 ? act_x4(A, b, m) : act_plain(A, b);
        if (base == LB_TYPE_Q2_K) {
            /* lb_vec_dot_q2_K_q8_K_ref */
            int summs = 0;
            for (int j = 0; j < 16; j++) summs += a.bsums[j] * get_bits(xb, np_byte(Q2K_MP_OFF, r, j), np_shift(j), 15);
            const float dall = a.d * lb_fp16_to_f32(x_fp16(xb, Q2K_D_OFF, r));
            const float dmin = a.d * lb_fp16_to_f32(x_fp16(xb, Q2K_DMIN_OFF, r));
            int isum = 0;
            for (int j = 0; j < 16; j++) {
                const int d = get_bits(xb, np_byte(Q2K_NP_OFF, r, j), np_shift(j), 15);
                int isuml = 0;
                for (int w = 16 * j; w < 16 * j + 16; w++) isuml += a.qs[w] * x_index(base, xb, r, w);
                isum += d * isuml;
            }
            sumf += dall * (float)isum - dmin * (float)summs;
        } else {
            /* lb_vec_dot_cb*_q8_K_ref */
            const int mask = set->books.count - 1;
            int32_t isum = 0;
            for (int j = 0; j < CB_NSUB; j++) {
                const int f = x_field(base, xb, r, j);
                const int8_t *book = set->books.v[f & mask];
                int32_t sub = 0;
                for (int w = CB_SUB * j; w < CB_SUB * (j + 1); w++) sub += book[x_index(base, xb, r, w)] * a.qs[w];
                isum += ((f >> set->cbits) + 1) * sub;
            }
            sumf += (lb_fp16_to_f32(x_fp16(xb, d_off(base), r)) * a.d) * (float)isum;
        }
    }
    return sumf;
}

static void ref_kernel(int base, int x4, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                       size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / QK_K;
    for (int n = n0; n < n1; n++) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)(n / KR) * KR * w_row_size;
        for (int m = 0; m < M; m++) {
            const void *a = (const char *)A + (size_t)(x4 ? m / 4 : m) * a_row_size;
            Y[(size_t)m * ldy + n] = dot_ref(base, xg, n % KR, nb, a, m % 4, x4);
        }
    }
}

#define KQ_REF_FNS(w, BASE)                                                                                  \
    void lb_gemv_##w##x16_q8_K_16x4_ref(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A,  \
                                        size_t ars, int M, float *Y, size_t ldy) {                           \
        ref_kernel(BASE, 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                           \
    }                                                                                                        \
    void lb_gemm_##w##x16_q8_Kx4_16x4_ref(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, \
                                          size_t ars, int M, float *Y, size_t ldy) {                         \
        ref_kernel(BASE, 1, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                           \
    }
KQ_REF_FNS(q2_K, LB_TYPE_Q2_K)
KQ_REF_FNS(cb2, LB_TYPE_CB2)
KQ_REF_FNS(cb3, LB_TYPE_CB3)
