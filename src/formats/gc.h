/* Whole-row ("GC") types: one grid per output channel (a GGUF row of K
 * inputs) instead of one per group of the row. A GGUF tensor's size follows
 * from its type and shape, so the grids live in a side tensor beside the
 * matrix NAME, n values per row:
 *
 *     type        codes per 128 weights           side tensor (F16, 1-D [n N])
 *     GQ{b}_GC    16 b bytes (formats/gqc.h)      NAME.gq_sz   n = 2: s, z
 *     BCQ{q}_GC   16 q bytes (formats/bcqc.h)     NAME.bcq_az  n = q + 1: alpha_0..alpha_{q-1}, z
 *
 * The codes' block of 128 weights is the G128 type's block without its
 * grid, so a GC row expands into G128 blocks (its grid copied into every
 * block) whose dequantization and dot products give the same bits: that
 * is how a GC matrix runs wherever the G128 type has a fast kernel (the
 * load expands and repacks it, model/repack.c), and the definition of the
 * GC reference. This layer is what the loader, quantize and the repack
 * see; the row arithmetic is each family's. */
#ifndef LB_GC_H
#define LB_GC_H

#include <stddef.h>

#include "formats/bcqc.h"
#include "formats/gqc.h"

/* Whether type is a GC type (GQ{b}_GC or BCQ{q}_GC). */
int lb_gc_is(int type);
/* Values per row in the side tensor: 2 (GQ), q + 1 (BCQ); 0 for other types. */
int lb_gc_side_n(int type);
/* The side tensor's name suffix (".gq_sz", ".bcq_az"); NULL for other types. */
const char *lb_gc_sfx(int type);
/* The G128 group type the rows expand into (GQ{b}_G128, BCQ{q}_G128); -1 for other types. */
int lb_gc_g128(int type);
/* Whether a tensor name ends in a GC side tensor's suffix. */
int lb_gc_is_side(const char *name, size_t len);
/* The length of the GC side suffix a tensor name ends in, 0 if none. */
size_t lb_gc_side_sfx_len(const char *name, size_t len);
/* What a row's grid holds, for messages: "scale/zero" (GQ), "alpha/z" (BCQ). */
const char *lb_gc_side_what(int type);
/* Bits per weight of the codes (b or q; the side tensor adds 16 n / K). */
int lb_gc_bits(int type);

/* ---- one row (k a multiple of 128), its grid `side` (side_n values) ---- */

/* Quantizes x into codes and the row's grid (GQ: GPTQ's range search, sym:
 * symmetric; BCQ: the greedy + alternating fit over the whole row; imp
 * weights the error, may be NULL). 0, or -1 when the BCQ fit could not get
 * its scratch (the row is then zeros: the caller must fail). */
int lb_gc_quantize_row(int type, const float *x, void *codes, int64_t k, int sym, const float *imp, lb_fp16 *side);
void lb_gc_dequantize_row(int type, const void *codes, float *y, int64_t k, const lb_fp16 *side);
/* The nearest value of the row's grid to x at column col: stores its code,
 * returns the value as lb_gc_dequantize_row computes it (GPTQ's rounding). */
float lb_gc_round(int type, void *codes, int64_t col, float x, const lb_fp16 *side);
/* The row as lb_row_size(lb_gc_g128(type), k) bytes of G128 blocks. */
void lb_gc_to_g128(int type, const void *codes, const lb_fp16 *side, void *dst, int64_t k);
/* LB_OK if a row's grid is one the kernels can take (GQ: finite scale,
 * integer zero point in range; BCQ: finite alphas and z), else
 * LB_ERR_FORMAT naming row n and the value. */
lb_status lb_gc_check_side(int type, const lb_fp16 *side, int64_t n);

/* ---- one matrix as the kernels read it ---- */
typedef struct {
    int type, bits, side_n;
    int64_t N, K;
    size_t row_size;       /* code bytes per row, K / 128 * 16 bits */
    const uint8_t *codes;  /* N rows */
    const lb_fp16 *side;   /* side_n N values: row n's grid at side_n n */
} lb_gc_view;

/* Checks the pieces (codes_bytes = N rows of codes; n_side = side_n N
 * values; every row's grid by lb_gc_check_side) and builds a view of them
 * (free with lb_free_aligned); the pieces must outlive it. LB_ERR_FORMAT /
 * LB_ERR_SHAPE say which check failed and where. */
lb_status lb_gc_view_make(int type, int64_t N, int64_t K, const void *codes, uint64_t codes_bytes,
                          const lb_fp16 *side, int64_t n_side, lb_gc_view **out);
static inline const lb_fp16 *lb_gc_view_side(const lb_gc_view *v, int64_t n) { return v->side + v->side_n * n; }
static inline const uint8_t *lb_gc_view_row(const lb_gc_view *v, int64_t n) { return v->codes + (size_t)n * v->row_size; }
/* GQ views: row n's scale and zero point */
static inline float lb_gqc_view_scale(const lb_gc_view *v, int64_t n) { return lb_fp16_to_f32(v->side[2 * n]); }
static inline int lb_gqc_view_zero(const lb_gc_view *v, int64_t n) { return (int)lb_fp16_to_f32(v->side[2 * n + 1]); }
/* Bytes the matrix stores: codes and side tensor. */
static inline uint64_t lb_gc_view_bytes(const lb_gc_view *v) {
    return (uint64_t)v->row_size * (uint64_t)v->N + 2u * (uint64_t)v->side_n * (uint64_t)v->N;
}
/* W[n * K + k] = the matrix's weights. */
void lb_gc_view_dequantize(const lb_gc_view *v, float *W);
/* Rows [n0, n1) as G128 rows into dst (row n at dst + (n - n0) * lb_row_size(lb_gc_g128(type), K)). */
void lb_gc_view_to_g128(const lb_gc_view *v, int64_t n0, int64_t n1, void *dst);

/* The scalar references (lb_gemm_fn, kernels/dispatch.h): W an lb_gc_view,
 * rows [n0, n1), A M activation rows a_row_size apart, Y[m * ldy + n] = the
 * dot of row n; w_row_size is unused.
 * GQ{b}_GC against plain Q8_0 (lb_gqc_vec_dot_q8_0); BCQ{q}_GC against
 * Q8_0_LUT4, each row expanded to BCQ{q}_G128 and BCQ's reference dot. */
void lb_gemv_gqc_q8_0_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                          size_t a_row_size, int M, float *Y, size_t ldy);
void lb_gemv_bcqc_lut4_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                           size_t a_row_size, int M, float *Y, size_t ldy);

#endif
