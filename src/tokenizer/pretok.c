/* BPE pre-tokenizers: the regexes that cut text into words before merging,
 * hand-written as scanners over code points (no regex engine), step for step
 * like llama.cpp's unicode_regex_split_custom_gpt2 / _llama3 so that even the
 * corner cases (trailing whitespace, a space before a digit) split the same.
 *
 * gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *         ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * gpt-4o: [^\r\n\p{L}\p{N}]?U*L+C?|[^\r\n\p{L}\p{N}]?U+L*C?|\p{N}{1,3}|
 *         ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *         (C: (?i:'s|'t|'re|'ve|'m|'ll|'d); tekken: no C and \p{N} alone)
 * smollm: \p{N}, then gpt2 on each stretch between digits (llama.cpp runs
 *         the two regexes in turn: gpt2's lookahead ends at a digit)
 * deepseek-v3: three in turn, \p{N}{1,3}, then [一-龥぀-ゟ゠-ヿ]+, then
 *         [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
 *          ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *         (split_deepseek3: std::regex on llama.cpp's collapsed text, where
 *         '~' is neither \p{P} nor \p{S} and text no alternative matches
 *         stays a word of its own)
 * o200k's U and L are [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}];
 * llama.cpp runs them through std::regex on text where every non-ASCII code
 * point stands for its class, as (?=\p{L})[^a-z] and (?=\p{L})[^A-Z]: a
 * letter outside ASCII is both, a mark is neither. Its ids are what a GGUF
 * user gets, so that reading is the one implemented (split_gpt4o). */
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_unicode.h"

typedef struct {
    const uint32_t *cpt;
    const uint8_t *cls;
    size_t n;
    size_t prev_end; /* end of the last word emitted */
    size_t base;     /* where cpt[0] is in the text (ends are pushed from there) */
    lb_ivec *ends;
    lb_status status;
} scanner;

#define OUT_OF_RANGE 0xFFFFFFFFu

static uint32_t cpt_at(const scanner *s, size_t pos) { return pos < s->n ? s->cpt[pos] : OUT_OF_RANGE; }
static int cls_at(const scanner *s, size_t pos) { return pos < s->n ? s->cls[pos] : LB_UCLASS_NONE; }

/* Ends the current word at `end`; returns its length (0: nothing emitted). */
static size_t add_word(scanner *s, size_t end) {
    size_t len = end - s->prev_end;
    if (len > 0 && s->status == LB_OK) s->status = lb_ivec_push(s->ends, (int32_t)(s->base + end));
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

/* Llama 3's and o200k's whitespace alternatives at pos (the code point
 * there is whitespace, or the scan found nothing else): \s*[\r\n]+ up to
 * the run's last newline, else \s+(?!\S) (all but the last before a
 * non-space), else \s+. Emits the word; returns where the next starts. */
static size_t whitespace_word(scanner *s, size_t pos) {
    size_t n_ws = 0, last_newline_end = 0;
    while (cls_at(s, pos + n_ws) == LB_UCLASS_SPACE) {
        const uint32_t c2 = cpt_at(s, pos + n_ws);
        if (c2 == '\r' || c2 == '\n') last_newline_end = pos + n_ws + 1;
        n_ws++;
    }
    if (last_newline_end > 0) pos = last_newline_end;
    else if (n_ws > 1 && pos + n_ws < s->n) pos += n_ws - 1;
    else pos += n_ws ? n_ws : 1; /* 1: unreachable for real text; kept as in llama.cpp */
    add_word(s, pos);
    return pos;
}

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
        pos = whitespace_word(s, pos);
    }
}

/* o200k's cased letter classes as llama.cpp reads them (header comment) */
static int upperish(const scanner *s, size_t pos) {
    uint32_t c = cpt_at(s, pos);
    return cls_at(s, pos) == LB_UCLASS_LETTER && !(c >= 'a' && c <= 'z');
}
static int lowerish(const scanner *s, size_t pos) {
    uint32_t c = cpt_at(s, pos);
    return cls_at(s, pos) == LB_UCLASS_LETTER && !(c >= 'A' && c <= 'Z');
}

/* U*L+ at q as a backtracking regex matches it: the end, or 0. U* takes
 * the longest run; if no L follows, it gives back one letter at a time
 * until L+ can start, i.e. up to the last L inside the run (every char after
 * it is an ASCII capital or the run's end, so L+ takes that one letter). */
static size_t upper_lower(const scanner *s, size_t q) {
    size_t i = q;
    while (upperish(s, i)) i++;
    if (lowerish(s, i)) {
        while (lowerish(s, i)) i++;
        return i;
    }
    for (size_t j = i; j > q; j--)
        if (lowerish(s, j - 1)) return j;
    return 0;
}

/* U+L* at q: the end, or 0 (both greedy; nothing after them can fail) */
static size_t upper_then_lower(const scanner *s, size_t q) {
    size_t i = q;
    while (upperish(s, i)) i++;
    if (i == q) return 0;
    while (lowerish(s, i)) i++;
    return i;
}

static void split_gpt4o(scanner *s, size_t max_digits, int contractions) {
    for (size_t pos = 0; pos < s->n;) {
        uint32_t c = cpt_at(s, pos);
        int cls = cls_at(s, pos);
        /* the two word alternatives, each first with the optional lead
         * [^\r\n\p{L}\p{N}] consumed, then without it */
        const int lead = !(c == '\r' || c == '\n' || cls == LB_UCLASS_LETTER || cls == LB_UCLASS_NUMBER);
        size_t e = lead ? upper_lower(s, pos + 1) : 0;
        if (!e) e = upper_lower(s, pos);
        if (!e && lead) e = upper_then_lower(s, pos + 1);
        if (!e) e = upper_then_lower(s, pos);
        if (e) {
            if (contractions && cpt_at(s, e) == '\'') e += contraction(s, e, 1);
            add_word(s, e);
            pos = e;
            continue;
        }
        if (cls == LB_UCLASS_NUMBER) { /* \p{N}{1,3} (gpt-4o) or \p{N} (tekken) */
            size_t end = pos;
            while (end - pos < max_digits && cls_at(s, end) == LB_UCLASS_NUMBER) end++;
            add_word(s, end);
            pos = end;
            continue;
        }
        /*  ?[^\s\p{L}\p{N}]+[\r\n/]* */
        size_t q = pos + (c == ' ' && is_other(cls_at(s, pos + 1)));
        if (is_other(cls_at(s, q))) {
            while (is_other(cls_at(s, q))) q++;
            while (cpt_at(s, q) == '\r' || cpt_at(s, q) == '\n' || cpt_at(s, q) == '/') q++;
            add_word(s, q);
            pos = q;
            continue;
        }
        pos = whitespace_word(s, pos);
    }
}

/* SmolLM's two regexes: every number code point a word of its own, and
 * gpt2's split on each stretch between them, as a text of its own. */
static void split_smollm(scanner *s) {
    for (size_t pos = 0; pos < s->n;) {
        if (cls_at(s, pos) == LB_UCLASS_NUMBER) {
            add_word(s, ++pos);
            continue;
        }
        size_t end = pos;
        while (end < s->n && cls_at(s, end) != LB_UCLASS_NUMBER) end++;
        scanner piece = {s->cpt + pos, s->cls + pos, end - pos, 0, s->base + pos, s->ends, s->status};
        split_gpt2(&piece);
        s->status = piece.status;
        s->prev_end = pos = end;
    }
}

/* DeepSeek-V3's last regex at pos: the end of its match, or 0. */
static int ds_cat(const scanner *s, size_t pos) { return pos < s->n ? lb_ucat(s->cpt[pos]) : LB_UCLASS_NONE; }
static int ds_ps(int c) { return c == LB_UCAT_PUNCT || c == LB_UCAT_SYMBOL; }
static int ds_lm(int c) { return c == LB_UCLASS_LETTER || c == LB_UCAT_MARK; }
static int ds_ascii_letter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int ds_ascii_punct(uint32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

static size_t ds3_match(const scanner *s, size_t pos) {
    const uint32_t c = cpt_at(s, pos);
    const int k = ds_cat(s, pos);
    size_t e;
    /* [!"#...~][A-Za-z]+ */
    if (ds_ascii_punct(c) && ds_ascii_letter(cpt_at(s, pos + 1))) {
        for (e = pos + 1; ds_ascii_letter(cpt_at(s, e)); e++) {}
        return e;
    }
    /* [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+: the lead taken if letters follow */
    const int lead = c != '\r' && c != '\n' && k != LB_UCLASS_LETTER && !ds_ps(k);
    if ((lead && ds_lm(ds_cat(s, pos + 1))) || ds_lm(k)) {
        for (e = pos + 1; ds_lm(ds_cat(s, e)); e++) {}
        return e;
    }
    /*  ?[\p{P}\p{S}]+[\r\n]* */
    e = pos + (c == ' ' && ds_ps(ds_cat(s, pos + 1)));
    if (ds_ps(ds_cat(s, e))) {
        while (ds_ps(ds_cat(s, e))) e++;
        while (cpt_at(s, e) == '\r' || cpt_at(s, e) == '\n') e++;
        return e;
    }
    /* \s*[\r\n]+ | \s+(?!\S) | \s+ */
    if (k != LB_UCLASS_SPACE) return 0;
    size_t n_ws = 0, last_newline_end = 0;
    for (; ds_cat(s, pos + n_ws) == LB_UCLASS_SPACE; n_ws++)
        if (cpt_at(s, pos + n_ws) == '\r' || cpt_at(s, pos + n_ws) == '\n') last_newline_end = pos + n_ws + 1;
    if (last_newline_end) return last_newline_end;
    return pos + (n_ws > 1 && pos + n_ws < s->n ? n_ws - 1 : n_ws);
}

/* The last regex over a piece: its matches, and what lies between them, are words. */
static void ds3_words(scanner *s) {
    for (size_t pos = 0; pos < s->n;) {
        const size_t e = ds3_match(s, pos);
        if (!e) {
            pos++;
            continue;
        }
        add_word(s, pos); /* the unmatched text before, if any */
        add_word(s, e);
        pos = e;
    }
    add_word(s, s->n);
}

static int ds_kana_han(uint32_t c) { return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x30FF); }

static void split_deepseek3(scanner *s) {
    for (size_t pos = 0; pos < s->n;) {
        if (cls_at(s, pos) == LB_UCLASS_NUMBER) { /* \p{N}{1,3} */
            size_t end = pos;
            while (end - pos < 3 && cls_at(s, end) == LB_UCLASS_NUMBER) end++;
            pos += add_word(s, end);
            continue;
        }
        size_t end = pos;
        while (end < s->n && cls_at(s, end) != LB_UCLASS_NUMBER) end++;
        for (size_t p = pos; p < end;) { /* the stretch between numbers: han and kana runs, the rest */
            const int kh = ds_kana_han(s->cpt[p]);
            size_t q = p;
            while (q < end && ds_kana_han(s->cpt[q]) == kh) q++;
            if (kh) {
                add_word(s, q);
            } else {
                scanner piece = {s->cpt + p, s->cls + p, q - p, 0, s->base + p, s->ends, s->status};
                ds3_words(&piece);
                s->status = piece.status;
                s->prev_end = q;
            }
            p = q;
        }
        pos = end;
    }
}

lb_status lb_pretokenize(lb_tok_pre pre, const uint32_t *cpt, const uint8_t *cls, size_t n,
                         lb_ivec *ends) {
    scanner s = {cpt, cls, n, 0, 0, ends, LB_OK};
    if (pre == LB_PRE_LLAMA3) split_llama3(&s, 3);
    else if (pre == LB_PRE_QWEN2) split_llama3(&s, 1);
    else if (pre == LB_PRE_GPT4O) split_gpt4o(&s, 3, 1);
    else if (pre == LB_PRE_TEKKEN) split_gpt4o(&s, 1, 0);
    else if (pre == LB_PRE_SMOLLM) split_smollm(&s);
    else if (pre == LB_PRE_DEEPSEEK3) split_deepseek3(&s);
    else split_gpt2(&s);
    return s.status;
}
