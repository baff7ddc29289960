/* Strict safetensors reader: an 8-byte little-endian header length, a JSON
 * header mapping tensor names to {dtype, shape, data_offsets}, then the data
 * section. Every offset, size and shape is checked against the file before a
 * byte of tensor data is trusted. Tensor data is read on demand with stdio,
 * so a file of any size streams. */
#ifndef LB_IMPORT_SAFETENSORS_H
#define LB_IMPORT_SAFETENSORS_H

#include <stdint.h>
#include <stdio.h>

#include "core/common.h"

/* The safetensors reference implementation refuses headers above 100 MB. */
#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)
#define ST_MAX_DIMS 8

typedef enum {
    ST_BOOL, ST_U8, ST_I8, ST_F8_E5M2, ST_F8_E4M3, ST_I16, ST_U16, ST_F16, ST_BF16,
    ST_I32, ST_U32, ST_F32, ST_F64, ST_I64, ST_U64, ST_DTYPE_COUNT
} st_dtype;

typedef struct {
    char *name;
    st_dtype dtype;
    int n_dims;
    int64_t shape[ST_MAX_DIMS]; /* outermost first, as in PyTorch */
    uint64_t numel;
    uint64_t offset;            /* absolute file offset of the first byte */
    uint64_t nbytes;
} st_tensor;

typedef struct {
    char *path;
    FILE *f;
    uint64_t file_size;
    uint64_t data_start;        /* 8 + header length */
    int64_t n_tensors;
    st_tensor *tensors;         /* sorted by name */
} st_file;

/* Opens and validates path. Errors: LB_ERR_IO, LB_ERR_FORMAT (message names
 * the file and the problem), LB_ERR_NOMEM. */
lb_status st_open(const char *path, st_file **out);
void st_close(st_file *st);

/* Validates a header already in memory: `json` is the header text (hlen
 * bytes) of a file whose data section is data_size bytes long. Tensor offsets
 * in the result are relative to the data section plus data_start. Used by
 * st_open and directly by the tests/fuzzer. */
lb_status st_parse_header(const char *json, size_t hlen, uint64_t data_start, uint64_t data_size,
                          st_file *st);

const st_tensor *st_find(const st_file *st, const char *name);
const char *st_dtype_name(st_dtype t);
size_t st_dtype_size(st_dtype t);

#endif
