/* SmoothQuant's balance vectors, ABQ-LLM's initialisation (seed 004 sec.
 * 3.2), folded into the model at quantize time (`quantize --smooth-alpha A`):
 * for the matrices that read one carrier's output,
 *     blk.L.attn_norm       -> attn_q, attn_k, attn_v
 *     blk.L.ffn_norm        -> ffn_gate, ffn_up
 *     blk.L.ffn_up's rows   -> ffn_down    (gated FFNs only: act(gate) * up)
 * one vector s over their K input columns,
 *     s_j = rms(X_j)^A / max_i |W_ij|^(1 - A)     (max over the group's rows)
 * scaled to geometric mean 1, and the exact rewrite
 *     carrier channel j <- it / s_j,   W_ij <- W_ij s_j
 * (ffn_up takes both: its columns from ffn_norm's s, its rows from ffn_down's)
 * which moves the activations' outlier columns into the weights, so that a
 * per-token activation grid (ABQ's p bits) loses less. rms(X_j) is the
 * imatrix's mean square (`--imatrix`, or a calibrate file), the
 * calibration's stand-in for SmoothQuant's max |X_j|; the quantizer's
 * importance of column j becomes imp_j / s_j^2 (the smoothed input's mean
 * square). A group applies only when its carrier and all its matrices exist
 * with the same K and the imatrix holds the first matrix. */
#ifndef LB_QUANTIZE_SMOOTH_H
#define LB_QUANTIZE_SMOOTH_H

#include "gguf/gguf.h"
#include "model/imatrix.h"

typedef struct lb_smooth lb_smooth;

/* alpha in [0, 1]. */
lb_status lb_smooth_begin(const gguf_file *in, const lb_imatrix *im, float alpha, int n_threads, lb_smooth **out);
/* Tensor t rewritten by its group's s: *floats (malloc'd, rows x K F32) and,
 * for a matrix with importance imp (may be NULL), *imp_out (malloc'd, K) the
 * importance of the smoothed input; both NULL when t is in no group. */
lb_status lb_smooth_tensor(lb_smooth *sm, const gguf_tensor *t, const float *imp, float **floats, float **imp_out);
/* The balance vector of one group: ms[j] its input's mean squares, s[j]
 * max_i |W_ij| over the group's rows on entry and s_j on return (geometric
 * mean 1, each within e^+-9; columns without a finite positive pair: 1).
 * The block search (model/abq_search.c) uses it too. */
void lb_smooth_scales(const float *ms, float *s, int64_t K, float alpha);
/* Groups applied so far. */
int lb_smooth_groups(const lb_smooth *sm);
void lb_smooth_free(lb_smooth *sm);

/* All of tensor t as rows x K floats (model/quantize.c). */
lb_status lb_quantize_tensor_floats(const gguf_file *in, const gguf_tensor *t, int n_threads, float **out);

#endif
