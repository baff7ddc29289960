/* The interleaved layouts (formats/repack.h): their traits, repack / unpack
 * of whole tensors, the 4-row activation quantizer and the scalar reference
 * GEMV / GEMM every fast kernel is tested against. The reference kernels
 * decode the layout byte by byte and sum in the plain reference's order, so
 * they reproduce lb_vec_dot_*_ref on the unpacked rows bit for bit. */
#include "formats/repack.h"

#include <omp.h>

#include "formats/repack_kx.h"
#include "formats/repack_qg.h"
#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/mxfp4.h"

static const lb_repack_layout layouts[] = {
    {LB_TYPE_Q4_0_4X4, LB_TYPE_Q4_0, 4, 4},     {LB_TYPE_Q4_0_4X8, LB_TYPE_Q4_0, 4, 8},
    {LB_TYPE_Q4_0_8X8, LB_TYPE_Q4_0, 8, 8},     {LB_TYPE_IQ4_NL_4X4, LB_TYPE_IQ4_NL, 4, 4},
    {LB_TYPE_IQ4_NL_4X8, LB_TYPE_IQ4_NL, 4, 8}, {LB_TYPE_IQ4_NL_8X8, LB_TYPE_IQ4_NL, 8, 8},
    {LB_TYPE_Q8_0_4X4, LB_TYPE_Q8_0, 4, 4},     {LB_TYPE_Q8_0_4X8, LB_TYPE_Q8_0, 4, 8},
    {LB_TYPE_Q8_0_8X8, LB_TYPE_Q8_0, 8, 8},
    /* gpt-oss's MXFP4 as loaded (formats/mxfp4.h): IQ4_NL's layouts */
    {LB_TYPE_MXFP4_NL_4X4, LB_TYPE_MXFP4_NL, 4, 4}, {LB_TYPE_MXFP4_NL_4X8, LB_TYPE_MXFP4_NL, 4, 8},
    {LB_TYPE_MXFP4_NL_8X8, LB_TYPE_MXFP4_NL, 8, 8},
    /* super-block formats, 16 rows (formats/repack_kq.c); keep these last */
    {LB_TYPE_Q2_K_16X4, LB_TYPE_Q2_K, 16, 4},   {LB_TYPE_CB2_16X4, LB_TYPE_CB2, 16, 4},
    {LB_TYPE_CB3_16X4, LB_TYPE_CB3, 16, 4},
    /* the other K-quant mix formats, 16 rows (formats/repack_kx.c) */
    {LB_TYPE_Q3_K_16X4, LB_TYPE_Q3_K, 16, 4},   {LB_TYPE_Q4_K_16X4, LB_TYPE_Q4_K, 16, 4},
    {LB_TYPE_Q5_K_16X4, LB_TYPE_Q5_K, 16, 4},   {LB_TYPE_Q6_K_16X4, LB_TYPE_Q6_K, 16, 4},
    {LB_TYPE_IQ4_XS_16X4, LB_TYPE_IQ4_XS, 16, 4}, {LB_TYPE_Q4_1_16X4, LB_TYPE_Q4_1, 16, 4},
    {LB_TYPE_Q5_0_16X4, LB_TYPE_Q5_0, 16, 4},   {LB_TYPE_Q5_1_16X4, LB_TYPE_Q5_1, 16, 4},
    /* read only, after Q6_K_16X4 so that lb_repack_find picks that one */
    {LB_TYPE_Q6_K_16X4_V1, LB_TYPE_Q6_K, 16, 4},
    /* the GQ types for the QIGen kernels, 16 rows of 32-bit words (formats/repack_qg.c) */
#define QG_LAYOUT(name, NAME, B, G) {LB_TYPE_##NAME##_QG, LB_TYPE_##NAME, 16, 4},
    LB_GQ_LIST(QG_LAYOUT)
#undef QG_LAYOUT
    /* the BCQ types for the table-lookup kernels, 16 rows of plane bytes (formats/bcq_lut.c) */
#define BCQ_LAYOUT(name, NAME, Q, G) {LB_TYPE_##NAME##_LUT, LB_TYPE_##NAME, LB_BCQ_ROWS, 1},
    LB_BCQ_LIST(BCQ_LAYOUT)
#undef BCQ_LAYOUT
};
enum { N_LAYOUTS = sizeof layouts / sizeof layouts[0] };

const lb_repack_layout *lb_repack_layout_of(int type) {
    for (int i = 0; i < N_LAYOUTS; i++)
        if (layouts[i].type == type) return &layouts[i];
    return NULL;
}

int lb_repack_find(int base, int rows, int chunk) {
    for (int i = 0; i < N_LAYOUTS; i++)
        if (layouts[i].base == base && layouts[i].rows == rows && layouts[i].chunk == chunk)
            return layouts[i].type;
    return -1;
}

int lb_type_base(int type) {
    const lb_repack_layout *L = lb_repack_layout_of(type);
    if (!L && lb_abq_plain_of_codes(type) >= 0) return lb_abq_plain_of_codes(type); /* rows of their own size */
    if (lb_abq_codes_of_x16(type) >= 0) return lb_abq_codes_of_x16(type); /* 16 rows interleaved */
    return L ? L->base : type;
}

int lb_type_rows(int type) {
    if (type == LB_TYPE_MX || lb_abq_codes_of_x16(type) >= 0) return 16; /* tile rows of 16 (formats/mx.h, abq.h) */
    const lb_repack_layout *L = lb_repack_layout_of(type);
    return L ? L->rows : 1;
}

/* ---- geometry shared by every layout ---- */

static int quant_bytes(const lb_repack_layout *L) { return L->base == LB_TYPE_Q8_0 ? 32 : 16; }
static size_t base_block_size(const lb_repack_layout *L) {
    return L->base == LB_TYPE_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0);
}
static uint8_t toggle_of(const lb_repack_layout *L) { return L->base == LB_TYPE_Q4_0 ? 0x88 : 0x00; }

/* Position in qs[] of byte i (0..Q-1) of row r. */
static inline int qs_index(const lb_repack_layout *L, int r, int i) {
    return ((i / L->chunk) * L->rows + r) * L->chunk + i % L->chunk;
}

/* Every base block (Q4_0, IQ4_NL, MXFP4_NL, Q8_0) is an fp16 scale then Q quant bytes. */
static void repack_group(const lb_repack_layout *L, const uint8_t *plain, size_t row_size, uint8_t *out,
                         int64_t nb) {
    const int R = L->rows, Q = quant_bytes(L);
    const size_t bs = base_block_size(L), xbs = (size_t)R * bs;
    const int C = L->chunk;
    const uint64_t t = toggle_of(L) * 0x0101010101010101ull;
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *xb = out + (size_t)b * xbs;
        uint8_t *qs = xb + 2 * R;
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = plain + (size_t)r * row_size + (size_t)b * bs;
            memcpy(xb + 2 * r, blk, 2);
            /* constant sizes so the copies inline */
            if (C == 8)
                for (int j = 0; j < Q / 8; j++) memcpy(qs + (j * R + r) * 8, blk + 2 + 8 * j, 8);
            else
                for (int j = 0; j < Q / 4; j++) memcpy(qs + (j * R + r) * 4, blk + 2 + 4 * j, 4);
        }
        /* the toggle, 8 bytes at a time (R*Q is a multiple of 8) */
        for (int i = 0; t && i < R * Q; i += 8) {
            uint64_t v;
            memcpy(&v, qs + i, 8);
            v ^= t;
            memcpy(qs + i, &v, 8);
        }
    }
}

static void unpack_group(const lb_repack_layout *L, const uint8_t *packed, uint8_t *plain, size_t row_size,
                         int64_t nb) {
    const int R = L->rows, Q = quant_bytes(L);
    const size_t bs = base_block_size(L), xbs = (size_t)R * bs;
    const uint8_t t = toggle_of(L);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = packed + (size_t)b * xbs;
        const uint8_t *qs = xb + 2 * R;
        for (int r = 0; r < R; r++) {
            uint8_t *blk = plain + (size_t)r * row_size + (size_t)b * bs;
            memcpy(blk, xb + 2 * r, 2);
            for (int i = 0; i < Q; i++) blk[2 + i] = (uint8_t)(qs[qs_index(L, r, i)] ^ t);
        }
    }
}

void lb_repack_tensor(int type, const void *plain, void *packed, int64_t K, int64_t N) {
    const lb_repack_layout *L = lb_repack_layout_of(type);
    if (lb_abq_plain_of_codes(type) >= 0) lb_abq_to_codes(lb_abq_plain_of_codes(type), plain, packed, K, N);
    if (lb_abq_codes_of_x16(type) >= 0) lb_abq_codes_to_x16(type, plain, packed, K, N);
    if (!L) return;
    if (lb_repack_is_kq(L->base)) {
        lb_repack_kq_tensor(L, plain, packed, K, N);
        return;
    }
    if (lb_repack_is_qg(L->base)) {
        lb_repack_qg_tensor(L, plain, packed, K, N);
        return;
    }
    if (lb_bcq_is_plain(L->base)) {
        lb_repack_bcq_tensor(type, plain, packed, K, N);
        return;
    }
    if (lb_repack_is_kx(L->base)) {
        lb_repack_kx_tensor(L, plain, packed, K, N);
        return;
    }
    const int64_t nb = K / 32, groups = N / L->rows;
    const size_t row_size = (size_t)nb * base_block_size(L), gsize = row_size * (size_t)L->rows;
#pragma omp parallel for schedule(static) if (groups * nb > 4096)
    for (int64_t g = 0; g < groups; g++)
        repack_group(L, (const uint8_t *)plain + (size_t)g * gsize, row_size, (uint8_t *)packed + (size_t)g * gsize, nb);
    memcpy((uint8_t *)packed + (size_t)groups * gsize, (const uint8_t *)plain + (size_t)groups * gsize,
           (size_t)(N % L->rows) * row_size);
}

void lb_unpack_tensor(int type, const void *packed, void *plain, int64_t K, int64_t N) {
    const lb_repack_layout *L = lb_repack_layout_of(type);
    if (lb_abq_plain_of_codes(type) >= 0) lb_abq_from_codes(lb_abq_plain_of_codes(type), packed, plain, K, N);
    if (lb_abq_codes_of_x16(type) >= 0) lb_abq_x16_to_codes(type, packed, plain, K, N);
    if (!L) return;
    if (lb_repack_is_kq(L->base)) {
        lb_unpack_kq_tensor(L, packed, plain, K, N);
        return;
    }
    if (lb_repack_is_qg(L->base)) {
        lb_unpack_qg_tensor(L, packed, plain, K, N);
        return;
    }
    if (lb_bcq_is_plain(L->base)) {
        lb_unpack_bcq_tensor(type, packed, plain, K, N);
        return;
    }
    if (lb_repack_is_kx(L->base)) {
        lb_unpack_kx_tensor(L, packed, plain, K, N);
        return;
    }
    const int64_t nb = K / 32, groups = N / L->rows;
    const size_t row_size = (size_t)nb * base_block_size(L), gsize = row_size * (size_t)L->rows;
#pragma omp parallel for schedule(static) if (groups * nb > 4096)
    for (int64_t g = 0; g < groups; g++)
        unpack_group(L, (const uint8_t *)packed + (size_t)g * gsize, (uint8_t *)plain + (size_t)g * gsize, row_size, nb);
    memcpy((uint8_t *)plain + (size_t)groups * gsize, (const uint8_t *)packed + (size_t)groups * gsize,
           (size_t)(N % L->rows) * row_size);
}

/* ---- traits ---- */

/* One group: k = R rows of k/R values. Anything else has no meaning in this
 * layout and decodes to zeros (never reads past the k/32 blocks given). */
static void group_to_float(const lb_repack_layout *L, const void *src, float *dst, int64_t k) {
    const lb_type_traits *bt = lb_traits(L->base);
    const int64_t K = k / L->rows;
    if (k % ((int64_t)32 * L->rows)) {
        for (int64_t i = 0; i < k; i++) dst[i] = 0.0f;
        return;
    }
    const int64_t nb = K / 32;
    const size_t bs = base_block_size(L);
    uint8_t blocks[8 * sizeof(block_q8_0)];
    for (int64_t b = 0; b < nb; b++) {
        /* one x-block -> R plain blocks (row stride bs) -> floats */
        unpack_group(L, (const uint8_t *)src + (size_t)b * L->rows * bs, blocks, bs, 1);
        for (int r = 0; r < L->rows; r++) bt->to_float(blocks + (size_t)r * bs, dst + r * K + b * 32, 32);
    }
}

#define TO_FLOAT_FN(T, idx) \
    static void to_float_##T(const void *s, float *d, int64_t k) { group_to_float(&layouts[idx], s, d, k); }
TO_FLOAT_FN(q4_0_4x4, 0)
TO_FLOAT_FN(q4_0_4x8, 1)
TO_FLOAT_FN(q4_0_8x8, 2)
TO_FLOAT_FN(iq4_nl_4x4, 3)
TO_FLOAT_FN(iq4_nl_4x8, 4)
TO_FLOAT_FN(iq4_nl_8x8, 5)
TO_FLOAT_FN(q8_0_4x4, 6)
TO_FLOAT_FN(q8_0_4x8, 7)
TO_FLOAT_FN(q8_0_8x8, 8)
TO_FLOAT_FN(mxfp4_nl_4x4, 9)
TO_FLOAT_FN(mxfp4_nl_4x8, 10)
TO_FLOAT_FN(mxfp4_nl_8x8, 11)

#define TRAITS(NAME, T, SZ) {NAME, 32, SZ, 1, LB_TYPE_Q8_0, to_float_##T, NULL, NULL}
static const lb_type_traits repack_traits[N_LAYOUTS] = {
    TRAITS("Q4_0_4X4", q4_0_4x4, 18),     TRAITS("Q4_0_4X8", q4_0_4x8, 18),
    TRAITS("Q4_0_8X8", q4_0_8x8, 18),     TRAITS("IQ4_NL_4X4", iq4_nl_4x4, 18),
    TRAITS("IQ4_NL_4X8", iq4_nl_4x8, 18), TRAITS("IQ4_NL_8X8", iq4_nl_8x8, 18),
    TRAITS("Q8_0_4X4", q8_0_4x4, 34),     TRAITS("Q8_0_4X8", q8_0_4x8, 34),
    TRAITS("Q8_0_8X8", q8_0_8x8, 34),     TRAITS("MXFP4_NL_4X4", mxfp4_nl_4x4, 18),
    TRAITS("MXFP4_NL_4X8", mxfp4_nl_4x8, 18), TRAITS("MXFP4_NL_8X8", mxfp4_nl_8x8, 18),
};

const lb_type_traits *lb_repack_traits(int type) {
    if (lb_bcq_plain_of_lut(type) >= 0) return lb_bcq_traits(type);
    const lb_type_traits *kq = lb_repack_kq_traits(type);
    if (kq) return kq;
    const lb_type_traits *kx = lb_repack_kx_traits(type);
    if (kx) return kx;
    const lb_type_traits *qg = lb_repack_qg_traits(type);
    if (qg) return qg;
    for (int i = 0; i < N_LAYOUTS; i++)
        if (layouts[i].type == type) return &repack_traits[i];
    return NULL;
}

/* ---- activations ---- */

static void quantize_x4(const float *x, size_t ldx, void *vy, int64_t k, int chunk) {
    lb_block_q8_0x4a *y = vy;
    block_q8_0 blk;
    for (int64_t b = 0; b < k / 32; b++) {
        for (int m = 0; m < 4; m++) {
            lb_quantize_row_q8_0_ref(x + m * ldx + b * 32, &blk, 32);
            int32_t s = 0;
            for (int i = 0; i < 32; i++) {
                y[b].qs[((i / chunk) * 4 + m) * chunk + i % chunk] = blk.qs[i];
                s += blk.qs[i];
            }
            y[b].d[m] = lb_fp16_to_f32(blk.d);
            y[b].s8[m] = 8 * s;
        }
    }
}

void lb_quantize_q8_0x4_c4_ref(const float *x, size_t ldx, void *y, int64_t k) { quantize_x4(x, ldx, y, k, 4); }
void lb_quantize_q8_0x4_c8_ref(const float *x, size_t ldx, void *y, int64_t k) { quantize_x4(x, ldx, y, k, 8); }

void lb_quantize_q8_0x4v_ref(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_0x4v *y = vy;
    block_q8_0 blk;
    for (int64_t b = 0; b < k / 32; b++)
        for (int m = 0; m < 4; m++) {
            lb_quantize_row_q8_0_ref(x + m * ldx + b * 32, &blk, 32);
            int32_t s = 0;
            for (int i = 0; i < 32; i++) s += blk.qs[i];
            memcpy(y[b].qs[m], blk.qs, 32);
            y[b].d[m] = lb_fp16_to_f32(blk.d);
            y[b].b8[m] = -8 * s;
            y[b].b128[m] = -128 * s;
        }
}

void lb_quantize_q8_0x16_ref(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_q8_0x16 *y = vy;
    block_q8_0 blk;
    for (int64_t b = 0; b < k / 32; b++)
        for (int m = 0; m < 16; m++) {
            lb_quantize_row_q8_0_ref(x + m * ldx + b * 32, &blk, 32);
            memcpy(y[b].qs[m], blk.qs, 32);
            y[b].d[m] = lb_fp16_to_f32(blk.d);
        }
}

/* Denormal inputs become signed zeros, as vcvtne2ps2bf16 and tdpbf16ps
 * treat them (checked on the Xeon); otherwise lb_f32_to_bf16. */
void lb_pack_bf16x16_ref(const float *x, size_t ldx, void *vy, int64_t k) {
    lb_block_bf16x16 *y = vy;
    for (int64_t b = 0; b < k / 32; b++)
        for (int m = 0; m < 16; m++)
            for (int i = 0; i < 32; i++) {
                const float v = x[m * ldx + b * 32 + i];
                const uint32_t u = lb_f32_to_bits(v);
                y[b].v[m][i] = (u & 0x7f800000u) == 0 ? (lb_bf16)(u >> 16 & 0x8000u) : lb_f32_to_bf16(v);
            }
}

/* ---- reference kernels ---- */

/* Weight k (0..31) of row r in an x-block's qs, as the integer the base
 * reference multiplies with: Q4_0 gives 16*(q-8) (the toggled-bit decode),
 * IQ4_NL and MXFP4_NL the codebook value, Q8_0 the quant. */
static inline int weight_at(const lb_repack_layout *L, const uint8_t *qs, int r, int k) {
    if (L->base == LB_TYPE_Q8_0) return (int8_t)qs[qs_index(L, r, k)];
    const uint8_t byte = qs[qs_index(L, r, k % 16)];
    if (L->base == LB_TYPE_Q4_0) return k < 16 ? (int8_t)(uint8_t)(byte << 4) : (int8_t)(byte & 0xF0);
    const int8_t *book = L->base == LB_TYPE_MXFP4_NL ? lb_kvalues_mxfp4 : lb_kvalues_iq4nl;
    return book[k < 16 ? byte & 0x0F : byte >> 4];
}

/* One output: row r of the group at xg against an activation row given by
 * a fetch of (block, k) and its per-block scales. */
typedef struct {
    const uint8_t *base;
    size_t stride; /* bytes per block */
    int chunk, row; /* x4 activations: chunk and row within the group; plain: chunk 0 */
} act_view;

static inline int act_at(const act_view *a, int64_t b, int k) {
    const uint8_t *blk = a->base + (size_t)b * a->stride;
    if (!a->chunk) return ((const block_q8_0 *)blk)->qs[k];
    const lb_block_q8_0x4a *x = (const lb_block_q8_0x4a *)blk;
    return x->qs[((k / a->chunk) * 4 + a->row) * a->chunk + k % a->chunk];
}

static inline float act_scale(const act_view *a, int64_t b) {
    const uint8_t *blk = a->base + (size_t)b * a->stride;
    if (!a->chunk) return lb_fp16_to_f32(((const block_q8_0 *)blk)->d);
    return ((const lb_block_q8_0x4a *)blk)->d[a->row];
}

static float dot_ref(const lb_repack_layout *L, const uint8_t *xg, int r, int64_t nb, const act_view *a) {
    const size_t xbs = (size_t)L->rows * base_block_size(L);
    float sum = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = xg + (size_t)b * xbs;
        lb_fp16 dh;
        memcpy(&dh, xb + 2 * r, 2);
        const float dw = lb_fp16_to_f32(dh), da = act_scale(a, b);
        int32_t isum = 0;
        for (int k = 0; k < 32; k++) isum += weight_at(L, xb + 2 * L->rows, r, k) * act_at(a, b, k);
        /* same expressions as the plain references (q4_0.c, iq4_nl.c, q8_0.c);
         * Q4_0's x16 goes into the scale, which is exact (power of two) */
        if (L->base == LB_TYPE_Q4_0) sum += (float)isum * ((dw * da) * 0.0625f);
        else if (L->base == LB_TYPE_IQ4_NL || L->base == LB_TYPE_MXFP4_NL) sum += (da * dw) * (float)isum;
        else sum += (float)isum * (dw * da);
    }
    return sum;
}

static void gemv_ref(const lb_repack_layout *L, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                     const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    for (int n = n0; n < n1; n++) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)(n / L->rows) * L->rows * w_row_size;
        for (int m = 0; m < M; m++) {
            act_view a = {(const uint8_t *)A + (size_t)m * a_row_size, sizeof(block_q8_0), 0, 0};
            Y[(size_t)m * ldy + n] = dot_ref(L, xg, n % L->rows, nb, &a);
        }
    }
}

static void gemm_ref(const lb_repack_layout *L, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                     const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int64_t nb = K / 32;
    for (int n = n0; n < n1; n++) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)(n / L->rows) * L->rows * w_row_size;
        for (int m = 0; m < M; m++) {
            act_view a = {(const uint8_t *)A + (size_t)(m / 4) * a_row_size, sizeof(lb_block_q8_0x4a), L->chunk, m % 4};
            Y[(size_t)m * ldy + n] = dot_ref(L, xg, n % L->rows, nb, &a);
        }
    }
}

#define REF_FNS(w, R, C, idx)                                                                          \
    void lb_gemv_##w##x##R##_q8_0_##R##x##C##_ref(int64_t K, const void *W, size_t wrs, int n0, int n1, \
                                                  const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        gemv_ref(&layouts[idx], K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                 \
    }                                                                                                  \
    void lb_gemm_##w##x##R##_q8_0x4_##R##x##C##_ref(int64_t K, const void *W, size_t wrs, int n0, int n1, \
                                                    const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        gemm_ref(&layouts[idx], K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                 \
    }
REF_FNS(q4_0, 4, 4, 0)
REF_FNS(q4_0, 4, 8, 1)
REF_FNS(q4_0, 8, 8, 2)
REF_FNS(iq4_nl, 4, 4, 3)
REF_FNS(iq4_nl, 4, 8, 4)
REF_FNS(iq4_nl, 8, 8, 5)
REF_FNS(q8_0, 4, 4, 6)
REF_FNS(q8_0, 4, 8, 7)
REF_FNS(q8_0, 8, 8, 8)
REF_FNS(mxfp4_nl, 4, 4, 9)
REF_FNS(mxfp4_nl, 4, 8, 10)
REF_FNS(mxfp4_nl, 8, 8, 11)
