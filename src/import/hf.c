/* Hugging Face Llama-family checkpoint (config.json + safetensors, single or
 * sharded) -> GGUF, following llama.cpp's convert_hf_to_gguf.py:
 *  - llama/mistral: GGUF arch "llama"; q_proj/k_proj rows are permuted from
 *    HF's rotate-half RoPE layout back to Meta's interleaved pairs; SmolLM3
 *    the same as arch "smollm3" (its layers 3, 7, ... without RoPE), and
 *    Granite as arch "granite" with its four multipliers;
 *  - qwen2: GGUF arch "qwen2" (NeoX RoPE, so nothing is permuted), with
 *    q/k/v biases;
 *  - qwen3: GGUF arch "qwen3", as qwen2 without the biases, with per-head
 *    q/k RMS norms (self_attn.q_norm / k_norm -> attn_q_norm / attn_k_norm);
 *  - gemma2 / gemma3 (Gemma3ForCausalLM, the text models): four norms a
 *    layer, each written as 1 + w (Gemma's RMSNorm multiplies by 1 + w, and
 *    llama.cpp's files hold the sum), the head tied to the embedding; Gemma
 *    2's soft caps and window, Gemma 3's q/k norms, window and local RoPE base;
 *  - phi3 (Phi-3, 3.5, Phi-4-mini): qkv_proj and gate_up_proj kept fused
 *    (attn_qkv, ffn_up), LongRoPE's factor lists as rope_factors_long /
 *    _short with the attention factor, partial rotary, the sliding window;
 *  - mixtures of experts (Qwen2MoeForCausalLM -> qwen2moe, Qwen3MoeForCausalLM
 *    -> qwen3moe, MixtralForCausalLM -> llama with experts): each layer's
 *    experts stacked into the 3-D ffn_{gate,up,down}_exps, the router as
 *    ffn_gate_inp (kept F32, as llama.cpp's converter keeps it), qwen2moe's
 *    shared expert and its gate.
 * Tensors stream one at a time from the shards (F32/F16/BF16 sources).
 * GPTQ checkpoints (qweight/qzeros/scales/g_idx per linear layer, with a
 * GPTQ quantization config) keep their codes as GQ types: import/gptq.h. */
#include <math.h>
#include <stdlib.h>

#include "import/convert.h"
#include "import/gptq.h"
#include "import/hf.h"
#include "import/safetensors.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct {
    const char *arch;        /* GGUF architecture */
    int permute_qk, qkv_bias, qk_norm;
    int gemma;               /* 2 or 3: Gemma's norms and keys; 0 otherwise */
    double attn_softcap, final_softcap, theta_local;
    int64_t window, query_pre_attn;
    int phi3;                /* fused tensors, LongRoPE */
    int moe;                 /* MOE_QWEN (mlp.experts.E.*_proj) or MOE_MIXTRAL (block_sparse_moe.experts.E.w1..3) */
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp; /* n_ff_shexp > 0: qwen2moe's shared expert */
    int64_t rope_dims;       /* phi3: partial_rotary_factor x head_dim */
    double attn_factor;      /* phi3 LongRoPE: sqrt(1 + ln(scale) / ln(original context)) */
    int granite;             /* its four multipliers: embedding, residual, logits (divisor), attention */
    double g_embd, g_resid, g_logits, g_attn;
    const json_value *long_f, *short_f; /* phi3 LongRoPE factors (config.json's arrays) */
    int64_t n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_ctx, n_vocab_cfg;
    double eps, theta;
    int tied;
    int rope_linear, rope_llama3, rope_yarn;
    double rope_factor, low_freq_factor, high_freq_factor;
    int64_t rope_orig_ctx;
} hf_config;

enum { MOE_QWEN = 1, MOE_MIXTRAL = 2 };

typedef struct {
    st_file **files;
    int n_files;
    float *rope_freqs;       /* llama3 rope scaling factors, if any */
    const gptq_config *gptq; /* GPTQ checkpoint: its quantization config, else NULL */
    int n_gq;                /* matrices kept as GQ types */
    float *rope_long, *rope_short; /* phi3 LongRoPE factors as floats */
} hf_weights;

lb_status hf_read_json(const char *dir, const char *name, int optional, json_doc **doc) {
    *doc = NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return lb_fail(LB_ERR_ARG, "path too long: %s/%s", dir, name);
    FILE *probe = fopen(path, "rb");
    if (!probe && optional) return LB_OK;
    if (probe) fclose(probe);
    char *text;
    size_t len;
    lb_status s = lb_read_file(path, &text, &len);
    if (s != LB_OK) return s;
    s = json_parse(text, len, doc);
    free(text);
    if (s != LB_OK) return lb_fail_prefix(s, "%s", path);
    return LB_OK;
}

/* ---- config.json ---- */

static lb_status req_int(const json_value *cfg, const char *key, int64_t *out) {
    if (!json_get_int(cfg, key, out))
        return lb_fail(LB_ERR_FORMAT, "config.json: \"%s\" is missing or not an integer", key);
    if (*out <= 0 || *out > (1 << 30))
        return lb_fail(LB_ERR_FORMAT, "config.json: \"%s\" is %lld (must be 1..2^30)", key, (long long)*out);
    return LB_OK;
}

/* Optional integer: absent or null keeps *out. */
static lb_status opt_int(const json_value *cfg, const char *key, int64_t *out) {
    const json_value *v = json_get(cfg, key);
    if (!v || v->type == JSON_NULL) return LB_OK;
    return req_int(cfg, key, out);
}

static lb_status opt_num(const json_value *cfg, const char *key, double *out) {
    const json_value *v = json_get(cfg, key);
    if (!v || v->type == JSON_NULL) return LB_OK;
    if (!json_get_num(cfg, key, out) || !(*out > 0) || !isfinite(*out))
        return lb_fail(LB_ERR_FORMAT, "config.json: \"%s\" must be a positive number", key);
    return LB_OK;
}

static lb_status detect_arch(const json_value *cfg, hf_config *c) {
    static const struct { const char *hf, *model_type, *arch; int permute, bias, qk_norm, gemma, moe; } known[] = {
        {"LlamaForCausalLM", "llama", "llama", 1, 0, 0, 0, 0},
        {"MistralForCausalLM", "mistral", "llama", 1, 0, 0, 0, 0},
        {"SmolLM3ForCausalLM", "smollm3", "smollm3", 1, 0, 0, 0, 0},
        {"GraniteForCausalLM", "granite", "granite", 1, 0, 0, 0, 0},
        {"Qwen2ForCausalLM", "qwen2", "qwen2", 0, 1, 0, 0, 0},
        {"Qwen3ForCausalLM", "qwen3", "qwen3", 0, 0, 1, 0, 0},
        {"Gemma2ForCausalLM", "gemma2", "gemma2", 0, 0, 0, 2, 0},
        {"Gemma3ForCausalLM", "gemma3_text", "gemma3", 0, 0, 1, 3, 0},
        {"Phi3ForCausalLM", "phi3", "phi3", 0, 0, 0, 0, 0},
        {"Qwen2MoeForCausalLM", "qwen2_moe", "qwen2moe", 0, 1, 0, 0, MOE_QWEN},
        {"Qwen3MoeForCausalLM", "qwen3_moe", "qwen3moe", 0, 0, 1, 0, MOE_QWEN},
        {"MixtralForCausalLM", "mixtral", "llama", 1, 0, 0, 0, MOE_MIXTRAL},
    };
    const json_value *archs = json_get_type(cfg, "architectures", JSON_ARRAY);
    const char *model_type = json_get_str(cfg, "model_type");
    const char *seen = model_type ? model_type : "(none)";
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        int hit = 0;
        for (size_t i = 0; archs && i < archs->n; i++)
            if (archs->items[i].type == JSON_STRING) {
                seen = archs->items[i].str;
                hit |= strcmp(seen, known[k].hf) == 0;
            }
        if (!archs && model_type) hit = strcmp(model_type, known[k].model_type) == 0;
        if (hit) {
            c->arch = known[k].arch;
            c->permute_qk = known[k].permute;
            c->qkv_bias = known[k].bias;
            c->qk_norm = known[k].qk_norm;
            c->gemma = known[k].gemma;
            c->phi3 = !strcmp(known[k].arch, "phi3");
            c->moe = known[k].moe;
            return LB_OK;
        }
    }
    return lb_fail(LB_ERR_UNSUPPORTED, "config.json: architecture \"%s\" is not supported "
                   "(LlamaForCausalLM, MistralForCausalLM, SmolLM3ForCausalLM, GraniteForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, "
                   "Gemma3ForCausalLM, Phi3ForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
                   "MixtralForCausalLM are)", seen);
}

static lb_status parse_rope_scaling(const json_value *cfg, hf_config *c) {
    const json_value *rs = json_get(cfg, "rope_scaling");
    if (!rs || rs->type == JSON_NULL) return LB_OK;
    if (rs->type != JSON_OBJECT) return lb_fail(LB_ERR_FORMAT, "config.json: \"rope_scaling\" is not an object");
    const char *type = json_get_str(rs, "rope_type");
    if (!type) type = json_get_str(rs, "type");
    if (!type || !strcmp(type, "default")) return LB_OK;
    if (c->phi3 && (!strcmp(type, "longrope") || !strcmp(type, "su"))) {
        /* llama.cpp's Phi3MiniModel: the factor lists as tensors, and
         * sqrt(1 + ln(scale) / ln(original context)) when the context grew */
        c->long_f = json_get_type(rs, "long_factor", JSON_ARRAY);
        c->short_f = json_get_type(rs, "short_factor", JSON_ARRAY);
        if (!c->long_f || !c->short_f)
            return lb_fail(LB_ERR_FORMAT, "config.json: rope_scaling %s needs long_factor and short_factor lists", type);
        return LB_OK;
    }
    c->rope_factor = 8.0;
    c->low_freq_factor = 1.0;
    c->high_freq_factor = 4.0;
    c->rope_orig_ctx = 8192;
    lb_status s = opt_num(rs, "factor", &c->rope_factor);
    if (s != LB_OK) return lb_fail_prefix(s, "rope_scaling");
    if (!strcmp(type, "linear")) {
        c->rope_linear = 1;
        return LB_OK;
    }
    if (!strcmp(type, "yarn") && !c->phi3) { /* Qwen's long-context configs; llama.cpp requires the original length */
        c->rope_yarn = 1;
        if ((s = req_int(rs, "original_max_position_embeddings", &c->rope_orig_ctx)) != LB_OK)
            return lb_fail_prefix(s, "rope_scaling yarn");
        if (!(c->rope_factor > 0) || c->rope_orig_ctx <= 0)
            return lb_fail(LB_ERR_FORMAT, "config.json: rope_scaling yarn needs a positive factor and original length");
        return LB_OK;
    }
    if (!strcmp(type, "llama3")) {
        c->rope_llama3 = 1;
        if ((s = opt_num(rs, "low_freq_factor", &c->low_freq_factor)) != LB_OK ||
            (s = opt_num(rs, "high_freq_factor", &c->high_freq_factor)) != LB_OK ||
            (s = opt_int(rs, "original_max_position_embeddings", &c->rope_orig_ctx)) != LB_OK)
            return lb_fail_prefix(s, "rope_scaling");
        if (c->high_freq_factor <= c->low_freq_factor)
            return lb_fail(LB_ERR_FORMAT, "config.json: rope_scaling high_freq_factor <= low_freq_factor");
        return LB_OK;
    }
    return lb_fail(LB_ERR_UNSUPPORTED, "config.json: rope_scaling type \"%s\" is not supported "
                   "(linear, llama3 and yarn are)", type);
}

/* The experts' counts and sizes. llama.cpp's graphs fix whether the chosen
 * experts' weights are renormalised (qwen3moe and Mixtral yes, qwen2moe
 * no), so a config saying otherwise is refused, as are layers without
 * experts (decoder_sparse_step, mlp_only_layers), which the GGUF has no
 * place for. */
static lb_status parse_moe(const json_value *cfg, hf_config *c) {
    lb_status s;
    if (c->moe == MOE_MIXTRAL) {
        if ((s = req_int(cfg, "num_local_experts", &c->n_expert)) != LB_OK) return s;
        c->n_ff_exp = c->n_ff;
    } else {
        if ((s = req_int(cfg, "num_experts", &c->n_expert)) != LB_OK ||
            (s = req_int(cfg, "moe_intermediate_size", &c->n_ff_exp)) != LB_OK)
            return s;
        if (!strcmp(c->arch, "qwen2moe") && (s = req_int(cfg, "shared_expert_intermediate_size", &c->n_ff_shexp)))
            return s;
        int64_t step = 1;
        const json_value *only = json_get_type(cfg, "mlp_only_layers", JSON_ARRAY);
        if ((s = opt_int(cfg, "decoder_sparse_step", &step)) != LB_OK) return s;
        if (step != 1 || (only && only->n))
            return lb_fail(LB_ERR_UNSUPPORTED, "config.json: layers without experts (decoder_sparse_step %lld, "
                           "%zu mlp_only_layers) are not supported", (long long)step, only ? only->n : (size_t)0);
        int norm = !strcmp(c->arch, "qwen3moe"), want = norm;
        const json_value *v = json_get(cfg, "norm_topk_prob");
        if (v && v->type != JSON_NULL && !json_get_bool(cfg, "norm_topk_prob", &norm))
            return lb_fail(LB_ERR_FORMAT, "config.json: \"norm_topk_prob\" is not a boolean");
        if (norm != want)
            return lb_fail(LB_ERR_UNSUPPORTED, "config.json: norm_topk_prob %s, where llama.cpp's %s always %s the "
                           "chosen experts' weights", norm ? "true" : "false", c->arch,
                           want ? "renormalises" : "keeps");
    }
    if ((s = req_int(cfg, "num_experts_per_tok", &c->n_expert_used)) != LB_OK) return s;
    if (c->n_expert > 512 || c->n_expert_used > c->n_expert)
        return lb_fail(LB_ERR_FORMAT, "config.json: %lld experts, %lld used a token (at most 512, used <= experts)",
                       (long long)c->n_expert, (long long)c->n_expert_used);
    return LB_OK;
}

static lb_status parse_config(const json_value *cfg, hf_config *c) {
    memset(c, 0, sizeof *c);
    if (cfg->type != JSON_OBJECT) return lb_fail(LB_ERR_FORMAT, "config.json is not a JSON object");
    lb_status s = detect_arch(cfg, c);
    if (s == LB_OK) s = req_int(cfg, "hidden_size", &c->n_embd);
    if (s == LB_OK) s = req_int(cfg, "intermediate_size", &c->n_ff);
    if (s == LB_OK) s = req_int(cfg, "num_hidden_layers", &c->n_layer);
    if (s == LB_OK) s = req_int(cfg, "num_attention_heads", &c->n_head);
    if (s == LB_OK) s = req_int(cfg, "max_position_embeddings", &c->n_ctx);
    if (s != LB_OK) return s;
    c->n_head_kv = c->n_head;
    c->head_dim = c->n_embd / c->n_head;
    c->eps = 1e-6;     /* transformers' default for these configs */
    c->theta = 10000.0;
    if ((s = opt_int(cfg, "num_key_value_heads", &c->n_head_kv)) != LB_OK ||
        (s = opt_int(cfg, "head_dim", &c->head_dim)) != LB_OK ||
        (s = opt_int(cfg, "vocab_size", &c->n_vocab_cfg)) != LB_OK ||
        (s = opt_num(cfg, "rms_norm_eps", &c->eps)) != LB_OK || (s = opt_num(cfg, "rope_theta", &c->theta)) != LB_OK)
        return s;
    if (!strcmp(c->arch, "granite")) {
        /* llama.cpp's GraniteModel: transformers' multipliers, all four required */
        c->granite = 1;
        static const char *const keys[4] = {"embedding_multiplier", "residual_multiplier", "logits_scaling",
                                            "attention_multiplier"};
        double *vals[4] = {&c->g_embd, &c->g_resid, &c->g_logits, &c->g_attn};
        for (int i = 0; i < 4; i++) {
            if (!json_get(cfg, keys[i]))
                return lb_fail(LB_ERR_FORMAT, "config.json: \"%s\" is missing (a Granite model needs it)", keys[i]);
            if ((s = opt_num(cfg, keys[i], vals[i])) != LB_OK) return s;
        }
    }
    if (!strcmp(c->arch, "smollm3")) {
        /* llama.cpp (and so the GGUF format) fixes the NoPE layers at every 4th */
        int64_t step = 4;
        if ((s = opt_int(cfg, "no_rope_layer_interval", &step)) != LB_OK) return s;
        if (step != 4)
            return lb_fail(LB_ERR_UNSUPPORTED, "config.json: \"no_rope_layer_interval\" %lld: a smollm3 GGUF has "
                           "every 4th layer without RoPE, no other step", (long long)step);
    }
    if (c->gemma) {
        /* transformers' defaults: Gemma 2's window 4096, caps 50 and 30,
         * RoPE 10000; Gemma 3's window 4096, RoPE 1e6 (local 10000), no caps */
        c->tied = 1;
        c->window = 4096;
        c->theta_local = 10000.0;
        if (c->gemma == 2) c->attn_softcap = 50.0, c->final_softcap = 30.0;
        if (c->gemma == 3 && !json_get(cfg, "rope_theta")) c->theta = 1000000.0;
        const json_value *v;
        if ((v = json_get(cfg, "attn_logit_softcapping")) && v->type == JSON_NULL) c->attn_softcap = 0.0;
        if ((v = json_get(cfg, "final_logit_softcapping")) && v->type == JSON_NULL) c->final_softcap = 0.0;
        if ((s = opt_num(cfg, "attn_logit_softcapping", &c->attn_softcap)) != LB_OK ||
            (s = opt_num(cfg, "final_logit_softcapping", &c->final_softcap)) != LB_OK ||
            (s = opt_int(cfg, "sliding_window", &c->window)) != LB_OK ||
            (s = opt_num(cfg, "rope_local_base_freq", &c->theta_local)) != LB_OK ||
            (s = opt_int(cfg, "query_pre_attn_scalar", &c->query_pre_attn)) != LB_OK)
            return s;
    }
    if (c->phi3) {
        int64_t orig = c->n_ctx;
        double rot = 1.0;
        if ((s = opt_int(cfg, "original_max_position_embeddings", &orig)) != LB_OK ||
            (s = opt_num(cfg, "partial_rotary_factor", &rot)) != LB_OK || (s = opt_int(cfg, "sliding_window", &c->window)) != LB_OK)
            return s;
        if (rot > 1.0) return lb_fail(LB_ERR_FORMAT, "config.json: partial_rotary_factor %g is above 1", rot);
        c->rope_orig_ctx = orig;
        c->rope_dims = (int64_t)(rot * (double)c->n_embd) / c->n_head; /* int(rot * n_embd) // n_head */
        const double scale = (double)c->n_ctx / (double)orig;
        c->attn_factor = scale > 1.0 ? sqrt(1.0 + log(scale) / log((double)orig)) : 1.0;
    }
    const json_value *tie = json_get(cfg, "tie_word_embeddings");
    if (tie && tie->type != JSON_NULL && !json_get_bool(cfg, "tie_word_embeddings", &c->tied))
        return lb_fail(LB_ERR_FORMAT, "config.json: \"tie_word_embeddings\" is not a boolean");
    int64_t explicit_head_dim;
    if (!json_get_int(cfg, "head_dim", &explicit_head_dim) && c->n_embd % c->n_head != 0)
        return lb_fail(LB_ERR_FORMAT, "config.json: hidden_size %lld is not a multiple of num_attention_heads %lld",
                       (long long)c->n_embd, (long long)c->n_head);
    if (c->n_head % c->n_head_kv != 0)
        return lb_fail(LB_ERR_FORMAT, "config.json: num_attention_heads %lld is not a multiple of "
                       "num_key_value_heads %lld", (long long)c->n_head, (long long)c->n_head_kv);
    if (c->head_dim % 2 != 0)
        return lb_fail(LB_ERR_FORMAT, "config.json: head size %lld is odd (RoPE rotates pairs)",
                       (long long)c->head_dim);
    if ((s = parse_rope_scaling(cfg, c)) != LB_OK) return s;
    if (c->moe && (s = parse_moe(cfg, c)) != LB_OK) return s;
    if (c->phi3 && c->long_f &&
        (c->long_f->n != c->short_f->n || (int64_t)c->long_f->n * 2 != c->rope_dims))
        return lb_fail(LB_ERR_FORMAT, "config.json: rope_scaling has %zu long and %zu short factors; the %lld rotated "
                       "dimensions need %lld of each", c->long_f->n, c->short_f->n, (long long)c->rope_dims,
                       (long long)(c->rope_dims / 2));
    return LB_OK;
}

/* ---- weights ---- */

static void weights_free(hf_weights *h) {
    for (int i = 0; i < h->n_files; i++) st_close(h->files[i]);
    free(h->files);
    free(h->rope_freqs);
    free(h->rope_long);
    free(h->rope_short);
    memset(h, 0, sizeof *h);
}

static lb_status open_shard(hf_weights *h, const char *dir, const char *file) {
    if (strchr(file, '/') || strchr(file, '\\') || file[0] == '.' || !file[0])
        return lb_fail(LB_ERR_FORMAT, "model.safetensors.index.json: shard name \"%s\" is not a plain file name", file);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
        return lb_fail(LB_ERR_ARG, "path too long: %s/%s", dir, file);
    for (int i = 0; i < h->n_files; i++)
        if (!strcmp(h->files[i]->path, path)) return LB_OK;
    st_file **nf = realloc(h->files, (size_t)(h->n_files + 1) * sizeof *nf);
    if (!nf) return lb_fail(LB_ERR_NOMEM, "out of memory");
    h->files = nf;
    lb_status s = st_open(path, &h->files[h->n_files]);
    if (s == LB_OK) h->n_files++;
    return s;
}

static lb_status find_in(const hf_weights *h, const char *name, const st_file **file, const st_tensor **t) {
    *file = NULL;
    *t = NULL;
    for (int i = 0; i < h->n_files; i++) {
        const st_tensor *x = st_find(h->files[i], name);
        if (!x) continue;
        if (*t) return lb_fail(LB_ERR_FORMAT, "tensor \"%s\" is in both %s and %s", name, (*file)->path,
                               h->files[i]->path);
        *file = h->files[i];
        *t = x;
    }
    return LB_OK;
}

/* Opens model.safetensors, or every shard named by the index's weight_map
 * (checking that each mapped tensor is really in its shard). */
static lb_status open_weights(const char *dir, hf_weights *h) {
    json_doc *index;
    lb_status s = hf_read_json(dir, "model.safetensors.index.json", 1, &index);
    if (s != LB_OK) return s;
    if (!index) {
        char path[4096];
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        FILE *probe = fopen(path, "rb");
        if (!probe && h->gptq && h->gptq->base_name[0]) { /* AutoGPTQ's own file name */
            char file[300];
            snprintf(file, sizeof file, "%s.safetensors", h->gptq->base_name);
            snprintf(path, sizeof path, "%s/%s", dir, file);
            if ((probe = fopen(path, "rb")) != NULL) {
                fclose(probe);
                return open_shard(h, dir, file);
            }
            return lb_fail(LB_ERR_IO, "%s has neither model.safetensors, model.safetensors.index.json nor %s "
                           "(quantize_config.json's model_file_base_name)", dir, file);
        }
        if (!probe)
            return lb_fail(LB_ERR_IO, "%s has neither model.safetensors nor model.safetensors.index.json "
                           "(PyTorch .bin checkpoints are not supported)", dir);
        fclose(probe);
        return open_shard(h, dir, "model.safetensors");
    }
    const json_value *map = json_get_type(json_root(index), "weight_map", JSON_OBJECT);
    if (!map) s = lb_fail(LB_ERR_FORMAT, "model.safetensors.index.json has no \"weight_map\" object");
    for (size_t i = 0; map && i < map->n && s == LB_OK; i++) {
        const json_member *m = &map->members[i];
        if (m->value.type != JSON_STRING)
            s = lb_fail(LB_ERR_FORMAT, "model.safetensors.index.json: weight_map[\"%s\"] is not a string", m->key);
        else
            s = open_shard(h, dir, m->value.str);
    }
    for (size_t i = 0; map && i < map->n && s == LB_OK; i++) {
        const json_member *m = &map->members[i];
        const st_file *f;
        const st_tensor *t;
        if ((s = find_in(h, m->key, &f, &t)) != LB_OK) break;
        const char *base = f ? strrchr(f->path, '/') + 1 : NULL;
        if (!t || strcmp(base, m->value.str) != 0)
            s = lb_fail(LB_ERR_FORMAT, "model.safetensors.index.json maps \"%s\" to %s, but it is not there",
                        m->key, m->value.str);
    }
    json_free(index);
    return s;
}

/* Tensors we convert or knowingly drop; anything else is an error rather
 * than silently lost weights. Returns 1 known, 0 unknown. With gptq, a
 * linear layer (a *_proj or lm_head matrix) may also come as GPTQ tensors
 * and a bias. */
/* A MoE layer's own tensor (the part after "model.layers.L."). */
static int known_moe_name(const hf_config *c, const char *rest) {
    const int mix = c->moe == MOE_MIXTRAL;
    const char *block = mix ? "block_sparse_moe." : "mlp.";
    const size_t bl = strlen(block);
    if (strncmp(rest, block, bl)) return 0;
    rest += bl;
    if (!strcmp(rest, "gate.weight")) return 1;
    if (c->n_ff_shexp && (!strcmp(rest, "shared_expert_gate.weight") || !strcmp(rest, "shared_expert.gate_proj.weight") ||
                          !strcmp(rest, "shared_expert.up_proj.weight") || !strcmp(rest, "shared_expert.down_proj.weight")))
        return 1;
    if (strncmp(rest, "experts.", 8) || rest[8] < '0' || rest[8] > '9') return 0;
    char *end;
    const long e = strtol(rest + 8, &end, 10);
    if (*end != '.' || e >= c->n_expert || (rest[8] == '0' && end != rest + 9)) return 0;
    static const char *const qwen[] = {"gate_proj.weight", "up_proj.weight", "down_proj.weight"};
    static const char *const mixtral[] = {"w1.weight", "w2.weight", "w3.weight"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(end + 1, mix ? mixtral[i] : qwen[i])) return 1;
    return 0;
}

static int known_name(const hf_config *c, const char *name, int gptq) {
    size_t n = strlen(name), suf = gptq_suffix_len(name);
    if (gptq && !suf && n > 5 && !strcmp(name + n - 5, ".bias")) suf = 5;
    if (gptq && suf && n - suf < 200) {
        char w[220];
        snprintf(w, sizeof w, "%.*s.weight", (int)(n - suf), name);
        size_t wn = strlen(w);
        int matrix = !strcmp(w, "lm_head.weight") || (wn > 12 && !strcmp(w + wn - 12, "_proj.weight"));
        return matrix && known_name(c, w, 0);
    }
    static const char *top[] = {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"};
    static const char *layer[] = {
        "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
        "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
        "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
        "self_attn.rotary_emb.inv_freq", /* recomputed at run time: dropped */
        "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"};
    for (size_t i = 0; i < 3; i++)
        if (!strcmp(name, top[i])) return 1;
    const char *p = name + strlen("model.layers.");
    if (strncmp(name, "model.layers.", 13) != 0 || *p < '0' || *p > '9') return 0;
    char *end;
    long l = strtol(p, &end, 10);
    if (*end != '.' || l >= c->n_layer || (p[0] == '0' && end != p + 1)) return 0;
    size_t n_layer_names = c->qkv_bias ? 13 : 10;
    for (size_t i = 0; i < n_layer_names; i++)
        if (!strcmp(end + 1, layer[i]) && !(c->moe && i >= 6 && i < 9)) return 1; /* MoE: no dense mlp */
    if (c->moe) return known_moe_name(c, end + 1) || (c->qk_norm && (!strcmp(end + 1, "self_attn.q_norm.weight") ||
                                                                     !strcmp(end + 1, "self_attn.k_norm.weight")));
    if (c->phi3)
        return !strcmp(end + 1, "input_layernorm.weight") || !strcmp(end + 1, "post_attention_layernorm.weight") ||
               !strcmp(end + 1, "self_attn.qkv_proj.weight") || !strcmp(end + 1, "self_attn.o_proj.weight") ||
               !strcmp(end + 1, "mlp.gate_up_proj.weight") || !strcmp(end + 1, "mlp.down_proj.weight");
    if (c->gemma && (!strcmp(end + 1, "pre_feedforward_layernorm.weight") ||
                     !strcmp(end + 1, "post_feedforward_layernorm.weight")))
        return 1;
    return c->qk_norm && (!strcmp(end + 1, "self_attn.q_norm.weight") || !strcmp(end + 1, "self_attn.k_norm.weight"));
}

static lb_status check_all_known(const hf_weights *h, const hf_config *c) {
    for (int i = 0; i < h->n_files; i++)
        for (int64_t k = 0; k < h->files[i]->n_tensors; k++) {
            const char *name = h->files[i]->tensors[k].name;
            if (known_name(c, name, h->gptq != NULL)) continue;
            if (!h->gptq && gptq_suffix_len(name))
                return lb_fail(LB_ERR_FORMAT, "%s: tensor \"%s\" looks like a GPTQ checkpoint, but neither "
                               "config.json's \"quantization_config\" nor quantize_config.json describes one",
                               h->files[i]->path, name);
            return lb_fail(LB_ERR_UNSUPPORTED, "%s: unexpected tensor \"%s\" for a %s model with %lld layers",
                           h->files[i]->path, name, c->arch, (long long)c->n_layer);
        }
    return LB_OK;
}

/* Adds one HF tensor under its GGUF name, checking dtype and shape (rows x
 * cols in PyTorch order; cols 0 for vectors). *found = 0 for an absent
 * optional tensor. */
static lb_status add_hf_as(imp_plan *p, const hf_weights *h, const char *hf_name, const char *gguf_name,
                           int64_t rows, int64_t cols, int permute_heads, int optional, int *found, float add, int f32);

static lb_status add_hf(imp_plan *p, const hf_weights *h, const char *hf_name, const char *gguf_name,
                        int64_t rows, int64_t cols, int permute_heads, int optional, int *found) {
    return add_hf_as(p, h, hf_name, gguf_name, rows, cols, permute_heads, optional, found, 0.0f, 0);
}

/* add_hf with `add` added to every value (Gemma's norms) */
static lb_status add_hf_plus(imp_plan *p, const hf_weights *h, const char *hf_name, const char *gguf_name,
                             int64_t rows, int64_t cols, int permute_heads, int optional, int *found, float add) {
    return add_hf_as(p, h, hf_name, gguf_name, rows, cols, permute_heads, optional, found, add, 0);
}

/* The importer's source type of a safetensors dtype; -1 if it takes none. */
static int src_type_of(int dtype) {
    return dtype == ST_F32 ? LB_TYPE_F32 : dtype == ST_F16 ? LB_TYPE_F16 : dtype == ST_BF16 ? LB_TYPE_BF16 : -1;
}

/* f32: kept F32 (routers); a 1-row one written as a vector */
static lb_status add_hf_as(imp_plan *p, const hf_weights *h, const char *hf_name, const char *gguf_name,
                           int64_t rows, int64_t cols, int permute_heads, int optional, int *found, float add, int f32) {
    const st_file *f;
    const st_tensor *t;
    lb_status s = find_in(h, hf_name, &f, &t);
    if (found) *found = t != NULL;
    if (s != LB_OK || (!t && optional)) return s;
    if (!t) return lb_fail(LB_ERR_FORMAT, "missing tensor \"%s\"", hf_name);
    const int src_type = src_type_of(t->dtype);
    if (src_type < 0)
        return lb_fail(LB_ERR_UNSUPPORTED, "tensor \"%s\" has dtype %s (F32, F16 and BF16 are supported)", hf_name,
                       st_dtype_name(t->dtype));
    int want_dims = cols ? 2 : 1;
    if (t->n_dims != want_dims || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char got[96] = "", *q = got;
        for (int d = 0; d < t->n_dims && q < got + 64; d++)
            q += snprintf(q, 24, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        if (cols)
            return lb_fail(LB_ERR_SHAPE, "tensor \"%s\" has shape [%s], config.json implies [%lld, %lld]", hf_name,
                           got, (long long)rows, (long long)cols);
        return lb_fail(LB_ERR_SHAPE, "tensor \"%s\" has shape [%s], config.json implies [%lld]", hf_name, got,
                       (long long)rows);
    }
    imp_tensor it;
    memset(&it, 0, sizeof it);
    snprintf(it.name, sizeof it.name, "%s", gguf_name);
    it.n_dims = want_dims;
    it.ne[0] = cols ? cols : rows;
    it.ne[1] = cols ? rows : 1;
    it.fd = fileno(f->f);
    it.offset = t->offset;
    it.src_type = src_type;
    /* vectors being permuted (biases) move element by element */
    it.n_src_rows = cols || permute_heads ? rows : 1;
    it.src_row_len = cols ? cols : permute_heads ? 1 : rows;
    it.permute_heads = permute_heads;
    it.add = add;
    if (f32) { /* a router: F32 whatever the output type, and a 1-row matrix as the vector llama.cpp reads */
        it.keep_type = 1;
        it.out_type = LB_TYPE_F32;
        if (rows == 1) it.n_dims = 1, it.ne[1] = 1, it.n_src_rows = 1;
    }
    return imp_plan_add(p, &it);
}

/* llama3 rope scaling, as convert_hf_to_gguf.py computes rope_freqs.weight:
 * long wavelengths are slowed by `factor`, short ones kept, smooth between. */
static lb_status add_rope_freqs(imp_plan *p, hf_weights *h, const hf_config *c) {
    int64_t n = c->head_dim / 2;
    h->rope_freqs = malloc((size_t)n * sizeof(float));
    if (!h->rope_freqs) return lb_fail(LB_ERR_NOMEM, "out of memory");
    double lo_wavelen = (double)c->rope_orig_ctx / c->low_freq_factor;
    double hi_wavelen = (double)c->rope_orig_ctx / c->high_freq_factor;
    for (int64_t i = 0; i < n; i++) {
        double freq = 1.0 / pow(c->theta, (double)(2 * i) / (double)c->head_dim);
        double wavelen = 2.0 * M_PI / freq, f;
        if (wavelen < hi_wavelen) f = 1.0;
        else if (wavelen > lo_wavelen) f = c->rope_factor;
        else {
            double smooth = ((double)c->rope_orig_ctx / wavelen - c->low_freq_factor) /
                            (c->high_freq_factor - c->low_freq_factor);
            f = 1.0 / ((1.0 - smooth) / c->rope_factor + smooth);
        }
        h->rope_freqs[i] = (float)f;
    }
    imp_tensor it;
    memset(&it, 0, sizeof it);
    snprintf(it.name, sizeof it.name, "rope_freqs.weight");
    it.n_dims = 1;
    it.ne[0] = n;
    it.ne[1] = 1;
    it.src_type = LB_TYPE_F32;
    it.n_src_rows = 1;
    it.src_row_len = n;
    it.mem = h->rope_freqs;
    return imp_plan_add(p, &it);
}

/* phi3's LongRoPE factor lists (config.json) as rope_factors_long / _short. */
static lb_status add_rope_factors(imp_plan *p, hf_weights *h, const hf_config *c) {
    const size_t n = c->long_f->n;
    h->rope_long = malloc(n * sizeof(float));
    h->rope_short = malloc(n * sizeof(float));
    if (!h->rope_long || !h->rope_short) return lb_fail(LB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_value *a = &c->long_f->items[i], *b = &c->short_f->items[i];
        if (a->type != JSON_NUMBER || b->type != JSON_NUMBER || !(a->number > 0) || !(b->number > 0))
            return lb_fail(LB_ERR_FORMAT, "config.json: rope_scaling factor %zu is not a positive number", i);
        h->rope_long[i] = (float)a->number;
        h->rope_short[i] = (float)b->number;
    }
    lb_status s = LB_OK;
    for (int k = 0; k < 2 && s == LB_OK; k++) {
        imp_tensor it;
        memset(&it, 0, sizeof it);
        snprintf(it.name, sizeof it.name, k ? "rope_factors_short.weight" : "rope_factors_long.weight");
        it.n_dims = 1;
        it.ne[0] = (int64_t)n;
        it.ne[1] = 1;
        it.src_type = LB_TYPE_F32;
        it.n_src_rows = 1;
        it.src_row_len = (int64_t)n;
        it.mem = k ? h->rope_short : h->rope_long;
        s = imp_plan_add(p, &it);
    }
    return s;
}

/* Whether a bias vector of `rows` elements is all zeros (-0 counts). */
static lb_status bias_is_zero(const st_file *f, const st_tensor *t, int64_t rows, int *zero) {
    *zero = 0;
    if ((t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16) || t->n_dims != 1 || t->shape[0] != rows)
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s\" must be an F32, F16 or BF16 vector of %lld elements", t->name,
                       (long long)rows);
    unsigned char *b = malloc(t->nbytes ? (size_t)t->nbytes : 1);
    if (!b) return lb_fail(LB_ERR_NOMEM, "out of memory");
    lb_status s = imp_read_at(fileno(f->f), b, (size_t)t->nbytes, t->offset, t->name);
    int nz = 0;
    for (int64_t i = 0; s == LB_OK && i < rows && !nz; i++) {
        uint32_t u;
        if (t->dtype == ST_F32) memcpy(&u, b + 4 * i, 4);
        else {
            uint16_t v;
            memcpy(&v, b + 2 * i, 2);
            u = (uint32_t)v << 16; /* only the sign may be set in a zero of either 16-bit type */
        }
        nz = (u & 0x7fffffffu) != 0;
    }
    free(b);
    *zero = !nz;
    return s;
}

enum { BIAS_ARCH, BIAS_ADD, BIAS_NONE }; /* see add_linear */

/* A linear layer: PREFIX.weight, or in a GPTQ checkpoint PREFIX.qweight and
 * its companions (import/gptq.h). A GPTQ checkpoint's PREFIX.bias, which
 * AutoGPTQ saves (as zeros) even for layers without one: BIAS_ARCH, the
 * architecture's own bias, added elsewhere; BIAS_ADD, added as gguf_bias
 * unless all zero; BIAS_NONE, the model has no place for it: dropped when all
 * zero, refused otherwise. *found as in add_hf. */
static lb_status add_linear(imp_plan *p, hf_weights *h, const char *prefix, const char *gguf_name, int64_t rows,
                            int64_t cols, int permute_heads, int optional, int bias, const char *gguf_bias,
                            int *found) {
    char name[200];
    lb_status s;
    if (found) *found = 0;
    if (h->gptq) {
        static const char *part_names[] = {"qweight", "qzeros", "scales", "g_idx"};
        gptq_matrix m;
        memset(&m, 0, sizeof m);
        gptq_part *parts[] = {&m.qweight, &m.qzeros, &m.scales, &m.g_idx};
        const gptq_part *any = NULL;
        for (int i = 0; i < 4; i++) {
            snprintf(name, sizeof name, "%s.%s", prefix, part_names[i]);
            if ((s = find_in(h, name, &parts[i]->file, &parts[i]->t)) != LB_OK) return s;
            if (!any && parts[i]->t) any = parts[i];
        }
        snprintf(name, sizeof name, "%s.weight", prefix);
        const st_file *wf;
        const st_tensor *wt;
        if ((s = find_in(h, name, &wf, &wt)) != LB_OK) return s;
        if (any && wt)
            return lb_fail(LB_ERR_FORMAT, "tensor \"%s\" and GPTQ tensor \"%s\" both hold layer %s", name,
                           any->t->name, prefix);
        if (any) {
            m.prefix = prefix;
            m.n_out = rows;
            m.n_in = cols;
            m.permute_heads = permute_heads;
            if ((s = gptq_add_matrix(p, h->gptq, &m, gguf_name)) != LB_OK) return s;
            if (!h->gptq->dequantize) h->n_gq++;
            if (found) *found = 1;
        } else {
            int f;
            if ((s = add_hf(p, h, name, gguf_name, rows, cols, permute_heads, optional, &f)) != LB_OK) return s;
            if (found) *found = f;
        }
        if (bias == BIAS_ARCH) return LB_OK;
        snprintf(name, sizeof name, "%s.bias", prefix);
        const st_file *bf;
        const st_tensor *bt;
        if ((s = find_in(h, name, &bf, &bt)) != LB_OK || !bt) return s;
        int zero;
        if ((s = bias_is_zero(bf, bt, rows, &zero)) != LB_OK || zero) return s;
        if (bias == BIAS_ADD) return add_hf(p, h, name, gguf_bias, rows, 0, permute_heads, 0, NULL);
        return lb_fail(LB_ERR_UNSUPPORTED, "tensor \"%s\" is not all zeros, and the model has no bias there", name);
    }
    snprintf(name, sizeof name, "%s.weight", prefix);
    return add_hf(p, h, name, gguf_name, rows, cols, permute_heads, optional, found);
}

/* One kind of a MoE layer's experts (HF names "PREFIX.E.SUFFIX", each rows
 * x cols) stacked as GGUF's 3-D [cols, rows, n_expert] tensor. */
static lb_status add_stack(imp_plan *p, const hf_weights *h, const char *prefix, const char *suffix,
                           const char *gguf_name, int64_t n, int64_t rows, int64_t cols) {
    imp_part *parts = calloc((size_t)n, sizeof *parts);
    if (!parts) return lb_fail(LB_ERR_NOMEM, "out of memory");
    lb_status s = LB_OK;
    for (int64_t e = 0; e < n && s == LB_OK; e++) {
        char name[200];
        snprintf(name, sizeof name, "%s.%lld.%s", prefix, (long long)e, suffix);
        const st_file *f;
        const st_tensor *t;
        if ((s = find_in(h, name, &f, &t)) != LB_OK) break;
        if (!t) s = lb_fail(LB_ERR_FORMAT, "missing tensor \"%s\" (expert %lld of %lld)", name, (long long)e, (long long)n);
        else if (src_type_of(t->dtype) < 0)
            s = lb_fail(LB_ERR_UNSUPPORTED, "tensor \"%s\" has dtype %s (F32, F16 and BF16 are supported)", name,
                        st_dtype_name(t->dtype));
        else if (t->n_dims != 2 || t->shape[0] != rows || t->shape[1] != cols)
            s = lb_fail(LB_ERR_SHAPE, "tensor \"%s\" is not [%lld, %lld] as config.json implies", name,
                        (long long)rows, (long long)cols);
        else
            parts[e] = (imp_part){fileno(f->f), t->offset, src_type_of(t->dtype)};
    }
    if (s != LB_OK) {
        free(parts);
        return s;
    }
    imp_tensor it;
    memset(&it, 0, sizeof it);
    snprintf(it.name, sizeof it.name, "%s", gguf_name);
    it.n_dims = 3;
    it.ne[0] = cols, it.ne[1] = rows, it.ne[2] = n;
    it.n_src_rows = rows * n;
    it.src_row_len = cols;
    it.parts = parts;
    return imp_plan_add(p, &it);
}

/* Layer l's router and experts (qwen2moe's shared expert: add_tensors). */
static lb_status add_moe(imp_plan *p, hf_weights *h, const hf_config *c, int64_t l) {
    if (h->gptq) return lb_fail(LB_ERR_UNSUPPORTED, "GPTQ checkpoints of mixture-of-experts models are not supported");
    const int mix = c->moe == MOE_MIXTRAL;
    char hf[160], gg[64];
    const char *block = mix ? "block_sparse_moe" : "mlp";
    snprintf(hf, sizeof hf, "model.layers.%lld.%s.gate.weight", (long long)l, block);
    snprintf(gg, sizeof gg, "blk.%lld.ffn_gate_inp.weight", (long long)l);
    lb_status s = add_hf_as(p, h, hf, gg, c->n_expert, c->n_embd, 0, 0, NULL, 0.0f, 1);
    if (s == LB_OK && c->n_ff_shexp) {
        snprintf(hf, sizeof hf, "model.layers.%lld.mlp.shared_expert_gate.weight", (long long)l);
        snprintf(gg, sizeof gg, "blk.%lld.ffn_gate_inp_shexp.weight", (long long)l);
        s = add_hf_as(p, h, hf, gg, 1, c->n_embd, 0, 0, NULL, 0.0f, 1);
    }
    static const char *const kinds[3] = {"gate", "up", "down"};
    static const char *const qwen[3] = {"gate_proj.weight", "up_proj.weight", "down_proj.weight"};
    static const char *const mixtral[3] = {"w1.weight", "w3.weight", "w2.weight"};
    char prefix[128];
    snprintf(prefix, sizeof prefix, "model.layers.%lld.%s.experts", (long long)l, block);
    for (int k = 0; k < 3 && s == LB_OK; k++) {
        snprintf(gg, sizeof gg, "blk.%lld.ffn_%s_exps.weight", (long long)l, kinds[k]);
        const int down = k == 2;
        s = add_stack(p, h, prefix, mix ? mixtral[k] : qwen[k], gg, c->n_expert, down ? c->n_embd : c->n_ff_exp,
                      down ? c->n_ff_exp : c->n_embd);
    }
    return s;
}

static lb_status add_tensors(imp_plan *p, hf_weights *h, const hf_config *c, int64_t n_vocab) {
    int64_t q_dim = c->n_head * c->head_dim, kv_dim = c->n_head_kv * c->head_dim;
    int pq = c->permute_qk ? (int)c->n_head : 0, pk = c->permute_qk ? (int)c->n_head_kv : 0;
    lb_status s = add_hf(p, h, "model.embed_tokens.weight", "token_embd.weight", n_vocab, c->n_embd, 0, 0, NULL);
    const int qkv = c->qkv_bias ? BIAS_ARCH : BIAS_ADD;
    for (int64_t l = 0; l < c->n_layer && s == LB_OK; l++) {
        char hf[128], gg[64], gb[64];
#define T(hfs, ggs, rows, cols, perm, opt)                                              \
        if (s == LB_OK) {                                                             \
            snprintf(hf, sizeof hf, "model.layers.%lld.%s", (long long)l, hfs);        \
            snprintf(gg, sizeof gg, "blk.%lld.%s", (long long)l, ggs);                 \
            s = add_hf(p, h, hf, gg, rows, cols, perm, opt, NULL);                     \
        }
#define M(hfs, ggs, rows, cols, perm, bias)                                             \
        if (s == LB_OK) {                                                             \
            snprintf(hf, sizeof hf, "model.layers.%lld.%s", (long long)l, hfs);        \
            snprintf(gg, sizeof gg, "blk.%lld.%s.weight", (long long)l, ggs);          \
            snprintf(gb, sizeof gb, "blk.%lld.%s.bias", (long long)l, ggs);            \
            s = add_linear(p, h, hf, gg, rows, cols, perm, 0, bias, gb, NULL);         \
        }
#define NORM(hfs, ggs, n)                                                                 \
        if (s == LB_OK) {                                                                     \
            snprintf(hf, sizeof hf, "model.layers.%lld.%s", (long long)l, hfs);                \
            snprintf(gg, sizeof gg, "blk.%lld.%s", (long long)l, ggs);                         \
            s = add_hf_plus(p, h, hf, gg, n, 0, 0, 0, NULL, c->gemma ? 1.0f : 0.0f);          \
        }
        NORM("input_layernorm.weight", "attn_norm.weight", c->n_embd);
        if (c->phi3) { /* Q, K, V and gate, up stay fused, as llama.cpp's phi3 files have them */
            M("self_attn.qkv_proj", "attn_qkv", q_dim + 2 * kv_dim, c->n_embd, 0, BIAS_NONE);
            M("self_attn.o_proj", "attn_output", c->n_embd, q_dim, 0, BIAS_NONE);
            T("post_attention_layernorm.weight", "ffn_norm.weight", c->n_embd, 0, 0, 0);
            M("mlp.gate_up_proj", "ffn_up", 2 * c->n_ff, c->n_embd, 0, BIAS_NONE);
            M("mlp.down_proj", "ffn_down", c->n_embd, c->n_ff, 0, BIAS_NONE);
            continue;
        }
        M("self_attn.q_proj", "attn_q", q_dim, c->n_embd, pq, qkv);
        M("self_attn.k_proj", "attn_k", kv_dim, c->n_embd, pk, qkv);
        M("self_attn.v_proj", "attn_v", kv_dim, c->n_embd, 0, qkv);
        if (c->qkv_bias) {
            T("self_attn.q_proj.bias", "attn_q.bias", q_dim, 0, pq, 0);
            T("self_attn.k_proj.bias", "attn_k.bias", kv_dim, 0, pk, 0);
            T("self_attn.v_proj.bias", "attn_v.bias", kv_dim, 0, 0, 0);
        }
        if (c->qk_norm) {
            NORM("self_attn.q_norm.weight", "attn_q_norm.weight", c->head_dim);
            NORM("self_attn.k_norm.weight", "attn_k_norm.weight", c->head_dim);
        }
        M("self_attn.o_proj", "attn_output", c->n_embd, q_dim, 0, BIAS_NONE);
        if (c->gemma) { /* a norm after attention and after the FFN; the FFN's own before it */
            NORM("post_attention_layernorm.weight", "post_attention_norm.weight", c->n_embd);
            NORM("pre_feedforward_layernorm.weight", "ffn_norm.weight", c->n_embd);
            NORM("post_feedforward_layernorm.weight", "post_ffw_norm.weight", c->n_embd);
        } else {
            T("post_attention_layernorm.weight", "ffn_norm.weight", c->n_embd, 0, 0, 0);
        }
        if (c->moe) {
            if (s == LB_OK) s = add_moe(p, h, c, l);
            if (c->n_ff_shexp) {
                M("mlp.shared_expert.gate_proj", "ffn_gate_shexp", c->n_ff_shexp, c->n_embd, 0, BIAS_NONE);
                M("mlp.shared_expert.up_proj", "ffn_up_shexp", c->n_ff_shexp, c->n_embd, 0, BIAS_NONE);
                M("mlp.shared_expert.down_proj", "ffn_down_shexp", c->n_embd, c->n_ff_shexp, 0, BIAS_NONE);
            }
            continue;
        }
        M("mlp.gate_proj", "ffn_gate", c->n_ff, c->n_embd, 0, BIAS_NONE);
        M("mlp.up_proj", "ffn_up", c->n_ff, c->n_embd, 0, BIAS_NONE);
        M("mlp.down_proj", "ffn_down", c->n_embd, c->n_ff, 0, BIAS_NONE);
#undef NORM
#undef M
#undef T
    }
    if (s == LB_OK)
        s = add_hf_plus(p, h, "model.norm.weight", "output_norm.weight", c->n_embd, 0, 0, 0, NULL, c->gemma ? 1.0f : 0.0f);
    /* No lm_head (or a tied one): the loader uses token_embd as the classifier. */
    if (s == LB_OK && !c->tied)
        s = add_linear(p, h, "lm_head", "output.weight", n_vocab, c->n_embd, 0, 1, BIAS_NONE, NULL, NULL);
    if (s == LB_OK && c->rope_llama3) s = add_rope_freqs(p, h, c);
    if (s == LB_OK && c->long_f) s = add_rope_factors(p, h, c);
    return s;
}

/* ---- metadata ---- */

static lb_status set_hparams(gguf_writer *w, const hf_config *c, const char *name, int want_type, int64_t n_vocab) {
    lb_status s = LB_OK;
    char k[128];
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", c->arch, suffix), k)
#define TRY(x) do { if (s == LB_OK) s = (x); } while (0)
    TRY(gguf_writer_set_str(w, "general.architecture", c->arch));
    TRY(gguf_writer_set_str(w, "general.name", name));
    TRY(gguf_writer_set_u32(w, "general.file_type", imp_file_type(want_type)));
    TRY(gguf_writer_set_u32(w, KEY("vocab_size"), (uint32_t)n_vocab));
    TRY(gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)c->n_ctx));
    TRY(gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)c->n_embd));
    TRY(gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)c->n_ff));
    TRY(gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)c->n_layer));
    TRY(gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)c->n_head));
    TRY(gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)c->n_head_kv));
    TRY(gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)(c->phi3 ? c->rope_dims : c->head_dim)));
    if (c->phi3) { /* llama.cpp's Phi3MiniModel keys */
        TRY(gguf_writer_set_u32(w, KEY("rope.scaling.original_context_length"), (uint32_t)c->rope_orig_ctx));
        TRY(gguf_writer_set_u32(w, KEY("attention.sliding_window"), (uint32_t)c->window));
        if (c->long_f) TRY(gguf_writer_set_f32(w, KEY("rope.scaling.attn_factor"), (float)c->attn_factor));
    }
    if (c->head_dim * c->n_head != c->n_embd) { /* e.g. Mistral-Nemo: heads narrower than n_embd/n_head */
        TRY(gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)c->head_dim));
        TRY(gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)c->head_dim));
    }
    TRY(gguf_writer_set_f32(w, KEY("rope.freq_base"), (float)c->theta));
    TRY(gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), (float)c->eps));
    if (c->gemma) {
        if (c->head_dim * c->n_head == c->n_embd) { /* as llama.cpp's Gemma files: always said */
            TRY(gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)c->head_dim));
            TRY(gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)c->head_dim));
        }
        TRY(gguf_writer_set_u32(w, KEY("attention.sliding_window"), (uint32_t)c->window));
        if (c->gemma == 3 && c->query_pre_attn > 0) /* q scaled by 1/sqrt(query_pre_attn_scalar) */
            TRY(gguf_writer_set_f32(w, KEY("attention.scale"), (float)(1.0 / sqrt((double)c->query_pre_attn))));
        if (c->attn_softcap > 0) TRY(gguf_writer_set_f32(w, KEY("attn_logit_softcapping"), (float)c->attn_softcap));
        if (c->final_softcap > 0) TRY(gguf_writer_set_f32(w, KEY("final_logit_softcapping"), (float)c->final_softcap));
        if (c->gemma == 3) TRY(gguf_writer_set_f32(w, KEY("rope.freq_base_swa"), (float)c->theta_local));
    }
    if (c->granite) {
        TRY(gguf_writer_set_f32(w, KEY("embedding_scale"), (float)c->g_embd));
        TRY(gguf_writer_set_f32(w, KEY("residual_scale"), (float)c->g_resid));
        TRY(gguf_writer_set_f32(w, KEY("logit_scale"), (float)c->g_logits));
        TRY(gguf_writer_set_f32(w, KEY("attention.scale"), (float)c->g_attn));
    }
    if (c->moe) { /* llama.cpp's keys (a Mixtral file's expert size is its feed_forward_length) */
        TRY(gguf_writer_set_u32(w, KEY("expert_count"), (uint32_t)c->n_expert));
        TRY(gguf_writer_set_u32(w, KEY("expert_used_count"), (uint32_t)c->n_expert_used));
        if (c->moe == MOE_QWEN) TRY(gguf_writer_set_u32(w, KEY("expert_feed_forward_length"), (uint32_t)c->n_ff_exp));
        if (c->n_ff_shexp)
            TRY(gguf_writer_set_u32(w, KEY("expert_shared_feed_forward_length"), (uint32_t)c->n_ff_shexp));
    }
    if (c->rope_linear) {
        TRY(gguf_writer_set_str(w, KEY("rope.scaling.type"), "linear"));
        TRY(gguf_writer_set_f32(w, KEY("rope.scaling.factor"), (float)c->rope_factor));
    }
    if (c->rope_yarn) {
        TRY(gguf_writer_set_str(w, KEY("rope.scaling.type"), "yarn"));
        TRY(gguf_writer_set_f32(w, KEY("rope.scaling.factor"), (float)c->rope_factor));
        TRY(gguf_writer_set_u32(w, KEY("rope.scaling.original_context_length"), (uint32_t)c->rope_orig_ctx));
    }
#undef TRY
#undef KEY
    return s;
}

static char *dir_name(const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/') b--;
    char *name = malloc(n - b + 1);
    if (name) memcpy(name, dir + b, n - b), name[n - b] = 0;
    return name;
}

lb_status lb_convert_hf(const char *hf_dir, const char *out_gguf, int out_type, lb_progress_fn progress,
                        void *user) {
    lb_convert_hf_options o = {out_type, 0};
    return lb_convert_hf_ex(hf_dir, out_gguf, &o, progress, user);
}

lb_status lb_convert_hf_ex(const char *hf_dir, const char *out_gguf, const lb_convert_hf_options *o,
                           lb_progress_fn progress, void *user) {
    if (!hf_dir || !out_gguf || !o) return lb_fail(LB_ERR_ARG, "lb_convert_hf: missing path or options");
    const int out_type = o->out_type;
    imp_plan plan;
    lb_status s = imp_plan_init(&plan, out_type);
    if (s != LB_OK) return s;
    hf_weights h = {0};
    json_doc *cfg_doc = NULL;
    char *name = NULL;
    hf_config c;
    gptq_config gcfg;
    int is_gptq = 0;
    if ((s = hf_read_json(hf_dir, "config.json", 0, &cfg_doc)) != LB_OK) goto done;
    if ((s = parse_config(json_root(cfg_doc), &c)) != LB_OK ||
        (s = gptq_read_config(hf_dir, json_root(cfg_doc), o->gptq_dequantize, &gcfg, &is_gptq)) != LB_OK) {
        lb_fail_prefix(s, "%s", hf_dir);
        goto done;
    }
    h.gptq = is_gptq ? &gcfg : NULL;
    if ((s = open_weights(hf_dir, &h)) != LB_OK || (s = check_all_known(&h, &c)) != LB_OK) goto done;
    const st_file *ef;
    const st_tensor *emb;
    if ((s = find_in(&h, "model.embed_tokens.weight", &ef, &emb)) != LB_OK) goto done;
    if (!emb || emb->n_dims != 2) {
        s = lb_fail(LB_ERR_FORMAT, "%s: missing tensor \"model.embed_tokens.weight\" (or not a matrix)", hf_dir);
        goto done;
    }
    int64_t n_vocab = emb->shape[0];
    if (c.n_vocab_cfg && c.n_vocab_cfg != n_vocab) {
        s = lb_fail(LB_ERR_SHAPE, "%s: config.json vocab_size %lld but embed_tokens has %lld rows", hf_dir,
                    (long long)c.n_vocab_cfg, (long long)n_vocab);
        goto done;
    }
    name = dir_name(hf_dir);
    if ((s = set_hparams(plan.w, &c, name ? name : c.arch, out_type, n_vocab)) != LB_OK) goto done;
    if ((s = hf_write_vocab(plan.w, hf_dir, json_root(cfg_doc), n_vocab, c.arch)) != LB_OK) goto done;
    if ((s = add_tensors(&plan, &h, &c, n_vocab)) != LB_OK) {
        lb_fail_prefix(s, "%s", hf_dir);
        goto done;
    }
    /* GQ types have no llama.cpp file type (docs/gq.md) */
    if (h.n_gq && (s = gguf_writer_remove_kv(plan.w, "general.file_type")) != LB_OK) goto done;
    s = imp_plan_write(&plan, out_gguf, progress, user);
done:
    json_free(cfg_doc);
    weights_free(&h);
    free(name);
    imp_plan_free(&plan);
    return s;
}
