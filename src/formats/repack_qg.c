/* The GQ*_QG layouts of formats/repack_qg.h: the code positions of the
 * re-encoded words, repack / unpack of whole tensors, group to_float and
 * the traits. The scalar reference GEMV (kernels/qigen.c) unpacks rows and
 * calls the plain reference dot. */
#include "formats/repack_qg.h"

#include <omp.h>
#include <stdlib.h>

/* Where code j (0..127) of a row's block lives in the re-encoded words:
 * `n` bits at word w, shift sh; 3-bit weights 24..31 of a 32-weight triple
 * keep their third bit apart (word w2, shift sh2). */
typedef struct {
    int w, sh, n, w2, sh2;
} code_pos;

static code_pos pos_of(int bits, int j) {
    code_pos p = {0, 0, bits, -1, 0};
    if (bits == 4) {
        const int i = j % 8;
        p.w = j / 8, p.sh = i < 4 ? 8 * i : 8 * (i - 4) + 4;
    } else if (bits == 2) {
        const int i = j % 16;
        p.w = j / 16, p.sh = 8 * (i % 4) + 2 * (i / 4);
    } else {
        const int t = j / 32, i = j % 32;
        if (i < 24) {
            p.w = 3 * t + i / 8, p.sh = 8 * (i % 4) + 3 * ((i % 8) / 4);
        } else {
            const int k = i - 24;
            p.w = 3 * t + k / 4, p.sh = 8 * (k % 4) + 6, p.n = 2;
            p.w2 = 3 * t + 2, p.sh2 = 8 * (k % 4) + 6 + k / 4;
        }
    }
    return p;
}

static inline uint32_t ld32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Word c of row r in an x-block */
static inline const uint8_t *word_at(const uint8_t *xb, int r, int c) { return xb + 64 * c + 4 * r; }

int lb_qg_get_code(const uint8_t *xb, int bits, int r, int j) {
    const code_pos p = pos_of(bits, j);
    int q = (int)((ld32(word_at(xb, r, p.w)) >> p.sh) & ((1u << p.n) - 1));
    if (p.w2 >= 0) q |= (int)((ld32(word_at(xb, r, p.w2)) >> p.sh2) & 1u) << 2;
    return q;
}

/* row's plain block -> row r of the x-block, and back */
static void put_row(int bits, int group, const uint8_t *blk, uint8_t *xb, int r) {
    const int G = QK_GQ / group, pad = LB_GQ_SIZE(bits, group) - (16 * bits + 3 * G);
    uint32_t w[16] = {0};
    for (int j = 0; j < QK_GQ; j++) {
        const code_pos p = pos_of(bits, j);
        const uint32_t q = (uint32_t)lb_gq_get_code(blk, bits, j);
        w[p.w] |= (q & ((1u << p.n) - 1)) << p.sh;
        if (p.w2 >= 0) w[p.w2] |= ((q >> 2) & 1u) << p.sh2;
    }
    for (int c = 0; c < 4 * bits; c++) st32(xb + 64 * c + 4 * r, w[c]);
    for (int j = 0; j < G; j++) {
        memcpy(xb + LB_QG_S_OFF(bits) + 32 * j + 2 * r, blk + LB_GQ_S_OFF(bits) + 2 * j, 2);
        xb[LB_QG_Z_OFF(bits, group) + 16 * j + r] = blk[LB_GQ_Z_OFF(bits, group) + j];
    }
    memcpy(xb + LB_QG_P_OFF(bits, group) + pad * r, blk + 16 * bits + 3 * G, (size_t)pad);
}

static void get_row(int bits, int group, const uint8_t *xb, int r, uint8_t *blk) {
    const int G = QK_GQ / group, pad = LB_GQ_SIZE(bits, group) - (16 * bits + 3 * G);
    memset(blk, 0, 16 * (size_t)bits);
    for (int j = 0; j < QK_GQ; j++) lb_gq_set_code(blk, bits, j, lb_qg_get_code(xb, bits, r, j));
    for (int j = 0; j < G; j++) {
        memcpy(blk + LB_GQ_S_OFF(bits) + 2 * j, xb + LB_QG_S_OFF(bits) + 32 * j + 2 * r, 2);
        blk[LB_GQ_Z_OFF(bits, group) + j] = xb[LB_QG_Z_OFF(bits, group) + 16 * j + r];
    }
    memcpy(blk + 16 * bits + 3 * G, xb + LB_QG_P_OFF(bits, group) + pad * r, (size_t)pad);
}

int lb_repack_is_qg(int base) { return lb_gq_bits(base) > 0; }

int lb_qg_type_of(int gq_type) { return lb_gq_bits(gq_type) ? gq_type - LB_GQ_FIRST + LB_TYPE_GQ4_G128_QG : -1; }

int lb_gq_type_of_qg(int qg_type) {
    return qg_type >= LB_TYPE_GQ4_G128_QG && qg_type <= LB_TYPE_GQ2_G16_QG ? qg_type - LB_TYPE_GQ4_G128_QG + LB_GQ_FIRST
                                                                          : -1;
}
static_assert(LB_TYPE_GQ2_G16_QG - LB_TYPE_GQ4_G128_QG == LB_GQ_LAST - LB_GQ_FIRST, "one _QG id per GQ type, in order");

static void qg_tensor(int base, const void *src, void *dst, int64_t K, int64_t N, int pack) {
    const int bits = lb_gq_bits(base), group = lb_gq_group(base);
    const size_t bs = LB_GQ_SIZE(bits, group), xbs = LB_QG_XBS(bits, group);
    const int64_t nb = K / QK_GQ, groups = N / LB_QG_ROWS;
    const size_t row_size = (size_t)nb * bs, gsize = row_size * LB_QG_ROWS;
#pragma omp parallel for schedule(static) if (groups * nb > 256)
    for (int64_t gi = 0; gi < groups; gi++) {
        const uint8_t *s = (const uint8_t *)src + (size_t)gi * gsize;
        uint8_t *d = (uint8_t *)dst + (size_t)gi * gsize;
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < LB_QG_ROWS; r++) {
                if (pack) put_row(bits, group, s + (size_t)r * row_size + (size_t)b * bs, d + (size_t)b * xbs, r);
                else get_row(bits, group, s + (size_t)b * xbs, r, d + (size_t)r * row_size + (size_t)b * bs);
            }
    }
    memcpy((uint8_t *)dst + (size_t)groups * gsize, (const uint8_t *)src + (size_t)groups * gsize,
           (size_t)(N % LB_QG_ROWS) * row_size);
}

void lb_repack_qg_tensor(const lb_repack_layout *L, const void *plain, void *packed, int64_t K, int64_t N) {
    if (L && lb_repack_is_qg(L->base)) qg_tensor(L->base, plain, packed, K, N, 1);
}

void lb_unpack_qg_tensor(const lb_repack_layout *L, const void *packed, void *plain, int64_t K, int64_t N) {
    if (L && lb_repack_is_qg(L->base)) qg_tensor(L->base, packed, plain, K, N, 0);
}

/* ---- traits ---- */

/* One group: k = 16 rows of k / 16 values, w = s (q - z) as the plain
 * dequantization computes it (anything else decodes to zeros). */
static void group_to_float(int base, const void *src, float *dst, int64_t k) {
    const int bits = lb_gq_bits(base), group = lb_gq_group(base);
    const int64_t K = k / LB_QG_ROWS;
    if (k % (LB_QG_ROWS * QK_GQ)) {
        for (int64_t i = 0; i < k; i++) dst[i] = 0.0f;
        return;
    }
    for (int64_t b = 0; b < K / QK_GQ; b++) {
        const uint8_t *xb = (const uint8_t *)src + (size_t)b * LB_QG_XBS(bits, group);
        for (int r = 0; r < LB_QG_ROWS; r++)
            for (int j = 0; j < QK_GQ; j++) {
                const int gi = j / group;
                lb_fp16 h;
                memcpy(&h, xb + LB_QG_S_OFF(bits) + 32 * gi + 2 * r, 2);
                const int z = xb[LB_QG_Z_OFF(bits, group) + 16 * gi + r];
                dst[r * K + b * QK_GQ + j] = lb_fp16_to_f32(h) * (float)(lb_qg_get_code(xb, bits, r, j) - z);
            }
    }
}

#define QG_TO_FLOAT(name, NAME, B, G) \
    static void to_float_##name(const void *s, float *d, int64_t k) { group_to_float(LB_TYPE_##NAME, s, d, k); }
LB_GQ_LIST(QG_TO_FLOAT)
#undef QG_TO_FLOAT

static const lb_type_traits qg_traits[] = {
#define QG_TRAITS(name, NAME, B, G) {#NAME "_QG", QK_GQ, LB_GQ_SIZE(B, G), 1, LB_TYPE_Q8_0, to_float_##name, NULL, NULL},
    LB_GQ_LIST(QG_TRAITS)
#undef QG_TRAITS
};

const lb_type_traits *lb_repack_qg_traits(int type) {
    const int base = lb_gq_type_of_qg(type);
    return base < 0 ? NULL : &qg_traits[base - LB_GQ_FIRST];
}
