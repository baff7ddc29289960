/* Pieces shared by the GGUF reader and writer: little-endian byte access
 * (so the code is correct whatever the host's byte order) and the block
 * geometry of every ggml tensor type. */
#ifndef LB_GGUF_INTERNAL_H
#define LB_GGUF_INTERNAL_H

#include <stdint.h>

#include "gguf/gguf.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_WRITE_VERSION 3
#define GGUF_KEY_ALIGNMENT "general.alignment"
/* Nested arrays are legal GGUF, but recursion on untrusted input needs a bound. */
#define GGUF_MAX_NESTING 8
/* llama.cpp refuses tensor names of 64 bytes or more (GGML_MAX_NAME). */
#define GGUF_MAX_TENSOR_NAME 63

static inline uint32_t gguf_rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t gguf_rd_u64(const uint8_t *p) {
    return (uint64_t)gguf_rd_u32(p) | (uint64_t)gguf_rd_u32(p + 4) << 32;
}
static inline void gguf_wr_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void gguf_wr_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Block geometry of a tensor type: every standard ggml id (0..39, so any
 * llama.cpp file opens even when lowbit cannot compute with the type) and
 * lowbit's own ids (>= 1000, from lb_traits). Returns 0 for unknown ids. */
int gguf_type_geometry(uint32_t type, int *blck, uint64_t *type_size);

/* Bytes of a tensor of `type` and shape ne[0..n_dims); 0 with a message
 * (naming `name`) when the type is unknown, a dimension is negative, the row
 * length does not fit the block size, or the size overflows. */
lb_status gguf_tensor_nbytes(const char *name, uint32_t type, int n_dims, const int64_t *ne,
                             uint64_t *nbytes);

static inline int gguf_is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

#endif
