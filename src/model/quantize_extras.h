/* What lb_quantize_file needs beyond plain type conversion: the codebooks of
 * the CB types (loaded from a file or discovered from the input, installed
 * for the quantizer and written into the output's metadata) and an
 * importance matrix for the quantizers that take one. */
#ifndef LB_QUANTIZE_EXTRAS_H
#define LB_QUANTIZE_EXTRAS_H

#include "gguf/gguf.h"
#include "model/calib.h"
#include "model/gptq.h"
#include "model/imatrix.h"

typedef struct {
    int out_cb_type;     /* CB2/CB3 whose books are held for the output, else 0 */
    int in_held;         /* books the input's CB tensors need (formats/cb_gguf.h) */
    lb_imatrix *imatrix;
    lb_calib *calib;     /* GPTQ's Hessians, NULL without --gptq */
    lb_gptq_params gptq; /* damp 0: lb_gptq_default_damp of each matrix's type (lb_quant_extras_gptq_params) */
    int n_gptq;          /* matrices quantized with GPTQ so far */
    double gptq_loss;    /* their summed GPTQ objective */
} lb_quant_extras;

/* o may be NULL (no codebook file, no imatrix, default discovery). */
lb_status lb_quant_extras_begin(const gguf_file *in, const lb_quantize_params *p, const lb_quantize_options *o,
                                gguf_writer *w, lb_quant_extras *x);
/* The importance vector of tensor t (K entries) if an imatrix has one. */
const float *lb_quant_extras_importance(const lb_quant_extras *x, const gguf_tensor *t);
/* The same, for a MoE tensor (3-D) with one vector per expert too: then
 * *imp_rows = the rows each vector covers (ne[1]); else 0 (one for all). */
const float *lb_quant_extras_importance_rows(const lb_quant_extras *x, const gguf_tensor *t, int64_t *imp_rows);
/* Rows of src (plain src_type) into dst (out_type) weighted by imp (K
 * entries, from lb_quant_extras_importance; imp_rows > 0: a vector per that
 * many rows) if out_type takes importance (CB2, CB3, Q2_K, Q3_K), plainly if
 * not (e.g. a fallback type). */
lb_status lb_quant_extras_convert(const float *imp, int64_t imp_rows, const void *src, int src_type, void *dst,
                                  int out_type, int64_t K, int64_t rows, int n_threads);
/* x's GPTQ settings for a matrix of out_type: the dampening given, else
 * lb_gptq_default_damp(out_type). */
lb_gptq_params lb_quant_extras_gptq_params(const lb_quant_extras *x, int out_type);
/* GPTQ for tensor t when the calibration file has its Hessian and out_type
 * a grid: rows of src (plain src_type) into dst (plain out_type). *done = 0
 * (and nothing written) when GPTQ does not apply. */
lb_status lb_quant_extras_gptq(lb_quant_extras *x, const gguf_tensor *t, const void *src, int src_type, void *dst,
                               int out_type, int64_t K, int64_t rows, int n_threads, int *done);
void lb_quant_extras_end(lb_quant_extras *x);

#endif
