/* A one-tensor GGUF in memory, for tests of the reader's checks on a type:
 * tensor "w" of the given type and shape, no metadata, then data_bytes of
 * 0x11 (fewer or more than the type needs, to test the size checks). */
#ifndef LB_TEST_GGUF_BUILD_H
#define LB_TEST_GGUF_BUILD_H

#include <stdint.h>
#include <string.h>

#include "gguf/gguf.h"

typedef struct {
    uint8_t p[8192];
    size_t n; /* bytes written; past sizeof p the rest is dropped (n still counts) */
} lb_test_gbuf;

static inline void lb_test_g_bytes(lb_test_gbuf *b, const void *s, size_t n) {
    if (b->n + n <= sizeof b->p) memcpy(b->p + b->n, s, n);
    b->n += n;
}
static inline void lb_test_g_u32(lb_test_gbuf *b, uint32_t v) { lb_test_g_bytes(b, &v, 4); }
static inline void lb_test_g_u64(lb_test_gbuf *b, uint64_t v) { lb_test_g_bytes(b, &v, 8); }

static inline void lb_test_one_tensor_gguf(lb_test_gbuf *b, uint32_t type, int64_t ne0, int64_t ne1,
                                           size_t data_bytes) {
    b->n = 0;
    lb_test_g_bytes(b, "GGUF", 4);
    lb_test_g_u32(b, 3);    /* version */
    lb_test_g_u64(b, 1);    /* tensors */
    lb_test_g_u64(b, 0);    /* metadata pairs */
    lb_test_g_u64(b, 1);    /* name length */
    lb_test_g_bytes(b, "w", 1);
    lb_test_g_u32(b, 2);    /* dims */
    lb_test_g_u64(b, (uint64_t)ne0);
    lb_test_g_u64(b, (uint64_t)ne1);
    lb_test_g_u32(b, type);
    lb_test_g_u64(b, 0);    /* offset */
    while (b->n % 32) lb_test_g_bytes(b, "", 1);
    for (size_t i = 0; i < data_bytes; i++) lb_test_g_bytes(b, "\x11", 1);
}

/* Opens that GGUF: LB_OK with tensor w's type and size in *type, *size; or the reader's
 * status (lb_last_error() says why). */
static inline lb_status lb_test_open_one(uint32_t type, int64_t ne0, int64_t ne1, size_t data_bytes, uint32_t *t_type,
                                         uint64_t *t_size) {
    static lb_test_gbuf b;
    gguf_file *g = NULL;
    lb_test_one_tensor_gguf(&b, type, ne0, ne1, data_bytes);
    lb_status s = gguf_open_memory(b.p, b.n, &g);
    if (s == LB_OK) {
        const gguf_tensor *t = gguf_find_tensor(g, "w");
        *t_type = t ? t->type : 0, *t_size = t ? t->size : 0;
    }
    gguf_close(g);
    return s;
}

/* Whether the reader refuses that GGUF as malformed with a message holding `why`. */
static inline int lb_test_refused(uint32_t type, int64_t ne0, int64_t ne1, size_t data_bytes, const char *why) {
    uint32_t t;
    uint64_t n;
    return lb_test_open_one(type, ne0, ne1, data_bytes, &t, &n) == LB_ERR_FORMAT && strstr(lb_last_error(), why);
}

#endif
