/* Streams importer tensors into the GGUF writer, converting each row from its
 * source float type to the chosen GGUF type with the reference routines of
 * formats/ (so the bytes match what ggml's quantizers produce). */
#include "import/convert.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/types.h"

/* Sequential reads are batched into chunks of about this many bytes. */
#define IMP_READ_CHUNK ((size_t)4 << 20)

lb_status imp_plan_init(imp_plan *p, int want_type) {
    memset(p, 0, sizeof *p);
    if (want_type != LB_TYPE_F32 && want_type != LB_TYPE_F16 && want_type != LB_TYPE_BF16 &&
        want_type != LB_TYPE_Q8_0 && want_type != LB_TYPE_Q4_0)
        return lb_fail(LB_ERR_ARG, "output type %s (%d) is not supported by the importers "
                       "(use F32, F16, BF16, Q8_0 or Q4_0)",
                       lb_type_name(want_type) ? lb_type_name(want_type) : "?", want_type);
    p->want_type = want_type;
    p->w = gguf_writer_new();
    return p->w ? LB_OK : LB_ERR_NOMEM;
}

void imp_plan_free(imp_plan *p) {
    for (int64_t i = 0; i < p->n; i++) free(p->t[i].ctx), free(p->t[i].parts);
    gguf_writer_free(p->w);
    free(p->t);
    memset(p, 0, sizeof *p);
}

uint32_t imp_file_type(int want_type) {
    switch (want_type) { /* llama.cpp LLAMA_FTYPE_* ids, not ggml type ids */
    case LB_TYPE_F16: return 1;
    case LB_TYPE_Q4_0: return 2;
    case LB_TYPE_Q8_0: return 7;
    case LB_TYPE_BF16: return 32;
    default: return 0;
    }
}

int64_t imp_permuted_src_row(int64_t r, int64_t rows_per_head) {
    int64_t half = rows_per_head / 2;
    int64_t head = r / rows_per_head, k = r % rows_per_head;
    return head * rows_per_head + (k % 2) * half + k / 2;
}

static lb_status add_checked(imp_plan *p, const imp_tensor *t);

lb_status imp_plan_add(imp_plan *p, const imp_tensor *t) {
    lb_status s = add_checked(p, t);
    if (s != LB_OK) free(t->ctx), free(t->parts); /* not added: handed over all the same */
    return s;
}

static lb_status add_checked(imp_plan *p, const imp_tensor *t) {
    if (t->fill) {
        if (t->n_dims < 1 || t->n_dims > 2 || t->ne[0] <= 0 || (t->n_dims == 2 && t->ne[1] <= 0) ||
            (t->keep_type && !lb_traits((int)t->out_type)))
            return lb_fail(LB_ERR_ARG, "importer: bad shape or type for tensor %s", t->name);
    } else if (t->n_dims < 1 || t->n_dims > (t->parts ? 3 : 2) || (t->parts && t->n_dims != 3) || t->ne[0] <= 0 ||
               (t->n_dims >= 2 && t->ne[1] <= 0) || (t->n_dims == 3 && t->ne[2] <= 0) || t->src_row_len <= 0 ||
               t->ne[0] % t->src_row_len != 0 || (t->parts && (t->permute_heads || t->mem)))
        return lb_fail(LB_ERR_ARG, "importer: bad shape for tensor %s", t->name);
    const int64_t rows = t->n_dims == 3 ? t->ne[1] * t->ne[2] : t->n_dims == 2 ? t->ne[1] : 1;
    if (!t->fill && t->n_src_rows * t->src_row_len != rows * t->ne[0])
        return lb_fail(LB_ERR_ARG, "importer: tensor %s source size does not match its shape", t->name);
    if (!t->fill && t->permute_heads > 0 && (t->n_src_rows % (2 * t->permute_heads)) != 0)
        return lb_fail(LB_ERR_SHAPE, "tensor %s: %lld rows cannot be split into %d heads of even size",
                       t->name, (long long)t->n_src_rows, t->permute_heads);
    if (p->n == p->cap) {
        int64_t cap = p->cap ? p->cap * 2 : 64;
        imp_tensor *nt = realloc(p->t, (size_t)cap * sizeof *nt);
        if (!nt) return lb_fail(LB_ERR_NOMEM, "out of memory");
        p->t = nt;
        p->cap = cap;
    }
    imp_tensor *d = &p->t[p->n];
    *d = *t;
    if (t->keep_type) {
        /* the caller chose it */
    } else if (t->n_dims == 1) {
        d->out_type = LB_TYPE_F32;
    } else {
        d->out_type = (uint32_t)lb_type_fallback(p->want_type, t->ne[0]);
        if ((int)d->out_type != p->want_type) p->n_fallback++;
    }
    lb_status s = gguf_writer_add_tensor(p->w, d->name, d->out_type, d->n_dims, d->ne, NULL);
    if (s != LB_OK) return s; /* not counted: imp_plan_add frees ctx */
    p->n++;
    return LB_OK;
}

lb_status imp_read_at(int fd, void *buf, size_t n, uint64_t off, const char *name) {
    char *b = buf;
    while (n) {
        ssize_t got = pread(fd, b, n, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return lb_fail(LB_ERR_IO, "reading tensor %s: %s", name, strerror(errno));
        if (got == 0) return lb_fail(LB_ERR_IO, "reading tensor %s: file ended early (changed since opened?)", name);
        b += got, n -= (size_t)got, off += (uint64_t)got;
    }
    return LB_OK;
}

static void to_f32(int src_type, const void *src, float *dst, int64_t n) {
    if (src_type == LB_TYPE_F32) memcpy(dst, src, (size_t)n * sizeof(float));
    else if (src_type == LB_TYPE_F16)
        for (int64_t i = 0; i < n; i++) dst[i] = lb_fp16_to_f32(((const uint16_t *)src)[i]);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = lb_bf16_to_f32(((const uint16_t *)src)[i]);
}

static size_t src_elem_size(int src_type) { return src_type == LB_TYPE_F32 ? 4 : 2; }

static lb_status read_rows(const imp_tensor *t, int64_t r0, int64_t n, float *dst, void *raw);

/* read_rows for a stack of parts: each run of rows from its own source. */
static lb_status read_part_rows(const imp_tensor *t, int64_t r0, int64_t n, float *dst, void *raw) {
    const int64_t per_part = t->n_src_rows / t->ne[2];
    while (n > 0) {
        const int64_t k = r0 / per_part, in = r0 % per_part, m = LB_MIN(n, per_part - in);
        imp_tensor one = *t;
        one.parts = NULL;
        one.fd = t->parts[k].fd, one.offset = t->parts[k].offset, one.src_type = t->parts[k].src_type;
        lb_status s = read_rows(&one, in, m, dst, raw);
        if (s != LB_OK) return s;
        r0 += m, n -= m, dst += m * t->src_row_len;
    }
    return LB_OK;
}

/* Reads source rows [r0, r0+n) in output order into dst as floats. */
static lb_status read_rows(const imp_tensor *t, int64_t r0, int64_t n, float *dst, void *raw) {
    if (t->parts) return read_part_rows(t, r0, n, dst, raw);
    size_t esz = src_elem_size(t->src_type);
    size_t row_bytes = (size_t)t->src_row_len * esz;
    if (t->permute_heads > 0) {
        int64_t per_head = t->n_src_rows / t->permute_heads;
        for (int64_t r = 0; r < n; r++) {
            int64_t src = imp_permuted_src_row(r0 + r, per_head);
            float *out = dst + r * t->src_row_len;
            if (t->mem) { memcpy(out, t->mem + src * t->src_row_len, row_bytes); continue; }
            lb_status s = imp_read_at(t->fd, raw, row_bytes, t->offset + (uint64_t)src * row_bytes, t->name);
            if (s != LB_OK) return s;
            to_f32(t->src_type, raw, out, t->src_row_len);
        }
        return LB_OK;
    }
    if (t->mem) {
        memcpy(dst, t->mem + r0 * t->src_row_len, (size_t)(n * t->src_row_len) * sizeof(float));
        return LB_OK;
    }
    lb_status s = imp_read_at(t->fd, raw, (size_t)n * row_bytes, t->offset + (uint64_t)r0 * row_bytes, t->name);
    if (s == LB_OK) to_f32(t->src_type, raw, dst, n * t->src_row_len);
    if (s == LB_OK && t->add != 0.0f)
        for (int64_t i = 0; i < n * t->src_row_len; i++) dst[i] += t->add;
    return s;
}

typedef struct {
    imp_plan *p;
    float *f;      /* float rows of the current chunk */
    void *raw;     /* the same rows as read from the file */
    size_t cap;    /* elements both buffers hold */
} producer_ctx;

static lb_status produce(void *user, int64_t index, void *dst, uint64_t nbytes) {
    producer_ctx *c = user;
    const imp_tensor *t = &c->p->t[index];
    const lb_type_traits *tr = lb_traits((int)t->out_type);
    const int64_t rows = t->n_dims == 3 ? t->ne[1] * t->ne[2] : t->n_dims == 2 ? t->ne[1] : 1;
    uint64_t out_row = lb_row_size((int)t->out_type, t->ne[0]);
    if (!tr || out_row * (uint64_t)rows != nbytes)
        return lb_fail(LB_ERR_ARG, "importer: size mismatch writing tensor %s", t->name);
    if (t->fill) return t->fill(t->ctx, t, dst, nbytes);
    /* Output rows per chunk: whole GGUF rows, about IMP_READ_CHUNK bytes of input. */
    int64_t per_chunk = (int64_t)(c->cap / (size_t)t->ne[0]);
    int64_t src_per_row = t->ne[0] / t->src_row_len;
    for (int64_t r = 0; r < rows; r += per_chunk) {
        if (lb_cancel_requested()) return lb_fail(LB_ERR_INTERRUPTED, "conversion cancelled");
        int64_t n = LB_MIN(per_chunk, rows - r);
        lb_status s = read_rows(t, r * src_per_row, n * src_per_row, c->f, c->raw);
        if (s != LB_OK) return s;
        for (int64_t k = 0; k < n; k++)
            tr->from_float(c->f + k * t->ne[0], (char *)dst + (uint64_t)(r + k) * out_row, t->ne[0]);
    }
    return LB_OK;
}

lb_status imp_plan_write(imp_plan *p, const char *path, lb_progress_fn progress, void *user) {
    producer_ctx c = {p, NULL, NULL, 0};
    /* llama.cpp tags files holding quantized blocks with the block layout version (2) */
    if (lb_traits(p->want_type)->is_quantized) {
        lb_status s = gguf_writer_set_u32(p->w, "general.quantization_version", 2);
        if (s != LB_OK) return s;
    }
    int64_t widest = 1;
    for (int64_t i = 0; i < p->n; i++) widest = LB_MAX(widest, p->t[i].ne[0]);
    c.cap = LB_MAX((size_t)widest, IMP_READ_CHUNK / sizeof(float));
    c.f = malloc(c.cap * sizeof(float));
    c.raw = malloc(c.cap * sizeof(float));
    if (!c.f || !c.raw) {
        free(c.f);
        free(c.raw);
        return lb_fail(LB_ERR_NOMEM, "out of memory for conversion buffers");
    }
    lb_status s = gguf_writer_write(p->w, path, produce, &c, progress, user);
    free(c.f);
    free(c.raw);
    return s;
}
