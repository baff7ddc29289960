/* A small, strict JSON (RFC 8259) parser for the importers: config.json,
 * tokenizer.json and safetensors headers. The input is untrusted, so it
 * rejects everything the grammar does not allow (trailing commas, comments,
 * NaN, lone surrogates, invalid UTF-8, control characters in strings,
 * duplicate object keys) and bounds nesting depth. All values live in one
 * arena owned by the json_doc. */
#ifndef LB_IMPORT_JSON_H
#define LB_IMPORT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "core/common.h"

#define JSON_MAX_DEPTH 128

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value json_value;
typedef struct json_member json_member;

struct json_value {
    json_type type;
    int boolean;        /* JSON_BOOL */
    int is_int;         /* JSON_NUMBER written as an integer literal that fits int64 */
    int64_t i;          /* valid when is_int */
    double number;      /* JSON_NUMBER (always set) */
    size_t n;           /* string bytes, array items or object members */
    const char *str;    /* JSON_STRING: decoded UTF-8, NUL-terminated (may hold \0 inside) */
    json_value *items;  /* JSON_ARRAY */
    json_member *members; /* JSON_OBJECT, in document order */
};

struct json_member {
    const char *key;    /* decoded, NUL-terminated */
    size_t key_len;
    json_value value;
};

typedef struct json_doc json_doc;

/* Parses text[0..len). On failure returns LB_ERR_FORMAT with a message
 * "line L, column C: problem" (or LB_ERR_NOMEM). */
lb_status json_parse(const char *text, size_t len, json_doc **out);
void json_free(json_doc *doc);
const json_value *json_root(const json_doc *doc);

/* Member of an object by key; NULL if v is not an object or lacks the key. */
const json_value *json_get(const json_value *obj, const char *key);
/* The member only if it has the given type. */
const json_value *json_get_type(const json_value *obj, const char *key, json_type t);
/* String value of a member, or NULL. */
const char *json_get_str(const json_value *obj, const char *key);
/* 1 and *out when the member is an integer literal, else 0. */
int json_get_int(const json_value *obj, const char *key, int64_t *out);
/* 1 and *out when the member is any number, else 0. */
int json_get_num(const json_value *obj, const char *key, double *out);
/* 1 and *out when the member is true/false, else 0. */
int json_get_bool(const json_value *obj, const char *key, int *out);

const char *json_type_name(json_type t);

#endif
