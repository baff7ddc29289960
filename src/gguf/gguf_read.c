/* GGUF v2/v3 reader. The file is memory-mapped and every count, length and
 * offset in it is untrusted: each is checked against the bytes actually left
 * before it is used to allocate, index or advance. Tensor data is never
 * copied; gguf_tensor.data points into the mapping. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fp16.h"
#include "gguf/gguf_internal.h"

/* Smallest possible encodings, used to refuse counts the file cannot hold
 * before anything is allocated for them. */
#define MIN_KV_BYTES 13      /* key length (8) + value type (4) + a 1-byte value */
#define MIN_TENSOR_BYTES 32  /* name length (8) + n_dims (4) + one ne (8) + type (4) + offset (8) */
#define HEADER_BYTES 24      /* magic, version, n_tensors, n_kv */

/* A name and its position, sorted so lookups and duplicate checks are O(log n). */
typedef struct {
    gguf_str name;
    int64_t idx;
} name_index;

struct gguf_file {
    const uint8_t *base;
    uint64_t size;
    void *map;        /* non-NULL when we own an mmap of `size` bytes */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    int64_t n_kv, n_tensors;
    gguf_kv *kvs;
    gguf_tensor *tensors;
    name_index *kv_index, *tensor_index;
    char **cstr;      /* per kv: NUL-terminated copy of a STRING value, else NULL */
    char *cstr_arena;
};

/* ---- cursor over untrusted bytes ---- */

typedef struct {
    const uint8_t *base;
    uint64_t size, pos;
} cursor;

static uint64_t left(const cursor *c) { return c->size - c->pos; }

/* Names from the file may be long or binary: messages show a short, printable form. */
typedef struct {
    char s[80];
} pname;

static pname printable(gguf_str str) {
    pname p;
    uint64_t n = str.len < 60 ? str.len : 60;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)str.ptr[i];
        p.s[i] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    strcpy(p.s + n, str.len > n ? "..." : "");
    return p;
}

static lb_status need(const cursor *c, uint64_t n, const char *what) {
    if (n <= left(c)) return LB_OK;
    return lb_fail(LB_ERR_FORMAT,
                   "truncated file: %s at offset %" PRIu64 " needs %" PRIu64
                   " bytes but only %" PRIu64 " remain",
                   what, c->pos, n, left(c));
}

static lb_status take_u32(cursor *c, uint32_t *v, const char *what) {
    lb_status s = need(c, 4, what);
    if (s) return s;
    *v = gguf_rd_u32(c->base + c->pos);
    c->pos += 4;
    return LB_OK;
}

static lb_status take_u64(cursor *c, uint64_t *v, const char *what) {
    lb_status s = need(c, 8, what);
    if (s) return s;
    *v = gguf_rd_u64(c->base + c->pos);
    c->pos += 8;
    return LB_OK;
}

static lb_status take_str(cursor *c, gguf_str *out, const char *what) {
    uint64_t len;
    lb_status s = take_u64(c, &len, what);
    if (s) return s;
    if (len > left(c))
        return lb_fail(LB_ERR_FORMAT,
                       "%s: string length %" PRIu64 " at offset %" PRIu64
                       " exceeds the %" PRIu64 " bytes left in the file",
                       what, len, c->pos - 8, left(c));
    out->len = len;
    out->ptr = (const char *)c->base + c->pos;
    c->pos += len;
    return LB_OK;
}

/* ---- metadata values ---- */

/* Bytes an element of `t` needs at least, 0 for an unknown type. */
static uint64_t min_elem_bytes(uint32_t t) {
    if (t == GGUF_TYPE_STRING) return 8;
    if (t == GGUF_TYPE_ARRAY) return 12;
    return t < GGUF_TYPE_COUNT ? gguf_vtype_size((gguf_vtype)t) : 0;
}

static lb_status skip_value(cursor *c, uint32_t type, int depth, const pname *key);

/* Reads an array header and checks its count against the bytes left. */
static lb_status take_array_header(cursor *c, int depth, const pname *key, uint32_t *elem_type,
                                   uint64_t *n) {
    lb_status s;
    if ((s = take_u32(c, elem_type, "array element type")) || (s = take_u64(c, n, "array length")))
        return lb_fail_prefix(s, "key '%s'", key->s);
    uint64_t min = min_elem_bytes(*elem_type);
    if (min == 0)
        return lb_fail(LB_ERR_FORMAT, "key '%s' is an array of unknown value type %" PRIu32,
                       key->s, *elem_type);
    if (*elem_type == GGUF_TYPE_ARRAY && depth + 1 >= GGUF_MAX_NESTING)
        return lb_fail(LB_ERR_FORMAT, "key '%s' has arrays nested deeper than %d levels", key->s,
                       GGUF_MAX_NESTING);
    if (*n > left(c) / min)
        return lb_fail(LB_ERR_FORMAT,
                       "key '%s': array length %" PRIu64 " of %s is larger than the %" PRIu64
                       " bytes left in the file could hold",
                       key->s, *n, gguf_vtype_name((gguf_vtype)*elem_type), left(c));
    return LB_OK;
}

static lb_status skip_elements(cursor *c, uint32_t elem_type, uint64_t n, int depth,
                               const pname *key) {
    size_t fixed = gguf_vtype_size((gguf_vtype)elem_type);
    if (fixed) { /* the header check already proved n * fixed fits */
        c->pos += n * fixed;
        return LB_OK;
    }
    for (uint64_t i = 0; i < n; i++) {
        lb_status s = skip_value(c, elem_type, depth + 1, key);
        if (s) return s;
    }
    return LB_OK;
}

/* Validates and steps over one value of `type` (used inside nested arrays). */
static lb_status skip_value(cursor *c, uint32_t type, int depth, const pname *key) {
    lb_status s;
    if (type == GGUF_TYPE_STRING) {
        gguf_str tmp;
        if ((s = take_str(c, &tmp, "string value"))) return lb_fail_prefix(s, "key '%s'", key->s);
        return LB_OK;
    }
    if (type == GGUF_TYPE_ARRAY) {
        uint32_t et;
        uint64_t n;
        if ((s = take_array_header(c, depth, key, &et, &n))) return s;
        return skip_elements(c, et, n, depth, key);
    }
    size_t sz = type < GGUF_TYPE_COUNT ? gguf_vtype_size((gguf_vtype)type) : 0;
    if (!sz)
        return lb_fail(LB_ERR_FORMAT, "key '%s' has unknown value type %" PRIu32, key->s, type);
    if ((s = need(c, sz, "value"))) return lb_fail_prefix(s, "key '%s'", key->s);
    c->pos += sz;
    return LB_OK;
}

/* Reads a top-level value into kv (key already set). */
static lb_status take_kv_value(cursor *c, gguf_kv *kv) {
    pname key = printable(kv->key);
    uint32_t type;
    lb_status s = take_u32(c, &type, "value type");
    if (s) return lb_fail_prefix(s, "key '%s'", key.s);
    if (type >= GGUF_TYPE_COUNT)
        return lb_fail(LB_ERR_FORMAT, "key '%s' has unknown value type %" PRIu32, key.s, type);
    kv->type = (gguf_vtype)type;
    if (type == GGUF_TYPE_STRING) {
        if ((s = take_str(c, &kv->str, "string value"))) return lb_fail_prefix(s, "key '%s'", key.s);
        kv->data = kv->str.ptr;
        kv->data_size = kv->str.len;
        return LB_OK;
    }
    if (type != GGUF_TYPE_ARRAY) {
        size_t sz = gguf_vtype_size(kv->type);
        if ((s = need(c, sz, "value"))) return lb_fail_prefix(s, "key '%s'", key.s);
        kv->data = c->base + c->pos;
        kv->data_size = sz;
        c->pos += sz;
        return LB_OK;
    }
    uint32_t et;
    uint64_t n;
    if ((s = take_array_header(c, 0, &key, &et, &n))) return s;
    kv->arr_type = (gguf_vtype)et;
    kv->arr_n = n;
    uint64_t start = c->pos;
    kv->data = c->base + start;
    if (et == GGUF_TYPE_STRING) {
        /* n <= bytes left / 8, so this allocation is bounded by the file size. */
        kv->strs = lb_malloc((size_t)n * sizeof *kv->strs);
        if (!kv->strs) return LB_ERR_NOMEM;
        for (uint64_t i = 0; i < n; i++)
            if ((s = take_str(c, &kv->strs[i], "string array element")))
                return lb_fail_prefix(s, "key '%s' element %" PRIu64, key.s, i);
    } else if ((s = skip_elements(c, et, n, 0, &key))) {
        return s;
    }
    kv->data_size = c->pos - start;
    return LB_OK;
}

/* ---- name index (sorted by bytes, then length) ---- */

static int cmp_str(gguf_str a, gguf_str b) {
    uint64_t n = a.len < b.len ? a.len : b.len;
    int r = n ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
    if (r) return r;
    return a.len < b.len ? -1 : a.len > b.len;
}

static int cmp_index(const void *a, const void *b) {
    return cmp_str(((const name_index *)a)->name, ((const name_index *)b)->name);
}

/* Builds the sorted index; on a duplicate sets *dup_idx to its position. */
static name_index *build_index(int64_t n, gguf_str (*name_of)(const gguf_file *, int64_t),
                               const gguf_file *g, int64_t *dup_idx) {
    name_index *ix = lb_malloc((size_t)(n ? n : 1) * sizeof *ix);
    if (!ix) return NULL;
    for (int64_t i = 0; i < n; i++) ix[i] = (name_index){name_of(g, i), i};
    qsort(ix, (size_t)n, sizeof *ix, cmp_index);
    *dup_idx = -1;
    for (int64_t i = 1; i < n; i++)
        if (cmp_str(ix[i - 1].name, ix[i].name) == 0) {
            *dup_idx = ix[i].idx;
            break;
        }
    return ix;
}

static gguf_str kv_name(const gguf_file *g, int64_t i) { return g->kvs[i].key; }
static gguf_str tensor_name(const gguf_file *g, int64_t i) { return g->tensors[i].name; }

static int64_t lookup(const name_index *ix, int64_t n, const char *name) {
    if (!ix || !name) return -1;
    name_index probe = {{strlen(name), name}, 0};
    const name_index *hit = bsearch(&probe, ix, (size_t)n, sizeof *ix, cmp_index);
    return hit ? hit->idx : -1;
}

/* ---- header sections ---- */

static lb_status parse_header(cursor *c, gguf_file *g, uint64_t *n_tensors, uint64_t *n_kv) {
    size_t have = c->size < 4 ? (size_t)c->size : 4;
    if (memcmp(c->base, GGUF_MAGIC, have) != 0) {
        char shown[4 * 4 + 1] = "";
        for (size_t i = 0; i < have; i++) {
            unsigned char ch = c->base[i];
            snprintf(shown + 4 * i, 5, (ch >= 0x20 && ch < 0x7f) ? "%c" : "\\x%02x", ch);
        }
        return lb_fail(LB_ERR_FORMAT, "bad magic: expected 'GGUF', found '%s' (not a GGUF file)",
                       shown);
    }
    if (c->size < HEADER_BYTES && !(c->size >= 8 && gguf_rd_u32(c->base + 4) == 1))
        return lb_fail(LB_ERR_FORMAT, "truncated header: file is %" PRIu64
                       " bytes, a GGUF header needs %d", c->size, HEADER_BYTES);
    g->version = gguf_rd_u32(c->base + 4);
    if (g->version == 1)
        return lb_fail(LB_ERR_UNSUPPORTED, "GGUF version 1 (32-bit counts, 2023) is not "
                       "supported; re-convert the model with a current converter");
    if ((g->version & 0xffff) == 0 && g->version != 0)
        return lb_fail(LB_ERR_UNSUPPORTED, "big-endian GGUF file (version field reads 0x%08" PRIx32
                       ") is not supported", g->version);
    if (g->version != 2 && g->version != 3)
        return lb_fail(LB_ERR_UNSUPPORTED, "unsupported GGUF version %" PRIu32
                       " (this reader handles 2 and 3)", g->version);
    *n_tensors = gguf_rd_u64(c->base + 8);
    *n_kv = gguf_rd_u64(c->base + 16);
    c->pos = HEADER_BYTES;
    uint64_t room = left(c);
    if (*n_tensors > room / MIN_TENSOR_BYTES)
        return lb_fail(LB_ERR_FORMAT, "n_tensors %" PRIu64 " is larger than the file could hold "
                       "(at most %" PRIu64 " in %" PRIu64 " bytes)",
                       *n_tensors, room / MIN_TENSOR_BYTES, c->size);
    room -= *n_tensors * MIN_TENSOR_BYTES;
    if (*n_kv > room / MIN_KV_BYTES)
        return lb_fail(LB_ERR_FORMAT, "n_kv %" PRIu64 " is larger than the file could hold "
                       "(at most %" PRIu64 " in %" PRIu64 " bytes)",
                       *n_kv, room / MIN_KV_BYTES, c->size);
    return LB_OK;
}

/* Arrays grow as entries are actually parsed, so memory follows the real
 * file contents rather than the claimed counts. */
static lb_status grow(void **arr, int64_t *cap, int64_t need_n, size_t elem) {
    if (need_n <= *cap) return LB_OK;
    int64_t nc = *cap ? *cap * 2 : 16;
    if (nc < need_n) nc = need_n;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return lb_fail(LB_ERR_NOMEM, "out of memory reading GGUF metadata");
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return LB_OK;
}

static lb_status parse_kvs(cursor *c, gguf_file *g, uint64_t n_kv) {
    int64_t cap = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        lb_status s = grow((void **)&g->kvs, &cap, (int64_t)i + 1, sizeof *g->kvs);
        if (s) return s;
        gguf_kv *kv = &g->kvs[i];
        g->n_kv = (int64_t)i + 1; /* counted now so close() frees a partial strs array */
        if ((s = take_str(c, &kv->key, "key")))
            return lb_fail_prefix(s, "metadata entry %" PRIu64 " of %" PRIu64, i, n_kv);
        if ((s = take_kv_value(c, kv))) return s;
    }
    int64_t dup;
    g->kv_index = build_index(g->n_kv, kv_name, g, &dup);
    if (!g->kv_index) return LB_ERR_NOMEM;
    if (dup >= 0)
        return lb_fail(LB_ERR_FORMAT, "duplicate key '%s'", printable(g->kvs[dup].key).s);
    return LB_OK;
}

static lb_status read_alignment(gguf_file *g) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find_kv(g, GGUF_KEY_ALIGNMENT);
    if (!kv) return LB_OK;
    if (kv->type != GGUF_TYPE_UINT32)
        return lb_fail(LB_ERR_FORMAT, "general.alignment has type %s; it must be uint32",
                       gguf_vtype_name(kv->type));
    uint32_t a = gguf_rd_u32(kv->data);
    if (!gguf_is_pow2(a))
        return lb_fail(LB_ERR_FORMAT, "bad alignment: general.alignment = %" PRIu32
                       " is not a nonzero power of two", a);
    g->alignment = a;
    return LB_OK;
}

static lb_status take_tensor_info(cursor *c, gguf_tensor *t, uint64_t i) {
    lb_status s;
    if ((s = take_str(c, &t->name, "tensor name")))
        return lb_fail_prefix(s, "tensor info %" PRIu64, i);
    pname name = printable(t->name);
    uint32_t n_dims;
    if ((s = take_u32(c, &n_dims, "n_dims"))) return lb_fail_prefix(s, "tensor '%s'", name.s);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return lb_fail(LB_ERR_FORMAT, "tensor '%s' has n_dims %" PRIu32 " (must be 1..%d)", name.s,
                       n_dims, GGUF_MAX_DIMS);
    t->n_dims = (int)n_dims;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        uint64_t v = 1;
        if (d < t->n_dims && (s = take_u64(c, &v, "dimension")))
            return lb_fail_prefix(s, "tensor '%s'", name.s);
        t->ne[d] = (int64_t)v;
    }
    if ((s = take_u32(c, &t->type, "tensor type")) || (s = take_u64(c, &t->offset, "data offset")))
        return lb_fail_prefix(s, "tensor '%s'", name.s);
    return gguf_tensor_nbytes(name.s, t->type, t->n_dims, t->ne, &t->size);
}

static int cmp_offset(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Places every tensor in the data section: aligned, inside the file, disjoint. */
static lb_status place_tensors(gguf_file *g) {
    uint64_t avail = g->data_offset <= g->size ? g->size - g->data_offset : 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment)
            return lb_fail(LB_ERR_FORMAT, "tensor '%s' offset %" PRIu64
                           " is misaligned (not a multiple of the alignment %" PRIu32 ")",
                           printable(t->name).s, t->offset, g->alignment);
        if (t->size > 0 && (t->offset > avail || t->size > avail - t->offset))
            return lb_fail(LB_ERR_FORMAT, "tensor '%s' data extends past end of file (offset %"
                           PRIu64 " size %" PRIu64 ", data section at %" PRIu64 ", file %" PRIu64
                           " bytes)", printable(t->name).s, t->offset, t->size, g->data_offset,
                           g->size);
        /* Empty tensors still get a valid pointer (memcpy of 0 bytes from NULL is UB). */
        int inside = g->data_offset <= g->size && t->offset <= avail;
        t->data = inside ? g->base + g->data_offset + t->offset : g->base;
    }
    if (g->n_tensors < 2) return LB_OK;
    gguf_tensor **order = lb_malloc((size_t)g->n_tensors * sizeof *order);
    if (!order) return LB_ERR_NOMEM;
    for (int64_t i = 0; i < g->n_tensors; i++) order[i] = &g->tensors[i];
    qsort(order, (size_t)g->n_tensors, sizeof *order, cmp_offset);
    const gguf_tensor *reach = NULL; /* the tensor whose data ends furthest so far */
    lb_status s = LB_OK;
    for (int64_t i = 0; i < g->n_tensors && !s; i++) {
        const gguf_tensor *t = order[i];
        if (t->size == 0) continue;
        if (reach && reach->offset + reach->size > t->offset)
            s = lb_fail(LB_ERR_FORMAT, "tensors '%s' and '%s' overlap (offsets %" PRIu64 "+%" PRIu64
                        " and %" PRIu64 ")", printable(reach->name).s, printable(t->name).s,
                        reach->offset, reach->size, t->offset);
        if (!reach || t->offset + t->size > reach->offset + reach->size) reach = t;
    }
    free(order);
    return s;
}

static lb_status parse_tensors(cursor *c, gguf_file *g, uint64_t n_tensors) {
    int64_t cap = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        lb_status s = grow((void **)&g->tensors, &cap, (int64_t)i + 1, sizeof *g->tensors);
        if (s) return s;
        g->n_tensors = (int64_t)i + 1;
        if ((s = take_tensor_info(c, &g->tensors[i], i))) return s;
    }
    int64_t dup;
    g->tensor_index = build_index(g->n_tensors, tensor_name, g, &dup);
    if (!g->tensor_index) return LB_ERR_NOMEM;
    if (dup >= 0)
        return lb_fail(LB_ERR_FORMAT, "duplicate tensor name '%s'",
                       printable(g->tensors[dup].name).s);
    /* The data section starts at the next multiple of the alignment. */
    g->data_offset = (c->pos + g->alignment - 1) / g->alignment * g->alignment;
    return place_tensors(g);
}

/* NUL-terminated copies of every string value, made once so gguf_get_str is
 * a lookup (and safe to call from several threads). */
static lb_status copy_strings(gguf_file *g) {
    uint64_t total = 0;
    for (int64_t i = 0; i < g->n_kv; i++)
        if (g->kvs[i].type == GGUF_TYPE_STRING) total += g->kvs[i].str.len + 1;
    g->cstr = lb_calloc((size_t)(g->n_kv ? g->n_kv : 1), sizeof *g->cstr);
    g->cstr_arena = lb_malloc((size_t)total);
    if (!g->cstr || !g->cstr_arena) return LB_ERR_NOMEM;
    char *p = g->cstr_arena;
    for (int64_t i = 0; i < g->n_kv; i++) {
        const gguf_kv *kv = &g->kvs[i];
        if (kv->type != GGUF_TYPE_STRING) continue;
        memcpy(p, kv->str.ptr, (size_t)kv->str.len);
        p[kv->str.len] = 0;
        g->cstr[i] = p;
        p += kv->str.len + 1;
    }
    return LB_OK;
}

static lb_status parse(gguf_file *g) {
    cursor c = {g->base, g->size, 0};
    uint64_t n_tensors = 0, n_kv = 0;
    lb_status s;
    if ((s = parse_header(&c, g, &n_tensors, &n_kv))) return s;
    if ((s = parse_kvs(&c, g, n_kv))) return s;
    if ((s = read_alignment(g))) return s;
    if ((s = parse_tensors(&c, g, n_tensors))) return s;
    return copy_strings(g);
}

/* ---- open / close ---- */

lb_status gguf_open_memory(const void *data, size_t size, gguf_file **out) {
    *out = NULL;
    if (!data && size) return lb_fail(LB_ERR_ARG, "gguf_open_memory: NULL buffer");
    gguf_file *g = lb_calloc(1, sizeof *g);
    if (!g) return LB_ERR_NOMEM;
    g->base = data ? data : (const uint8_t *)"";
    g->size = size;
    lb_status s = parse(g);
    if (s) {
        gguf_close(g);
        return s;
    }
    *out = g;
    return LB_OK;
}

lb_status gguf_open(const char *path, gguf_file **out) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return lb_fail(LB_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return lb_fail(LB_ERR_IO, "%s is not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return lb_fail(LB_ERR_FORMAT, "%s: truncated header: the file is empty", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return lb_fail(LB_ERR_UNSUPPORTED, "%s is too large to map", path);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd); /* the mapping keeps the file alive */
    if (map == MAP_FAILED)
        return lb_fail(LB_ERR_IO, "cannot map %s: %s", path, strerror(map_errno));
    gguf_file *g = lb_calloc(1, sizeof *g);
    if (!g) {
        munmap(map, (size_t)st.st_size);
        return LB_ERR_NOMEM;
    }
    g->map = map;
    g->base = map;
    g->size = (uint64_t)st.st_size;
    lb_status s = parse(g);
    if (s) {
        gguf_close(g);
        return lb_fail_prefix(s, "%s", path);
    }
    *out = g;
    return LB_OK;
}

void gguf_close(gguf_file *g) {
    if (!g) return;
    for (int64_t i = 0; i < g->n_kv; i++) free(g->kvs[i].strs);
    free(g->kvs);
    free(g->tensors);
    free(g->kv_index);
    free(g->tensor_index);
    free(g->cstr);
    free(g->cstr_arena);
    if (g->map) munmap(g->map, (size_t)g->size);
    free(g);
}

/* ---- accessors ---- */

uint32_t gguf_version(const gguf_file *g) { return g->version; }
uint32_t gguf_alignment(const gguf_file *g) { return g->alignment; }
uint64_t gguf_data_offset(const gguf_file *g) { return g->data_offset; }
const void *gguf_base(const gguf_file *g) { return g->base; }
uint64_t gguf_file_size(const gguf_file *g) { return g->size; }

int64_t gguf_n_kv(const gguf_file *g) { return g->n_kv; }
const gguf_kv *gguf_kv_at(const gguf_file *g, int64_t i) {
    return i >= 0 && i < g->n_kv ? &g->kvs[i] : NULL;
}
const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key) {
    int64_t i = lookup(g->kv_index, g->n_kv, key);
    return i >= 0 ? &g->kvs[i] : NULL;
}

int64_t gguf_n_tensors(const gguf_file *g) { return g->n_tensors; }
const gguf_tensor *gguf_tensor_at(const gguf_file *g, int64_t i) {
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}
const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name) {
    int64_t i = lookup(g->tensor_index, g->n_tensors, name);
    return i >= 0 ? &g->tensors[i] : NULL;
}

/* Any integer value, widened: *is_neg says whether it is below zero. */
static int kv_integer(const gguf_kv *kv, uint64_t *mag, int *is_neg) {
    const uint8_t *p = kv->data;
    int64_t sv = 0;
    *is_neg = 0;
    switch (kv->type) {
    case GGUF_TYPE_UINT8: *mag = p[0]; return 1;
    case GGUF_TYPE_UINT16: *mag = (uint16_t)(p[0] | p[1] << 8); return 1;
    case GGUF_TYPE_UINT32: *mag = gguf_rd_u32(p); return 1;
    case GGUF_TYPE_UINT64: *mag = gguf_rd_u64(p); return 1;
    case GGUF_TYPE_INT8: sv = (int8_t)p[0]; break;
    case GGUF_TYPE_INT16: sv = (int16_t)(uint16_t)(p[0] | p[1] << 8); break;
    case GGUF_TYPE_INT32: sv = (int32_t)gguf_rd_u32(p); break;
    case GGUF_TYPE_INT64: sv = (int64_t)gguf_rd_u64(p); break;
    default: return 0;
    }
    *is_neg = sv < 0;
    *mag = sv < 0 ? (uint64_t)0 - (uint64_t)sv : (uint64_t)sv;
    return 1;
}

int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *out) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    uint64_t mag;
    int neg;
    if (!kv || !kv_integer(kv, &mag, &neg) || neg || mag > UINT32_MAX) return 0;
    *out = (uint32_t)mag;
    return 1;
}

int gguf_get_i64(const gguf_file *g, const char *key, int64_t *out) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    uint64_t mag;
    int neg;
    if (!kv || !kv_integer(kv, &mag, &neg)) return 0;
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1) return 0;
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    } else {
        if (mag > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)mag;
    }
    return 1;
}

int gguf_get_f32(const gguf_file *g, const char *key, float *out) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return 0;
    if (kv->type == GGUF_TYPE_FLOAT32) {
        *out = lb_bits_to_f32(gguf_rd_u32(kv->data));
        return 1;
    }
    if (kv->type == GGUF_TYPE_FLOAT64) {
        uint64_t bits = gguf_rd_u64(kv->data);
        double d;
        memcpy(&d, &bits, sizeof d);
        /* Out-of-range double -> float conversion is undefined in C: saturate. */
        *out = d > FLT_MAX ? INFINITY : d < -FLT_MAX ? -INFINITY : (float)d;
        return 1;
    }
    return 0;
}

int gguf_get_bool(const gguf_file *g, const char *key, int *out) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv || kv->type != GGUF_TYPE_BOOL) return 0;
    *out = *(const uint8_t *)kv->data != 0;
    return 1;
}

const char *gguf_get_str(const gguf_file *g, const char *key) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv || kv->type != GGUF_TYPE_STRING) return NULL;
    return g->cstr[kv - g->kvs];
}

const gguf_kv *gguf_get_arr(const gguf_file *g, const char *key, gguf_vtype elem_type) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv || kv->type != GGUF_TYPE_ARRAY || kv->arr_type != elem_type) return NULL;
    return kv;
}
