/* The forward pass, one batch of tokens at a time. A reader can follow a
 * token here from its embedding row to the logits:
 *   x = embed(token)
 *   per layer: x += Wo * attention(rope(Wq * norm(x)), rope(Wk * norm(x)), Wv * norm(x))
 *              x += Wdown * (silu(Wgate * norm(x)) * (Wup * norm(x)))
 *   logits = Wout * norm(x)
 * Gemma 3 adds (as llama.cpp's gemma3 graph): x scaled by sqrt(n_embd) after
 * the lookup, per-head RMSNorm of q and k before RoPE, an RMSNorm on the
 * attention and FFN outputs before each residual add, GELU(tanh) instead of
 * SiLU, and sliding-window layers with their own RoPE table (base 10000).
 * Prefill (n > 1) and decode (n = 1) take the same path: lb_matmul turns into
 * a matrix-matrix product for a batch and a matrix-vector product for one token.
 *
 * Between the matmuls, row-wise steps are fused into one pass per stage (bias,
 * q/k norms, RoPE and the cache write; a residual add and the next norm), run
 * with the SIMD ops of kernels/vecops.h, and spread over threads only when a
 * batch is big enough to pay for waking them. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/vecops.h"
#include "model/model.h"
#include "model/moe.h"

lb_context_params lb_context_default_params(void) {
    lb_context_params p = {0, 0, 0, 0, LB_DEVICE_CPU, LB_TYPE_F32, LB_TYPE_F32, 0};
    return p;
}

/* The registered device backends (lb_device_register). */
static const lb_device_ops *device_ops[2];

void lb_device_register(int device, const lb_device_ops *ops) {
    if (device > LB_DEVICE_CPU && device < (int)(sizeof device_ops / sizeof device_ops[0])) device_ops[device] = ops;
}

static int default_threads(void) { return omp_get_num_procs(); }

void lb_context_free(lb_context *c) {
    if (!c) return;
    if (c->dev && c->dev_state) c->dev->detach(c);
    void *bufs[] = {c->k_cache, c->v_cache, c->x, c->xn, c->q, c->k, c->v, c->att_out, c->ff_gate,
                    c->ff_up, c->logits_tmp, c->mla_a, c->mla_g, c->par, c->att_scratch, c->act_scratch, c->inv_freq, c->inv_freq_local,
                    c->rope_cs, c->rope_sn, c->rope_cs_local, c->rope_sn_local};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) lb_free_aligned(bufs[i]);
    free(c->tok_pos);
    free(c->tok_seq);
    free(c->tok_buf);
    free(c->row_buf);
    free(c->k_off);
    free(c->v_off);
    free(c->seq_hw);
    lb_moe_buffers_free(c->moe);
    free(c);
}

static float *alloc_f(size_t n) { return lb_malloc_aligned(n * sizeof(float)); }

/* YaRN's ramp over rotation pairs (ggml_rope_yarn_corr_dims): pairs below
 * lo turn more than beta_fast (32) times in the original context and keep
 * their frequency; pairs above hi turn less than beta_slow (1) time and are
 * scaled; those between mix linearly. */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

/* factors: per-pair divisors of the frequencies (llama 3's rope_freqs,
 * phi3's long or short factors), or NULL */
static void rope_inv_freq(const lb_model *m, float base, float scale, const float *factors, float *out) {
    const lb_hparams *hp = &m->hp;
    float lo = 0.0f, hi = 0.0f;
    if (hp->rope_yarn) {
        lo = LB_MAX(0.0f, floorf(yarn_corr_dim(hp->rope_dim, hp->n_ctx_orig, hp->yarn_beta_fast, base)));
        hi = LB_MIN((float)(hp->rope_dim - 1), ceilf(yarn_corr_dim(hp->rope_dim, hp->n_ctx_orig, hp->yarn_beta_slow, base)));
    }
    for (int i = 0; i < hp->rope_dim / 2; i++) {
        /* same expression as llama2.c, so its greedy output is reproduced exactly */
        float f = 1.0f / powf(base, (float)(2 * i) / (float)hp->rope_dim);
        if (factors) f /= factors[i];
        float mult = scale;
        if (hp->rope_yarn) { /* ggml: theta_interp (1 - ramp) + theta_extrap ramp */
            const float ramp = 1.0f - LB_MIN(1.0f, LB_MAX(0.0f, ((float)i - lo) / LB_MAX(0.001f, hi - lo)));
            mult = scale * (1.0f - ramp) + ramp;
        }
        out[i] = f * mult;
    }
}

lb_status lb_context_new(lb_model *m, const lb_context_params *params, lb_context **out) {
    *out = NULL;
    lb_context_params p = params ? *params : lb_context_default_params();
    const lb_hparams *hp = &m->hp;
    lb_context *c = calloc(1, sizeof *c);
    if (!c) return lb_fail(LB_ERR_NOMEM, "out of memory");
    c->model = m;
    c->n_ctx = p.n_ctx > 0 ? p.n_ctx : hp->n_ctx_train;
    if (c->n_ctx > (1 << 22)) {
        int n = c->n_ctx;
        free(c);
        return lb_fail(LB_ERR_ARG, "context length %d is too large", n);
    }
    c->n_seq = p.n_seq > 0 ? p.n_seq : 1;
    if (c->n_seq > 4096) {
        free(c);
        return lb_fail(LB_ERR_ARG, "%d sequences is too many (at most 4096)", p.n_seq);
    }
    /* a batch of several sequences may hold more tokens than one sequence's context */
    const int batch_cap = (int)LB_MIN((int64_t)c->n_ctx * c->n_seq, 1 << 30);
    c->n_batch = p.n_batch > 0 ? LB_MIN(p.n_batch, batch_cap) : LB_MIN(512, batch_cap);
    c->n_threads = p.n_threads > 0 ? p.n_threads : (m->n_threads > 0 ? m->n_threads : default_threads());
    if (p.device != LB_DEVICE_CPU) {
        if (p.device != LB_DEVICE_CUDA) {
            free(c);
            return lb_fail(LB_ERR_ARG, "unknown device %d", p.device);
        }
        if (!device_ops[LB_DEVICE_CUDA]) {
            free(c);
            return lb_fail(LB_ERR_UNSUPPORTED, "this lowbit was built without the CUDA backend "
                                               "(cmake -DLOWBIT_CUDA=ON, with nvcc installed)");
        }
        c->device = p.device;
        c->dev = device_ops[p.device];
    }
    for (int i = 0; i < 2; i++) {
        const int t = i ? p.type_v : p.type_k;
        if (t != LB_TYPE_F32 && t != LB_TYPE_F16 && t != LB_TYPE_Q8_0 && t != LB_TYPE_Q4_0) {
            free(c);
            return lb_fail(LB_ERR_UNSUPPORTED, "KV cache type %d for %s: f32, f16, q8_0 and q4_0 are supported", t,
                           i ? "V" : "K");
        }
        if (t != LB_TYPE_F32 && c->dev) {
            free(c);
            return lb_fail(LB_ERR_UNSUPPORTED, "the CUDA backend keeps an f32 KV cache (drop the %s cache type)",
                           lb_attn_kv_type_name(lb_attn_kv_type(t)));
        }
    }
    const size_t B = (size_t)c->n_batch, d = (size_t)hp->n_embd;
    const size_t qd = (size_t)hp->n_head * hp->head_dim, kvd = (size_t)hp->n_head_kv * hp->head_dim;
    c->n_ctx_pad = lb_attn_ctx_pad(c->n_ctx);
    c->k_type = lb_attn_kv_type(p.type_k), c->v_type = lb_attn_kv_type(p.type_v);
    /* Sliding-window layers: a ring of the window plus a batch, the fewest
     * slots that hold every key a batch sees (kernels/attention.h), where
     * that is less than the context (a device backend keeps its own cache,
     * of every position) */
    const int ring = hp->sliding_window > 0 ? lb_attn_ctx_pad(hp->sliding_window + c->n_batch - 1) : 0;
    c->swa_ring = !c->dev && !p.swa_full && ring > 0 && ring < c->n_ctx_pad ? ring : 0;
    c->k_off = calloc((size_t)hp->n_layer + 1, sizeof *c->k_off);
    c->v_off = calloc((size_t)hp->n_layer + 1, sizeof *c->v_off);
    c->seq_hw = calloc((size_t)c->n_seq, sizeof *c->seq_hw);
    for (int il = 0; c->k_off && c->v_off && il < hp->n_layer; il++) {
        const int slots = lb_kv_slots(c, il);
        c->k_off[il + 1] = c->k_off[il] + lb_attn_k_bytes(slots, hp->n_head_kv, hp->head_dim, c->k_type);
        c->v_off[il + 1] = c->v_off[il] + lb_attn_v_bytes(slots, hp->n_head_kv, hp->head_dim, c->v_type);
    }
    if (!c->dev && c->k_off && c->v_off) { /* a device backend keeps its cache on the device */
        c->k_cache = lb_malloc_aligned((size_t)c->n_seq * c->k_off[hp->n_layer]);
        c->v_cache = lb_malloc_aligned((size_t)c->n_seq * c->v_off[hp->n_layer]);
    }
    c->tok_pos = malloc(B * sizeof *c->tok_pos);
    c->tok_seq = malloc(B * sizeof *c->tok_seq);
    c->tok_buf = malloc(B * sizeof *c->tok_buf);
    c->row_buf = malloc(LB_MAX((size_t)c->n_seq, B) * sizeof *c->row_buf); /* an LB_LOGITS_ALL entry: a row a token */
    /* the widest dense FFN (MoE models: the shared expert's, if any; the
     * experts have buffers of their own, model/moe.c) */
    size_t ffm = 1;
    for (int il = 0; il < hp->n_layer; il++) ffm = LB_MAX(ffm, (size_t)m->layers[il].w_up.N);
    c->x = alloc_f(B * d);
    c->xn = alloc_f(B * LB_MAX(d, ffm));
    c->q = alloc_f(B * qd);
    c->k = alloc_f(B * kvd);
    c->v = alloc_f(B * kvd);
    c->att_out = alloc_f(B * LB_MAX(qd, d));
    c->ff_gate = alloc_f(B * ffm);
    c->ff_up = alloc_f(B * ffm);
    c->logits_tmp = alloc_f((size_t)hp->n_vocab);
    int extra_oom = 0; /* model/mla.c's buffers, the parallel block's */
    if (hp->parallel_block && !(c->par = alloc_f(B * d))) extra_oom = 1; /* command-r, cohere2 */
    if (hp->arch == LB_ARCH_DEEPSEEK2) { /* model/mla.c's buffers */
        const size_t nh = (size_t)hp->n_head;
        c->mla_a = alloc_f(B * LB_MAX(nh * (size_t)(hp->mla_nope + hp->rope_dim), nh * (size_t)hp->mla_v));
        c->mla_g = alloc_f(B * (size_t)LB_MAX(LB_MAX(hp->mla_q_rank, hp->mla_nope), hp->mla_kv_rank));
        extra_oom |= !c->mla_a || !c->mla_g;
    }
    c->att_scratch = alloc_f((size_t)c->n_threads * lb_attn_scratch_floats(hp->head_dim, hp->n_head / hp->n_head_kv));
    c->rope_cs = alloc_f(B * hp->rope_dim + 1);
    c->rope_sn = alloc_f(B * hp->rope_dim + 1);
    c->rope_cs_local = alloc_f(B * hp->rope_dim + 1);
    c->rope_sn_local = alloc_f(B * hp->rope_dim + 1);
    c->inv_freq = alloc_f((size_t)hp->rope_dim / 2 + 1);
    c->inv_freq_local = alloc_f((size_t)hp->rope_dim / 2 + 1);
    /* the largest activation scratch any matmul of the model needs */
    int moe_oom = 0;
    size_t act = lb_matmul_scratch_size(&m->output, c->n_batch);
    lb_matrix **ws = malloc((size_t)lb_layer_n_matrices(hp) * sizeof *ws);
    for (int il = 0; ws && il < hp->n_layer; il++) {
        const int nw = lb_layer_matrices(hp, &m->layers[il], ws);
        for (int i = 0; i < nw; i++) act = LB_MAX(act, lb_matmul_scratch_size(ws[i], c->n_batch));
        if (m->layers[il].wk_b) /* model/mla.c decodes up to 16 heads a region */
            for (int i = 0; i < 2; i++) {
                const lb_matrix *w = i ? &m->layers[il].wv_b[0] : &m->layers[il].wk_b[0];
                act = LB_MAX(act, lb_matmul_rows_scratch_size(w, LB_MIN(16, hp->n_head)) +
                                      lb_matmul_scratch_size(w, 1) * (size_t)LB_MIN(16, hp->n_head));
            }
    }
    if (!ws) moe_oom = 1;
    free(ws);
    c->act_scratch_size = act;
    c->act_scratch = lb_malloc_aligned(act);
    if (hp->n_expert && !moe_oom && lb_moe_buffers_new(m, c->n_batch, &c->moe) != LB_OK) moe_oom = 1;
    if ((!c->dev && (!c->k_cache || !c->v_cache)) || !c->x || !c->xn || !c->q || !c->k || !c->v || !c->att_out ||
        !c->ff_gate || !c->ff_up || !c->logits_tmp || !c->att_scratch || !c->act_scratch ||
        !c->inv_freq || !c->inv_freq_local || !c->rope_cs || !c->rope_sn || !c->rope_cs_local || !c->rope_sn_local ||
        !c->tok_pos || !c->tok_seq || !c->tok_buf || !c->row_buf || !c->k_off || !c->v_off || !c->seq_hw || moe_oom ||
        extra_oom) {
        const double mib = c->k_off && c->v_off ? (double)lb_context_kv_bytes(c) / 1048576.0 : 0.0;
        lb_context_free(c);
        return lb_fail(LB_ERR_NOMEM, "out of memory for a context of %d tokens (KV cache %.1f MiB)",
                       p.n_ctx > 0 ? p.n_ctx : hp->n_ctx_train, mib);
    }
    /* phi3's LongRoPE: the long factors once the context passes the
     * original one (llama.cpp build_rope_factors), else the short */
    const float *factors = m->rope_freq_factors;
    if (m->rope_factors_long) factors = c->n_ctx > hp->n_ctx_orig ? m->rope_factors_long : m->rope_factors_short;
    rope_inv_freq(m, hp->rope_freq_base, hp->rope_freq_scale, factors, c->inv_freq);
    /* Gemma 3's sliding-window layers: their own base and no scaling (llama.cpp
     * rope_freq_scale_train_swa = 1); other models use one table for all layers. */
    if (hp->arch == LB_ARCH_GEMMA3) rope_inv_freq(m, hp->rope_freq_base_local, 1.0f, factors, c->inv_freq_local);
    else rope_inv_freq(m, hp->rope_freq_base, hp->rope_freq_scale, factors, c->inv_freq_local);
    if (c->dev) {
        lb_status s = c->dev->attach(c);
        if (s != LB_OK) {
            lb_context_free(c);
            return s;
        }
    }
    *out = c;
    return LB_OK;
}

int lb_context_n_ctx(const lb_context *c) { return c->n_ctx; }

uint64_t lb_context_kv_bytes(const lb_context *c) {
    const int L = c->model->hp.n_layer;
    return (uint64_t)c->n_seq * (c->k_off[L] + c->v_off[L]);
}

const char *lb_context_kv_desc(const lb_context *c) {
    static _Thread_local char buf[200];
    char ring[64] = "";
    if (c->swa_ring) snprintf(ring, sizeof ring, " (sliding-window layers: a ring of %d)", c->swa_ring);
    snprintf(buf, sizeof buf, "KV cache: %d positions%s x %d sequence%s, K %s, V %s, %.1f MiB", c->n_ctx, ring,
             c->n_seq, c->n_seq == 1 ? "" : "s", lb_attn_kv_type_name(c->k_type), lb_attn_kv_type_name(c->v_type),
             (double)lb_context_kv_bytes(c) / 1048576.0);
    return buf;
}

int lb_kv_slots(const lb_context *c, int il) {
    return c->swa_ring && c->model->layers[il].is_local ? c->swa_ring : c->n_ctx_pad;
}

/* Whether sequence seq's cache still holds the keys position pos sees: in a
 * ring, positions from seq_hw - swa_ring on are there, and pos sees
 * pos - window + 1 .. pos - 1 (0 and below: nothing to keep) */
static int ring_keeps(const lb_context *c, int seq, int pos) {
    if (!c->swa_ring || pos <= 0) return 1;
    return c->seq_hw[seq] - LB_MAX(0, pos - c->model->hp.sliding_window + 1) <= c->swa_ring;
}

static lb_status ring_lost(const char *fn, const lb_context *c, int seq, int pos) {
    return lb_fail(LB_ERR_ARG, "%s: sequence %d: the sliding-window layers' cache (a ring of %d positions) no longer "
                               "holds the keys position %d sees (positions up to %d were written since): evaluate "
                               "from position 0 (lb_seq_reusable tells beforehand)",
                   fn, seq, c->swa_ring, pos, c->seq_hw[seq] - 1);
}

int lb_seq_reusable(const lb_context *c, int seq, int n) {
    if (seq < 0 || seq >= c->n_seq || n <= 0) return 0;
    return ring_keeps(c, seq, n) ? n : 0;
}

/* after writing positions pos0 .. pos0 + n - 1 of seq */
static void ring_note(lb_context *c, int seq, int pos0, int n) {
    c->seq_hw[seq] = pos0 == 0 ? n : LB_MAX(c->seq_hw[seq], pos0 + n);
}
int lb_context_threads(const lb_context *c) { return c->n_threads; }
void lb_context_reset(lb_context *c) { /* positions drive the cache: nothing to clear but the rings' marks */
    if (c->seq_hw) memset(c->seq_hw, 0, (size_t)c->n_seq * sizeof *c->seq_hw);
}

/* A layer's or the output's norm of one row: RMSNorm, or (command-r,
 * cohere2) LayerNorm as ggml_norm computes it: the mean and the variance
 * summed in double, no bias. */
static void norm_row(const lb_hparams *hp, const lb_vecops *vo, float *y, const float *x, const float *w, int d) {
    if (!hp->layer_norm) {
        vo->rmsnorm(y, x, w, d, hp->norm_eps);
        return;
    }
    double sum = 0.0, sum2 = 0.0;
    for (int i = 0; i < d; i++) sum += x[i];
    const float mean = (float)(sum / d);
    for (int i = 0; i < d; i++) {
        const float v = x[i] - mean;
        y[i] = v;
        sum2 += (double)(v * v);
    }
    const float scale = 1.0f / sqrtf((float)(sum2 / d) + hp->norm_eps);
    for (int i = 0; i < d; i++) y[i] = y[i] * scale * w[i];
}

/* Per row: y = norm(x) * w, after (when a is given) a = post_norm(a) * post
 * (Gemma 3) and x += a. w NULL: the add only. */
static void residual_rows(const lb_context *c, const lb_vecops *vo, float *x, float *a, const float *post, float *y,
                          const float *w, int n, int d) {
    const float eps = c->model->hp.norm_eps;
    const int nth = lb_stage_threads(c, (int64_t)n * d), no_norm = c->model->hp.no_pre_norm;
    LB_FOR_ROWS(nth, n, i, {
        float *xi = x + (size_t)i * d;
        if (a) {
            float *ai = a + (size_t)i * d;
            if (post) vo->rmsnorm(ai, ai, post, d, eps);
            vo->add(xi, ai, d);
        }
        if (w) norm_row(&c->model->hp, vo, y + (size_t)i * d, xi, w, d);
        else if (no_norm && y) memcpy(y + (size_t)i * d, xi, (size_t)d * sizeof *xi); /* olmo2: the stream itself */
    });
}

/* RoPE tables of the batch's positions (shared by every head and layer). */
void lb_rope_tables(lb_context *c, int n) {
    const lb_hparams *hp = &c->model->hp;
    const int rd = hp->rope_dim, local = hp->arch == LB_ARCH_GEMMA3;
    const int nth = lb_stage_threads(c, (int64_t)n * rd * 16); /* cosf + sinf: ~16 adds' worth each */
    LB_FOR_ROWS(nth, n, t, {
        const size_t o = (size_t)t * rd;
        lb_rope_table(c->rope_cs + o, c->rope_sn + o, (float)c->tok_pos[t], c->inv_freq, rd, hp->rope_neox);
        if (local)
            lb_rope_table(c->rope_cs_local + o, c->rope_sn_local + o, (float)c->tok_pos[t], c->inv_freq_local, rd,
                          hp->rope_neox);
        /* ggml's attn_factor (mscale): cos and sin both scaled, so q.k by its square */
        if (hp->rope_attn_factor != 1.0f)
            for (int i = 0; i < rd; i++) c->rope_cs[o + i] *= hp->rope_attn_factor, c->rope_sn[o + i] *= hp->rope_attn_factor;
    });
}

/* The cache of one sequence's layer. */
void *lb_k_cache_of(const lb_context *c, int seq, int il) {
    return (char *)c->k_cache + (size_t)seq * c->k_off[c->model->hp.n_layer] + c->k_off[il];
}
void *lb_v_cache_of(const lb_context *c, int seq, int il) {
    return (char *)c->v_cache + (size_t)seq * c->v_off[c->model->hp.n_layer] + c->v_off[il];
}

/* Per token, after the q, k, v matmuls: biases, the per-head norms (Gemma 3, Qwen 3),
 * RoPE, and k, v into its sequence's cache. */
static void qkv_rows(lb_context *c, const lb_vecops *vo, int il, int n) {
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    const lb_layer *l = &m->layers[il];
    const int hd = hp->head_dim, nh = hp->n_head, nkv = hp->n_head_kv, qd = nh * hd, kvd = nkv * hd;
    const float eps = hp->norm_eps;
    const float *cs = l->is_local && hp->arch == LB_ARCH_GEMMA3 ? c->rope_cs_local : c->rope_cs;
    const float *sn = l->is_local && hp->arch == LB_ARCH_GEMMA3 ? c->rope_sn_local : c->rope_sn;
    const int nth = lb_stage_threads(c, (int64_t)n * (qd + 2 * kvd));
    LB_FOR_ROWS(nth, n, t, {
        float *q = c->q + (size_t)t * qd, *k = c->k + (size_t)t * kvd, *v = c->v + (size_t)t * kvd;
        const float *cst = cs + (size_t)t * hp->rope_dim, *snt = sn + (size_t)t * hp->rope_dim;
        if (l->bq) vo->add(q, l->bq, qd);
        if (l->bk) vo->add(k, l->bk, kvd);
        if (l->bv) vo->add(v, l->bv, kvd);
        if (l->qk_norm_full) { /* olmo2 */
            vo->rmsnorm(q, q, l->q_norm, qd, eps);
            vo->rmsnorm(k, k, l->k_norm, kvd, eps);
        }
        const float *qn = l->qk_norm_full ? NULL : l->q_norm, *kn = l->qk_norm_full ? NULL : l->k_norm;
        for (int h = 0; h < nh; h++) {
            if (qn) vo->rmsnorm(q + (size_t)h * hd, q + (size_t)h * hd, qn, hd, eps);
            if (!l->no_rope) vo->rope(q + (size_t)h * hd, cst, snt, hp->rope_dim, hp->rope_neox);
        }
        if (hp->attn_temp_scale != 0.0f) { /* as llama.cpp computes it, in float */
            const float ts = logf(floorf(((float)c->tok_pos[t] + 1.0f) / (float)hp->attn_temp_floor) + 1.0f) *
                                 hp->attn_temp_scale + 1.0f;
            if (ts != 1.0f)
                for (int i = 0; i < qd; i++) q[i] *= ts;
        }
        for (int h = 0; h < nkv; h++) {
            if (kn) vo->rmsnorm(k + (size_t)h * hd, k + (size_t)h * hd, kn, hd, eps);
            if (!l->no_rope) vo->rope(k + (size_t)h * hd, cst, snt, hp->rope_dim, hp->rope_neox);
        }
        lb_attn_store_kv(lb_k_cache_of(c, c->tok_seq[t], il), lb_v_cache_of(c, c->tok_seq[t], il), c->k_type, c->v_type,
                         lb_kv_slots(c, il), nkv, hd, k, kvd, v, kvd, 1, c->tok_pos[t]);
    });
}

/* Each run attends to its own sequence's cache. */
void lb_attention_segs(lb_context *c, int il, const lb_seg *segs, int n_segs) {
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    const int qd = hp->n_head * hp->head_dim;
    for (int s = 0; s < n_segs; s++) {
        lb_attn_args a = {0};
        a.q = c->q + (size_t)segs[s].t0 * qd;
        a.out = c->att_out + (size_t)segs[s].t0 * qd;
        a.k = lb_k_cache_of(c, segs[s].seq, il);
        a.v = lb_v_cache_of(c, segs[s].seq, il);
        a.k_type = c->k_type, a.v_type = c->v_type;
        a.q_stride = a.o_stride = (size_t)qd;
        a.n_ctx = lb_kv_slots(c, il);
        a.n = segs[s].n;
        a.pos0 = segs[s].pos0;
        a.n_head = hp->n_head;
        a.n_head_kv = hp->n_head_kv;
        a.head_dim = hp->head_dim;
        a.window = m->layers[il].is_local ? hp->sliding_window : 0;
        a.scale = hp->query_scale;
        a.softcap = hp->attn_softcap;
        a.sinks = m->layers[il].attn_sinks;
        lb_attention(&a, c->att_scratch, c->n_threads);
    }
}

static void matmul(lb_context *c, const lb_matrix *w, const float *x, int n, float *y) {
    if (c->on_matmul) c->on_matmul(c->on_matmul_user, w, x, n);
    lb_matmul(w, x, n, y, (size_t)w->N, c->act_scratch, c->n_threads);
}

/* Matrices that read the same x (Q, K, V; gate, up) in one call: one
 * activation conversion and one parallel region when their types agree. */
static void matmul_same_x(lb_context *c, int nw, const lb_matrix *const *w, const float *x, int n, float *const *y) {
    size_t ldy[4];
    for (int i = 0; i < nw; i++) {
        if (c->on_matmul) c->on_matmul(c->on_matmul_user, w[i], x, n);
        ldy[i] = (size_t)w[i]->N;
    }
    lb_matmul_multi(w, nw, x, n, y, ldy, c->act_scratch, c->n_threads);
}

void lb_embed_tokens(const lb_model *m, const int32_t *tokens, int n, float *x) {
    const lb_hparams *hp = &m->hp;
    const int d = hp->n_embd;
    const lb_type_traits *et = lb_traits(m->tok_embd.type);
    for (int t = 0; t < n; t++) {
        float *xt = x + (size_t)t * d;
        et->to_float((const char *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_size, xt, d);
        if (hp->arch == LB_ARCH_GEMMA2 || hp->arch == LB_ARCH_GEMMA3) {
            const float s = sqrtf((float)d);
            for (int j = 0; j < d; j++) xt[j] *= s;
        } else if (hp->embedding_scale > 0.0f) { /* granite */
            for (int j = 0; j < d; j++) xt[j] *= hp->embedding_scale;
        }
    }
}

/* g = act(g) * u over n rows of ff: SiLU, or GELU for Gemma */
static void glu_rows(const lb_context *c, const lb_vecops *vo, float *g, const float *u, int n, int ff) {
    const int nth = lb_stage_threads(c, (int64_t)n * ff * 8); /* exp: ~8 adds' worth */
    const int gelu = c->model->hp.arch == LB_ARCH_GEMMA2 || c->model->hp.arch == LB_ARCH_GEMMA3;
    LB_FOR_ROWS(nth, n, t, {
        if (gelu) vo->gelu_mul(g + (size_t)t * ff, u + (size_t)t * ff, ff);
        else vo->silu_mul(g + (size_t)t * ff, u + (size_t)t * ff, ff);
    });
}

/* The dense FFN of the batch: xn in, down(act(gate(xn)) * up(xn)) in xn. */
static void ffn_rows(lb_context *c, const lb_vecops *vo, const lb_layer *l, int n) {
    const lb_matrix *w[2] = {&l->w_gate, &l->w_up};
    float *y[2] = {c->ff_gate, c->ff_up};
    matmul_same_x(c, 2, w, c->xn, n, y);
    glu_rows(c, vo, c->ff_gate, c->ff_up, n, (int)l->w_up.N);
    matmul(c, &l->w_down, c->ff_gate, n, c->xn);
}

/* granite: a branch's output (attention, FFN) times residual_scale before
 * it joins the stream, as llama.cpp scales it */
static void scale_branch(const lb_hparams *hp, float *y, int n, int d) {
    if (hp->residual_scale > 0.0f)
        for (size_t i = 0; i < (size_t)n * d; i++) y[i] *= hp->residual_scale;
}

/* Layer il for the batch: c->x the residual stream before it and c->xn its
 * attn_norm(x); after it, c->x the stream after the layer and c->xn the next
 * layer's attn_norm(x) (nothing after the last). */
static void layer_rows(lb_context *c, const lb_vecops *vo, int il, int n, const lb_seg *segs, int n_segs) {
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    const int d = hp->n_embd;
    const lb_layer *l = &m->layers[il];
    /* command-r, cohere2: the FFN first, on the norm the attention reads
     * too (kept in c->par meanwhile), its output added to the stream; then
     * the attention's (x + ffn + attn, llama.cpp's order) */
    if (hp->parallel_block) {
        memcpy(c->par, c->xn, (size_t)n * d * sizeof *c->par);
        ffn_rows(c, vo, l, n);
        residual_rows(c, vo, c->x, c->xn, NULL, NULL, NULL, n, d);
        memcpy(c->xn, c->par, (size_t)n * d * sizeof *c->par);
    }
    /* attention; xn = attn_norm(x) */
    if (hp->arch == LB_ARCH_DEEPSEEK2) {
        lb_mla_attention(c, il, n, segs, n_segs); /* model/mla.c */
    } else {
        const lb_matrix *w[3] = {&l->wq, &l->wk, &l->wv};
        float *y[3] = {c->q, c->k, c->v};
        matmul_same_x(c, 3, w, c->xn, n, y);
        qkv_rows(c, vo, il, n);
        if (c->on_attention) c->on_attention(c->on_attention_user, il, c->q, c->k, n);
        lb_attention_segs(c, il, segs, n_segs);
        matmul(c, &l->wo, c->att_out, n, c->xn);
    }
    if (l->bo)
        for (int t = 0; t < n; t++) vo->add(c->xn + (size_t)t * d, l->bo, d);
    scale_branch(hp, c->xn, n, d);
    if (hp->parallel_block) {
        residual_rows(c, vo, c->x, c->xn, NULL, c->xn, il + 1 < hp->n_layer ? m->layers[il + 1].attn_norm : NULL, n, d);
        return;
    }
    residual_rows(c, vo, c->x, c->xn, l->attn_post_norm, c->xn, l->ffn_norm, n, d);

    /* feed-forward: dense, or experts (into att_out, free by now) plus
     * the shared expert, if any, scaled by its sigmoid gate */
    float *ffn_out = c->xn;
    if (l->router.data) {
        lb_moe_ffn(c, l, c->xn, n, c->att_out);
        ffn_out = c->att_out;
        if (l->w_down.data) {
            const float *gate = lb_moe_shexp_gates(c, l, c->xn, n);
            ffn_rows(c, vo, l, n);
            for (int t = 0; t < n; t++) {
                float *o = c->att_out + (size_t)t * d;
                const float *s = c->xn + (size_t)t * d, g = gate[t];
                for (int j = 0; j < d; j++) o[j] += g * s[j];
            }
        }
    } else {
        ffn_rows(c, vo, l, n);
    }
    /* the next layer's norm rides along; after the last, only the rows
     * that give logits are normalized (forward_batch) */
    const float *next = il + 1 < hp->n_layer ? m->layers[il + 1].attn_norm : NULL;
    scale_branch(hp, ffn_out, n, d);
    residual_rows(c, vo, c->x, ffn_out, l->ffn_post_norm, c->xn, next, n, d);
}

/* One batch of n <= n_batch tokens, in runs of one sequence each (segs).
 * Logits of rows [first, first + rows), or of row_idx[0..rows) if given. */
static lb_status forward_batch(lb_context *c, const int32_t *tokens, int n, const lb_seg *segs, int n_segs,
                               float *logits, int first, int rows, const int *row_idx) {
    if (c->dev) {
        if (c->on_matmul || c->on_attention)
            return lb_fail(LB_ERR_UNSUPPORTED, "the matmul / attention observers (imatrix, calibration) run on the "
                                               "CPU only: make the context without a device");
        return c->dev->forward(c, tokens, n, segs, n_segs, logits, first, rows, row_idx);
    }
    const lb_model *m = c->model;
    const lb_hparams *hp = &m->hp;
    const lb_vecops *vo = lb_vecops_get();
    const int d = hp->n_embd;
    for (int s = 0; s < n_segs; s++)
        for (int t = 0; t < segs[s].n; t++) {
            c->tok_pos[segs[s].t0 + t] = segs[s].pos0 + t;
            c->tok_seq[segs[s].t0 + t] = segs[s].seq;
        }

    lb_embed_tokens(m, tokens, n, c->x);
    lb_rope_tables(c, n);
    residual_rows(c, vo, c->x, NULL, NULL, c->xn, m->layers[0].attn_norm, n, d);

    for (int il = 0; il < hp->n_layer; il++) layer_rows(c, vo, il, n, segs, n_segs);
    for (int s = 0; s < n_segs; s++) ring_note(c, segs[s].seq, segs[s].pos0, segs[s].n);

    if (!logits || rows <= 0) return LB_OK;
    if (row_idx)
        for (int j = 0; j < rows; j++)
            norm_row(hp, vo, c->xn + (size_t)j * d, c->x + (size_t)row_idx[j] * d, m->output_norm, d);
    else
        residual_rows(c, vo, c->x + (size_t)first * d, NULL, NULL, c->xn, m->output_norm, rows, d);
    matmul(c, &m->output, c->xn, rows, logits);
    if (hp->logit_mul > 0.0f && hp->logit_mul != 1.0f) /* command-r, cohere2 */
        for (size_t i = 0; i < (size_t)rows * hp->n_vocab; i++) logits[i] *= hp->logit_mul;
    if (hp->logit_scale > 0.0f) { /* granite: times 1 / logit_scale, as llama.cpp */
        const float s = 1.0f / hp->logit_scale;
        for (size_t i = 0; i < (size_t)rows * hp->n_vocab; i++) logits[i] *= s;
    }
    if (hp->final_logit_softcap > 0.0f) {
        const float cap = hp->final_logit_softcap;
        for (size_t i = 0; i < (size_t)rows * hp->n_vocab; i++) logits[i] = cap * tanhf(logits[i] / cap);
    }
    return LB_OK;
}

lb_status lb_eval(lb_context *c, const int32_t *tokens, int n, int pos, float *logits, int all_logits) {
    const int V = c->model->hp.n_vocab;
    if (n <= 0) return lb_fail(LB_ERR_ARG, "lb_eval: no tokens");
    if (pos < 0 || (int64_t)pos + n > c->n_ctx)
        return lb_fail(LB_ERR_ARG, "lb_eval: positions %d..%d exceed the context length %d", pos, pos + n - 1, c->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return lb_fail(LB_ERR_ARG, "lb_eval: token id %d is outside the vocabulary (0..%d)", tokens[i], V - 1);
    if (!ring_keeps(c, 0, pos)) return ring_lost("lb_eval", c, 0, pos);
    for (int done = 0; done < n; done += c->n_batch) {
        const int nb = LB_MIN(c->n_batch, n - done);
        const int last = done + nb == n;
        float *out = NULL;
        if (logits && all_logits) out = logits + (size_t)done * V;
        else if (logits && last) out = logits;
        const lb_seg seg = {0, pos + done, 0, nb};
        const lb_status s =
            forward_batch(c, tokens + done, nb, &seg, 1, out, all_logits ? 0 : nb - 1, all_logits ? nb : 1, NULL);
        if (s != LB_OK) return s;
    }
    return LB_OK;
}

lb_status lb_eval_multi(lb_context *c, const lb_seq_batch *b, int n_entries, float *logits) {
    const int V = c->model->hp.n_vocab;
    if (n_entries <= 0 || n_entries > c->n_seq)
        return lb_fail(LB_ERR_ARG, "lb_eval_multi: %d entries for %d sequences", n_entries, c->n_seq);
    lb_seg *segs = malloc((size_t)n_entries * sizeof *segs);
    if (!segs) return lb_fail(LB_ERR_NOMEM, "out of memory");
    int total = 0, rows = 0;
    lb_status st = LB_OK;
    for (int e = 0; e < n_entries && !st; e++) {
        const lb_seq_batch *s = &b[e];
        if (s->seq < 0 || s->seq >= c->n_seq)
            st = lb_fail(LB_ERR_ARG, "lb_eval_multi: sequence %d outside 0..%d", s->seq, c->n_seq - 1);
        else if (s->n <= 0 || !s->tokens)
            st = lb_fail(LB_ERR_ARG, "lb_eval_multi: sequence %d has no tokens", s->seq);
        else if (s->pos < 0 || (int64_t)s->pos + s->n > c->n_ctx)
            st = lb_fail(LB_ERR_ARG, "lb_eval_multi: positions %d..%d exceed the context length %d", s->pos,
                         s->pos + s->n - 1, c->n_ctx);
        else if (!ring_keeps(c, s->seq, s->pos))
            st = ring_lost("lb_eval_multi", c, s->seq, s->pos);
        else if (s->n > c->n_batch - total)
            st = lb_fail(LB_ERR_ARG, "lb_eval_multi: more than n_batch = %d tokens", c->n_batch);
        for (int j = 0; j < e && !st; j++)
            if (b[j].seq == s->seq) st = lb_fail(LB_ERR_ARG, "lb_eval_multi: sequence %d appears twice", s->seq);
        for (int i = 0; i < s->n && !st; i++) {
            if (s->tokens[i] < 0 || s->tokens[i] >= V)
                st = lb_fail(LB_ERR_ARG, "lb_eval_multi: token id %d is outside the vocabulary (0..%d)", s->tokens[i],
                             V - 1);
            else c->tok_buf[total + i] = s->tokens[i];
        }
        if (st) break;
        segs[e] = (lb_seg){s->seq, s->pos, total, s->n};
        total += s->n;
        if (s->logits == LB_LOGITS_ALL)
            for (int i = total - s->n; i < total; i++) c->row_buf[rows++] = i;
        else if (s->logits)
            c->row_buf[rows++] = total - 1;
    }
    if (!st) st = forward_batch(c, c->tok_buf, total, segs, n_entries, logits, 0, rows, c->row_buf);
    free(segs);
    return st;
}

lb_status lb_seq_copy(lb_context *c, int src, int dst, int n) {
    if (src < 0 || src >= c->n_seq || dst < 0 || dst >= c->n_seq)
        return lb_fail(LB_ERR_ARG, "lb_seq_copy: sequences %d -> %d outside 0..%d", src, dst, c->n_seq - 1);
    if (n < 0 || n > c->n_ctx) return lb_fail(LB_ERR_ARG, "lb_seq_copy: %d positions (context %d)", n, c->n_ctx);
    if (src == dst || n == 0) return LB_OK;
    if (c->dev) return c->dev->seq_copy(c, src, dst, n);
    if (!ring_keeps(c, src, n)) return ring_lost("lb_seq_copy", c, src, n);
    const lb_hparams *hp = &c->model->hp;
    /* a ring that has wrapped goes whole (the window before n is anywhere
     * in it), with src's mark; else slots 0..n-1 are positions 0..n-1 */
    const int wrapped = c->swa_ring && c->seq_hw[src] > c->swa_ring;
    for (int il = 0; il < hp->n_layer; il++) {
        const int slots = lb_kv_slots(c, il), ring = slots < c->n_ctx_pad;
        lb_attn_copy_kv(lb_k_cache_of(c, dst, il), lb_v_cache_of(c, dst, il), lb_k_cache_of(c, src, il), lb_v_cache_of(c, src, il),
                        c->k_type, c->v_type, slots, hp->n_head_kv, hp->head_dim,
                        ring && wrapped ? slots : LB_MIN(n, slots));
    }
    c->seq_hw[dst] = wrapped ? c->seq_hw[src] : n;
    return LB_OK;
}

lb_status lb_eval_layers(lb_context *c, float *x, int n, int l0, int l1) {
    const lb_model *m = c->model;
    const int d = m->hp.n_embd;
    if (n <= 0 || n > c->n_batch || n > c->n_ctx)
        return lb_fail(LB_ERR_ARG, "lb_eval_layers: %d tokens (batch %d, context %d)", n, c->n_batch, c->n_ctx);
    if (l0 < 0 || l1 > m->hp.n_layer || l0 >= l1)
        return lb_fail(LB_ERR_ARG, "lb_eval_layers: layers %d..%d of %d", l0, l1 - 1, m->hp.n_layer);
    if (c->dev) return lb_fail(LB_ERR_UNSUPPORTED, "lb_eval_layers (calibration) runs on the CPU only");
    const lb_vecops *vo = lb_vecops_get();
    const lb_seg seg = {0, 0, 0, n};
    for (int t = 0; t < n; t++) c->tok_pos[t] = t, c->tok_seq[t] = 0;
    memcpy(c->x, x, (size_t)n * d * sizeof *x);
    lb_rope_tables(c, n);
    residual_rows(c, vo, c->x, NULL, NULL, c->xn, m->layers[l0].attn_norm, n, d);
    for (int il = l0; il < l1; il++) layer_rows(c, vo, il, n, &seg, 1);
    ring_note(c, 0, 0, n);
    memcpy(x, c->x, (size_t)n * d * sizeof *x);
    return LB_OK;
}
