/* JSON Schema "pattern" -> GBNF (json_pattern.c). */
#ifndef LB_GRAMMAR_JSON_PATTERN_H
#define LB_GRAMMAR_JSON_PATTERN_H

#include "core/common.h"

/* A GBNF expression for the JSON text between a string's quotes whose value
 * the pattern (ECMA-262 syntax, the subset json_pattern.c lists) matches;
 * *expr is malloc'd. LB_ERR_UNSUPPORTED naming what is not read. */
lb_status lb_json_pattern_gbnf(const char *pattern, char **expr);

#endif
