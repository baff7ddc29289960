/* K-quants (Q2_K..Q6_K, Q8_K), IQ4_NL and IQ4_XS: llama.cpp-compatible blocks with
 * scalar reference dequantize / quantize / dot.
 *
 * K-quants store 256 weights per super-block with one or two fp16 super-scales
 * and small integer sub-block scales (and mins). Every layout below is
 * byte-identical to ggml's (ggml-common.h), dequantization reproduces
 * ggml's dequantize_row_* bit for bit, and the reference quantizers follow
 * ggml's quantize_row_*_ref so a tensor quantized here matches one written by
 * `llama-quantize --pure` (no imatrix) byte for byte. */
#ifndef LB_KQUANTS_H
#define LB_KQUANTS_H

#include "formats/types.h"

#define QK_K 256
#define K_SCALE_SIZE 12 /* packed 6-bit scales and mins of Q4_K / Q5_K */

/* 2.625 bits per weight: 16 sub-blocks of 16, value = d*sc*q - dmin*m with
 * 4-bit sc and m packed in scales[] (low nibble scale, high nibble min). */
typedef struct {
    uint8_t scales[QK_K / 16];
    uint8_t qs[QK_K / 4]; /* 2-bit quants */
    lb_fp16 d;            /* super-scale for the scales */
    lb_fp16 dmin;         /* super-scale for the mins */
} block_q2_K;
static_assert(sizeof(block_q2_K) == 84, "block_q2_K size");

/* 3.4375 bits per weight: 16 sub-blocks of 16, value = d*(sc-32)*(q-4), the
 * third bit of q in hmask (set = no -4 offset), 6-bit scales packed in 12 bytes. */
typedef struct {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    lb_fp16 d;
} block_q3_K;
static_assert(sizeof(block_q3_K) == 110, "block_q3_K size");

/* 4.5 bits per weight: 8 sub-blocks of 32, value = d*sc*q - dmin*m with
 * 6-bit sc and m packed in scales[] (see lb_get_scale_min_k4). */
typedef struct {
    lb_fp16 d;
    lb_fp16 dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qs[QK_K / 2];
} block_q4_K;
static_assert(sizeof(block_q4_K) == 144, "block_q4_K size");

/* 5.5 bits per weight: Q4_K plus a fifth bit per weight in qh. */
typedef struct {
    lb_fp16 d;
    lb_fp16 dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;
static_assert(sizeof(block_q5_K) == 176, "block_q5_K size");

/* 6.5625 bits per weight: 16 sub-blocks of 16, value = d*sc*(q-32) with
 * signed 8-bit sc; low 4 bits of q in ql, high 2 bits in qh. */
typedef struct {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    lb_fp16 d;
} block_q6_K;
static_assert(sizeof(block_q6_K) == 210, "block_q6_K size");

/* Activations for K-quant dot products: float scale, int8 values and the
 * sums of each group of 16 (so the min terms cost 16 multiplies). */
typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} block_q8_K;
static_assert(sizeof(block_q8_K) == 292, "block_q8_K size");

/* 4.5 bits per weight, 32 per block: value = d * kvalues_iq4nl[index]. */
#define QK4_NL 32
typedef struct {
    lb_fp16 d;
    uint8_t qs[QK4_NL / 2]; /* low nibbles: weights 0..15, high nibbles: 16..31 */
} block_iq4_nl;
static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl size");

/* The non-uniform IQ4_NL codebook (ascending). */
extern const int8_t lb_kvalues_iq4nl[16];

/* ---- reference routines (k a multiple of the block size) ---- */
void lb_quantize_row_q2_K_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q2_K(const void *x, float *y, int64_t k);
void lb_vec_dot_q2_K_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

void lb_quantize_row_q3_K_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q3_K(const void *x, float *y, int64_t k);
void lb_vec_dot_q3_K_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

void lb_quantize_row_q4_K_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q4_K(const void *x, float *y, int64_t k);
void lb_vec_dot_q4_K_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

void lb_quantize_row_q5_K_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q5_K(const void *x, float *y, int64_t k);
void lb_vec_dot_q5_K_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

void lb_quantize_row_q6_K_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q6_K(const void *x, float *y, int64_t k);
void lb_vec_dot_q6_K_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

void lb_quantize_row_q8_K_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q8_K(const void *x, float *y, int64_t k);
void lb_vec_dot_q8_K_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

/* What llama-quantize writes for IQ4_NL (ggml's quantize_iq4_nl without an
 * importance matrix: weights x^2, scale search over 15 candidates). */
void lb_quantize_row_iq4_nl_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_iq4_nl(const void *x, float *y, int64_t k);
/* the same blocks with any 16-entry table kv (MXFP4_NL: formats/mxfp4.h) */
void lb_dequantize_row_nl(const int8_t *kv, const void *x, float *y, int64_t k);
void lb_vec_dot_nl_q8_0_ref(const int8_t *kv, int64_t n, float *s, const void *w, const void *a);
void lb_vec_dot_iq4_nl_q8_0_ref(int64_t n, float *s, const void *w, const void *a);

/* 4.25 bits per weight: IQ4_NL's codebook in super-blocks of 256, with one
 * fp16 super-scale and a signed 6-bit scale per 32 weights (stored +32, low
 * 4 bits in scales_l, nibble ib%2 of byte ib/2; top 2 bits at bit 2*ib of
 * scales_h): value = d * (ls - 32) * kvalues_iq4nl[index]. */
typedef struct {
    lb_fp16 d;
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2]; /* per 32 weights: 16 bytes, low nibbles 0..15, high 16..31 */
} block_iq4_xs;
static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs size");

/* What llama-quantize writes for IQ4_XS without an importance matrix
 * (ggml's quantize_iq4_xs); with one, imp[k] as llama-quantize --imatrix. */
void lb_quantize_row_iq4_xs_ref(const float *x, void *y, int64_t k);
void lb_quantize_row_iq4_xs_imat(const float *x, void *y, int64_t k, const float *imp);
void lb_dequantize_row_iq4_xs(const void *x, float *y, int64_t k);
void lb_vec_dot_iq4_xs_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

/* Shared by IQ4_NL and IQ4_XS (formats/iq4_nl.c): the nearest codebook
 * index, and the weighted scale search of one block of 32 (0 if all ~zero). */
int lb_iq4nl_best_index(float x);
float lb_iq4nl_block_scale(const float *xb, const float *weight);

/* ---- helpers shared by the K-quant files (formats/kquants.c) ---- */

/* Round to nearest, ties to even, exactly as ggml's nearest_int (|x| < 2^22). */
static inline int lb_nearest_int(float x) {
    float v = x + 12582912.0f; /* 1.5 * 2^23: the integer lands in the low mantissa bits */
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* Unpacks the 6-bit scale and min of sub-block j (0..7) of Q4_K / Q5_K. */
static inline void lb_get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Packs 8 6-bit scales and mins into Q4_K / Q5_K's 12 bytes. */
void lb_pack_scale_min_k4(const uint8_t *ls, const uint8_t *lm, uint8_t *scales);

/* Symmetric scale search (ggml's make_qx_quants, rmse_type 1, weights x^2 or
 * qw): L[i] in [0, 2*nmax) with value = scale * (L[i] - nmax). */
float lb_make_qx_quants(int n, int nmax, const float *x, int8_t *L, const float *qw);
/* Q3_K's variant with iterative per-element refinement (make_q3_quants). */
float lb_make_q3_quants(int n, int nmax, const float *x, int8_t *L);
/* Asymmetric scale + min search (make_qkx2_quants): value = scale*L[i] - *the_min. */
float lb_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                          float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                          int use_mad);

/* Q4_K and Q5_K share their scale layout: the group search and requantization
 * (formats/q4_k.c) writes d, dmin, the packed scales and 256 quants in 0..nmax. */
void lb_quantize_k4_groups(const float *x, int nmax, float rmin, int nstep, lb_fp16 *d,
                           lb_fp16 *dmin, uint8_t *scales, uint8_t *L);
/* One block's dot with Q8_K given its quants a[256] in 0..31; adds to ggml's
 * 8 float lanes `sums` and subtracts the min term from *sumf. */
void lb_dot_k4_groups(const int8_t *a, const uint8_t *scales, float d, float dmin,
                      const block_q8_K *y, float *sums, float *sumf);

/* Traits for the types these files implement, NULL for others. */
const lb_type_traits *lb_kquant_traits(int type);

#endif
