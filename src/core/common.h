/* Internal helpers shared by every part of the library. */
#ifndef LB_COMMON_H
#define LB_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lowbit.h"

#if defined(__GNUC__)
#define LB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define LB_UNUSED __attribute__((unused))
#else
#define LB_PRINTF(a, b)
#define LB_UNUSED
#endif

#define LB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define LB_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Records a message for lb_last_error() and returns the status, so a failing
 * path reads `return lb_fail(LB_ERR_FORMAT, "...", ...);`. */
lb_status lb_fail(lb_status s, const char *fmt, ...) LB_PRINTF(2, 3);
/* Prefixes the current message with context ("loading x.gguf: ..."). */
lb_status lb_fail_prefix(lb_status s, const char *fmt, ...) LB_PRINTF(2, 3);

/* Logging to stderr; lb_log_level 0 = errors only, 1 = info, 2 = debug. */
extern int lb_log_level;
void lb_log(int level, const char *fmt, ...) LB_PRINTF(2, 3);

/* Allocation that records LB_ERR_NOMEM on failure. Aligned memory is 64-byte
 * aligned for SIMD loads and must be released with lb_free_aligned.
 * lb_malloc_huge: the same, for weights: blocks of 2 MiB and more on
 * transparent huge pages where the kernel allows (common.c). */
void *lb_malloc(size_t n);
void *lb_calloc(size_t n, size_t size);
void *lb_malloc_aligned(size_t n);
void *lb_malloc_huge(size_t n);
void lb_free_aligned(void *p);

/* Overflow-checked size arithmetic: return 0 on overflow. */
static inline int lb_mul_ok(uint64_t a, uint64_t b, uint64_t *r) {
    if (a != 0 && b > UINT64_MAX / a) return 0;
    *r = a * b;
    return 1;
}
static inline int lb_add_ok(uint64_t a, uint64_t b, uint64_t *r) {
    if (b > UINT64_MAX - a) return 0;
    *r = a + b;
    return 1;
}

/* Wall clock in seconds (monotonic). */
double lb_time_s(void);

/* Writing an output file safely: lb_tmpfile_open gives a FILE* on "path.tmp.PID";
 * lb_tmpfile_commit flushes, fsyncs and renames it onto path; lb_tmpfile_abort
 * removes it. Registered temp names are also removed by lb_tmpfile_cleanup_all,
 * which a signal handler may call. */
#include <stdio.h>
typedef struct {
    FILE *f;
    char *tmp_path;
    char *final_path;
} lb_outfile;
lb_status lb_outfile_open(lb_outfile *o, const char *path);
lb_status lb_outfile_commit(lb_outfile *o);
void lb_outfile_abort(lb_outfile *o);
void lb_outfile_cleanup_all(void); /* async-signal-safe: unlinks pending temp files */

/* Read a whole file into memory (NUL-terminated, *len excludes the NUL). */
lb_status lb_read_file(const char *path, char **data, size_t *len);

#endif
