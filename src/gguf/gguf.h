/* GGUF v2/v3 reader (memory-mapped, zero-copy tensors, every count and offset
 * validated before use) and writer (temp file + rename). */
#ifndef LB_GGUF_H
#define LB_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "core/common.h"

typedef enum {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_vtype;

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

/* A string inside the mapped file: not NUL-terminated. */
typedef struct {
    uint64_t len;
    const char *ptr;
} gguf_str;

typedef struct {
    gguf_str key;
    gguf_vtype type;       /* of the value; GGUF_TYPE_ARRAY for arrays */
    gguf_vtype arr_type;   /* element type when type == ARRAY */
    uint64_t arr_n;        /* element count when type == ARRAY */
    /* Scalars: the raw little-endian bytes at `data`. Arrays of fixed-size
     * elements: arr_n packed elements at `data` (may be unaligned: memcpy).
     * Arrays of strings: `strs` has arr_n entries. Nested arrays: `data`
     * points at the raw encoding (no accessor; kept for round-trip). */
    const void *data;
    uint64_t data_size;    /* bytes of the raw value encoding */
    gguf_str str;          /* when type == STRING */
    gguf_str *strs;        /* when type == ARRAY of STRING */
} gguf_kv;

typedef struct {
    gguf_str name;
    int n_dims;
    int64_t ne[GGUF_MAX_DIMS]; /* ne[0] is the row length (fastest); unused dims are 1 */
    uint32_t type;             /* lb_type / ggml type id */
    uint64_t offset;           /* relative to the data section */
    uint64_t size;             /* bytes, computed from type and shape */
    const void *data;          /* into the mapping */
} gguf_tensor;

typedef struct gguf_file gguf_file;

/* Opens and validates the whole file. On any problem returns LB_ERR_FORMAT (or
 * LB_ERR_IO / LB_ERR_UNSUPPORTED) with a message naming the problem. */
lb_status gguf_open(const char *path, gguf_file **out);
/* Same, over a caller-owned buffer (must outlive the handle; used by the fuzzer). */
lb_status gguf_open_memory(const void *data, size_t size, gguf_file **out);
void gguf_close(gguf_file *g);

uint32_t gguf_version(const gguf_file *g);
uint32_t gguf_alignment(const gguf_file *g);
uint64_t gguf_data_offset(const gguf_file *g); /* file offset of the tensor data section */
const void *gguf_base(const gguf_file *g);      /* start of the mapped file */
uint64_t gguf_file_size(const gguf_file *g);

int64_t gguf_n_kv(const gguf_file *g);
const gguf_kv *gguf_kv_at(const gguf_file *g, int64_t i);
const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key); /* NULL if absent */

/* Typed getters: return 1 and set *out if the key exists and its value is of a
 * compatible type (any integer type for the int getters if it fits, f32 or f64
 * for the float getter), else 0. */
int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *out);
int gguf_get_i64(const gguf_file *g, const char *key, int64_t *out);
int gguf_get_f32(const gguf_file *g, const char *key, float *out);
int gguf_get_bool(const gguf_file *g, const char *key, int *out);
/* Strings: returns a NUL-terminated copy owned by the gguf_file (valid until close), or NULL. */
const char *gguf_get_str(const gguf_file *g, const char *key);
/* Arrays: returns the kv if it is an array with elements of `elem_type`, else NULL. */
const gguf_kv *gguf_get_arr(const gguf_file *g, const char *key, gguf_vtype elem_type);

int64_t gguf_n_tensors(const gguf_file *g);
const gguf_tensor *gguf_tensor_at(const gguf_file *g, int64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name); /* NULL if absent */
/* A tensor type's name, any ggml id (I8, IQ2_XXS, ...) or lowbit's: "Q4_K";
 * NULL when unknown. */
const char *gguf_type_label(uint32_t type);

const char *gguf_vtype_name(gguf_vtype t);
size_t gguf_vtype_size(gguf_vtype t); /* 0 for STRING and ARRAY */

/* ---- writer ---- */
typedef struct gguf_writer gguf_writer;

/* Produces tensor i's bytes into dst (nbytes long) while the file is written,
 * so a converter or quantizer never holds the whole output in memory. */
typedef lb_status (*gguf_tensor_producer)(void *user, int64_t index, void *dst, uint64_t nbytes);

gguf_writer *gguf_writer_new(void); /* NULL on OOM (message set) */
void gguf_writer_free(gguf_writer *w);

/* Setting an existing key replaces its value (keeping its position). */
lb_status gguf_writer_set_u8(gguf_writer *w, const char *key, uint8_t v);
lb_status gguf_writer_set_i8(gguf_writer *w, const char *key, int8_t v);
lb_status gguf_writer_set_u16(gguf_writer *w, const char *key, uint16_t v);
lb_status gguf_writer_set_i16(gguf_writer *w, const char *key, int16_t v);
lb_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
lb_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
lb_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
lb_status gguf_writer_set_i64(gguf_writer *w, const char *key, int64_t v);
lb_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
lb_status gguf_writer_set_f64(gguf_writer *w, const char *key, double v);
lb_status gguf_writer_set_bool(gguf_writer *w, const char *key, int v);
lb_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
/* Array of fixed-size elements (n elements of elem_type, packed little-endian). */
lb_status gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_vtype elem_type,
                              const void *data, uint64_t n);
lb_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                                  uint64_t n);
/* Copies one key/value (any type, nested arrays included) from a reader. */
lb_status gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv);
lb_status gguf_writer_remove_kv(gguf_writer *w, const char *key);

/* data may be NULL: then the producer given to gguf_writer_write fills it.
 * Non-NULL data is referenced (not copied) and must stay valid until written.
 * ne has n_dims entries, ne[0] the row length. */
lb_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, int n_dims,
                                 const int64_t *ne, const void *data);

/* Writes version 3 with general.alignment (default 32) to path via a temp file
 * renamed on success; on failure or cancellation no file is left behind. */
lb_status gguf_writer_write(gguf_writer *w, const char *path, gguf_tensor_producer producer,
                            void *user, lb_progress_fn progress, void *progress_user);

#endif
