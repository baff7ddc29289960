/* ggml's remaining "legacy" 32-weight block formats: Q4_1, Q5_0, Q5_1 and the
 * Q8_1 activation type that Q4_1 and Q5_1 are multiplied with.
 *
 * Layouts are byte-identical to ggml's (ggml-common.h); the reference
 * quantizers follow ggml's quantize_row_*_ref operation for operation, so a
 * tensor quantized here matches one written by llama-quantize (these types
 * never use an importance matrix in the reference path). Real models carry
 * them: a Q4_K_M file keeps Q5_0 for tensors whose rows don't fit 256-weight
 * super-blocks (Gemma 3 270M's 640-wide rows). */
#ifndef LB_LEGACY_H
#define LB_LEGACY_H

#include "formats/types.h"

/* 5 bits per weight + min: value = d * q + m, q in 0..15 (4.0 + 1.0 bpw). */
#define QK4_1 32
typedef struct {
    lb_fp16 d;
    lb_fp16 m;
    uint8_t qs[QK4_1 / 2]; /* low nibbles: weights 0..15, high nibbles: 16..31 */
} block_q4_1;
static_assert(sizeof(block_q4_1) == 20, "block_q4_1 size");

/* 5.5 bits per weight: value = d * (q - 16), q in 0..31; the fifth bit of
 * weight j is bit j of the little-endian 32-bit word qh. */
#define QK5_0 32
typedef struct {
    lb_fp16 d;
    uint8_t qh[4];
    uint8_t qs[QK5_0 / 2];
} block_q5_0;
static_assert(sizeof(block_q5_0) == 22, "block_q5_0 size");

/* 6 bits per weight: value = d * q + m, q in 0..31 (fifth bit in qh as Q5_0). */
#define QK5_1 32
typedef struct {
    lb_fp16 d;
    lb_fp16 m;
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
} block_q5_1;
static_assert(sizeof(block_q5_1) == 24, "block_q5_1 size");

/* Activations for Q4_1 / Q5_1: Q8_0 plus s = d * sum(qs), which turns the
 * weights' min term into one multiply per block: sum(m * a) = m * s. */
#define QK8_1 32
typedef struct {
    lb_fp16 d;
    lb_fp16 s;
    int8_t qs[QK8_1];
} block_q8_1;
static_assert(sizeof(block_q8_1) == 36, "block_q8_1 size");

/* ---- reference routines (k, n multiples of 32) ---- */
void lb_quantize_row_q4_1_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q4_1(const void *x, float *y, int64_t k);
void lb_vec_dot_q4_1_q8_1_ref(int64_t n, float *s, const void *w, const void *a);

void lb_quantize_row_q5_0_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q5_0(const void *x, float *y, int64_t k);
void lb_vec_dot_q5_0_q8_0_ref(int64_t n, float *s, const void *w, const void *a);

void lb_quantize_row_q5_1_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q5_1(const void *x, float *y, int64_t k);
void lb_vec_dot_q5_1_q8_1_ref(int64_t n, float *s, const void *w, const void *a);

void lb_quantize_row_q8_1_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q8_1(const void *x, float *y, int64_t k);

/* The fifth bits of a Q5 block as one integer (bit j = weight j). */
static inline uint32_t lb_q5_high_bits(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

/* Traits for Q4_1, Q5_0, Q5_1, Q8_1; NULL for other ids. */
const lb_type_traits *lb_legacy_traits(int type);

#endif
