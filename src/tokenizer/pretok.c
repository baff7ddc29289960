/* BPE pre-tokenizers: the regexes that cut text into words before merging,
 * hand-written as scanners over code points (no regex engine), step for step
 * like llama.cpp's unicode_regex_split_custom_gpt2 / _llama3 so that even the
 * corner cases (trailing whitespace, a space before a digit) split the same.
 *
 * gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *         ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_unicode.h"

typedef struct {
    const uint32_t *cpt;
    const uint8_t *cls;
    size_t n;
    size_t prev_end; /* end of the last word emitted */
    lb_ivec *ends;
    lb_status status;
} scanner;

#define OUT_OF_RANGE 0xFFFFFFFFu

static uint32_t cpt_at(const scanner *s, size_t pos) { return pos < s->n ? s->cpt[pos] : OUT_OF_RANGE; }
static int cls_at(const scanner *s, size_t pos) { return pos < s->n ? s->cls[pos] : LB_UCLASS_NONE; }

/* Ends the current word at `end`; returns its length (0: nothing emitted). */
static size_t add_word(scanner *s, size_t end) {
    size_t len = end - s->prev_end;
    if (len > 0 && s->status == LB_OK) s->status = lb_ivec_push(s->ends, (int32_t)end);
    s->prev_end = end;
    return len;
}

static uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* 's 't 'm 'd 're 've 'll at pos (which holds '\''): the match length, or 0. */
static size_t contraction(const scanner *s, size_t pos, int any_case) {
    if (pos + 1 >= s->n) return 0;
    uint32_t c1 = cpt_at(s, pos + 1);
    if (any_case) c1 = ascii_lower(c1); /* no non-ASCII letter lowercases to these */
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    if (pos + 2 >= s->n) return 0;
    uint32_t c2 = cpt_at(s, pos + 2);
    if (any_case) c2 = ascii_lower(c2);
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
    return 0;
}

/* [^\s\p{L}\p{N}] for a real code point; NONE (past the end) never matches. */
static int is_other(int cls) { return cls == LB_UCLASS_OTHER; }

static void split_gpt2(scanner *s) {
    for (size_t pos = 0; pos < s->n;) {
        uint32_t c = cpt_at(s, pos);
        int cls = cls_at(s, pos);
        if (c == '\'') {
            size_t k = contraction(s, pos, 0);
            if (k) {
                pos += add_word(s, pos + k);
                continue;
            }
        }
        /* " ?X+" : the class that decides is the one after an optional space */
        int cls2 = c == ' ' ? cls_at(s, pos + 1) : cls;
        if (cls2 == LB_UCLASS_LETTER || cls2 == LB_UCLASS_NUMBER || is_other(cls2)) {
            pos += c == ' ';
            while (cls_at(s, pos) == cls2) pos++;
            add_word(s, pos);
            continue;
        }
        size_t n_ws = 0;
        while (cls_at(s, pos + n_ws) == LB_UCLASS_SPACE) n_ws++;
        if (n_ws > 1 && pos + n_ws < s->n) { /* \s+(?!\S): leave the last one */
            pos += n_ws - 1;
            add_word(s, pos);
            continue;
        }
        if (n_ws > 0) {
            pos += n_ws;
            add_word(s, pos);
            continue;
        }
        add_word(s, ++pos); /* unreachable for real text; kept as in llama.cpp */
    }
}

static void split_llama3(scanner *s, size_t max_digits) {
    for (size_t pos = 0; pos < s->n;) {
        uint32_t c = cpt_at(s, pos);
        int cls = cls_at(s, pos);
        if (c == '\'') {
            size_t k = contraction(s, pos, 1);
            if (k) {
                pos += add_word(s, pos + k);
                continue;
            }
        }
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        if (!(c == '\r' || c == '\n' || cls == LB_UCLASS_NUMBER)) {
            if (cls == LB_UCLASS_LETTER || cls_at(s, pos + 1) == LB_UCLASS_LETTER) {
                pos++;
                while (cls_at(s, pos) == LB_UCLASS_LETTER) pos++;
                add_word(s, pos);
                continue;
            }
        }
        /* \p{N}{1,3} (llama3) or \p{N} (qwen2) */
        if (cls == LB_UCLASS_NUMBER) {
            size_t ini = pos;
            while (cls_at(s, pos) == LB_UCLASS_NUMBER) {
                if (++pos - ini >= max_digits) {
                    add_word(s, pos);
                    ini = pos;
                }
            }
            add_word(s, pos);
            continue;
        }
        /*  ?[^\s\p{L}\p{N}]+[\r\n]* -- llama.cpp tests the class of c itself
         * here, not of the character after the space; a lone trailing space
         * therefore lands in this branch, with the same result as \s+. */
        int cls2 = c == ' ' ? cls_at(s, pos + 1) : cls;
        if (!(cls2 == LB_UCLASS_SPACE || cls2 == LB_UCLASS_LETTER || cls2 == LB_UCLASS_NUMBER) &&
            cls != LB_UCLASS_NONE) {
            pos += c == ' ';
            while (is_other(cls_at(s, pos))) pos++;
            while (cpt_at(s, pos) == '\r' || cpt_at(s, pos) == '\n') pos++;
            add_word(s, pos);
            continue;
        }
        size_t n_ws = 0, last_newline_end = 0;
        while (cls_at(s, pos + n_ws) == LB_UCLASS_SPACE) {
            uint32_t c2 = cpt_at(s, pos + n_ws);
            if (c2 == '\r' || c2 == '\n') last_newline_end = pos + n_ws + 1;
            n_ws++;
        }
        if (last_newline_end > 0) { /* \s*[\r\n]+ */
            pos = last_newline_end;
            add_word(s, pos);
            continue;
        }
        if (n_ws > 1 && pos + n_ws < s->n) { /* \s+(?!\S) */
            pos += n_ws - 1;
            add_word(s, pos);
            continue;
        }
        if (n_ws > 0) {
            pos += n_ws;
            add_word(s, pos);
            continue;
        }
        add_word(s, ++pos);
    }
}

lb_status lb_pretokenize(lb_tok_pre pre, const uint32_t *cpt, const uint8_t *cls, size_t n,
                         lb_ivec *ends) {
    scanner s = {cpt, cls, n, 0, ends, LB_OK};
    if (pre == LB_PRE_LLAMA3) split_llama3(&s, 3);
    else if (pre == LB_PRE_QWEN2) split_llama3(&s, 1);
    else split_gpt2(&s);
    return s.status;
}
