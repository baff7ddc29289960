/* Codebooks in GGUF metadata (formats/cb_gguf.h). */
#include <stdio.h>
#include <stdlib.h>

#include "formats/cb_gguf.h"
#include "formats/repack.h"

static const char *key_of(int type, int count_key) {
    if (type == LB_TYPE_CB2) return count_key ? "lowbit.codebooks.cb2.count" : "lowbit.codebooks.cb2";
    return count_key ? "lowbit.codebooks.cb3.count" : "lowbit.codebooks.cb3";
}

lb_status lb_cb_books_read(const gguf_file *g, int type, lb_cb_books *out, int *found) {
    memset(out, 0, sizeof *out);
    *found = 0;
    const int k = lb_cb_k(type);
    if (!k) return lb_fail(LB_ERR_ARG, "type id %d has no codebooks", type);
    const char *ck = key_of(type, 1), *vk = key_of(type, 0);
    const gguf_kv *cv = gguf_find_kv(g, ck), *vv = gguf_find_kv(g, vk);
    if (!cv && !vv) return LB_OK;
    if (!cv || !vv) return lb_fail(LB_ERR_FORMAT, "codebook metadata: %s is present but %s is missing", cv ? ck : vk, cv ? vk : ck);
    uint32_t count;
    if (!gguf_get_u32(g, ck, &count)) return lb_fail(LB_ERR_FORMAT, "codebook metadata: %s is not an integer", ck);
    if (count != 4 && count != 8 && count != 16)
        return lb_fail(LB_ERR_FORMAT, "codebook metadata: %s = %u (expected 4, 8 or 16)", ck, count);
    const gguf_kv *arr = gguf_get_arr(g, vk, GGUF_TYPE_INT8);
    if (!arr) return lb_fail(LB_ERR_FORMAT, "codebook metadata: %s is not an array of int8", vk);
    if (arr->arr_n != (uint64_t)count * (uint64_t)k)
        return lb_fail(LB_ERR_FORMAT, "codebook metadata: %s has %llu entries, expected %u books x %d = %u", vk,
                       (unsigned long long)arr->arr_n, count, k, count * (uint32_t)k);
    out->count = (int)count;
    out->k = k;
    const int8_t *v = arr->data;
    for (uint32_t c = 0; c < count; c++) memcpy(out->v[c], v + (size_t)c * k, (size_t)k);
    lb_status s = lb_cb_books_validate(out);
    if (s) return lb_fail_prefix(s, "codebook metadata %s", vk);
    *found = 1;
    return LB_OK;
}

lb_status lb_cb_books_write(gguf_writer *w, int type, const lb_cb_books *b) {
    if (b->k != lb_cb_k(type)) return lb_fail(LB_ERR_ARG, "codebooks of %d centroids do not fit %s", b->k, lb_type_name(type));
    int8_t flat[CB_MAX_BOOKS * CB_MAX_K];
    for (int c = 0; c < b->count; c++) memcpy(flat + c * b->k, b->v[c], (size_t)b->k);
    lb_status s = gguf_writer_set_u32(w, key_of(type, 1), (uint32_t)b->count);
    if (s == LB_OK) s = gguf_writer_set_arr(w, key_of(type, 0), GGUF_TYPE_INT8, flat, (uint64_t)b->count * b->k);
    return s;
}

static const int cb_types[2] = {LB_TYPE_CB2, LB_TYPE_CB3};

lb_status lb_cb_acquire_for_file(const gguf_file *g, int *held) {
    *held = 0;
    for (int t = 0; t < 2; t++) {
        const int type = cb_types[t];
        lb_cb_books b;
        int found;
        lb_status s = lb_cb_books_read(g, type, &b, &found);
        const gguf_tensor *user = NULL;
        for (int64_t i = 0; i < gguf_n_tensors(g) && !user; i++)
            if (lb_type_base((int)gguf_tensor_at(g, i)->type) == type) user = gguf_tensor_at(g, i); /* CB or CB_16X4 */
        if (s == LB_OK && user && !found)
            s = lb_fail(LB_ERR_FORMAT, "tensor %.*s is %s but the file has no %s metadata", (int)user->name.len,
                        user->name.ptr, lb_type_name(type), key_of(type, 0));
        if (s == LB_OK && user) s = lb_cb_acquire(type, &b);
        if (s != LB_OK) {
            lb_cb_release_held(*held);
            *held = 0;
            return s;
        }
        if (user) *held |= 1 << t;
    }
    return LB_OK;
}

void lb_cb_release_held(int held) {
    for (int t = 0; t < 2; t++)
        if (held & (1 << t)) lb_cb_release(cb_types[t]);
}

/* The matrices `lowbit quantize` converts (model/quantize.c's rule) whose
 * rows fit the 256-weight super-block. */
static int cb_candidate(const gguf_tensor *t) {
    if (t->n_dims < 2 || t->ne[0] % QK_CB) return 0;
    const char *n = t->name.ptr;
    const size_t len = t->name.len;
    if (len < 7 || memcmp(n + len - 7, ".weight", 7)) return 0;
    for (size_t i = 0; i + 4 <= len; i++)
        if (!memcmp(n + i, "norm", 4)) return 0;
    const lb_type_traits *tr = lb_traits((int)t->type);
    return tr && tr->to_float;
}

lb_status lb_cb_discover_file(const gguf_file *g, const lb_cb_discover_params *p, int64_t sample, lb_cb_books *out,
                              int64_t *n_total, int64_t *n_used) {
    int64_t total = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (cb_candidate(t)) total += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] / CB_SUB;
    }
    if (n_total) *n_total = total;
    if (n_used) *n_used = 0;
    if (total == 0)
        return lb_fail(LB_ERR_UNSUPPORTED, "no weight matrix has rows that are a multiple of %d: nothing to learn "
                       "codebooks from (and nothing that CB2/CB3 could store)", QK_CB);
    const double rate = sample > 0 && sample < total ? (double)sample / (double)total : 1.0;
    lb_cb_groups G = {0};
    lb_status s = LB_OK;
    int64_t g0 = 0;
    float *row = NULL;
    for (int64_t i = 0; i < gguf_n_tensors(g) && s == LB_OK; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (!cb_candidate(t)) continue;
        const int64_t K = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3];
        const size_t rs = lb_row_size((int)t->type, K);
        float *nr = realloc(row, (size_t)K * sizeof *row);
        if (!nr) {
            s = lb_fail(LB_ERR_NOMEM, "out of memory");
            break;
        }
        row = nr;
        for (int64_t r = 0; r < rows && s == LB_OK; r++, g0 += K / CB_SUB) {
            lb_traits((int)t->type)->to_float((const char *)t->data + (size_t)r * rs, row, K);
            s = lb_cb_groups_add(&G, row, K, g0, rate, p->seed);
        }
        if (p->progress) {
            char what[160];
            snprintf(what, sizeof what, "sampling groups: %.*s", (int)LB_MIN(t->name.len, 100), t->name.ptr);
            p->progress(p->user, what, (int)(1000.0 * (double)g0 / (double)total), 1000);
        }
        if (lb_cancel_requested()) s = lb_fail(LB_ERR_INTERRUPTED, "interrupted");
    }
    free(row);
    if (n_used) *n_used = G.n;
    if (s == LB_OK) s = lb_cb_discover(&G, p, out);
    lb_cb_groups_free(&G);
    return s;
}
