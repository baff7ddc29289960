/* GGUF v3 writer. Metadata is kept as the exact bytes that follow each key's
 * type tag, so copying a key from a reader (nested arrays included) is a byte
 * copy. Tensor data is referenced or produced on demand, never buffered as a
 * whole, and the file only appears under its name once completely written. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "gguf/gguf_internal.h"

typedef struct {
    char *key;
    gguf_vtype type;
    uint8_t *raw;      /* value encoding after the type tag */
    uint64_t raw_size;
} wkv;

typedef struct {
    char *name;
    uint32_t type;
    int n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    const void *data;  /* NULL: the producer fills it */
    uint64_t size, offset;
} wtensor;

struct gguf_writer {
    wkv *kvs;
    int64_t n_kv, cap_kv;
    wtensor *tensors;
    int64_t n_tensors, cap_tensors;
};

gguf_writer *gguf_writer_new(void) { return lb_calloc(1, sizeof(gguf_writer)); }

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (int64_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].raw);
    }
    for (int64_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->kvs);
    free(w->tensors);
    free(w);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = lb_malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static lb_status grow(void **arr, int64_t *cap, int64_t n, size_t elem) {
    if (n < *cap) return LB_OK;
    int64_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return lb_fail(LB_ERR_NOMEM, "out of memory in the GGUF writer");
    *arr = p;
    *cap = nc;
    return LB_OK;
}

static int64_t find_key(const gguf_writer *w, const char *key) {
    for (int64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kvs[i].key, key) == 0) return i;
    return -1;
}

/* Stores a value, taking ownership of raw (freed on failure too). An existing
 * key keeps its position so rewriting a file does not reorder it. */
static lb_status set_raw(gguf_writer *w, const char *key, gguf_vtype type, uint8_t *raw,
                         uint64_t raw_size) {
    if (!w || !key || !*key) {
        free(raw);
        return lb_fail(LB_ERR_ARG, "gguf writer: missing writer or empty key");
    }
    int64_t i = find_key(w, key);
    if (i >= 0) {
        free(w->kvs[i].raw);
    } else {
        char *k = dup_str(key);
        lb_status s = k ? grow((void **)&w->kvs, &w->cap_kv, w->n_kv, sizeof *w->kvs) : LB_ERR_NOMEM;
        if (s) {
            free(k);
            free(raw);
            return s;
        }
        i = w->n_kv++;
        w->kvs[i].key = k;
    }
    w->kvs[i].type = type;
    w->kvs[i].raw = raw;
    w->kvs[i].raw_size = raw_size;
    return LB_OK;
}

static lb_status set_bytes(gguf_writer *w, const char *key, gguf_vtype type, const void *v,
                           size_t n) {
    uint8_t *raw = lb_malloc(n);
    if (!raw) return LB_ERR_NOMEM;
    if (n) memcpy(raw, v, n);
    return set_raw(w, key, type, raw, n);
}

/* Scalars are stored little-endian whatever the host order. */
static lb_status set_uint(gguf_writer *w, const char *key, gguf_vtype type, uint64_t v) {
    uint8_t b[8];
    size_t n = gguf_vtype_size(type);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    return set_bytes(w, key, type, b, n);
}

lb_status gguf_writer_set_u8(gguf_writer *w, const char *key, uint8_t v) {
    return set_uint(w, key, GGUF_TYPE_UINT8, v);
}
lb_status gguf_writer_set_i8(gguf_writer *w, const char *key, int8_t v) {
    return set_uint(w, key, GGUF_TYPE_INT8, (uint8_t)v);
}
lb_status gguf_writer_set_u16(gguf_writer *w, const char *key, uint16_t v) {
    return set_uint(w, key, GGUF_TYPE_UINT16, v);
}
lb_status gguf_writer_set_i16(gguf_writer *w, const char *key, int16_t v) {
    return set_uint(w, key, GGUF_TYPE_INT16, (uint16_t)v);
}
lb_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v) {
    return set_uint(w, key, GGUF_TYPE_UINT32, v);
}
lb_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v) {
    return set_uint(w, key, GGUF_TYPE_INT32, (uint32_t)v);
}
lb_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v) {
    return set_uint(w, key, GGUF_TYPE_UINT64, v);
}
lb_status gguf_writer_set_i64(gguf_writer *w, const char *key, int64_t v) {
    return set_uint(w, key, GGUF_TYPE_INT64, (uint64_t)v);
}
lb_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return set_uint(w, key, GGUF_TYPE_FLOAT32, bits);
}
lb_status gguf_writer_set_f64(gguf_writer *w, const char *key, double v) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    return set_uint(w, key, GGUF_TYPE_FLOAT64, bits);
}
lb_status gguf_writer_set_bool(gguf_writer *w, const char *key, int v) {
    return set_uint(w, key, GGUF_TYPE_BOOL, v != 0);
}

/* Length-prefixed string encoding. */
static uint8_t *put_str(uint8_t *p, const char *s, uint64_t len) {
    gguf_wr_u64(p, len);
    if (len) memcpy(p + 8, s, (size_t)len);
    return p + 8 + len;
}

lb_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v) {
    if (!v) return lb_fail(LB_ERR_ARG, "gguf writer: NULL string for key '%s'", key ? key : "");
    uint64_t len = strlen(v);
    uint8_t *raw = lb_malloc((size_t)len + 8);
    if (!raw) return LB_ERR_NOMEM;
    put_str(raw, v, len);
    return set_raw(w, key, GGUF_TYPE_STRING, raw, len + 8);
}

/* Array header (element type, count) followed by `body` bytes. */
static uint8_t *new_array(gguf_vtype elem_type, uint64_t n, uint64_t body, uint64_t *raw_size) {
    uint64_t total;
    if (!lb_add_ok(body, 12, &total) || total > SIZE_MAX) {
        lb_fail(LB_ERR_ARG, "gguf writer: array too large");
        return NULL;
    }
    uint8_t *raw = lb_malloc((size_t)total);
    if (!raw) return NULL;
    gguf_wr_u32(raw, (uint32_t)elem_type);
    gguf_wr_u64(raw + 4, n);
    *raw_size = total;
    return raw;
}

lb_status gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_vtype elem_type,
                              const void *data, uint64_t n) {
    size_t es = gguf_vtype_size(elem_type);
    uint64_t body;
    if (!es)
        return lb_fail(LB_ERR_ARG, "gguf writer: key '%s': set_arr needs a fixed-size element "
                       "type, not %s", key ? key : "", gguf_vtype_name(elem_type));
    if (!lb_mul_ok(n, es, &body) || (n && !data))
        return lb_fail(LB_ERR_ARG, "gguf writer: key '%s': bad array", key ? key : "");
    uint64_t raw_size;
    uint8_t *raw = new_array(elem_type, n, body, &raw_size);
    if (!raw) return lb_fail_prefix(LB_ERR_NOMEM, "key '%s'", key ? key : "");
    if (body) memcpy(raw + 12, data, (size_t)body);
    return set_raw(w, key, GGUF_TYPE_ARRAY, raw, raw_size);
}

lb_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                                  uint64_t n) {
    uint64_t body = 0;
    if (n && !strs) return lb_fail(LB_ERR_ARG, "gguf writer: key '%s': NULL strings", key ? key : "");
    for (uint64_t i = 0; i < n; i++) {
        if (!strs[i])
            return lb_fail(LB_ERR_ARG, "gguf writer: key '%s': string %" PRIu64 " is NULL",
                           key ? key : "", i);
        body += 8 + strlen(strs[i]);
    }
    uint64_t raw_size;
    uint8_t *raw = new_array(GGUF_TYPE_STRING, n, body, &raw_size);
    if (!raw) return LB_ERR_NOMEM;
    uint8_t *p = raw + 12;
    for (uint64_t i = 0; i < n; i++) p = put_str(p, strs[i], strlen(strs[i]));
    return set_raw(w, key, GGUF_TYPE_ARRAY, raw, raw_size);
}

lb_status gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv) {
    if (!kv || kv->type >= GGUF_TYPE_COUNT || kv->key.len > 1u << 20)
        return lb_fail(LB_ERR_ARG, "gguf writer: bad key/value to copy");
    char *key = lb_malloc((size_t)kv->key.len + 1);
    if (!key) return LB_ERR_NOMEM;
    memcpy(key, kv->key.ptr, (size_t)kv->key.len);
    key[kv->key.len] = 0;
    if (strlen(key) != kv->key.len) {
        free(key);
        return lb_fail(LB_ERR_ARG, "gguf writer: key with an embedded NUL cannot be copied");
    }
    lb_status s;
    if (kv->type == GGUF_TYPE_STRING) {
        uint8_t *raw = lb_malloc((size_t)kv->str.len + 8);
        s = raw ? LB_OK : LB_ERR_NOMEM;
        if (raw) {
            put_str(raw, kv->str.ptr, kv->str.len);
            s = set_raw(w, key, GGUF_TYPE_STRING, raw, kv->str.len + 8);
        }
    } else if (kv->type == GGUF_TYPE_ARRAY) {
        /* The element bytes are copied verbatim: this covers strings and nested arrays. */
        uint64_t raw_size;
        uint8_t *raw = new_array(kv->arr_type, kv->arr_n, kv->data_size, &raw_size);
        s = raw ? LB_OK : LB_ERR_NOMEM;
        if (raw) {
            if (kv->data_size) memcpy(raw + 12, kv->data, (size_t)kv->data_size);
            s = set_raw(w, key, GGUF_TYPE_ARRAY, raw, raw_size);
        }
    } else {
        s = set_bytes(w, key, kv->type, kv->data, gguf_vtype_size(kv->type));
    }
    free(key);
    return s;
}

lb_status gguf_writer_remove_kv(gguf_writer *w, const char *key) {
    int64_t i = key ? find_key(w, key) : -1;
    if (i < 0) return lb_fail(LB_ERR_ARG, "gguf writer: no key '%s' to remove", key ? key : "");
    free(w->kvs[i].key);
    free(w->kvs[i].raw);
    memmove(&w->kvs[i], &w->kvs[i + 1], (size_t)(w->n_kv - i - 1) * sizeof *w->kvs);
    w->n_kv--;
    return LB_OK;
}

lb_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, int n_dims,
                                 const int64_t *ne, const void *data) {
    if (!w || !name || !*name || !ne)
        return lb_fail(LB_ERR_ARG, "gguf writer: add_tensor needs a name and a shape");
    if (strlen(name) > GGUF_MAX_TENSOR_NAME)
        return lb_fail(LB_ERR_ARG, "gguf writer: tensor name '%s' is longer than %d bytes "
                       "(llama.cpp's limit)", name, GGUF_MAX_TENSOR_NAME);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return lb_fail(LB_ERR_ARG, "gguf writer: tensor '%s' has n_dims %d (must be 1..%d)", name,
                       n_dims, GGUF_MAX_DIMS);
    for (int64_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return lb_fail(LB_ERR_ARG, "gguf writer: duplicate tensor name '%s'", name);
    wtensor t = {.type = type, .n_dims = n_dims, .data = data};
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    lb_status s = gguf_tensor_nbytes(name, type, n_dims, t.ne, &t.size);
    if (s) return lb_fail_prefix(LB_ERR_ARG, "gguf writer");
    if ((s = grow((void **)&w->tensors, &w->cap_tensors, w->n_tensors, sizeof *w->tensors)))
        return s;
    if (!(t.name = dup_str(name))) return LB_ERR_NOMEM;
    w->tensors[w->n_tensors++] = t;
    return LB_OK;
}

/* ---- writing ---- */

typedef struct {
    lb_outfile out;
    const char *path;
    uint64_t pos;
} sink;

static lb_status put(sink *k, const void *p, uint64_t n) {
    if (n && fwrite(p, 1, (size_t)n, k->out.f) != n)
        return lb_fail(LB_ERR_IO, "writing %s: %s", k->path, strerror(errno));
    k->pos += n;
    return LB_OK;
}

static lb_status put_u32(sink *k, uint32_t v) {
    uint8_t b[4];
    gguf_wr_u32(b, v);
    return put(k, b, 4);
}

static lb_status put_u64(sink *k, uint64_t v) {
    uint8_t b[8];
    gguf_wr_u64(b, v);
    return put(k, b, 8);
}

static lb_status put_string(sink *k, const char *s) {
    uint64_t len = strlen(s);
    lb_status st = put_u64(k, len);
    return st ? st : put(k, s, len);
}

static lb_status pad_to(sink *k, uint32_t alignment) {
    static const uint8_t zeros[4096];
    lb_status s = LB_OK;
    while (!s && k->pos % alignment) {
        uint64_t n = alignment - k->pos % alignment;
        s = put(k, zeros, n < sizeof zeros ? n : sizeof zeros);
    }
    return s;
}

static lb_status writer_alignment(const gguf_writer *w, uint32_t *alignment) {
    *alignment = GGUF_DEFAULT_ALIGNMENT;
    int64_t i = find_key(w, GGUF_KEY_ALIGNMENT);
    if (i < 0) return LB_OK;
    const wkv *kv = &w->kvs[i];
    if (kv->type != GGUF_TYPE_UINT32 || !gguf_is_pow2(gguf_rd_u32(kv->raw)))
        return lb_fail(LB_ERR_ARG, "gguf writer: general.alignment must be a uint32 power of two");
    *alignment = gguf_rd_u32(kv->raw);
    return LB_OK;
}

static lb_status write_header(sink *k, const gguf_writer *w, uint32_t alignment) {
    lb_status s;
    if ((s = put(k, GGUF_MAGIC, 4)) || (s = put_u32(k, GGUF_WRITE_VERSION)) ||
        (s = put_u64(k, (uint64_t)w->n_tensors)) || (s = put_u64(k, (uint64_t)w->n_kv)))
        return s;
    for (int64_t i = 0; i < w->n_kv && !s; i++) {
        const wkv *kv = &w->kvs[i];
        if (!(s = put_string(k, kv->key)) && !(s = put_u32(k, (uint32_t)kv->type)))
            s = put(k, kv->raw, kv->raw_size);
    }
    for (int64_t i = 0; i < w->n_tensors && !s; i++) {
        const wtensor *t = &w->tensors[i];
        if ((s = put_string(k, t->name)) || (s = put_u32(k, (uint32_t)t->n_dims))) break;
        for (int d = 0; d < t->n_dims && !s; d++) s = put_u64(k, (uint64_t)t->ne[d]);
        if (!s && !(s = put_u32(k, t->type))) s = put_u64(k, t->offset);
    }
    return s ? s : pad_to(k, alignment);
}

static lb_status write_tensors(sink *k, const gguf_writer *w, uint32_t alignment,
                               gguf_tensor_producer producer, void *user, lb_progress_fn progress,
                               void *progress_user) {
    uint64_t scratch_size = 0;
    for (int64_t i = 0; i < w->n_tensors; i++)
        if (!w->tensors[i].data) scratch_size = LB_MAX(scratch_size, w->tensors[i].size);
    if (scratch_size && !producer)
        return lb_fail(LB_ERR_ARG, "gguf writer: a tensor has no data and no producer was given");
    if (scratch_size > SIZE_MAX)
        return lb_fail(LB_ERR_NOMEM, "gguf writer: tensor too large for memory");
    uint8_t *scratch = scratch_size ? lb_malloc_aligned((size_t)scratch_size) : NULL;
    if (scratch_size && !scratch) return LB_ERR_NOMEM;
    uint64_t data_start = k->pos;
    lb_status s = LB_OK;
    for (int64_t i = 0; i < w->n_tensors && !s; i++) {
        const wtensor *t = &w->tensors[i];
        if (lb_cancel_requested()) {
            s = lb_fail(LB_ERR_INTERRUPTED, "writing %s: cancelled", k->path);
            break;
        }
        const void *src = t->data;
        if (!src) {
            src = scratch;
            if (t->size && (s = producer(user, i, scratch, t->size))) {
                s = lb_fail_prefix(s, "producing tensor '%s'", t->name);
                break;
            }
        }
        if (k->pos - data_start != t->offset) /* layout computed in gguf_writer_write */
            s = lb_fail(LB_ERR_IO, "writing %s: internal offset mismatch", k->path);
        if (!s && !(s = put(k, src, t->size))) s = pad_to(k, alignment);
        if (!s && progress) progress(progress_user, t->name, (int)(i + 1), (int)w->n_tensors);
    }
    lb_free_aligned(scratch);
    return s;
}

lb_status gguf_writer_write(gguf_writer *w, const char *path, gguf_tensor_producer producer,
                            void *user, lb_progress_fn progress, void *progress_user) {
    if (!w || !path) return lb_fail(LB_ERR_ARG, "gguf writer: missing writer or path");
    uint32_t alignment;
    lb_status s = writer_alignment(w, &alignment);
    if (s) return s;
    uint64_t offset = 0;
    for (int64_t i = 0; i < w->n_tensors; i++) {
        wtensor *t = &w->tensors[i];
        t->offset = offset;
        uint64_t padded = (t->size + alignment - 1) / alignment * alignment;
        if (padded < t->size || !lb_add_ok(offset, padded, &offset))
            return lb_fail(LB_ERR_ARG, "gguf writer: tensor data too large");
    }
    sink k = {.path = path};
    if ((s = lb_outfile_open(&k.out, path))) return s;
    s = write_header(&k, w, alignment);
    if (!s) s = write_tensors(&k, w, alignment, producer, user, progress, progress_user);
    if (!s && lb_cancel_requested()) s = lb_fail(LB_ERR_INTERRUPTED, "writing %s: cancelled", path);
    if (s) {
        lb_outfile_abort(&k.out);
        return s;
    }
    return lb_outfile_commit(&k.out);
}
