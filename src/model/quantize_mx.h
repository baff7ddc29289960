/* MX matrices in lb_quantize_file (model/quantize.c): which input matrices
 * become MX, the tensors each becomes in the output (formats/mx.h, "in a
 * GGUF file"), and their bytes, produced from one quantization per matrix. */
#ifndef LB_QUANTIZE_MX_H
#define LB_QUANTIZE_MX_H

#include "formats/mx.h"
#include "gguf/gguf.h"
#include "model/quantize_extras.h"

/* The kinds of output tensor: a plain conversion, or a piece of MX */
enum { LB_QMX_NONE = 0, LB_QMX_LO, LB_QMX_HI, LB_QMX_MAP, LB_QMX_ROWS, LB_QMX_OUT };

/* Whether an input tensor becomes MX: a layer matrix (blk.N.*.weight, not
 * the embedding or the head, which are read by rows or have no Hessian) of
 * whole tiles (N % 16 == 0, K % 32 == 0, K <= 65536). */
int lb_qmx_applies(const gguf_tensor *t);

/* Adds t's MX tensors to w for parameters p; kinds[0..*n) get their piece
 * kinds (at most 5), *bytes their total size. */
lb_status lb_qmx_add(gguf_writer *w, const gguf_tensor *t, const lb_mx_params *p, int kinds[5], int *n,
                     uint64_t *bytes);

/* The matrix being written: quantized once when its first piece comes up. */
typedef struct {
    int64_t in_index; /* -1: none */
    lb_mx_matrix m;
    int gptq;         /* it was rounded with GPTQ */
    uint64_t bits;    /* lb_mx_bits of what the file stores */
    double eq10;      /* eq. (10) of its 2-bit share, outliers at 32 bits each */
} lb_qmx_cache;

static inline int lb_qmx_cached(const lb_qmx_cache *c, int64_t in_index) { return c->in_index == in_index; }

/* dst (nbytes) = piece `kind` of the MX matrix of input tensor in_index,
 * whose weights are W (N x K floats; NULL when lb_qmx_cached, else the
 * matrix is quantized from them first). x gives the Hessian (GPTQ) or the
 * importance; *quantized = 1 when this call quantized the matrix. */
lb_status lb_qmx_produce(lb_qmx_cache *c, lb_quant_extras *x, const lb_mx_params *p, const gguf_tensor *t,
                         int64_t in_index, const float *W, int kind, void *dst, uint64_t nbytes, int *quantized);
void lb_qmx_cache_free(lb_qmx_cache *c);

#endif
