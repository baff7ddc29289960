/* A growing text buffer with printf, for writing grammars (json_schema.c,
 * json_pattern.c, json_int_range.c). Out of memory sets oom and drops the
 * rest; the writer checks oom once at the end. */
#ifndef LB_GRAMMAR_GBUF_H
#define LB_GRAMMAR_GBUF_H

#include <stddef.h>

#include "core/common.h"

typedef struct {
    char *s; /* NUL-terminated once anything was written; NULL before */
    size_t n, cap;
    int oom;
} lb_gbuf;

void lb_gbuf_printf(lb_gbuf *b, const char *fmt, ...) LB_PRINTF(2, 3);

#endif
