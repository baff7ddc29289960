/* MX (formats/mx.h) with GPTQ's error feedback (model/gptq.h): the tiles'
 * parameters and the outliers are fitted by rounding first, as GPTQ's
 * static groups, then every weight is rounded again onto its fixed grid
 * column by column with the error pushed onto the columns after it (the
 * paper fine-tunes instead; this is the substitute). */
#ifndef LB_MX_GPTQ_H
#define LB_MX_GPTQ_H

#include "formats/mx.h"
#include "model/gptq.h"

/* W (N x K) is read; H (K x K, the layer's Hessian) is destroyed; hinv_diag
 * and imp as lb_mx_quantize. *loss (optional): GPTQ's objective. */
lb_status lb_mx_quantize_gptq(const float *W, int64_t N, int64_t K, float *H, const float *hinv_diag, const float *imp,
                              const lb_mx_params *mp, const lb_gptq_params *gp, lb_mx_matrix *out, double *loss);

#endif
