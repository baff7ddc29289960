#include "common.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char lb_errmsg[1024] = "no error";
int lb_log_level = 1;
static volatile sig_atomic_t lb_cancel_flag = 0;

const char *lb_last_error(void) { return lb_errmsg; }

const char *lb_status_name(lb_status s) {
    switch (s) {
    case LB_OK: return "ok";
    case LB_ERR_IO: return "I/O error";
    case LB_ERR_FORMAT: return "malformed input";
    case LB_ERR_UNSUPPORTED: return "unsupported";
    case LB_ERR_NOMEM: return "out of memory";
    case LB_ERR_ARG: return "bad argument";
    case LB_ERR_SHAPE: return "shape mismatch";
    case LB_ERR_INTERRUPTED: return "interrupted";
    }
    return "unknown status";
}

void lb_request_cancel(void) { lb_cancel_flag = 1; }
int lb_cancel_requested(void) { return lb_cancel_flag != 0; }

lb_status lb_fail(lb_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lb_errmsg, sizeof lb_errmsg, fmt, ap);
    va_end(ap);
    return s;
}

lb_status lb_fail_prefix(lb_status s, const char *fmt, ...) {
    char old[sizeof lb_errmsg];
    memcpy(old, lb_errmsg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(lb_errmsg, sizeof lb_errmsg, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof lb_errmsg - 3) {
        size_t at = (size_t)n;
        memcpy(lb_errmsg + at, ": ", 2);
        at += 2;
        size_t room = sizeof lb_errmsg - at - 1, len = strlen(old);
        if (len > room) len = room;
        memcpy(lb_errmsg + at, old, len);
        lb_errmsg[at + len] = 0;
    }
    return s;
}

void lb_log(int level, const char *fmt, ...) {
    if (level > lb_log_level) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

void *lb_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) lb_fail(LB_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

void *lb_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) lb_fail(LB_ERR_NOMEM, "out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

/* Every block carries a header in the 64 bytes before it: where the
 * allocation starts and, for a mapping, its length (0: posix_memalign). */
/* AddressSanitizer only watches heap blocks: sanitized builds keep them */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(LB_ASAN)
#define LB_HUGE_MAP 0
#elif defined(MADV_HUGEPAGE) && defined(MAP_ANONYMOUS)
#define LB_HUGE_MAP 1
#else
#define LB_HUGE_MAP 0
#endif

/* Every block carries a header in the 64 bytes before it: where the
 * allocation starts and, for a mapping, its length (0: posix_memalign). */
typedef struct {
    void *base;
    size_t map_len;
} alloc_head;

void *lb_malloc_aligned(size_t n) {
    if (n > SIZE_MAX / 2) {
        lb_fail(LB_ERR_NOMEM, "out of memory allocating %zu bytes", n);
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, ((n + 63) & ~(size_t)63) + 64) != 0) {
        lb_fail(LB_ERR_NOMEM, "out of memory allocating %zu bytes", n);
        return NULL;
    }
    alloc_head *h = p;
    h->base = p;
    h->map_len = 0;
    return (uint8_t *)p + 64;
}

/* Weights stream from memory in decode. Advising heap blocks put only a
 * third of a model on huge pages (glibc hands out reused heap memory, which
 * madvise does not convert), so a block of 2 MiB or more is a fresh mapping,
 * 2 MiB aligned, whose whole 2 MiB pages are advised before the first touch
 * (nothing is rounded up: no memory is spent on it). With model/repack.c
 * putting each layer's matrices in one block, nearly all of a model is on
 * huge pages: 5-6 % faster Q2_K and 2-7 % CB2 decode (A/B). Other buffers stay
 * on the heap: they are small, or read from cache. */
void *lb_malloc_huge(size_t n) {
#if LB_HUGE_MAP
    const size_t huge = (size_t)2 << 20;
    if (n >= huge && n <= SIZE_MAX / 4) {
        const size_t rounded = (n + 63) & ~(size_t)63, len = (rounded + 64 + huge - 1) / huge * huge + huge;
        uint8_t *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base != MAP_FAILED) {
            uint8_t *data = (uint8_t *)(((uintptr_t)base + 64 + huge - 1) & ~(uintptr_t)(huge - 1));
            (void)madvise(data, rounded & ~(huge - 1), MADV_HUGEPAGE);
            alloc_head *h = (alloc_head *)(data - 64);
            h->base = base;
            h->map_len = len;
            return data;
        }
    }
#endif
    return lb_malloc_aligned(n);
}

void lb_free_aligned(void *p) {
    if (!p) return;
    const alloc_head *h = (const alloc_head *)((uint8_t *)p - 64);
#if LB_HUGE_MAP
    if (h->map_len) {
        munmap(h->base, h->map_len);
        return;
    }
#endif
    free(h->base);
}

double lb_time_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- safe output files ---- */

#define LB_MAX_PENDING 16
static char *volatile lb_pending[LB_MAX_PENDING];

static void pending_add(char *p) {
    for (int i = 0; i < LB_MAX_PENDING; i++)
        if (!lb_pending[i]) { lb_pending[i] = p; return; }
}
static void pending_del(char *p) {
    for (int i = 0; i < LB_MAX_PENDING; i++)
        if (lb_pending[i] == p) lb_pending[i] = NULL;
}

void lb_outfile_cleanup_all(void) {
    for (int i = 0; i < LB_MAX_PENDING; i++)
        if (lb_pending[i]) unlink(lb_pending[i]);
}

lb_status lb_outfile_open(lb_outfile *o, const char *path) {
    memset(o, 0, sizeof *o);
    size_t n = strlen(path) + 32;
    o->tmp_path = lb_malloc(n);
    o->final_path = lb_malloc(strlen(path) + 1);
    if (!o->tmp_path || !o->final_path) {
        free(o->tmp_path); free(o->final_path);
        return LB_ERR_NOMEM;
    }
    strcpy(o->final_path, path);
    snprintf(o->tmp_path, n, "%s.tmp.%ld", path, (long)getpid());
    o->f = fopen(o->tmp_path, "wb");
    if (!o->f) {
        lb_status s = lb_fail(LB_ERR_IO, "cannot create %s: %s", o->tmp_path, strerror(errno));
        free(o->tmp_path); free(o->final_path);
        memset(o, 0, sizeof *o);
        return s;
    }
    pending_add(o->tmp_path);
    return LB_OK;
}

lb_status lb_outfile_commit(lb_outfile *o) {
    lb_status s = LB_OK;
    if (fflush(o->f) != 0 || ferror(o->f)) s = lb_fail(LB_ERR_IO, "writing %s: %s", o->final_path, strerror(errno));
    if (s == LB_OK) fsync(fileno(o->f));
    if (fclose(o->f) != 0 && s == LB_OK) s = lb_fail(LB_ERR_IO, "closing %s: %s", o->final_path, strerror(errno));
    o->f = NULL;
    if (s == LB_OK && rename(o->tmp_path, o->final_path) != 0)
        s = lb_fail(LB_ERR_IO, "renaming %s to %s: %s", o->tmp_path, o->final_path, strerror(errno));
    if (s != LB_OK) unlink(o->tmp_path);
    pending_del(o->tmp_path);
    free(o->tmp_path); free(o->final_path);
    memset(o, 0, sizeof *o);
    return s;
}

void lb_outfile_abort(lb_outfile *o) {
    if (o->f) fclose(o->f);
    if (o->tmp_path) {
        unlink(o->tmp_path);
        pending_del(o->tmp_path);
    }
    free(o->tmp_path); free(o->final_path);
    memset(o, 0, sizeof *o);
}

lb_status lb_read_file(const char *path, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return lb_fail(LB_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    int err = ferror(f), err_no = errno;
    fclose(f);
    if (!buf) return lb_fail(LB_ERR_NOMEM, "out of memory reading %s", path);
    if (err) { free(buf); return lb_fail(LB_ERR_IO, "error reading %s: %s", path, strerror(err_no)); }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return LB_OK;
}
