/* UTF-8 and code point helpers for the tokenizers, matching llama.cpp's
 * unicode.cpp where token ids depend on it. */
#ifndef LB_TOK_UNICODE_H
#define LB_TOK_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/unicode_tables.h"

/* Class of a position outside the current piece of text: matches no regex
 * class at all (llama.cpp's empty flags). Real code points are never NONE. */
#define LB_UCLASS_NONE 4

/* Byte count that a UTF-8 lead byte announces (1 for stray continuation
 * bytes), as llama.cpp's unicode_len_utf8: SPM and BPE split symbols by it. */
static inline size_t lb_utf8_len(unsigned char lead) {
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[lead >> 4];
}

/* Decodes one code point at s (n > 0 bytes left) and sets *adv. Like
 * llama.cpp, an invalid or truncated sequence yields U+FFFD and consumes one
 * byte; overlong forms and surrogates are accepted as they are. Sequences
 * above U+10FFFF (which llama.cpp cannot re-encode) are invalid too. */
uint32_t lb_utf8_decode(const unsigned char *s, size_t n, size_t *adv);

/* Encodes cp (<= 0x10FFFF) into out; returns the byte count (1..4). */
size_t lb_utf8_encode(uint32_t cp, char out[4]);

/* LB_UCLASS_OTHER / LETTER / NUMBER / SPACE (the generated tables). */
int lb_uclass(uint32_t cp);
/* The same, with the others told apart as llama.cpp's regexes see them
 * (\p{P}, \p{S}, \p{M}: LB_UCAT_PUNCT / _SYMBOL / _MARK, else
 * LB_UCLASS_OTHER); ASCII by llama.cpp's lists, which leave '~' out of both. */
int lb_ucat(uint32_t cp);

/* GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves,
 * the other 68 bytes for U+0100.. in byte order. */
uint32_t lb_gpt2_byte_to_cpt(unsigned char b);
int lb_gpt2_cpt_to_byte(uint32_t cp); /* -1 if cp is not in the alphabet */

#endif
