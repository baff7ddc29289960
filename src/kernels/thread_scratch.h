/* A buffer kept per thread from call to call, for kernels whose working
 * set is too large for the stack (the AMX GEMMs' partial sums and decoded
 * weight tiles, the float-weight GEMM's packed panels). Included only by kernel
 * files. */
#ifndef LB_THREAD_SCRATCH_H
#define LB_THREAD_SCRATCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

/* The scratch, kept per thread from call to call (freed when the thread
 * ends): a fresh 0.5 MiB per call (the AMX-BF16 partial sums) came back
 * from the kernel as zeroed pages (clear_page in a pp512 profile, and a
 * noisy pp). NULL when it cannot grow to bytes. */
static pthread_key_t scratch_key; /* one per including file */
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
typedef struct {
    void *p;
    size_t n;
} scratch_buf;
static void scratch_free(void *v) {
    scratch_buf *b = v;
    free(b->p);
    free(b);
}
static void scratch_init(void) {
    if (pthread_key_create(&scratch_key, scratch_free)) scratch_key = (pthread_key_t)-1;
}
static void *lb_thread_scratch(size_t bytes) {
    pthread_once(&scratch_once, scratch_init);
    if (scratch_key == (pthread_key_t)-1) return NULL;
    scratch_buf *b = pthread_getspecific(scratch_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        if (pthread_setspecific(scratch_key, b)) {
            free(b);
            return NULL;
        }
    }
    if (b->n < bytes) {
        free(b->p);
        b->n = 0;
        if (!(b->p = aligned_alloc(64, (bytes + 63) & ~(size_t)63))) return NULL;
        b->n = bytes;
    }
    return b->p;
}

#endif
