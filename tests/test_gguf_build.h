/* A one-tensor GGUF in memory, for tests of the reader's checks on a type:
 * tensor "w" of the given type and shape, no metadata, then data_bytes of
 * 0x11 (fewer or more than the type needs, to test the size checks). */
#ifndef LB_TEST_GGUF_BUILD_H
#define LB_TEST_GGUF_BUILD_H

#include <stdint.h>
#include <string.h>

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

#endif
