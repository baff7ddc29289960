/* GQ{b}_GC (formats/gqc.h) by rounding and with GPTQ (model/gptq.h), whole
 * matrices: one grid (scale, zero point) per row over its K weights. */
#ifndef LB_GQC_GPTQ_H
#define LB_GQC_GPTQ_H

#include "formats/gqc.h"
#include "model/gptq.h"

/* Round to nearest: row n of W (N x K, row-major) into codes row n
 * (lb_row_size(type, K) bytes each) and its grid into sz[2n] (s) and
 * sz[2n + 1] (z as fp16), by lb_gqc_quantize_row (sym: symmetric; imp:
 * weights of the range search, K entries, or NULL). Rows in parallel. */
void lb_gqc_quantize_matrix(int type, const float *W, int64_t N, int64_t K, int sym, const float *imp, void *codes,
                            lb_fp16 *sz, int n_threads);

/* GPTQ with one static group per row: each row's grid is fixed first from
 * the original weights by the whole-row quantizer, its range search
 * weighted by diag H (AutoGPTQ fixes a group_size -1 quantizer on the whole
 * original matrix before its first column, too; p->sym: symmetric), then
 * every weight is rounded onto that grid column by column with GPTQ's error
 * feedback (lb_gptq_quantize_fixed; act-order with p->act_order, which the
 * fixed group does not constrain). W (N x K) holds the dequantized result
 * on return, H (K x K) is destroyed; codes and sz as above. *loss
 * (optional): GPTQ's objective. */
lb_status lb_gqc_gptq(int type, float *W, int64_t N, int64_t K, float *H, const lb_gptq_params *p, void *codes,
                      lb_fp16 *sz, double *loss);

#endif
