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
 * deepseek-llm (DeepSeek LLM, V2): six in turn, [\r\n], \s?[cased letters]+,
 *         \s?[!-/:-~！-／：-～‘-‟　-。]+, \s+$, [一-龥ࠀ-一가-퟿]+, \p{N}+, each
 *         re-splitting every piece the ones before left (split_deepseek_llm)
 * o200k's U and L are [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}];
 * llama.cpp runs them through std::regex on text where every non-ASCII code
 * point stands for its class, as (?=\p{L})[^a-z] and (?=\p{L})[^A-Z]: a
 * letter outside ASCII is both, a mark is neither. Its ids are what a GGUF
 * user gets, so that reading is the one implemented (split_gpt4o). */
#include <stdlib.h>

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

/* One regex over a piece, as std::regex_iterator walks it: its matches, and
 * what lies between them, are words. match: the end of a match at pos, or 0. */
static void regex_words(scanner *s, size_t (*match)(const scanner *, size_t)) {
    for (size_t pos = 0; pos < s->n;) {
        const size_t e = match(s, pos);
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
                regex_words(&piece, ds3_match);
                s->status = piece.status;
                s->prev_end = q;
            }
            p = q;
        }
        pos = end;
    }
}

/* DeepSeek LLM's regexes but the last run on code points through std::wregex,
 * which sees whitespace above ASCII as U+000B (llama.cpp swaps it in): so
 * U+3000 is \s there, not in the punctuation range that names it. */
static int dl_space(const scanner *s, size_t pos) { return cls_at(s, pos) == LB_UCLASS_SPACE; }
static int dl_is(const scanner *s, size_t pos, const uint32_t (*r)[2], size_t nr) {
    if (pos >= s->n || dl_space(s, pos)) return 0;
    const uint32_t c = s->cpt[pos];
    for (size_t i = 0; i < nr; i++)
        if (c >= r[i][0] && c <= r[i][1]) return 1;
    return 0;
}
/* its letters: Unicode's cased letters, as DeepSeek's tokenizer spells them */
static const uint32_t dl_letters[][2] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
    {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
    {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
    {0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D},
    {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC},
    {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
    {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
    {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3},
    {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF},
    {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
    {0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943}};
static const uint32_t dl_punct[][2] = {{0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
                                       {0x2018, 0x201F}, {0x3000, 0x3002}};
static const uint32_t dl_cjk[][2] = {{0x800, 0x9FA5}, {0xAC00, 0xD7FF}};
#define DL_IN(s, pos, r) dl_is(s, pos, r, sizeof r / sizeof r[0])

static size_t dl_newline(const scanner *s, size_t pos) { return cpt_at(s, pos) == '\r' || cpt_at(s, pos) == '\n' ? pos + 1 : 0; }
/* \s?[set]+ */
static size_t dl_run(const scanner *s, size_t pos, const uint32_t (*r)[2], size_t nr) {
    size_t e = pos + (dl_space(s, pos) && dl_is(s, pos + 1, r, nr));
    if (!dl_is(s, e, r, nr)) return 0;
    while (dl_is(s, e, r, nr)) e++;
    return e;
}
static size_t dl_letter_run(const scanner *s, size_t pos) { return dl_run(s, pos, dl_letters, sizeof dl_letters / sizeof dl_letters[0]); }
static size_t dl_punct_run(const scanner *s, size_t pos) { return dl_run(s, pos, dl_punct, sizeof dl_punct / sizeof dl_punct[0]); }
static size_t dl_trailing_space(const scanner *s, size_t pos) { /* \s+$ */
    size_t e = pos;
    while (dl_space(s, e)) e++;
    return e > pos && e == s->n ? e : 0;
}
static size_t dl_cjk_run(const scanner *s, size_t pos) {
    size_t e = pos;
    while (DL_IN(s, e, dl_cjk)) e++;
    return e > pos ? e : 0;
}
static size_t dl_number_run(const scanner *s, size_t pos) { /* \p{N}+, on the collapsed text */
    size_t e = pos;
    while (cls_at(s, e) == LB_UCLASS_NUMBER) e++;
    return e > pos ? e : 0;
}

static void split_deepseek_llm(scanner *s) {
    size_t (*const stages[6])(const scanner *, size_t) = {dl_newline, dl_letter_run, dl_punct_run,
                                                          dl_trailing_space, dl_cjk_run, dl_number_run};
    lb_ivec pieces[2] = {{0}, {0}}; /* each stage's words, the next stage's pieces */
    if (s->n) s->status = lb_ivec_push(&pieces[0], (int32_t)s->n);
    for (int k = 0; k < 6 && s->status == LB_OK; k++) {
        lb_ivec *in = &pieces[k % 2], *out = k == 5 ? s->ends : &pieces[(k + 1) % 2];
        out->n = k == 5 ? out->n : 0;
        for (size_t i = 0, start = 0; i < in->n && s->status == LB_OK; start = (size_t)in->v[i++]) {
            scanner piece = {s->cpt + start, s->cls + start, (size_t)in->v[i] - start, 0, s->base + start, out, LB_OK};
            regex_words(&piece, stages[k]);
            s->status = piece.status;
        }
    }
    free(pieces[0].v);
    free(pieces[1].v);
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
    else if (pre == LB_PRE_DEEPSEEK_LLM) split_deepseek_llm(&s);
    else split_gpt2(&s);
    return s.status;
}
