/* JSON Schema -> GBNF beyond the public lb_json_schema_to_grammar
 * (lowbit.h), for lowbit serve's forced tool calls. */
#ifndef LB_GRAMMAR_JSON_SCHEMA_H
#define LB_GRAMMAR_JSON_SCHEMA_H

#include "core/common.h"

/* GBNF for tool calls in a chat format's wrapper: open, then
 *     {"name": "NAME", "ARGS_KEY": ARGS}       (ARGS_KEY "arguments" or "parameters")
 * (one of the n tools; ARGS a JSON value its parameters schema allows, in
 * schemas[i] as JSON text), then close; many: one or more such calls with
 * sep between them, else exactly one. *gbnf is malloc'd. */
lb_status lb_json_tool_calls_grammar(int n, const char *const *names, const char *const *schemas, const char *args_key,
                                     const char *open, const char *close, const char *sep, int many, char **gbnf);

#endif
