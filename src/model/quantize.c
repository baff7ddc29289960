/* lb_quantize_file: every 2-D weight of a GGUF converted to one type (rows
 * that don't fit its block keep a wider type), everything else copied as is.
 * Streams tensor by tensor through the GGUF writer (temp file + rename). */
#include <omp.h>
#include <stdlib.h>

#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/gq.h"
#include "formats/mx.h"
#include "formats/repack.h"
#include "model/model.h"
#include "model/quantize_extras.h"
#include "model/quantize_search.h"
#include "model/quantize_smooth.h"
#include "model/quantize_gqc.h"
#include "model/quantize_mx.h"
#include "formats/types.h"
#include "gguf/gguf.h"

/* Which tensors take the target type: matrices, not norms or 1-D vectors. */
static int is_quantizable(const gguf_tensor *t) {
    if (t->n_dims < 2) return 0;
    const char *n = t->name.ptr;
    size_t len = t->name.len;
    if (len < 7 || memcmp(n + len - 7, ".weight", 7)) return 0;
    for (size_t i = 0; i + 4 <= len; i++)
        if (!memcmp(n + i, "norm", 4)) return 0;
    /* MoE routers (ffn_gate_inp, qwen2moe's ffn_gate_inp_shexp) stay as
     * they are, as llama-quantize keeps them: small, and they pick experts */
    for (size_t i = 0; i + 12 <= len; i++)
        if (!memcmp(n + i, "ffn_gate_inp", 12)) return 0;
    return 1;
}

/* One output tensor: from input tensor `in`, converted to `type`, or a
 * piece of the MX matrix in makes (kind, model/quantize_mx.h), or of the
 * GC matrix (kind LB_QGC_*, model/quantize_gqc.h) */
typedef struct {
    int64_t in;
    int kind;
    int type;
} out_tensor;

typedef struct {
    const gguf_file *in;
    out_tensor *outs;
    int n_threads;
    lb_status err;
    lb_quant_extras *ex; /* codebooks, importance, GPTQ (model/quantize_extras.h) */
    int sym;             /* GQ outputs: symmetric groups */
    lb_mx_params mxp;    /* MX outputs */
    lb_qmx_cache mx;     /* the MX matrix being written */
    lb_qgc_cache gc;     /* the GC matrix being written */
    lb_quantize_stats *st;
    double mx_eq10_sum, mx_weights;
    int from_uniform;    /* BCQ outputs: uniform inputs converted exactly (formats/bcq.h) */
    lb_smooth *smooth;   /* --smooth-alpha: balance vectors folded into the norms (model/quantize_smooth.h) */
    const lb_abq_search *search; /* --abq-search: the calibrated layers' tensors (model/abq_search.h) */
} qctx;

/* All of tensor t as N x K floats (interleaved layouts unpacked first, GC
 * matrices through their side tensor in `in`). */
lb_status lb_quantize_tensor_floats(const gguf_file *in, const gguf_tensor *t, int n_threads, float **out) {
    const int64_t K = t->ne[0], rows = (int64_t)(t->size / lb_row_size((int)t->type, K));
    if (lb_gc_is((int)t->type)) {
        lb_gc_view *v = NULL;
        lb_status s = lb_qgc_input_view(in, t, &v);
        if (s == LB_OK && !(*out = malloc((size_t)K * (size_t)rows * sizeof **out)))
            s = lb_fail(LB_ERR_NOMEM, "out of memory");
        if (s == LB_OK) lb_gc_view_dequantize(v, *out);
        lb_free_aligned(v);
        return s;
    }
    const lb_type_traits *st = lb_traits(lb_type_base((int)t->type));
    float *W = malloc((size_t)K * (size_t)rows * sizeof *W);
    void *unpacked = NULL;
    const void *src = t->data;
    if (W && (int)t->type != lb_type_base((int)t->type)) {
        if ((unpacked = malloc(t->size))) lb_unpack_tensor((int)t->type, src, unpacked, K, rows);
        src = unpacked;
    }
    if (!W || !src) {
        free(W), free(unpacked);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    const size_t in_row = lb_row_size(lb_type_base((int)t->type), K);
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t r = 0; r < rows; r++) st->to_float((const char *)src + (size_t)r * in_row, W + (size_t)r * K, K);
    free(unpacked);
    *out = W;
    return LB_OK;
}

/* A piece of an MX matrix: quantized when its first piece comes up */
static lb_status produce_mx(qctx *q, const out_tensor *o, void *dst, uint64_t nbytes) {
    const gguf_tensor *t = gguf_tensor_at(q->in, o->in);
    float *W = NULL;
    lb_status s = lb_qmx_cached(&q->mx, o->in) ? LB_OK : lb_quantize_tensor_floats(q->in, t, q->n_threads, &W);
    int quantized = 0;
    if (s == LB_OK) s = lb_qmx_produce(&q->mx, q->ex, &q->mxp, t, o->in, W, o->kind, dst, nbytes, &quantized);
    free(W);
    if (s == LB_OK && quantized) {
        const double n = (double)t->ne[0] * (double)t->ne[1];
        q->st->n_mx++;
        q->st->mx_bpw += (double)q->mx.bits; /* bits for now; per weight at the end */
        q->mx_eq10_sum += q->mx.eq10 * n;
        q->mx_weights += n;
        lb_log(2, "%.*s: MX, %lld of %lld groups in 4 bits, %lld outliers%s\n", (int)t->name.len, t->name.ptr,
               (long long)q->mx.m.n_hi, (long long)(t->ne[0] / LB_MX_M), (long long)q->mx.m.n_out,
               q->mx.gptq ? ", GPTQ" : "");
    }
    return s;
}

/* A piece of a GC matrix: quantized (or copied, from a GC input of its
 * type) when its codes come up */
static lb_status produce_gc(qctx *q, const out_tensor *o, void *dst, uint64_t nbytes) {
    const gguf_tensor *t = gguf_tensor_at(q->in, o->in);
    float *W = NULL;
    lb_gc_view *same = NULL;
    lb_status s = LB_OK;
    const int convert = q->from_uniform && lb_qgc_converts((int)t->type, o->type);
    if (o->kind == LB_QGC_CODES)
        s = (int)t->type == o->type || convert ? lb_qgc_input_view(q->in, t, &same)
                                                : lb_quantize_tensor_floats(q->in, t, q->n_threads, &W);
    int gptq = 0;
    if (s == LB_OK)
        s = lb_qgc_produce(&q->gc, q->ex, q->sym, t, o->in, o->type, W, same, o->kind, dst, nbytes, q->n_threads, &gptq);
    if (s == LB_OK && o->kind == LB_QGC_CODES && q->gc.converted) {
        /* --from-uniform: a GC row is one group */
        q->st->n_from_uniform++;
        q->st->uniform_groups += q->gc.N;
        q->st->uniform_inexact += q->gc.inexact;
        lb_log(2, "%.*s: %s -> %s, %lld of %lld rows exact\n", (int)t->name.len, t->name.ptr,
               lb_type_name((int)t->type), lb_type_name(o->type), (long long)(q->gc.N - q->gc.inexact),
               (long long)q->gc.N);
    }
    free(W);
    lb_free_aligned(same);
    return s;
}

/* Row by row from src (plain rows of src_type) into dst (plain rows of out_type). */
static lb_status convert_rows(const void *src, int src_type, void *dst, int out_type, int64_t K, int64_t rows,
                              int n_threads, int sym) {
    const lb_type_traits *st = lb_traits(src_type), *dt = lb_traits(out_type);
    const size_t in_row = lb_row_size(src_type, K), out_row = lb_row_size(out_type, K);
    int oom = 0;
#pragma omp parallel num_threads(n_threads)
    {
        float *buf = malloc((size_t)K * sizeof *buf);
        if (!buf) oom = 1;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!buf) continue;
            st->to_float((const char *)src + (size_t)r * in_row, buf, K);
            if (sym && lb_gq_bits(out_type)) lb_gq_quantize_row(out_type, buf, (char *)dst + (size_t)r * out_row, K, 1);
            else dt->from_float(buf, (char *)dst + (size_t)r * out_row, K);
        }
        free(buf);
    }
    return oom ? lb_fail(LB_ERR_NOMEM, "out of memory") : LB_OK;
}

/* Interleaved types (formats/repack.h) go through their base type: an
 * interleaved input is unpacked first, an interleaved output is quantized
 * to plain rows and then repacked, whole tensor at once. */
static lb_status produce(void *user, int64_t index, void *dst, uint64_t nbytes) {
    qctx *q = user;
    if (q->outs[index].kind == LB_QGC_CODES || q->outs[index].kind == LB_QGC_SZ)
        return produce_gc(q, &q->outs[index], dst, nbytes);
    if (q->outs[index].kind != LB_QMX_NONE) return produce_mx(q, &q->outs[index], dst, nbytes);
    const gguf_tensor *t = gguf_tensor_at(q->in, q->outs[index].in);
    const int out_type = q->outs[index].type, out_base = lb_type_base(out_type);
    int found_type = 0;
    const void *found = NULL;
    size_t found_bytes = 0;
    if (lb_abq_search_tensor(q->search, t->name.ptr, t->name.len, &found_type, &found, &found_bytes)) {
        /* calibrated: the search's ABQ blocks as they are, its norms (F32) in the tensor's own type */
        if (found_type == out_type && found_bytes == nbytes) return memcpy(dst, found, nbytes), LB_OK;
        if (found_type == LB_TYPE_F32 && t->n_dims == 1 && (uint64_t)t->ne[0] * 4 == found_bytes)
            return convert_rows(found, LB_TYPE_F32, dst, out_type, t->ne[0], 1, 1, 0);
        return lb_fail(LB_ERR_UNSUPPORTED, "--abq-search: %.*s is %s here, %s in the search", (int)t->name.len,
                       t->name.ptr, lb_type_name(out_type), lb_type_name(found_type));
    }
    /* smoothed: its floats, and its importance in the same allocation (freed as `unpacked`) */
    float *smoothed = NULL, *smooth_imp = NULL;
    lb_status s = lb_smooth_tensor(q->smooth, t, lb_quant_extras_importance(q->ex, t), &smoothed, &smooth_imp);
    if (s != LB_OK) return s;
    if ((int)t->type == out_type && !smoothed) {
        memcpy(dst, t->data, nbytes);
        return LB_OK;
    }
    const int64_t K = t->ne[0], rows = (int64_t)(t->size / lb_row_size((int)t->type, K));
    const void *src = t->data;
    int src_type = (int)t->type;
    void *unpacked = NULL, *plain = NULL;
    if (smoothed) {
        src = unpacked = smoothed;
        src_type = LB_TYPE_F32;
    } else if (lb_gc_is(src_type)) { /* a GC input: its floats, through its side tensor */
        float *f = NULL;
        if ((s = lb_quantize_tensor_floats(q->in, t, q->n_threads, &f))) return s;
        src = unpacked = f;
        src_type = LB_TYPE_F32;
    } else if (src_type != lb_type_base(src_type)) {
        if (!(unpacked = malloc(t->size))) return lb_fail(LB_ERR_NOMEM, "out of memory");
        lb_unpack_tensor(src_type, src, unpacked, K, rows);
        src = unpacked;
        src_type = lb_type_base(src_type);
    }
    if (q->from_uniform && lb_bcq_is_plain(out_type)) {
        /* uniform q-bit groups -> BCQ, exactly where z fits fp16 (LUT-GEMM App. C) */
        if (lb_bcq_uniform_fits(src_type, out_type)) {
            int64_t groups = 0;
            const int64_t inexact = lb_bcq_from_uniform(src_type, src, out_type, dst, K, rows, &groups);
            if (inexact < 0) {
                s = LB_ERR_NOMEM;
            } else {
                q->st->n_from_uniform++;
                q->st->uniform_groups += groups;
                q->st->uniform_inexact += inexact;
                lb_log(2, "%.*s: %s -> %s, %lld of %lld groups exact\n", (int)t->name.len, t->name.ptr,
                       lb_type_name(src_type), lb_type_name(out_type), (long long)(groups - inexact), (long long)groups);
            }
            free(unpacked);
            return s;
        }
        lb_log(1, "%.*s: %s is no uniform grid %s holds exactly (--from-uniform): quantized from its values\n",
               (int)t->name.len, t->name.ptr, lb_type_name(src_type), lb_type_name(out_type));
    }
    int64_t imp_rows = 0; /* a MoE tensor's per-expert vectors: rows each */
    const float *imp = smooth_imp ? smooth_imp : lb_quant_extras_importance_rows(q->ex, t, &imp_rows);
    int gptq_done = 0;
    if (q->ex->calib && src_type != out_base) {
        /* GPTQ writes plain rows: straight into dst, or via `plain` for an interleaved output */
        void *to = out_base == out_type ? dst : (plain = malloc(nbytes));
        s = to ? lb_quant_extras_gptq(q->ex, t, src, src_type, to, out_base, K, rows, q->n_threads, &gptq_done)
               : lb_fail(LB_ERR_NOMEM, "out of memory");
        if (s == LB_OK && gptq_done && to != dst) lb_repack_tensor(out_type, plain, dst, K, rows);
    }
    if (s == LB_OK && !gptq_done) {
        if (imp && out_base == out_type && src_type != out_type && !(q->sym && lb_gq_bits(out_type))) {
            s = lb_quant_extras_convert(imp, imp_rows, src, src_type, dst, out_type, K, rows, q->n_threads);
        } else if (out_base == out_type) {
            s = src_type == out_type ? (memcpy(dst, src, nbytes), LB_OK)
                                     : convert_rows(src, src_type, dst, out_type, K, rows, q->n_threads, q->sym);
        } else if (src_type == out_base) {
            lb_repack_tensor(out_type, src, dst, K, rows);
        } else if (!plain && !(plain = malloc(nbytes))) {
            s = lb_fail(LB_ERR_NOMEM, "out of memory");
        } else if ((s = convert_rows(src, src_type, plain, out_base, K, rows, q->n_threads, q->sym)) == LB_OK) {
            lb_repack_tensor(out_type, plain, dst, K, rows);
        }
    }
    free(plain);
    free(unpacked);
    return s;
}

lb_status lb_quantize_file(const char *in_path, const char *out_path, const lb_quantize_params *p,
                           lb_quantize_stats *stats) {
    return lb_quantize_file_ex(in_path, out_path, p, NULL, stats);
}

static int is_name(const gguf_tensor *t, const char *name) {
    return t->name.len == strlen(name) && !memcmp(t->name.ptr, name, t->name.len);
}

/* The type a quantizable tensor takes when it is not MX: the embedding and
 * head overrides (llama-quantize's flags), else the target; then the
 * fallback for rows the type's block does not divide. An interleaved
 * target applies to 2-D matrices other than the embedding (read by rows). */
static int plain_type(const gguf_file *in, const gguf_tensor *t, int target, const lb_quantize_options *o,
                      int *fell_back) {
    const int mx = target == LB_TYPE_MX, embd = is_name(t, "token_embd.weight"), head = is_name(t, "output.weight");
    const int tied = embd && !gguf_find_tensor(in, "output.weight"); /* the embedding is the head too */
    int want = mx ? LB_TYPE_Q4_0 : lb_type_base(target); /* MX: matrices it cannot hold */
    if (embd && o->token_embd_type_set) want = o->token_embd_type;
    else if ((head || tied) && o->output_type_set) want = o->output_type;
    else if (mx && (head || tied)) want = LB_TYPE_Q6_K;
    else if (mx && embd) want = LB_TYPE_Q4_K;
    const int base = lb_type_base(want), out = lb_type_fallback(base, t->ne[0]);
    *fell_back = out != base;
    if (out == base && base != target && lb_type_base(target) == base && t->n_dims == 2 && !embd) return target;
    return out;
}

lb_status lb_quantize_file_ex(const char *in_path, const char *out_path, const lb_quantize_params *p,
                              const lb_quantize_options *o, lb_quantize_stats *stats) {
    lb_quant_extras ex = {0};
    lb_quantize_stats st;
    memset(&st, 0, sizeof st);
    if (stats) *stats = st;
    const lb_quantize_options none = {0};
    if (!o) o = &none;
    const int mx = p->type == LB_TYPE_MX;
    const lb_type_traits *tt = lb_traits(p->type);
    const int target_base = lb_type_base(p->type); /* interleaved targets quantize as their base */
    if (lb_abq_plain_of_codes(p->type) >= 0 || lb_abq_codes_of_x16(p->type) >= 0) {
        const int plain = lb_type_base(target_base); /* X16 -> codes -> planes; codes -> planes */
        const int file_type = lb_abq_bits(target_base) ? target_base : plain;
        return lb_fail(LB_ERR_UNSUPPORTED, "%s is the layout loading makes of %s, not a file type: quantize to %s",
                       tt->name, lb_type_name(file_type), lb_type_name(file_type));
    }
    if (target_base == LB_TYPE_MXFP4_NL) /* formats/mxfp4.h */
        return lb_fail(LB_ERR_UNSUPPORTED, "%s is the layout loading makes of MXFP4, not a file type: quantize to MXFP4",
                       tt->name);
    if (!tt || (!mx && !lb_traits(target_base)->from_float && !lb_gc_is(target_base)))
        return lb_fail(LB_ERR_UNSUPPORTED, "cannot quantize to type id %d", p->type);
    if ((o->token_embd_type_set && (!lb_traits(o->token_embd_type) ||
                                    (!lb_traits(o->token_embd_type)->from_float && !lb_gc_is(o->token_embd_type)))) ||
        (o->output_type_set &&
         (!lb_traits(o->output_type) || (!lb_traits(o->output_type)->from_float && !lb_gc_is(o->output_type)))))
        return lb_fail(LB_ERR_UNSUPPORTED, "the embedding's or the head's type cannot be quantized to");
    lb_mx_params mxp = lb_mx_default_params();
    if (o->mx_set) mxp.hi_frac = o->mx_hi, mxp.outlier_frac = o->mx_outliers;
    mxp.rank_by_error = o->mx_rank == 2;
    mxp.n_threads = p->n_threads;
    if (mx && !(mxp.hi_frac >= 0.0f && mxp.hi_frac <= 1.0f && mxp.outlier_frac >= 0.0f && mxp.outlier_frac <= 0.5f))
        return lb_fail(LB_ERR_ARG, "MX: 4-bit share %g (0..1) or outlier share %g (0..0.5) out of range",
                       (double)mxp.hi_frac, (double)mxp.outlier_frac);
    if ((o->act_bits && !lb_abq_act_bits_ok(o->act_bits)) || (o->act_bits_down && !lb_abq_act_bits_ok(o->act_bits_down)))
        return lb_fail(LB_ERR_ARG, "activation bits %d (ffn_down %d): ABQ takes 1..8, or 16 (unquantized)", o->act_bits,
                       o->act_bits_down);
    if ((o->abq_down_bits || o->abq_akl) && !o->abq_search)
        return lb_fail(LB_ERR_ARG, "ffn_down's per-layer bits and the attention-map term belong to the ABQ search: give it a text");
    gguf_file *in = NULL;
    lb_status s = gguf_open(in_path, &in);
    if (s) return lb_fail_prefix(s, "reading %s", in_path);
    gguf_writer *w = gguf_writer_new();
    const int64_t nt = gguf_n_tensors(in);
    /* an MX matrix becomes up to 5 tensors, a GC matrix 2 */
    out_tensor *outs = calloc((size_t)(nt > 0 ? 5 * nt : 1), sizeof *outs);
    int64_t n_out = 0, layer_w = 0, n_side = 0;
    uint64_t layer_b = 0;
    if (!w || !outs) { s = lb_fail(LB_ERR_NOMEM, "out of memory"); goto done; }
    for (int64_t i = 0; i < gguf_n_kv(in) && s == LB_OK; i++) s = gguf_writer_copy_kv(w, gguf_kv_at(in, i));
    if (s == LB_OK) {
        int ft = lb_llama_ftype(target_base, 0);
        s = ft >= 0 ? gguf_writer_set_u32(w, "general.file_type", (uint32_t)ft)
                    : gguf_find_kv(in, "general.file_type") ? gguf_writer_remove_kv(w, "general.file_type") : LB_OK;
    }
    if (s == LB_OK) s = gguf_writer_set_str(w, "general.quantized_by", "lowbit");
    if (s == LB_OK && mx) s = gguf_writer_set_f32(w, "lowbit.mx.hi_fraction", mxp.hi_frac);
    if (s == LB_OK && mx) s = gguf_writer_set_f32(w, "lowbit.mx.outlier_fraction", mxp.outlier_frac);
    if (s == LB_OK && lb_abq_bits(p->type)) /* ABQ: the activation bits a run takes unless told otherwise */
        s = gguf_writer_set_u32(w, "lowbit.abq.act_bits", (uint32_t)(o->act_bits ? o->act_bits : LB_ABQ_MAX_BITS));
    if (s == LB_OK && lb_abq_bits(p->type) && o->act_bits_down)
        s = gguf_writer_set_u32(w, "lowbit.abq.act_bits_ffn_down", (uint32_t)o->act_bits_down);
    else if (s == LB_OK && gguf_find_kv(in, "lowbit.abq.act_bits_ffn_down")) /* from an ABQ input */
        s = gguf_writer_remove_kv(w, "lowbit.abq.act_bits_ffn_down");
    if (s == LB_OK && gguf_find_kv(in, "lowbit.abq.act_bits_ffn_down_layers")) /* a search's, below, or none */
        s = gguf_writer_remove_kv(w, "lowbit.abq.act_bits_ffn_down_layers");
    if (s == LB_OK) s = lb_quant_extras_begin(in, p, o, w, &ex);
    lb_smooth *smooth = NULL;
    if (s == LB_OK && o->smooth_set) {
        s = o->gptq ? lb_fail(LB_ERR_ARG, "--smooth-alpha with --gptq: the Hessians would need the same rewrite (not yet)")
                    : lb_smooth_begin(in, ex.imatrix, o->smooth_alpha, p->n_threads > 0 ? p->n_threads : omp_get_num_procs(),
                                      &smooth);
        if (s == LB_OK) s = gguf_writer_set_f32(w, "lowbit.smooth.alpha", o->smooth_alpha);
    }
    lb_quantize_search search = {0};
    if (s == LB_OK && o->abq_search)
        s = lb_quantize_search_begin(in_path, p->type, o, p->n_threads > 0 ? p->n_threads : omp_get_num_procs(), w, &search);
    lb_bcq_set_iters(o->bcq_iters > 0 ? o->bcq_iters : o->bcq_iters < 0 ? 0 : 8); /* BCQ's alternating iterations */
    for (int64_t i = 0; i < nt && s == LB_OK; i++) {
        const gguf_tensor *t = gguf_tensor_at(in, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)LB_MIN(t->name.len, 255), t->name.ptr);
        const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        if (lb_qgc_is_input_side(in, t)) { /* part of its GC matrix: written with it, or dropped */
            st.bytes_in += t->size;
            n_side++;
            continue;
        }
        if ((int)t->type == LB_TYPE_MX2 || (int)t->type == LB_TYPE_MX4) {
            s = lb_fail(LB_ERR_UNSUPPORTED, "%s is already MX: quantize from the original (F32, F16, BF16 or a "
                                            "llama.cpp type) instead", in_path);
            break;
        }
        st.n_params += n;
        st.bytes_in += t->size;
        const int layer = (t->n_dims == 2 || t->n_dims == 3) && t->name.len > 4 && !memcmp(t->name.ptr, "blk.", 4);
        if (layer) layer_w += n;
        if (mx && is_quantizable(t) && lb_qmx_applies(t)) {
            int kinds[5], k = 0;
            uint64_t bytes = 0;
            s = lb_qmx_add(w, t, &mxp, kinds, &k, &bytes);
            for (int j = 0; j < k; j++) outs[n_out++] = (out_tensor){i, kinds[j], -1};
            st.bytes_out += bytes;
            layer_b += bytes;
            st.n_quantized++;
            continue;
        }
        int out = (int)t->type;
        if (is_quantizable(t)) {
            if (!lb_traits((int)t->type) || (!lb_traits((int)t->type)->to_float && !lb_gc_is((int)t->type))) {
                s = lb_fail(LB_ERR_UNSUPPORTED, "tensor %s has type %s, which lowbit cannot read yet", name,
                            lb_type_name((int)t->type) ? lb_type_name((int)t->type) : "unknown");
                break;
            }
            int fell_back = 0;
            out = plain_type(in, t, p->type, o, &fell_back);
            if (!fell_back) st.n_quantized++, st.n_own_type += lb_type_base(out) != lb_type_base(p->type);
            else {
                st.n_fallback++;
                lb_log(1, "%s: row length %lld does not fit; keeping %s\n", name, (long long)t->ne[0], lb_type_name(out));
            }
        }
        if (lb_gc_is(out) && t->n_dims > 2) {
            /* a MoE tensor's experts: a whole-row grid per row of a 3-D
             * tensor has no place in the file (its side tensor is per matrix),
             * so the grid's groups-of-128 type */
            const int g = lb_type_fallback(lb_gc_g128(out), t->ne[0]);
            lb_log(1, "%s: the experts of a 3-D tensor take %s, not %s\n", name, lb_type_name(g), lb_type_name(out));
            out = g;
        }
        if (lb_gc_is(out)) { /* codes and side tensor (model/quantize_gqc.h) */
            uint64_t bytes = 0;
            s = lb_qgc_add(w, name, t, out, &bytes);
            outs[n_out++] = (out_tensor){i, LB_QGC_CODES, out};
            outs[n_out++] = (out_tensor){i, LB_QGC_SZ, out};
            st.bytes_out += bytes;
            if (layer) layer_b += bytes;
            continue;
        }
        outs[n_out++] = (out_tensor){i, LB_QMX_NONE, out};
        st.bytes_out += lb_row_size(out, t->ne[0]) * (uint64_t)(n / t->ne[0]);
        if (layer) layer_b += lb_row_size(out, t->ne[0]) * (uint64_t)(n / t->ne[0]);
        s = gguf_writer_add_tensor(w, name, (uint32_t)out, t->n_dims, t->ne, NULL);
    }
    st.n_tensors = (int)(nt - n_side);
    st.bpw_out = st.n_params ? 8.0 * (double)st.bytes_out / (double)st.n_params : 0;
    st.layer_bpw = layer_w ? 8.0 * (double)layer_b / (double)layer_w : 0;
    if (s == LB_OK) {
        qctx q = {in, outs, p->n_threads > 0 ? p->n_threads : omp_get_num_procs(), LB_OK, &ex, o->sym, mxp,
                  {.in_index = -1}, {.in_index = -1}, &st, 0.0, 0.0, o->from_uniform, smooth, search.search};
        s = gguf_writer_write(w, out_path, produce, &q, p->progress, p->user);
        lb_qmx_cache_free(&q.mx);
        lb_qgc_cache_free(&q.gc);
        if (q.mx_weights > 0) st.mx_bpw /= q.mx_weights, st.mx_bpw_eq10 = q.mx_eq10_sum / q.mx_weights;
    }
    st.n_gptq = ex.n_gptq;
    st.n_smooth_groups = lb_smooth_groups(smooth);
    lb_smooth_free(smooth);
    if (search.search) {
        st.n_search_layers = search.search->n_layer, st.search_chunks = search.chunks;
        for (int l = 0; l < search.search->n_layer; l++)
            st.search_obj_default += search.search->layers[l].obj_default, st.search_obj_best += search.search->layers[l].obj_best,
            st.n_search_down_raised += o->abq_down_bits && search.search->layers[l].down_bits == o->abq_down_bits,
            st.n_search_dc += search.search->layers[l].dc_gamma > 0.0f,
            st.search_akl_default += search.search->layers[l].akl_default, st.search_akl_best += search.search->layers[l].akl_best;
    }
    lb_quantize_search_end(&search);
    if (s == LB_OK && stats) *stats = st;
done:
    lb_quant_extras_end(&ex);
    free(outs);
    gguf_writer_free(w);
    gguf_close(in);
    return s;
}
