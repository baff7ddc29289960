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

/* One matrix to MX from its float weights, as lowbit quantize does it:
 * with the layer's Hessian H (K x K, destroyed; NULL: none) the groups are
 * ranked by eq. (9) with the diagonal of H^-1 (H damped by gp->damp of its
 * mean diagonal, dead columns as GPTQ) and errors weighted by diag H, and
 * with gptq set every weight is rounded again with GPTQ's error feedback;
 * without H, an importance vector imp (K entries, lowbit imatrix: diag H up
 * to a factor) weights the errors; with neither, the errors count alike.
 * Without H groups rank by their 2-bit tiles' (imp-weighted) error whatever
 * mp->rank_by_error says: eq. (9) with a guessed H^-1 (1 / imp, or 1) ranks
 * worse (Gemma 3 270M, docs/mixed.md); with H, mp->rank_by_error picks. */
lb_status lb_mx_quantize_calibrated(const float *W, int64_t N, int64_t K, float *H, const float *imp,
                                    const lb_mx_params *mp, const lb_gptq_params *gp, int gptq, lb_mx_matrix *out,
                                    double *loss);

#endif
