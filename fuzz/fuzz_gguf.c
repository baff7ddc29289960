/* libFuzzer target for the GGUF reader: any input must either be rejected
 * with a message or yield a handle whose every accessor stays inside the
 * input. Everything reachable is touched so ASan sees any stray pointer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

/* Crash loudly on a broken invariant: that is how libFuzzer reports it. */
#define REQUIRE(cond)                                                   \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "invariant failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                    \
        }                                                               \
    } while (0)

static volatile uint8_t sink;

static void touch(const void *p, uint64_t n, const uint8_t *base, size_t size) {
    const uint8_t *b = p;
    REQUIRE(n == 0 || (b >= base && b <= base + size && n <= (uint64_t)(base + size - b)));
    uint8_t acc = 0;
    for (uint64_t i = 0; i < n; i++) acc ^= b[i];
    sink = acc;
}

/* A NUL-terminated copy of a name, or NULL if it holds a NUL (no C lookup can find it). */
static char *cname(gguf_str s) {
    if (memchr(s.ptr, 0, (size_t)s.len)) return NULL;
    char *c = malloc((size_t)s.len + 1);
    if (!c) return NULL;
    memcpy(c, s.ptr, (size_t)s.len);
    c[s.len] = 0;
    return c;
}

static void check_kv(const gguf_file *g, gguf_writer *w, const gguf_kv *kv, const uint8_t *base,
                     size_t size) {
    REQUIRE(kv && kv->type < GGUF_TYPE_COUNT);
    touch(kv->key.ptr, kv->key.len, base, size);
    touch(kv->data, kv->data_size, base, size);
    REQUIRE(gguf_vtype_name(kv->type) != NULL);
    if (kv->type == GGUF_TYPE_STRING) touch(kv->str.ptr, kv->str.len, base, size);
    if (kv->type == GGUF_TYPE_ARRAY) {
        size_t es = gguf_vtype_size(kv->arr_type);
        if (es) REQUIRE(kv->data_size == kv->arr_n * es);
        if (kv->arr_type == GGUF_TYPE_STRING) {
            REQUIRE(kv->strs || kv->arr_n == 0);
            for (uint64_t i = 0; i < kv->arr_n; i++) touch(kv->strs[i].ptr, kv->strs[i].len, base, size);
        }
    } else if (kv->type != GGUF_TYPE_STRING) {
        REQUIRE(kv->data_size == gguf_vtype_size(kv->type));
    }

    char *key = cname(kv->key);
    if (key) {
        REQUIRE(gguf_find_kv(g, key) == kv); /* duplicates were rejected */
        uint32_t u32;
        int64_t i64;
        float f;
        int b;
        (void)gguf_get_u32(g, key, &u32);
        (void)gguf_get_i64(g, key, &i64);
        (void)gguf_get_f32(g, key, &f);
        (void)gguf_get_bool(g, key, &b);
        const char *s = gguf_get_str(g, key);
        REQUIRE((s != NULL) == (kv->type == GGUF_TYPE_STRING));
        if (s) REQUIRE(strlen(s) <= kv->str.len && memcmp(s, kv->str.ptr, strlen(s)) == 0);
        if (kv->type == GGUF_TYPE_ARRAY) REQUIRE(gguf_get_arr(g, key, kv->arr_type) == kv);
        free(key);
        (void)gguf_writer_copy_kv(w, kv); /* in memory only: exercises the raw copy */
    }
}

static void check_tensor(const gguf_file *g, gguf_writer *w, const gguf_tensor *t,
                         const uint8_t *base, size_t size) {
    REQUIRE(t && t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS);
    touch(t->name.ptr, t->name.len, base, size);
    touch(t->data, t->size, base, size);
    REQUIRE(t->offset % gguf_alignment(g) == 0);
    for (int d = 0; d < GGUF_MAX_DIMS; d++) REQUIRE(t->ne[d] >= 0);
    char *name = cname(t->name);
    if (name) {
        REQUIRE(gguf_find_tensor(g, name) == t);
        if (t->size < (1u << 20))
            (void)gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data);
        free(name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *g = NULL;
    if (gguf_open_memory(data, size, &g) != LB_OK) {
        REQUIRE(g == NULL && lb_last_error()[0] != 0);
        return 0;
    }
    REQUIRE(gguf_base(g) == (const void *)data && gguf_file_size(g) == size);
    uint32_t a = gguf_alignment(g);
    REQUIRE(a && (a & (a - 1)) == 0 && gguf_data_offset(g) % a == 0);
    REQUIRE(gguf_version(g) == 2 || gguf_version(g) == 3);
    gguf_writer *w = gguf_writer_new();
    if (!w) {
        gguf_close(g);
        return 0;
    }
    for (int64_t i = 0; i < gguf_n_kv(g); i++) check_kv(g, w, gguf_kv_at(g, i), data, size);
    for (int64_t i = 0; i < gguf_n_tensors(g); i++)
        check_tensor(g, w, gguf_tensor_at(g, i), data, size);
    REQUIRE(gguf_kv_at(g, gguf_n_kv(g)) == NULL && gguf_tensor_at(g, -1) == NULL);
    (void)gguf_find_kv(g, "general.architecture");
    (void)gguf_find_tensor(g, "");
    gguf_writer_free(w);
    gguf_close(g);
    return 0;
}
