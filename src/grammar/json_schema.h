/* JSON Schema -> GBNF beyond the public lb_json_schema_to_grammar
 * (lowbit.h), for lowbit serve's forced tool calls. */
#ifndef LB_GRAMMAR_JSON_SCHEMA_H
#define LB_GRAMMAR_JSON_SCHEMA_H

#include "core/common.h"

/* How a chat format writes tool calls: each call is call_open +
 *     {"name": "NAME", "ARGS_KEY": ARGS}        (ARGS_KEY "arguments" or "parameters")
 * + call_close; many: one or more calls with sep between them (else one);
 * the whole between list_open and list_close. */
typedef struct {
    const char *args_key, *call_open, *call_close, *sep, *list_open, *list_close;
    int many;
} lb_tool_call_format;

/* GBNF for the calls of one of the n tools (names[i]; ARGS a JSON value its
 * parameters schema, schemas[i] as JSON text, allows) in format f. *gbnf is
 * malloc'd. */
lb_status lb_json_tool_calls_grammar(int n, const char *const *names, const char *const *schemas,
                                     const lb_tool_call_format *f, char **gbnf);

#endif
