/* Calibration: the Hessian H = 2 XᵀX / n of every distinct linear-layer
 * input over calibration text (`lowbit calibrate`), for GPTQ (model/gptq.h)
 * and the quantizers that build on it.
 *
 * Per layer there are four distinct inputs: Q, K and V read one ("attn_qkv"),
 * the attention output projection one ("attn_output"), gate and up one
 * ("ffn_gate_up"), the down projection one ("ffn_down"). X is the n x K
 * matrix of every calibration token's input row; XᵀX is accumulated in double
 * (each forward batch's product is one single-precision GEMM, added to the
 * double sums), so 64 x 512 tokens lose nothing to rounding.
 *
 * File (GGUF, general.type = "calibration"; docs/gptq.md):
 *   blk.L.SLOT.hessian    F32 [K(K+1)/2]: the upper triangle of H packed by
 *                         rows (row i holds H[i][i..K-1]), H = 2 XᵀX / n
 *   NAME.in_sum2, NAME.counts   for every weight matrix NAME, exactly as
 *                         llama.cpp's imatrix (sum of x² per column, rows),
 *                         so the same file serves `quantize --imatrix`
 *   lowbit.calib.chunk_count, .chunk_size, .tokens, .dataset
 * The output head's input is not collected (its matrix is not quantized
 * with GPTQ). */
#ifndef LB_CALIB_H
#define LB_CALIB_H

#include "model/model.h"

/* ---- collecting ---- */
typedef struct lb_calib_collector lb_calib_collector;
/* Installs the context's matmul observer. *bytes_out (optional): the memory
 * the double accumulators take. */
lb_status lb_calib_collector_new(lb_context *ctx, lb_calib_collector **out, uint64_t *bytes_out);
/* Writes the file (temp name + rename). */
lb_status lb_calib_collector_write(const lb_calib_collector *col, const char *path, int chunks, int chunk_size,
                                   const char *dataset, lb_progress_fn progress, void *progress_user);
void lb_calib_collector_free(lb_calib_collector *col);

/* ---- reading ---- */
typedef struct lb_calib lb_calib;
lb_status lb_calib_load(const char *path, lb_calib **out);
void lb_calib_free(lb_calib *c);
/* The Hessian slot of a weight matrix name ("blk.3.attn_k.weight" ->
 * "blk.3.attn_qkv.hessian"); 0 if the name has none. */
int lb_calib_slot_name(const char *name, size_t len, char *out, size_t cap);
/* Expands the Hessian of the input of matrix `name` into H (K x K floats,
 * full symmetric). 1: done; 0: the file has none for that name or width. */
int lb_calib_hessian(const lb_calib *c, const char *name, size_t len, int64_t K, float *H);
/* Number of Hessians in the file. */
int lb_calib_count(const lb_calib *c);

#endif
