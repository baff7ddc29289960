/* Model-level queries and the summary lines `info` and `bench` print. */
#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"
#include "model/repack.h"

static void count_matrix(lb_model *m, const lb_matrix *w, uint64_t *bytes_by_type, int64_t *params) {
    if (!w->data) return;
    *params += w->K * w->N;
    bytes_by_type[w->type] += (uint64_t)w->row_size * (uint64_t)w->N;
    (void)m;
}

lb_status lb_model_finish(lb_model *m) {
    enum { NT = 2048 };
    const int tied = m->output.data == m->tok_embd.data; /* before repacking gives output its own copy */
    lb_status rs = lb_model_repack(m);
    if (rs != LB_OK) return rs;
    uint64_t *bytes = calloc(NT, sizeof *bytes);
    if (!bytes) return lb_fail(LB_ERR_NOMEM, "out of memory");
    int64_t params = 0;
    const lb_hparams *hp = &m->hp;
    count_matrix(m, &m->tok_embd, bytes, &params);
    if (!tied) count_matrix(m, &m->output, bytes, &params);
    for (int il = 0; il < hp->n_layer; il++) {
        const lb_layer *l = &m->layers[il];
        const lb_matrix *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (int i = 0; i < 7; i++) count_matrix(m, ws[i], bytes, &params);
        params += 2 * (int64_t)hp->n_embd; /* norms */
    }
    params += hp->n_embd;
    uint64_t total = 0;
    int main_type = -1;
    uint64_t main_bytes = 0;
    size_t cap = 4096, len = 0;
    char *sum = malloc(cap);
    if (!sum) { free(bytes); return lb_fail(LB_ERR_NOMEM, "out of memory"); }
    sum[0] = 0;
    for (int t = 0; t < NT; t++) {
        if (!bytes[t]) continue;
        total += bytes[t];
        if (bytes[t] > main_bytes) { main_bytes = bytes[t]; main_type = t; }
        const lb_kernel *k = lb_kernel_get(t);
        len += (size_t)snprintf(sum + len, cap - len, "  %-6s weights: %8.2f MiB, kernel %s (%s)\n",
                                lb_type_name(t), bytes[t] / 1048576.0, k ? k->name : "none",
                                lb_isa_name(lb_cpu_level()));
        if (len >= cap - 200) break;
    }
    free(bytes);
    m->kernel_summary = sum;
    m->n_params = params;
    m->weight_bytes = total;
    char size[32];
    if (params >= 1000000000) snprintf(size, sizeof size, "%.1fB", params / 1e9);
    else if (params >= 1000000) snprintf(size, sizeof size, "%.0fM", params / 1e6);
    else snprintf(size, sizeof size, "%.0fK", params / 1e3);
    snprintf(m->desc, sizeof m->desc, "%s %s %s", hp->arch_name, size,
             main_type >= 0 ? lb_type_name(main_type) : "?");
    return LB_OK;
}

int lb_model_n_vocab(const lb_model *m) { return m->hp.n_vocab; }
int lb_model_n_ctx_train(const lb_model *m) { return m->hp.n_ctx_train; }
int lb_model_n_embd(const lb_model *m) { return m->hp.n_embd; }
int lb_model_n_layer(const lb_model *m) { return m->hp.n_layer; }
int64_t lb_model_n_params(const lb_model *m) { return m->n_params; }
uint64_t lb_model_size_bytes(const lb_model *m) { return m->weight_bytes; }
const char *lb_model_arch(const lb_model *m) { return m->hp.arch_name; }
const char *lb_model_desc(const lb_model *m) { return m->desc; }
const char *lb_model_kernel_summary(const lb_model *m) { return m->kernel_summary; }

int lb_token_bos(const lb_model *m) { return m->tok ? lb_tokenizer_bos(m->tok) : -1; }
int lb_token_eos(const lb_model *m) { return m->tok ? lb_tokenizer_eos(m->tok) : -1; }
int lb_add_bos_default(const lb_model *m) { return m->tok ? lb_tokenizer_add_bos(m->tok) : 0; }
int lb_token_is_eog(const lb_model *m, int32_t t) { return m->tok ? lb_tokenizer_is_eog(m->tok, t) : 0; }
int lb_model_has_vocab(const lb_model *m) { return m->tok != NULL; }

lb_status lb_tokenize(const lb_model *m, const char *text, size_t len, int add_bos, int32_t *out,
                      int cap, int *n_out) {
    *n_out = 0;
    if (!m->tok) return lb_fail(LB_ERR_UNSUPPORTED, "this model has no vocabulary (synthetic or vocab-less GGUF)");
    int32_t *ids = NULL;
    int n = 0;
    lb_status s = lb_tokenizer_encode(m->tok, text, len, add_bos, &ids, &n);
    if (s != LB_OK) return s;
    memcpy(out, ids, (size_t)LB_MIN(n, cap) * sizeof *ids);
    free(ids);
    *n_out = n;
    return LB_OK;
}

const char *lb_token_to_piece(const lb_model *m, int32_t token, size_t *len) {
    *len = 0;
    if (!m->tok || token < 0 || token >= lb_tokenizer_n_vocab(m->tok)) return "";
    return lb_tokenizer_piece(m->tok, token, len);
}
