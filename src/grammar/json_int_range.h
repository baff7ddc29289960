/* JSON Schema integer bounds -> GBNF (json_int_range.c). */
#ifndef LB_GRAMMAR_JSON_INT_RANGE_H
#define LB_GRAMMAR_JSON_INT_RANGE_H

#include "core/common.h"

/* A GBNF expression for the JSON texts of exactly the integers in [lo, hi]
 * (have_lo / have_hi 0: unbounded on that side; lo, hi integer-valued, as
 * the schema's bounds rounded inward, and refused beyond 10^15). *expr is
 * malloc'd. */
lb_status lb_json_int_range_gbnf(int have_lo, double lo, int have_hi, double hi, char **expr);

#endif
