/* One traits table for every tensor type: block geometry, the scalar
 * reference conversions and dot product. Fast kernels live in src/kernels
 * and are chosen per type by kernels/dispatch.c; this table is the reference
 * every kernel is tested against. */
#ifndef LB_TYPES_H
#define LB_TYPES_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "core/common.h"
#include "core/fp16.h"

/* Dequantize k values (k a multiple of blck). */
typedef void (*lb_to_float_fn)(const void *src, float *dst, int64_t k);
/* Reference quantize k values (k a multiple of blck). */
typedef void (*lb_from_float_fn)(const float *src, void *dst, int64_t k);
/* Dot product of n weights (this type) with n activations (vec_dot_type). */
typedef void (*lb_vec_dot_fn)(int64_t n, float *s, const void *w, const void *a);

typedef struct {
    const char *name;
    int blck;                 /* weights per block */
    size_t type_size;         /* bytes per block */
    int is_quantized;
    int vec_dot_type;         /* the type activations are converted to for vec_dot */
    lb_to_float_fn to_float;
    lb_from_float_fn from_float;
    lb_vec_dot_fn vec_dot;
} lb_type_traits;

/* NULL for unknown or unsupported ids. */
const lb_type_traits *lb_traits(int type);

/* Known size only: 0 for unknown types. */
static inline uint64_t lb_row_size(int type, int64_t ne0) {
    const lb_type_traits *t = lb_traits(type);
    if (!t || ne0 % t->blck) return 0;
    return (uint64_t)(ne0 / t->blck) * t->type_size;
}

/* Whether ne0 (row length) can be stored in type. */
int lb_type_fits_row(int type, int64_t ne0);
/* The type a tensor falls back to when its rows don't fit `type`: K-quants
 * as llama-quantize (Q2_K/Q3_K/IQ4_XS -> IQ4_NL, Q4_K -> Q5_0, Q5_K -> Q5_1,
 * Q6_K -> Q8_0), other quantized types -> Q8_0; F16 if that doesn't fit either. */
int lb_type_fallback(int type, int64_t ne0);

/* ---- blocks (byte-compatible with ggml) ---- */
#define QK8_0 32
typedef struct {
    lb_fp16 d;
    int8_t qs[QK8_0];
} block_q8_0;
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 size");

#define QK4_0 32
typedef struct {
    lb_fp16 d;
    uint8_t qs[QK4_0 / 2]; /* low nibbles: weights 0..15, high nibbles: 16..31 */
} block_q4_0;
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 size");

/* Reference routines (src/formats/q8_0.c, q4_0.c) */
void lb_quantize_row_q8_0_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q8_0(const void *x, float *y, int64_t k);
void lb_vec_dot_q8_0_q8_0_ref(int64_t n, float *s, const void *w, const void *a);
void lb_quantize_row_q4_0_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_q4_0(const void *x, float *y, int64_t k);
void lb_vec_dot_q4_0_q8_0_ref(int64_t n, float *s, const void *w, const void *a);

#endif
