/* GPTQ (Frantar et al. 2022; seed 001 §2): quantize a weight matrix one
 * input column at a time, pushing each column's rounding error onto the
 * columns not yet quantized through the inverse Hessian of the layer's
 * inputs, H = 2 XᵀX / n (model/calib.h collects it).
 *
 * Onto any type with a GPTQ grid (formats/grid.h): the type's parameters for
 * a group of columns are fixed from the error-corrected weights when the
 * first of them comes up (or, with act-order, from the original weights
 * before anything: static groups), then every column is rounded onto them.
 * The output is ordinary blocks of that type. */
#ifndef LB_GPTQ_H
#define LB_GPTQ_H

#include "core/common.h"

typedef struct {
    float damp;     /* λ = damp * mean(diag H) added to the diagonal (default 0.01) */
    int block;      /* lazy-batch columns (default 128; rounded up to a multiple of the grid width) */
    int act_order;  /* columns in descending diag(H), with static groups */
    int n_threads;  /* <= 0: all cores */
    int sym;        /* symmetric groups (types with lb_grid_get_sym: GQ) */
    int refit;      /* after GPTQ, each row's group scales refit to the layer's output error, codes
                     * fixed (grids with codes / set_scale: GQ, Q4_0, Q5_0, Q8_0, IQ4_NL);
                     * model/gptq_refit.h */
} lb_gptq_params;

lb_gptq_params lb_gptq_default_params(void);

/* The dampening `quantize --gptq` uses for a matrix of `type` when none is
 * given: 0.1 for types of 3 bits per weight or more, 0.01 below (and for a
 * type of unknown size). Measured (docs/gptq.md): 0.1 lowers the KLD of
 * GQ4_G128 by 10-11 % on both models, of Q4_0 and GQ3_G128 by 6-9 %, leaves
 * Q3_K equal, and raises Q2_K's and GQ2_G32's by 2-3 %. */
float lb_gptq_default_damp(int type);

/* Quantizes W (N x K floats, row-major) to `type` rows in dst (N rows of
 * lb_row_size(type, K) bytes). On return W holds the dequantized result.
 * H (K x K floats, row-major, symmetric) is destroyed. Columns with
 * H_ii = 0 (never activated) are quantized from zero. *loss (optional):
 * GPTQ's objective, sum over rows of (w - q)² / [H⁻¹]_ii, halved.
 * LB_ERR_UNSUPPORTED for a type without a grid, LB_ERR_ARG if H is not
 * positive definite even after damping. */
lb_status lb_gptq_quantize(int type, float *W, int64_t N, int64_t K, float *H, const lb_gptq_params *p, void *dst,
                           double *loss);

/* GPTQ onto a grid the caller fixed beforehand for every weight (e.g. the
 * MX tiles, formats/mx.h): round(user, row, col, x) returns the grid value
 * nearest x at (row, col) (col in the matrix's own order, act-order or not)
 * and stores its code wherever the caller keeps it; rows run in parallel,
 * each on one thread. Otherwise as lb_gptq_quantize. */
typedef float (*lb_gptq_round_fn)(void *user, int64_t row, int64_t col, float x);
lb_status lb_gptq_quantize_fixed(lb_gptq_round_fn round, void *user, float *W, int64_t N, int64_t K, float *H,
                                 const lb_gptq_params *p, double *loss);

#endif
