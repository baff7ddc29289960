/* Private state and helpers shared by the tokenizer sources. The algorithms
 * follow llama.cpp's llama-vocab.cpp / unicode.cpp so that token ids match it
 * exactly; comments point out where and why behaviour is subtle. */
#ifndef LB_TOK_INTERNAL_H
#define LB_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

/* Largest input lb_tokenizer_encode accepts: keeps every index in int32 even
 * after SPM's space escaping triples the size. */
#define LB_TOK_MAX_INPUT ((size_t)1 << 29)

typedef enum { LB_TOK_SPM, LB_TOK_BPE } lb_tok_model;

/* BPE pre-tokenizer regexes implemented (by hand) in pretok.c. */
/* QWEN2 is LLAMA3's regex with single digits (\p{N} instead of \p{N}{1,3}). */
/* GPT4O is o200k's cased-word regex (Phi-4-mini, gpt-oss, Llama 4); TEKKEN
 * is Mistral's (Nemo, Small 3): the same words, no contractions, single digits. */
typedef enum { LB_PRE_GPT2, LB_PRE_LLAMA3, LB_PRE_QWEN2, LB_PRE_GPT4O, LB_PRE_TEKKEN, LB_PRE_SMOLLM, LB_PRE_DEEPSEEK3,
               LB_PRE_DEEPSEEK_LLM } lb_tok_pre;

/* Token attributes, as llama.cpp derives them from tokenizer.ggml.token_type
 * (1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte; anything
 * else is "undefined", i.e. no bit set). Bits rather than one value because
 * tokens recognised by name (e.g. <|eot_id|>) get CONTROL added to their type. */
enum {
    LB_ATTR_UNKNOWN = 1 << 0,
    LB_ATTR_UNUSED = 1 << 1,
    LB_ATTR_NORMAL = 1 << 2,
    LB_ATTR_CONTROL = 1 << 3,
    LB_ATTR_USER_DEFINED = 1 << 4,
    LB_ATTR_BYTE = 1 << 5,
};

/* ---- growable int32 array ---- */
typedef struct {
    int32_t *v;
    size_t n, cap;
} lb_ivec;

lb_status lb_ivec_push(lb_ivec *a, int32_t x);

/* ---- string -> token id (open addressing over the token table) ----
 * Each slot keeps the top bits of the hash so that probing past other
 * tokens rarely has to touch their text. */
typedef struct {
    int32_t id;   /* -1 when empty */
    uint32_t tag; /* hash >> 32 */
} lb_strslot;

typedef struct {
    lb_strslot *slots;
    size_t mask;
} lb_strmap;

uint64_t lb_tok_hash(const char *s, size_t n);

/* ---- 64-bit key -> two int32 values (BPE merges, user-token trie) ---- */
typedef struct {
    uint64_t *keys; /* LB_U64MAP_EMPTY when the slot is free */
    int32_t *a, *b;
    size_t mask, n;
} lb_u64map;

#define LB_U64MAP_EMPTY UINT64_MAX

lb_status lb_u64map_init(lb_u64map *m, size_t max_entries);
void lb_u64map_free(lb_u64map *m);
/* Inserts if absent (returns 1) or leaves the existing entry (returns 0).
 * The map never grows: init it with the largest count it will hold. */
int lb_u64map_put(lb_u64map *m, uint64_t key, int32_t a, int32_t b);
/* Returns 1 and the values if present. */
int lb_u64map_get(const lb_u64map *m, uint64_t key, int32_t *a, int32_t *b);

/* ---- max-heap of candidate merges ----
 * Pops the greatest key first and, among equal keys, the smallest left index:
 * the order of llama.cpp's std::priority_queue comparators for SPM (higher
 * score) and BPE (lower rank, stored negated). Only one live candidate per
 * left symbol can exist, so this order is total on the candidates that count. */
typedef struct {
    uint32_t key;
    int32_t left, right;
    int32_t size; /* bytes of the merged text, to detect stale candidates */
} lb_merge_cand;

typedef struct {
    lb_merge_cand *v;
    size_t n, cap;
} lb_merge_heap;

lb_status lb_heap_push(lb_merge_heap *h, lb_merge_cand c);
lb_merge_cand lb_heap_pop(lb_merge_heap *h); /* h->n must be > 0 */

/* Order-preserving map of a float score to an unsigned key. */
static inline uint32_t lb_score_key(float f) {
    uint32_t u;
    if (f == 0.0f) f = 0.0f; /* -0 compares equal to +0 */
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Tokens cut out of the text before SPM / BPE: `rank[id]` orders them
 * longest first; the trie finds them. */
typedef struct {
    int32_t n;
    int32_t *rank;     /* per token: rank among these tokens, -1 if not one */
    int32_t *by_rank;  /* the tokens in that order */
    lb_u64map trie;    /* (node << 8 | byte) -> (child node, unused) */
    int32_t *node_tok; /* per trie node: the token ending there, or -1 */
} lb_tok_matcher;

struct lb_tokenizer {
    lb_tok_model model;
    lb_tok_pre pre;
    int32_t n_vocab;

    /* Token texts as stored in GGUF, NUL-terminated, in one block. */
    char *text;
    size_t *text_off;
    uint32_t *text_len;
    float *scores;
    uint8_t *attr;
    uint8_t *eog; /* per token: ends generation */
    lb_strmap by_text;

    /* Precomputed lb_tokenizer_piece results. */
    char *piece;
    size_t *piece_off;
    uint32_t *piece_len;

    int32_t bos, eos, unk, eot, eom;
    int add_bos, add_eos;
    int add_space_prefix; /* SPM dummy prefix */
    int ignore_merges;    /* BPE: a whole pre-token that is in the vocab skips merging */

    /* SPM: bit (x << 8 | y) is set if some token has a symbol ending in byte
     * x followed by one starting with byte y. Where that is not so, no merge
     * can ever join the two sides, so the text is merged in independent
     * segments with small, cache-friendly queues (same result, much faster). */
    uint8_t spm_joinable[65536 / 8];

    /* SPM byte fallback: id of <0xXX> (or of the 1-byte token), -1 if none. */
    int32_t byte_token[256];

    /* BPE: (left id << 32 | right id) -> (rank, id of the merged token or -1). */
    lb_u64map merges;
    /* BPE: id of the token for each byte's GPT-2 unicode character, and of the
     * 1-byte string of each byte value (llama.cpp's last-resort fallback). */
    int32_t byte_char_token[256];
    int32_t raw_byte_token[256];

    /* User-defined tokens are split out of the text before the model runs,
     * even with parse_special=false (llama.cpp's tokenizer_st_partition);
     * with parse_special=true, control and unknown tokens too (`special`). */
    lb_tok_matcher user, special;
};

static inline const char *lb_tok_text(const lb_tokenizer *t, int32_t id) {
    return t->text + t->text_off[id];
}

/* Token id of an exact byte string, -1 if none. */
int32_t lb_tok_lookup(const lb_tokenizer *t, const char *s, size_t n);

/* Appends the ids for one run of raw text (no user-defined tokens inside). */
lb_status lb_spm_encode(const lb_tokenizer *t, const char *text, size_t len, int add_prefix,
                        lb_ivec *out);
lb_status lb_bpe_encode(const lb_tokenizer *t, const char *text, size_t len, lb_ivec *out);

/* Splits code points into pre-token words (pretok.c): appends the end index
 * of each word to *ends. cls[i] is lb_uclass(cpt[i]). */
lb_status lb_pretokenize(lb_tok_pre pre, const uint32_t *cpt, const uint8_t *cls, size_t n,
                         lb_ivec *ends);

/* Loads tokenizer.ggml.merges into t->merges (the vocab must be loaded). */
lb_status lb_bpe_load_merges(lb_tokenizer *t, const gguf_file *g);

#endif
