/* The model: hyperparameters and weights read from GGUF metadata, plus the
 * per-context state (KV cache, scratch) the forward pass uses. */
#ifndef LB_MODEL_H
#define LB_MODEL_H

#include "core/common.h"
#include "gguf/gguf.h"
#include "kernels/dispatch.h"
#include "tokenizer/tokenizer.h"

typedef enum {
    LB_ARCH_LLAMA, LB_ARCH_QWEN2, LB_ARCH_QWEN3, LB_ARCH_GEMMA2, LB_ARCH_GEMMA3, LB_ARCH_PHI3,
    LB_ARCH_QWEN2MOE, LB_ARCH_QWEN3MOE, LB_ARCH_GPT_OSS, LB_ARCH_SMOLLM3, LB_ARCH_MISTRAL3, LB_ARCH_GRANITE,
    LB_ARCH_GLM4, LB_ARCH_OLMO2, LB_ARCH_DEEPSEEK2, LB_ARCH_ERNIE45,
    LB_ARCH_COHERE, LB_ARCH_GLM4MOE
} lb_arch;

typedef struct {
    lb_arch arch;
    char arch_name[32];
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
    int rope_dim;          /* dimensions rotated per head (<= head_dim) */
    int rope_neox;         /* 1: pairs (i, i + rope_dim/2); 0: interleaved pairs (2i, 2i+1) */
    float rope_freq_base;
    float rope_freq_scale; /* linear scaling: position multiplier (YaRN: its interpolated part) */
    int rope_yarn;         /* YaRN: per-dimension mix of scaled and plain frequencies (rope_inv_freq) */
    float yarn_beta_fast, yarn_beta_slow; /* YaRN's ramp ends, in turns within the original context (32, 1) */
    float norm_eps;
    float rope_attn_factor; /* RoPE's cos and sin times this (phi3 long-context models, YaRN's mscale; else 1) */
    int n_ctx_orig;         /* rope.scaling.original_context_length: beyond it, phi3's long factors; YaRN's ramp */
    /* gemma3 (and phi3: sliding_window, every layer) */
    float rope_freq_base_local;
    int sliding_window;
    int swa_pattern;       /* every swa_pattern-th layer is global */
    float query_scale;     /* attention scale (default 1/sqrt(head_dim)) */
    float final_logit_softcap; /* > 0: logits = cap * tanh(logits / cap) */
    float attn_softcap;        /* > 0: attention scores = cap * tanh(scores / cap) (gemma2) */
    /* mixture of experts (Mixtral as llama, qwen2moe, qwen3moe); n_expert 0: a dense FFN */
    int n_expert, n_expert_used;
    int n_ff_exp;          /* each expert's hidden size */
    int expert_norm;       /* 1: the chosen experts' weights renormalised to sum 1 */
    int expert_softmax_k;  /* gpt-oss: experts chosen by raw logits, their weights a softmax of the k chosen */
    /* mistral3 (Llama 4's attention temperature): q times
     * 1 + attn_temp_scale * ln(floor((pos + 1) / attn_temp_floor) + 1) after RoPE; 0: off */
    float attn_temp_scale;
    int attn_temp_floor;
    /* granite (0: none): the embedding times embedding_scale, each layer's
     * attention and FFN outputs times residual_scale before they join the
     * stream, the logits divided by logit_scale */
    float embedding_scale, residual_scale, logit_scale;
    int no_pre_norm; /* olmo2: attention and FFN read the stream itself (norms after them only) */
    /* command-r, cohere2: LayerNorm (mean and variance) for the layers' and the
     * output's norms; attention and FFN side by side on one norm of the stream
     * (x += attn(n) + ffn(n)); the logits times logit_mul (0: none) */
    int layer_norm, parallel_block;
    float logit_mul;
    /* deepseek2 (multi-head latent attention, model/mla.c): q's low rank (0:
     * one matrix), the compressed KV's rank, each head's q/k part without
     * RoPE and its value size; the cache then holds one "head" of
     * head_dim = mla_kv_rank + rope_dim floats a token (n_head_kv 1) */
    int mla_q_rank, mla_kv_rank, mla_nope, mla_v;
    int n_dense_lead;      /* deepseek2, ernie4_5-moe: the first layers have a dense FFN, the others experts */
    int moe_step;          /* ernie4_5-moe: past those, layer il has experts when (il + 1) % moe_step == 0 (else 1) */
    int n_ff_shexp;        /* deepseek2, ernie4_5-moe: the shared experts' hidden size (0: none) */
    int expert_sigmoid;    /* deepseek2 (V3): the router's probabilities are sigmoids, not a softmax */
    float expert_scale;    /* > 0: the chosen experts' weights times this (deepseek2) */
    int expert_groups, expert_groups_used; /* > 1: experts chosen within the groups of the best top-2 sums */
} lb_hparams;

typedef struct lb_moe_buffers lb_moe_buffers;

/* A 1-D parameter kept as floats (norm weights, biases); NULL if absent. */
typedef float *lb_vec;

typedef struct {
    lb_vec attn_norm, ffn_norm;
    lb_matrix wq, wk, wv, wo;
    lb_vec bq, bk, bv;
    lb_matrix w_gate, w_up, w_down;
    /* gemma3 (all four), qwen3 (q_norm, k_norm): RMS norms of each head's q, k
     * before RoPE, and of the attention and FFN outputs */
    lb_vec attn_post_norm, ffn_post_norm, q_norm, k_norm;
    int is_local; /* sliding-window layer */
    int no_rope;  /* smollm3: every 4th layer attends without positions (NoPE) */
    int qk_norm_full; /* olmo2: q_norm / k_norm over all of q and k, not per head */
    /* MoE (hp.n_expert > 0): the router (n_expert rows) and each expert's
     * gate, up and down, row views of the file's 3-D tensors; w_gate, w_up,
     * w_down then hold the shared expert (qwen2moe), if any, whose output is
     * scaled by sigmoid(shexp_gate . x) */
    lb_matrix router;
    lb_matrix *exp_gate, *exp_up, *exp_down;
    lb_vec shexp_gate;
    /* gpt-oss: the attention output's bias, one sink logit per query head
     * (kernels/attention.h), the router's bias, and each expert's biases
     * ([n_expert][n_ff_exp] gate and up, [n_expert][n_embd] down) */
    lb_vec bo, attn_sinks, router_b, exp_gate_b, exp_up_b, exp_down_b;
    /* deepseek2 (model/mla.c): q's low-rank pair (wq_a, its norm, wq_b) when
     * hp.mla_q_rank > 0, else wq; the compressed KV and RoPE key (wkv_a:
     * mla_kv_rank + rope_dim rows) and its norm; per head, k_b (mla_kv_rank
     * rows of mla_nope) and v_b (mla_v rows of mla_kv_rank). The experts'
     * selection bias exp_probs_b (V3) shifts the choice, not the weights;
     * w_gate, w_up, w_down hold the shared experts, added ungated. */
    lb_matrix wq_a, wq_b, wkv_a;
    lb_matrix *wk_b, *wv_b;
    lb_vec q_a_norm, kv_a_norm, exp_probs_b;
} lb_layer;

struct lb_model {
    lb_hparams hp;
    lb_matrix tok_embd, output;
    lb_vec output_norm;
    lb_vec rope_freq_factors; /* optional per-pair divisors (llama 3 scaling) */
    lb_vec rope_factors_long, rope_factors_short; /* phi3's (LongRoPE): the context length picks one */
    lb_layer *layers;
    gguf_file *gguf;          /* keeps the mapping alive; NULL for synthetic models */
    void **owned;             /* buffers the model allocated */
    int n_owned, cap_owned;
    lb_tokenizer *tok;        /* NULL for synthetic models */
    int n_threads;
    char desc[128];
    /* the type part of desc when the builder knows it (synthetic: its type);
     * empty: lb_model_finish names it from the file's general.file_type */
    char ftype_name[40];
    char *kernel_summary;
    int64_t n_params;
    uint64_t weight_bytes;
    int cb_held;              /* CB codebook sets this model holds (formats/cb_gguf.h) */
    /* the weights a device backend uploaded (kept across contexts), freed
     * with the model */
    void *dev_weights;
    void (*dev_weights_free)(void *);
};

/* A run of a batch's tokens from one sequence: rows t0..t0+n-1 at positions
 * pos0.. (forward.c). */
typedef struct {
    int seq, pos0, t0, n;
} lb_seg;

/* A backend that runs the whole forward pass elsewhere (the GPU's,
 * model/forward_cuda.c). forward computes one batch as forward.c's
 * forward_batch does: logits of rows [first, first + rows), or of
 * row_idx[0..rows) when given. */
typedef struct lb_device_ops {
    const char *name;
    lb_status (*attach)(lb_context *c);  /* after the context's host part is made */
    void (*detach)(lb_context *c);
    lb_status (*forward)(lb_context *c, const int32_t *tokens, int n, const lb_seg *segs, int n_segs, float *logits,
                         int first, int rows, const int *row_idx);
    lb_status (*seq_copy)(lb_context *c, int src, int dst, int n);
} lb_device_ops;
/* Makes ops the backend of device (LB_DEVICE_CUDA); a program built with it
 * registers it once before making contexts. */
void lb_device_register(int device, const lb_device_ops *ops);

struct lb_context {
    lb_model *model;
    int n_ctx, n_batch, n_threads;
    int n_ctx_pad;               /* n_ctx rounded up for the K cache layout */
    void *k_cache, *v_cache;     /* per sequence, per layer, in kernels/attention.h's layout: lb_kv_slots(il) slots */
    int k_type, v_type;          /* their elements: LB_KV_F32, _F16, _Q8_0, _Q4_0 (lb_context_params type_k, type_v) */
    int swa_ring;                /* > 0: the slots of a sliding-window layer's cache, a ring (lb_kv_slots) */
    size_t *k_off, *v_off;       /* n_layer + 1: layer il at k_off[il] in a sequence's cache, which takes k_off[n_layer] bytes */
    int *seq_hw;                 /* per sequence: positions below it may have been written since it last began at 0 */
    int n_seq;                   /* sequences (lb_eval_multi); sequence s, layer l at s * k_off[n_layer] + k_off[l] */
    int *tok_pos, *tok_seq;      /* per batch token: its position and sequence */
    int32_t *tok_buf;            /* lb_eval_multi: the batch's tokens, gathered */
    int *row_buf;                /* lb_eval_multi: batch rows whose logits are wanted */
    /* activations for up to n_batch tokens */
    float *x, *xn, *q, *k, *v, *att_out, *ff_gate, *ff_up, *logits_tmp;
    float *mla_a, *mla_g;        /* deepseek2 (model/mla.c): q before absorption, then the heads' values; a head's rows gathered */
    float *par;                  /* command-r, cohere2: the layer's normed input, which the FFN and the attention both read */
    lb_moe_buffers *moe;         /* MoE models: routing and the experts' buffers (model/moe.c) */
    float *att_scratch;          /* per thread: lb_attn_scratch_floats */
    void *act_scratch;           /* quantized activations for lb_matmul */
    size_t act_scratch_size;
    float *inv_freq, *inv_freq_local; /* rope: rope_dim/2 entries */
    /* rope: per batch token, rope_dim cos and rope_dim sin (kernels/vecops.h
     * lb_rope_table), for the global and (Gemma 3) the sliding-window layers */
    float *rope_cs, *rope_sn, *rope_cs_local, *rope_sn_local;
    /* Optional observer of every matrix multiply's input (lowbit imatrix):
     * called with the weight and its n x K activations before the multiply. */
    void (*on_matmul)(void *user, const lb_matrix *w, const float *x, int n);
    void *on_matmul_user;
    /* Optional observer of each layer's attention inputs (the ABQ search's
     * attention-map term): the batch's n queries (n x n_head x head_dim) and
     * keys (n x n_head_kv x head_dim) after norms and RoPE, before attention. */
    void (*on_attention)(void *user, int layer, const float *q, const float *k, int n);
    void *on_attention_user;
    /* LB_DEVICE_CUDA: the backend and its state (no host KV cache then) */
    int device;
    const lb_device_ops *dev;
    void *dev_state;
};

/* Rows [r0, r0 + n) of a matrix as a matrix of their own, sharing its
 * bytes: phi3's fused attn_qkv and ffn_up (model_load.c). Row-interleaved
 * layouts split only at their row groups (MX at its 16-row tiles); MX and GC
 * matrices get a sub-view, returned in *alloc for the caller to free with
 * lb_free_aligned (NULL otherwise). Every kernel gives the sub-matrix's rows
 * the bits it gives them in the whole (tests/test_matrix_rows.c). */
lb_status lb_matrix_rows(const lb_matrix *whole, int64_t r0, int64_t n, lb_matrix *out, void **alloc);

/* The layer's matrices, each once: q, k, v, o, gate, up, down (those
 * present), then the router and every expert's gate, up and down, then
 * deepseek2's wq_a, wq_b, wkv_a (those present) and each head's k_b, v_b. out holds
 * lb_layer_n_matrices(hp) entries; returns how many it filled. */
enum { LB_MAX_EXPERTS = 512, LB_MAX_MLA_HEADS = 256, LB_LAYER_MATRICES_MAX = 11 + 3 * LB_MAX_EXPERTS + 2 * LB_MAX_MLA_HEADS };
int lb_layer_n_matrices(const lb_hparams *hp);

/* Whether name (len bytes) is one expert's tensor of Mixtral's first GGUF
 * layout, blk.IL.ffn_PART.E.weight with PART gate, up or down; if so sets
 * *il, part and *e. */
int lb_legacy_expert_name(const char *name, size_t len, int *il, char part[16], int *e);
int lb_layer_matrices(const lb_hparams *hp, lb_layer *l, lb_matrix **out);

/* Register a buffer (from lb_malloc_aligned) to be freed with the model.
 * Returns p (NULL on OOM). */
void *lb_model_own(lb_model *m, void *p);
/* Index of p in the model's owned buffers (made at load, not the file's
 * mapping), -1 if it is not one. */
int lb_model_owned_index(const lb_model *m, const void *p);

/* llama.cpp's general.file_type for a file of type t (model.c); -1 if none. */
int lb_llama_ftype(int t, int mixed);

/* ABQ matrices (formats/abq.h): their activations at `all` bits, ffn_down's
 * at `down` (1..8, or 16: unquantized, formats/abq.h); other types' act_bits stay 0. */
void lb_model_set_act_bits(lb_model *m, int all, int down);

/* The KV cache of a sequence's layer, and the attention of a batch's runs
 * over it (c->q in, c->att_out out; forward.c). */
void *lb_k_cache_of(const lb_context *c, int seq, int il);
/* Slots of layer il's cache: n_ctx_pad, or for a sliding-window layer a ring
 * of swa_ring < n_ctx_pad (the window plus a batch, kernels/attention.h). */
int lb_kv_slots(const lb_context *c, int il);
void *lb_v_cache_of(const lb_context *c, int seq, int il);
void lb_attention_segs(lb_context *c, int il, const lb_seg *segs, int n_segs);
/* deepseek2's attention of layer il (model/mla.c): c->xn = attn_norm(x) in,
 * the output projection's rows in c->xn out. */
void lb_mla_attention(lb_context *c, int il, int n, const lb_seg *segs, int n_segs);

/* RoPE tables (c->rope_cs, ...) of the batch's first n tokens at positions
 * c->tok_pos (forward.c; the device backend copies them up). */
void lb_rope_tables(lb_context *c, int n);

/* Threads for a row-wise stage of `work` floats (forward.c, moe.c): waking
 * them costs a few microseconds, more than a decode step's rows take on one
 * core. */
static inline int lb_stage_threads(const lb_context *c, int64_t work) { return work < 65536 ? 1 : c->n_threads; }

/* Runs the statement (the variadic part) for i in [0, n) on nth threads (the
 * variable named nth); no OpenMP region for one thread. */
#define LB_FOR_ROWS(nth, n, i, ...)                      \
    do {                                                 \
        if ((nth) > 1) {                                 \
            _Pragma("omp parallel for num_threads(nth)") \
            for (int i = 0; i < (n); i++) __VA_ARGS__    \
        } else {                                         \
            for (int i = 0; i < (n); i++) __VA_ARGS__    \
        }                                                \
    } while (0)
/* Token embeddings (n x n_embd floats; Gemma 3's sqrt(n_embd) scale
 * applied): what the first layer reads (forward.c). */
void lb_embed_tokens(const lb_model *m, const int32_t *tokens, int n, float *x);

/* Layers [l0, l1) on one sequence of n <= n_batch tokens at positions
 * 0..n-1: x (n x n_embd) the residual stream before layer l0, replaced by the
 * one after layer l1 - 1 (forward.c, the same code as lb_eval). For
 * block-wise calibration (model/abq_search.h): one block at a time. */
lb_status lb_eval_layers(lb_context *c, float *x, int n, int l0, int l1);

/* Fills kernel_summary, desc, counts, once weights are in place. */
lb_status lb_model_finish(lb_model *m);

#endif
