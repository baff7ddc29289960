/* GPTQ's scale refit (`quantize --gptq-refit`, docs/gptq.md), called by
 * model/gptq.c after its batches. */
#ifndef LB_GPTQ_REFIT_H
#define LB_GPTQ_REFIT_H

#include "core/common.h"
#include "formats/grid.h"
#include "formats/types.h"

/* The scale refit after GPTQ (grids with codes / set_scale): with every
 * code fixed, each row's G group scales s minimise the layer's output
 * error on the calibration inputs, (w0 - C s)ᵀ H (w0 - C s), w0 the
 * original row, H the undamped Hessian: the normal equations
 * (Cᵀ H C) s = Cᵀ H w0, G x G per row, with the cross-group terms (GPTQ's
 * error feedback made the groups' errors depend on one another). A row
 * keeps its scales unless the refit ones, rounded as stored, lower the
 * error. W (the dequantized result) is updated. dst: the N rows of type
 * tt that GPTQ wrote (grid g, with codes and set_scale); err: the output
 * error before and after, as shares of ‖W0 X‖². A second GPTQ pass onto
 * the refit grid, then another refit, measured worse than one refit on the
 * synthetic layers of tests/test_gptq.c (GPTQ's greedy pass loses what the
 * refit gained), so there is one. */
lb_status lb_gptq_refit_scales(const lb_grid *g, const lb_type_traits *tt, void *dst, const float *W0, float *W,
                               int64_t N, int64_t K, const float *H0, int nt, double err[2]);

/* Tests: rows per chunk (the refit works through a matrix in chunks of rows
 * to bound its G x G systems' memory); 0 restores the size it chooses. */
void lb_gptq_refit_force_chunk_rows(int64_t rows);

#endif
