/* lb_quantize_file: every 2-D weight of a GGUF converted to one type (rows
 * that don't fit its block keep a wider type), everything else copied as is.
 * Streams tensor by tensor through the GGUF writer (temp file + rename). */
#include <omp.h>
#include <stdlib.h>

#include "formats/gq.h"
#include "formats/repack.h"
#include "model/model.h"
#include "model/quantize_extras.h"
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
    return 1;
}

typedef struct {
    const gguf_file *in;
    int *types;
    int n_threads;
    lb_status err;
    lb_quant_extras *ex; /* codebooks, importance, GPTQ (model/quantize_extras.h) */
    int sym;             /* GQ outputs: symmetric groups */
} qctx;

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
    const gguf_tensor *t = gguf_tensor_at(q->in, index);
    const int out_type = q->types[index], out_base = lb_type_base(out_type);
    if ((int)t->type == out_type) {
        memcpy(dst, t->data, nbytes);
        return LB_OK;
    }
    const int64_t K = t->ne[0], rows = (int64_t)(t->size / lb_row_size((int)t->type, K));
    const void *src = t->data;
    int src_type = (int)t->type;
    void *unpacked = NULL, *plain = NULL;
    lb_status s = LB_OK;
    if (src_type != lb_type_base(src_type)) {
        if (!(unpacked = malloc(t->size))) return lb_fail(LB_ERR_NOMEM, "out of memory");
        lb_unpack_tensor(src_type, src, unpacked, K, rows);
        src = unpacked;
        src_type = lb_type_base(src_type);
    }
    const float *imp = lb_quant_extras_importance(q->ex, t);
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
            s = lb_quant_extras_convert(imp, src, src_type, dst, out_type, K, rows, q->n_threads);
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

lb_status lb_quantize_file_ex(const char *in_path, const char *out_path, const lb_quantize_params *p,
                              const lb_quantize_options *o, lb_quantize_stats *stats) {
    lb_quant_extras ex = {0};
    lb_quantize_stats st;
    memset(&st, 0, sizeof st);
    if (stats) *stats = st;
    const lb_type_traits *tt = lb_traits(p->type);
    const int target_base = lb_type_base(p->type); /* interleaved targets quantize as their base */
    if (!tt || !lb_traits(target_base)->from_float)
        return lb_fail(LB_ERR_UNSUPPORTED, "cannot quantize to type id %d", p->type);
    gguf_file *in = NULL;
    lb_status s = gguf_open(in_path, &in);
    if (s) return lb_fail_prefix(s, "reading %s", in_path);
    gguf_writer *w = gguf_writer_new();
    const int64_t nt = gguf_n_tensors(in);
    int *types = calloc((size_t)(nt > 0 ? nt : 1), sizeof *types);
    if (!w || !types) { s = lb_fail(LB_ERR_NOMEM, "out of memory"); goto done; }
    for (int64_t i = 0; i < gguf_n_kv(in) && s == LB_OK; i++) s = gguf_writer_copy_kv(w, gguf_kv_at(in, i));
    if (s == LB_OK) {
        int ft = lb_llama_ftype(target_base, 0);
        s = ft >= 0 ? gguf_writer_set_u32(w, "general.file_type", (uint32_t)ft)
                    : gguf_find_kv(in, "general.file_type") ? gguf_writer_remove_kv(w, "general.file_type") : LB_OK;
    }
    if (s == LB_OK) s = gguf_writer_set_str(w, "general.quantized_by", "lowbit");
    if (s == LB_OK) s = lb_quant_extras_begin(in, p, o, w, &ex);
    for (int64_t i = 0; i < nt && s == LB_OK; i++) {
        const gguf_tensor *t = gguf_tensor_at(in, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)LB_MIN(t->name.len, 255), t->name.ptr);
        const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        int out = (int)t->type;
        if (is_quantizable(t)) {
            if (!lb_traits((int)t->type) || !lb_traits((int)t->type)->to_float) {
                s = lb_fail(LB_ERR_UNSUPPORTED, "tensor %s has type %s, which lowbit cannot read yet", name,
                            lb_type_name((int)t->type) ? lb_type_name((int)t->type) : "unknown");
                break;
            }
            out = lb_type_fallback(target_base, t->ne[0]);
            /* interleave 2-D matrices only; the embedding is read by rows */
            if (out == target_base && target_base != p->type && t->n_dims == 2 &&
                !(t->name.len == 17 && !memcmp(t->name.ptr, "token_embd.weight", 17)))
                out = p->type;
            if (out == p->type || out == target_base) st.n_quantized++;
            else {
                st.n_fallback++;
                lb_log(1, "%s: row length %lld is not a multiple of %s's block of %d; keeping %s\n", name,
                       (long long)t->ne[0], tt->name, tt->blck, lb_type_name(out));
            }
        }
        types[i] = out;
        st.n_params += n;
        st.bytes_in += t->size;
        st.bytes_out += lb_row_size(out, t->ne[0]) * (uint64_t)(n / t->ne[0]);
        s = gguf_writer_add_tensor(w, name, (uint32_t)out, t->n_dims, t->ne, NULL);
    }
    st.n_tensors = (int)nt;
    st.bpw_out = st.n_params ? 8.0 * (double)st.bytes_out / (double)st.n_params : 0;
    if (s == LB_OK) {
        qctx q = {in, types, p->n_threads > 0 ? p->n_threads : omp_get_num_procs(), LB_OK, &ex, o ? o->sym : 0};
        s = gguf_writer_write(w, out_path, produce, &q, p->progress, p->user);
    }
    st.n_gptq = ex.n_gptq;
    if (s == LB_OK && stats) *stats = st;
done:
    lb_quant_extras_end(&ex);
    free(types);
    gguf_writer_free(w);
    gguf_close(in);
    return s;
}
