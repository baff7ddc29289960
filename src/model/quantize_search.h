/* quantize --abq-search (lb_quantize_options.abq_search): loads the input
 * as a model, runs the block search (model/abq_search.h) on the text, and
 * adds lowbit.abq.search_alpha / search_clip (one per layer; alpha -1: no
 * smoothing), search_chunks and search_ctx to the writer's metadata. The
 * writer then takes the calibrated tensors from lb_abq_search_tensor. */
#ifndef LB_QUANTIZE_SEARCH_H
#define LB_QUANTIZE_SEARCH_H

#include "gguf/gguf.h"
#include "model/abq_search.h"

typedef struct {
    lb_model *model;       /* the input, calibrated in place */
    lb_abq_search *search; /* its choices */
    int chunks;
} lb_quantize_search;

lb_status lb_quantize_search_begin(const char *in_path, int type, const lb_quantize_options *o, int n_threads,
                                   gguf_writer *w, lb_quantize_search *out);
void lb_quantize_search_end(lb_quantize_search *q);

#endif
