/* UTF-8 coding, code point classes and the GPT-2 byte alphabet. */
#include <string.h>

#include "tokenizer/tok_unicode.h"

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

uint32_t lb_utf8_decode(const unsigned char *s, size_t n, size_t *adv) {
    unsigned char c = s[0];
    *adv = 1;
    if (c < 0x80) return c;
    if (!(c & 0x40)) return 0xFFFD; /* continuation byte without a lead */
    if (!(c & 0x20)) {
        if (n < 2 || !is_cont(s[1])) return 0xFFFD;
        *adv = 2;
        return ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (!(c & 0x10)) {
        if (n < 3 || !is_cont(s[1]) || !is_cont(s[2])) return 0xFFFD;
        *adv = 3;
        return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    if (!(c & 0x08)) {
        if (n < 4 || !is_cont(s[1]) || !is_cont(s[2]) || !is_cont(s[3])) return 0xFFFD;
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
                      ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        if (cp > 0x10FFFF) return 0xFFFD;
        *adv = 4;
        return cp;
    }
    return 0xFFFD;
}

size_t lb_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | ((cp >> 18) & 0x07));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The table's class of a code point above ASCII: the last run whose first
 * code point is <= cp. */
static int table_class(uint32_t cp) {
    size_t lo = 0, hi = LB_UCLASS_RUNS_N;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if ((lb_uclass_runs[mid] & 0x1FFFFF) <= cp) lo = mid;
        else hi = mid;
    }
    return (int)(lb_uclass_runs[lo] >> 24);
}

int lb_uclass(uint32_t cp) {
    if (cp < 0x80) { /* the common case, without the search */
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return LB_UCLASS_LETTER;
        if (cp >= '0' && cp <= '9') return LB_UCLASS_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return LB_UCLASS_SPACE;
        return LB_UCLASS_OTHER;
    }
    const int c = table_class(cp);
    return c > LB_UCLASS_SPACE ? LB_UCLASS_OTHER : c; /* punctuation, symbols, marks: "other" */
}

int lb_ucat(uint32_t cp) {
    if (cp < 0x80) { /* llama.cpp's ASCII lists (unicode.cpp's k_ucat_map): '~' is in neither */
        if (strchr("!\"#%&'()*,-./:;?@[\\]_{}", (int)cp) && cp) return LB_UCAT_PUNCT;
        if (strchr("$+<=>^`|", (int)cp) && cp) return LB_UCAT_SYMBOL;
        return lb_uclass(cp);
    }
    return table_class(cp);
}

/* The 68 bytes without a printable Latin-1 form are 0x00-0x20, 0x7F-0xA0 and
 * 0xAD; they take U+0100..U+0143 in that order. */
uint32_t lb_gpt2_byte_to_cpt(unsigned char b) {
    if (b <= 0x20) return 256 + b;
    if (b >= 0x7F && b <= 0xA0) return 256 + 33 + (b - 0x7F);
    if (b == 0xAD) return 256 + 67;
    return b;
}

int lb_gpt2_cpt_to_byte(uint32_t cp) {
    if (cp < 256) return (cp <= 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) ? -1 : (int)cp;
    if (cp <= 256 + 32) return (int)(cp - 256);
    if (cp <= 256 + 66) return (int)(cp - 256 - 33 + 0x7F);
    if (cp == 256 + 67) return 0xAD;
    return -1;
}
