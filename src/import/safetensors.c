/* safetensors header validation. The layout is simple but every field is
 * attacker-controlled, so each check below has its own error message. */
#include "import/safetensors.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "import/json.h"

static const struct {
    const char *name;
    size_t size;
} st_dtypes[ST_DTYPE_COUNT] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},       [ST_I8] = {"I8", 1},
    [ST_F8_E5M2] = {"F8_E5M2", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1},
    [ST_I16] = {"I16", 2},   [ST_U16] = {"U16", 2},     [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_I32] = {"I32", 4},     [ST_U32] = {"U32", 4},
    [ST_F32] = {"F32", 4},   [ST_F64] = {"F64", 8},     [ST_I64] = {"I64", 8},
    [ST_U64] = {"U64", 8},
};

const char *st_dtype_name(st_dtype t) { return (unsigned)t < ST_DTYPE_COUNT ? st_dtypes[t].name : "?"; }
size_t st_dtype_size(st_dtype t) { return (unsigned)t < ST_DTYPE_COUNT ? st_dtypes[t].size : 0; }

static int dtype_from_name(const char *s) {
    for (int i = 0; i < ST_DTYPE_COUNT; i++)
        if (strcmp(st_dtypes[i].name, s) == 0) return i;
    return -1;
}

static void free_tensors(st_file *st) {
    for (int64_t i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    free(st->tensors);
    st->tensors = NULL;
    st->n_tensors = 0;
}

/* Fills t from one header entry; data offsets become absolute file offsets. */
static lb_status parse_entry(const json_member *m, uint64_t data_start, uint64_t data_size, st_tensor *t) {
    const char *name = m->key;
    const json_value *e = &m->value;
    if (e->type != JSON_OBJECT) return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": entry is not an object", name);
    const char *dt = json_get_str(e, "dtype");
    const json_value *shape = json_get_type(e, "shape", JSON_ARRAY);
    const json_value *offs = json_get_type(e, "data_offsets", JSON_ARRAY);
    if (!dt) return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": missing or non-string dtype", name);
    if (!shape) return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": missing or non-array shape", name);
    if (!offs) return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": missing or non-array data_offsets", name);
    int dtype = dtype_from_name(dt);
    if (dtype < 0) return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": unknown dtype \"%.32s\"", name, dt);
    t->dtype = (st_dtype)dtype;
    if (shape->n > ST_MAX_DIMS)
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": %zu dimensions (max %d)", name, shape->n, ST_MAX_DIMS);
    t->n_dims = (int)shape->n;
    uint64_t numel = 1;
    for (size_t i = 0; i < shape->n; i++) {
        const json_value *d = &shape->items[i];
        if (d->type != JSON_NUMBER || !d->is_int || d->i < 0)
            return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": shape[%zu] is not a non-negative integer", name, i);
        t->shape[i] = d->i;
        if (!lb_mul_ok(numel, (uint64_t)d->i, &numel))
            return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": shape overflows (element count too large)", name);
    }
    uint64_t nbytes;
    if (!lb_mul_ok(numel, st_dtype_size(t->dtype), &nbytes))
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": shape overflows (byte size too large)", name);
    if (offs->n != 2)
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": data_offsets must have 2 entries", name);
    int64_t b, en;
    const json_value *o0 = &offs->items[0], *o1 = &offs->items[1];
    if (o0->type != JSON_NUMBER || !o0->is_int || o1->type != JSON_NUMBER || !o1->is_int ||
        (b = o0->i) < 0 || (en = o1->i) < 0)
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": data_offsets are not non-negative integers", name);
    if (b > en)
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s\": data_offsets begin %lld > end %lld", name,
                       (long long)b, (long long)en);
    if ((uint64_t)en > data_size)
        return lb_fail(LB_ERR_FORMAT,
                       "tensor \"%s\": data_offsets [%lld, %lld) out of bounds (data section is %llu bytes)",
                       name, (long long)b, (long long)en, (unsigned long long)data_size);
    if ((uint64_t)(en - b) != nbytes)
        return lb_fail(LB_ERR_FORMAT,
                       "tensor \"%s\": data_offsets span %lld bytes but shape and dtype %s need %llu",
                       name, (long long)(en - b), st_dtypes[t->dtype].name, (unsigned long long)nbytes);
    t->numel = numel;
    t->nbytes = nbytes;
    t->offset = data_start + (uint64_t)b;
    t->name = malloc(m->key_len + 1);
    if (!t->name) return lb_fail(LB_ERR_NOMEM, "out of memory");
    memcpy(t->name, m->key, m->key_len + 1);
    return LB_OK;
}

static int cmp_offset(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return (x->nbytes > y->nbytes) - (x->nbytes < y->nbytes);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

/* Two tensors sharing bytes would alias each other's data: reject. */
static lb_status check_overlap(st_file *st) {
    if (st->n_tensors < 2) return LB_OK;
    const st_tensor **by_off = malloc((size_t)st->n_tensors * sizeof *by_off);
    if (!by_off) return lb_fail(LB_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < st->n_tensors; i++) by_off[i] = &st->tensors[i];
    qsort(by_off, (size_t)st->n_tensors, sizeof *by_off, cmp_offset);
    lb_status s = LB_OK;
    const st_tensor *prev = NULL;
    for (int64_t i = 0; i < st->n_tensors; i++) {
        const st_tensor *t = by_off[i];
        if (t->nbytes == 0) continue;
        if (prev && t->offset < prev->offset + prev->nbytes) {
            s = lb_fail(LB_ERR_FORMAT, "tensors \"%s\" and \"%s\" overlap in the data section", prev->name,
                        t->name);
            break;
        }
        prev = t;
    }
    free(by_off);
    return s;
}

lb_status st_parse_header(const char *text, size_t hlen, uint64_t data_start, uint64_t data_size,
                          st_file *st) {
    json_doc *doc;
    lb_status s = json_parse(text, hlen, &doc);
    if (s != LB_OK) return lb_fail_prefix(s, "header is not valid JSON");
    const json_value *root = json_root(doc);
    if (root->type != JSON_OBJECT) {
        const char *kind = json_type_name(root->type); /* static string: survives json_free */
        json_free(doc);
        return lb_fail(LB_ERR_FORMAT, "header is a JSON %s, not an object", kind);
    }
    st->tensors = calloc(root->n ? root->n : 1, sizeof(st_tensor));
    if (!st->tensors) {
        json_free(doc);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    st->n_tensors = 0;
    for (size_t i = 0; i < root->n && s == LB_OK; i++) {
        const json_member *m = &root->members[i];
        if (strcmp(m->key, "__metadata__") == 0) {
            /* free-form string->string map; only its shape is checked */
            if (m->value.type != JSON_OBJECT) s = lb_fail(LB_ERR_FORMAT, "__metadata__ is not an object");
            for (size_t k = 0; s == LB_OK && k < m->value.n; k++)
                if (m->value.members[k].value.type != JSON_STRING)
                    s = lb_fail(LB_ERR_FORMAT, "__metadata__ value \"%s\" is not a string",
                                m->value.members[k].key);
            continue;
        }
        if (m->key_len != strlen(m->key)) {
            s = lb_fail(LB_ERR_FORMAT, "tensor name contains a NUL character");
            break;
        }
        s = parse_entry(m, data_start, data_size, &st->tensors[st->n_tensors]);
        if (s == LB_OK) st->n_tensors++;
    }
    json_free(doc);
    if (s == LB_OK) s = check_overlap(st);
    if (s != LB_OK) {
        free_tensors(st);
        return s;
    }
    qsort(st->tensors, (size_t)st->n_tensors, sizeof(st_tensor), cmp_name);
    return LB_OK;
}

lb_status st_open(const char *path, st_file **out) {
    *out = NULL;
    st_file *st = calloc(1, sizeof *st);
    if (!st) return lb_fail(LB_ERR_NOMEM, "out of memory");
    lb_status s = LB_OK;
    char *hdr = NULL;
    st->path = malloc(strlen(path) + 1);
    if (!st->path) { s = lb_fail(LB_ERR_NOMEM, "out of memory"); goto done; }
    strcpy(st->path, path);
    st->f = fopen(path, "rb");
    if (!st->f) { s = lb_fail(LB_ERR_IO, "cannot open %s: %s", path, strerror(errno)); goto done; }
    struct stat sb;
    if (fstat(fileno(st->f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        s = lb_fail(LB_ERR_IO, "%s is not a regular file", path);
        goto done;
    }
    st->file_size = (uint64_t)sb.st_size;
    unsigned char lenb[8];
    if (st->file_size < 8 || fread(lenb, 1, 8, st->f) != 8) {
        s = lb_fail(LB_ERR_FORMAT, "file is %llu bytes, too short for the 8-byte header length",
                    (unsigned long long)st->file_size);
        goto done;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | lenb[i];
    if (hlen < 2 || hlen > ST_MAX_HEADER) {
        s = lb_fail(LB_ERR_FORMAT, "header length %llu is absurd (must be 2..%llu)", (unsigned long long)hlen,
                    (unsigned long long)ST_MAX_HEADER);
        goto done;
    }
    if (hlen > st->file_size - 8) {
        s = lb_fail(LB_ERR_FORMAT, "header length %llu is longer than the file (%llu bytes)",
                    (unsigned long long)hlen, (unsigned long long)st->file_size);
        goto done;
    }
    hdr = malloc((size_t)hlen);
    if (!hdr) {
        s = lb_fail(LB_ERR_NOMEM, "out of memory for a %llu-byte header", (unsigned long long)hlen);
        goto done;
    }
    if (fread(hdr, 1, (size_t)hlen, st->f) != hlen) {
        s = lb_fail(LB_ERR_IO, "error reading the header");
        goto done;
    }
    st->data_start = 8 + hlen;
    s = st_parse_header(hdr, (size_t)hlen, st->data_start, st->file_size - st->data_start, st);
done:
    free(hdr);
    if (s != LB_OK) {
        lb_fail_prefix(s, "%s", path);
        st_close(st);
        return s;
    }
    *out = st;
    return LB_OK;
}

void st_close(st_file *st) {
    if (!st) return;
    if (st->f) fclose(st->f);
    free_tensors(st);
    free(st->path);
    free(st);
}

const st_tensor *st_find(const st_file *st, const char *name) {
    st_tensor key;
    key.name = (char *)name;
    return bsearch(&key, st->tensors, (size_t)st->n_tensors, sizeof(st_tensor), cmp_name);
}
