/* ABQ-LLM's block-wise calibration (seed 004 sec. 3.2-3.3), gradient-free:
 * per transformer block l, greedily in layer order, a grid over the
 * smoothing alpha (SmoothQuant's balance vectors, model/quantize_smooth.h;
 * "none" included) and a cap on the weight clipping search
 * (lb_abq_quantize_group_clip), scored by the paper's DLC loss, eq. (2):
 *
 *     obj = mean over tokens of (1 - cos(Yq(X~), Yfp(Xfp))) + (1 - cos(Yq(Xfp), Yfp(Xfp)))
 *
 * Y the residual stream after block l, Xfp the full-precision model's input
 * to it, X~ the input with blocks 0..l-1 already quantized by their choice.
 * The paper trains the balance vectors and clipping with AdamW on eq. (5),
 * which adds eq. (4), the symmetric KL between the fp and the quantized
 * attention maps: with akl_weight the objective adds it too, the maps
 * formed here from the block's queries and keys (the attention kernel never
 * materialises them; docs/abq.md).
 *
 * The quantized block is the real thing, not a simulation: its matrices
 * are ABQ blocks run by the ABQ kernels at the requested activation bits,
 * through the same forward code as lb_eval (lb_eval_layers). Importance of
 * each matrix's columns: its input's mean squares over the calibration
 * tokens (an imatrix of the same text), divided by s^2 when smoothed. */
#ifndef LB_ABQ_SEARCH_H
#define LB_ABQ_SEARCH_H

#include "model/model.h"

#define LB_ABQ_SEARCH_MAX_GRID 8

struct lb_abq_search_layer;

typedef struct {
    int type;          /* ABQ_W1..ABQ_W8, ABQ_W2S */
    int act_bits;      /* 1..8; 0: 8 */
    int act_bits_down; /* ffn_down's input; 0: act_bits */
    /* per-layer p for ffn_down's input (seed 004 finds it the most sensitive):
     * with down_bits_hi above ffn_down's bits, each layer's chosen block is
     * tried once more with ffn_down's input at down_bits_hi, kept when that
     * lowers eq. (2) by at least down_gain (0..1) of it; 0: off */
    int down_bits_hi;
    float down_gain;
    /* eq. (5): the objective adds akl_weight times eq. (4), the symmetric KL
     * between the block's attention maps, quantized on X~ against fp on Xfp
     * (per head and query, mean); 0: eq. (2) alone */
    float akl_weight;
    /* eq. (3)'s distribution-correction vectors on ffn_down (model/abq_dc.h):
     * after the layer's other choices, ffn_down quantized as W + gamma a b^T
     * with a, b fitted to the block's ffn_down output error, gamma in
     * {1, 0.5, 0.25} kept where it lowers the objective (the least one);
     * dc_ridge: the fit's ridge (0: LB_ABQ_DC_RIDGE). 0: off */
    int dc;
    float dc_ridge;
    /* with smoothing, a fourth group: attn_output's input, its 1/s carried
     * by attn_v's rows (and bias); query heads sharing a KV head share s
     * (GQA). 0: attn_output's input unsmoothed */
    int smooth_vo;
    int n_threads;     /* 0: the model's */
    /* the grid; n_* = 0: the default {none, 0.25, 0.5, 0.75} x {1, 0.95, 0.9, 0.85}.
     * alpha < 0: no smoothing. The first pair is the default configuration
     * (the one a plain quantize with the same imatrix gives) */
    int n_alpha, n_clip;
    float alphas[LB_ABQ_SEARCH_MAX_GRID], clips[LB_ABQ_SEARCH_MAX_GRID];
    /* called after each block with its choices (may be NULL) */
    void (*progress)(void *user, int layer, int n_layer, const struct lb_abq_search_layer *choice);
    void *user;
} lb_abq_search_params;

typedef struct lb_abq_search_layer {
    float alpha, clip;            /* chosen; alpha < 0: no smoothing */
    int down_bits;                /* ffn_down's input bits chosen (down_bits_hi or the base) */
    double obj_default, obj_best; /* objective of the grid's first pair and of the choice */
    double obj_grid;              /* the grid's best (obj_best unless ffn_down was raised) */
    double obj_down_hi;           /* the grid's best with ffn_down at down_bits_hi (NAN: not tried) */
    double akl_default, akl_best; /* eq. (4) of the grid's first pair and of the choice (with akl_weight) */
    float dc_gamma;               /* with dc: the correction's gamma kept (0: none) */
    double obj_dc;                /* with dc: the objective of the best gamma tried (NAN: not tried) */
    double dc_err0, dc_err1;      /* with dc: ffn_down's output error energy before and after the rank-1 fit */
    double grid[LB_ABQ_SEARCH_MAX_GRID * LB_ABQ_SEARCH_MAX_GRID]; /* every pair's, alpha-major */
} lb_abq_search_layer;

typedef struct {
    int n_layer, n_alpha, n_clip;
    float alphas[LB_ABQ_SEARCH_MAX_GRID], clips[LB_ABQ_SEARCH_MAX_GRID];
    lb_abq_search_layer *layers;
    const lb_model *model;
    int smooth_vo;
} lb_abq_search;

/* The search on m (weights F32, F16 or BF16; every layer matrix's rows a
 * multiple of 128): n_chunks sequences of `chunk` tokens each, in tokens.
 * On return m's layers ARE the calibrated model (ABQ matrices at their
 * act bits, smoothed norms; buffers owned by m), and *out (free with
 * lb_abq_search_free, before or after m) the choices. On failure the layers
 * already searched stay calibrated, the rest as they were. */
lb_status lb_abq_search_run(lb_model *m, const int32_t *tokens, int n_chunks, int chunk, const lb_abq_search_params *p,
                            lb_abq_search **out);
void lb_abq_search_free(lb_abq_search *s);

/* The calibrated model's tensor NAME (blk.L.{attn_q,attn_k,attn_v,attn_output,
 * ffn_gate,ffn_up,ffn_down}.weight: ABQ blocks; blk.L.{attn,ffn}_norm.weight,
 * and with smooth_vo blk.L.attn_v.bias where the model has it: F32): 1 with
 * its type, data and bytes; 0 for any other name. s's model must still be
 * alive. */
int lb_abq_search_tensor(const lb_abq_search *s, const char *name, size_t len, int *type, const void **data,
                         size_t *bytes);

#endif
