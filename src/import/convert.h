/* Shared machinery of the importers: a list of output tensors, each read on
 * demand from a source file (F32/F16/BF16 rows at a file offset, optionally
 * with rows reordered) and converted to its GGUF type while the GGUF writer
 * streams the file. Nothing holds more than one tensor in memory. */
#ifndef LB_IMPORT_CONVERT_H
#define LB_IMPORT_CONVERT_H

#include <stdint.h>

#include "core/common.h"
#include "gguf/gguf.h"

typedef struct imp_tensor imp_tensor;

/* One source of a stacked tensor (MoE experts: one HF matrix each). */
typedef struct {
    int fd;
    uint64_t offset;
    int src_type;
} imp_part;

/* A source that writes a whole output tensor itself, in its out_type (GPTQ
 * matrices: import/gptq.h). ctx belongs to the tensor's plan. */
typedef lb_status (*imp_fill_fn)(void *ctx, const imp_tensor *t, void *dst, uint64_t nbytes);

struct imp_tensor {
    char name[64];
    int n_dims;             /* 1 or 2; 3 for a stack of parts */
    int64_t ne[3];          /* GGUF shape: ne[0] is the row length */
    uint32_t out_type;      /* chosen by imp_plan_add */
    /* source: n_src_rows rows of src_row_len elements; ne[0] must be a
     * multiple of src_row_len (1-D biases are permuted element-wise) */
    int fd;
    uint64_t offset;        /* file offset of source row 0 */
    int src_type;           /* LB_TYPE_F32, LB_TYPE_F16 or LB_TYPE_BF16 */
    int64_t n_src_rows, src_row_len;
    /* >0: source rows are in Hugging Face rotate-half order within each of
     * this many heads and are written in GGUF's interleaved-pair order */
    int permute_heads;
    const float *mem;       /* if set, an in-memory F32 source instead of fd */
    /* if set, fill(ctx, ...) produces the tensor instead of the fields above
     * (only name, n_dims and ne are used); imp_plan_add takes ctx over (freed
     * with free() by imp_plan_free, or at once if adding fails) */
    imp_fill_fn fill;
    void *ctx;
    int keep_type;          /* out_type is the caller's, not chosen by the plan */
    float add;              /* added to every source value (Gemma's norms: HF keeps w, GGUF 1 + w) */
    /* if set (n_dims 3): ne[2] sources of ne[1] rows each, stacked (each
     * expert of a MoE layer); fd, offset and src_type are unused then.
     * imp_plan_add takes the array over (freed with free()). */
    imp_part *parts;
};

typedef struct {
    gguf_writer *w;
    imp_tensor *t;
    int64_t n, cap;
    int want_type;          /* what the caller asked for big matrices */
    int n_fallback;         /* matrices whose rows did not fit want_type */
} imp_plan;

/* want_type: LB_TYPE_F32, F16, BF16, Q8_0 or Q4_0 (else LB_ERR_ARG). */
lb_status imp_plan_init(imp_plan *p, int want_type);
void imp_plan_free(imp_plan *p);

/* Appends a tensor (copied) and registers it with the writer. 2-D tensors get
 * want_type (or lb_type_fallback when their rows don't fit it); 1-D stay F32;
 * keep_type tensors keep the out_type they came with. */
lb_status imp_plan_add(imp_plan *p, const imp_tensor *t);

/* Writes the GGUF (temp file + rename; nothing left behind on failure). */
lb_status imp_plan_write(imp_plan *p, const char *path, lb_progress_fn progress, void *user);

/* Reads n bytes at file offset off (errors name the tensor). */
lb_status imp_read_at(int fd, void *buf, size_t n, uint64_t off, const char *name);

/* llama.cpp's general.file_type (LLAMA_FTYPE_*) for a target type. */
uint32_t imp_file_type(int want_type);

/* Source row that lands at output row r when undoing HF's rotate-half
 * layout (llama.cpp convert_hf_to_gguf.py `permute`): within each head of
 * rows_per_head rows, output row 2*i + j comes from input row j*half + i. */
int64_t imp_permuted_src_row(int64_t r, int64_t rows_per_head);

#endif
