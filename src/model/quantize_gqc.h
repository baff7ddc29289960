/* GC matrices (formats/gc.h: GQ{b}_GC, BCQ{q}_GC) in lb_quantize_file
 * (model/quantize.c): each becomes two output tensors, its codes NAME and
 * its grids NAME.gq_sz / NAME.bcq_az, produced from one quantization per
 * matrix. */
#ifndef LB_QUANTIZE_GQC_H
#define LB_QUANTIZE_GQC_H

#include "formats/gc.h"
#include "gguf/gguf.h"
#include "model/quantize_extras.h"

/* Output tensor kinds (model/quantize.c's out_tensor.kind), apart from
 * MX's (model/quantize_mx.h): the codes and the side tensor of a GC matrix. */
enum { LB_QGC_CODES = 16, LB_QGC_SZ = 17 };

/* Adds the two tensors of input t as GC type `type` to w (name: t's name);
 * *bytes: their size. */
lb_status lb_qgc_add(gguf_writer *w, const char *name, const gguf_tensor *t, int type, uint64_t *bytes);

/* Whether input tensor t is the side tensor of a GC matrix of `in` (it is
 * written with its matrix, or dropped with it). */
int lb_qgc_is_input_side(const gguf_file *in, const gguf_tensor *t);

/* A view of GC input tensor t and its side tensor in `in`, checked as the
 * loader checks them (free with lb_free_aligned). */
lb_status lb_qgc_input_view(const gguf_file *in, const gguf_tensor *t, lb_gc_view **out);

/* The matrix being written: quantized once, when its codes come up. */
typedef struct {
    int64_t in_index; /* -1: none */
    int64_t N;
    lb_fp16 *sz;      /* the grids, lb_gc_side_n values per row */
    int converted;    /* the codes were converted from a GQ{q}_GC input (--from-uniform) */
    int64_t inexact;  /* then: rows whose values differ from the input's */
} lb_qgc_cache;

/* Whether a GC input of src_type converts exactly into GC type `type`
 * (GQ{q}_GC -> BCQ{q}_GC, LUT-GEMM App. C; quantize's --from-uniform). */
int lb_qgc_converts(int src_type, int type);

/* dst (nbytes) = piece `kind` of input tensor in_index (t) as GC `type`.
 * LB_QGC_CODES: copied with its grid from `same` (t is GC `type` already),
 * converted from it (lb_qgc_converts), else quantized from W (N x K
 * floats): with GPTQ when x has t's Hessian, else by rounding (sym:
 * symmetric; x's importance weights the fit); LB_QGC_SZ: the grid of the
 * codes just written. *gptq = 1 when GPTQ rounded it. */
lb_status lb_qgc_produce(lb_qgc_cache *c, lb_quant_extras *x, int sym, const gguf_tensor *t, int64_t in_index, int type,
                         float *W, const lb_gc_view *same, int kind, void *dst, uint64_t nbytes, int n_threads,
                         int *gptq);
void lb_qgc_cache_free(lb_qgc_cache *c);

#endif
