/* Minimal test harness: CHECK records a failure and keeps going; main returns
 * lb_test_result() (0 pass, 1 fail, 77 skip for ctest). */
#ifndef LB_TEST_UTIL_H
#define LB_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int lb_test_failures = 0;
static int lb_test_checks = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        lb_test_checks++;                                                            \
        if (!(cond)) {                                                               \
            lb_test_failures++;                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                 \
    do {                                                                     \
        lb_test_checks++;                                                    \
        if (!(cond)) {                                                       \
            lb_test_failures++;                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

/* Status must be LB_OK; prints lb_last_error() otherwise. */
#define CHECK_OK(expr)                                                                    \
    do {                                                                                  \
        lb_status s_ = (expr);                                                            \
        lb_test_checks++;                                                                 \
        if (s_ != LB_OK) {                                                                \
            lb_test_failures++;                                                           \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, lb_last_error()); \
        }                                                                                 \
    } while (0)

static inline const char *lb_test_shared(const char *rel) {
    static char buf[8][4096];
    static int i = 0;
    i = (i + 1) % 8;
    snprintf(buf[i], sizeof buf[i], "%s/%s", LB_SHARED_DIR, rel);
    return buf[i];
}

static inline const char *lb_test_tmp(const char *rel) {
    static char buf[8][4096];
    static int i = 0;
    i = (i + 1) % 8;
    snprintf(buf[i], sizeof buf[i], "%s/%s", LB_TEST_TMPDIR, rel);
    return buf[i];
}

/* max |a - b| over max |a|: logits of two runs compared relative to the largest */
static inline float lb_test_max_rel_diff(const float *a, const float *b, size_t n) {
    float m = 0, scale = 0;
    for (size_t i = 0; i < n; i++) scale = fmaxf(scale, fabsf(a[i]));
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(a[i] - b[i]));
    return scale > 0 ? m / scale : m;
}

static inline int lb_test_have(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* xorshift for reproducible random data */
static inline uint64_t lb_test_rand(uint64_t *s) {
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}
static inline float lb_test_randf(uint64_t *s) { /* uniform in [-1, 1) */
    return (float)((lb_test_rand(s) >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static inline int lb_test_result(const char *name) {
    if (lb_test_failures)
        fprintf(stderr, "%s: %d of %d checks failed\n", name, lb_test_failures, lb_test_checks);
    else
        printf("%s: all %d checks passed\n", name, lb_test_checks);
    return lb_test_failures ? 1 : 0;
}

#define SKIP(...) do { printf("SKIP: "); printf(__VA_ARGS__); printf("\n"); exit(77); } while (0)

#endif
