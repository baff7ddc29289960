/* The mixture-of-experts FFN (moe.c): routing, the experts, the weighted sum. */
#ifndef LB_MOE_H
#define LB_MOE_H

#include "model/model.h"

/* A context's buffers for batches of up to n_batch tokens. */
lb_status lb_moe_buffers_new(const lb_model *m, int n_batch, lb_moe_buffers **out);
void lb_moe_buffers_free(lb_moe_buffers *b);

/* out (n x n_embd) = the experts' weighted sum for the batch's rows xn. */
void lb_moe_ffn(lb_context *c, const lb_layer *l, const float *xn, int n, float *out);

/* qwen2moe: sigmoid(shexp_gate . xn[t]) for the n rows (the context's buffer). */
float *lb_moe_shexp_gates(lb_context *c, const lb_layer *l, const float *xn, int n);

#endif
