/* GC matrices (formats/gc.h: GQ{b}_GC, BCQ{q}_GC) by rounding and with
 * GPTQ (model/gptq.h), whole matrices: one grid per row over its K weights
 * (GQ: scale and zero point; BCQ: q alphas and z). */
#ifndef LB_GQC_GPTQ_H
#define LB_GQC_GPTQ_H

#include "formats/gc.h"
#include "model/gptq.h"

/* Round to nearest: row n of W (N x K, row-major) into codes row n
 * (lb_row_size(type, K) bytes each) and its grid into sz[n s .. n s + s)
 * (s = lb_gc_side_n(type): GQ's scale and zero as fp16, BCQ's alphas and
 * z), by lb_gc_quantize_row (sym: symmetric, GQ only; imp: weights of the
 * error, K entries, or NULL). Rows in parallel. LB_ERR_NOMEM if a row's
 * fit could not get its scratch. */
lb_status lb_gc_quantize_matrix(int type, const float *W, int64_t N, int64_t K, int sym, const float *imp,
                                 void *codes, lb_fp16 *sz, int n_threads);

/* GPTQ with one static group per row: each row's grid is fixed first from
 * the original weights by the whole-row quantizer, its error weighted by
 * diag H (AutoGPTQ fixes a group_size -1 quantizer on the whole
 * original matrix before its first column, too; p->sym: symmetric), then
 * every weight is rounded onto that grid column by column with GPTQ's error
 * feedback (lb_gptq_quantize_fixed; act-order with p->act_order, which the
 * fixed group does not constrain). W (N x K) holds the dequantized result
 * on return, H (K x K) is destroyed; codes and sz as above. *loss
 * (optional): GPTQ's objective. */
lb_status lb_gc_gptq(int type, float *W, int64_t N, int64_t K, float *H, const lb_gptq_params *p, void *codes,
                      lb_fp16 *sz, double *loss);

#endif
