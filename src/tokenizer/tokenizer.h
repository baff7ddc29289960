/* Tokenizers built from GGUF metadata: SentencePiece-style (tokenizer.ggml.model
 * = "llama": scores, byte fallback, dummy prefix) and GPT-2 byte-level BPE
 * ("gpt2": merges, pre-tokenizer regex chosen by tokenizer.ggml.pre). */
#ifndef LB_TOKENIZER_H
#define LB_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/common.h"
#include "gguf/gguf.h"

typedef struct lb_tokenizer lb_tokenizer;

/* Copies everything it needs: the gguf_file may be closed afterwards. */
lb_status lb_tokenizer_load(const gguf_file *g, lb_tokenizer **out);
void lb_tokenizer_free(lb_tokenizer *t);

int lb_tokenizer_n_vocab(const lb_tokenizer *t);
int lb_tokenizer_bos(const lb_tokenizer *t);      /* -1 if none */
int lb_tokenizer_eos(const lb_tokenizer *t);      /* -1 if none */
int lb_tokenizer_add_bos(const lb_tokenizer *t);  /* tokenizer.ggml.add_bos_token, default per model */
int lb_tokenizer_is_eog(const lb_tokenizer *t, int32_t id); /* end of generation (eos, eot, ...) */

/* Encodes text as llama.cpp's llama_tokenize(add_special=add_bos, parse_special=false) does:
 * BOS is prepended only if add_bos and the model's add_bos flag are both set (EOS likewise
 * appended when tokenizer.ggml.add_eos_token is set). *ids is malloc'ed (caller frees). */
lb_status lb_tokenizer_encode(const lb_tokenizer *t, const char *text, size_t len, int add_bos,
                              int32_t **ids, int *n_ids);
/* The same with llama_tokenize's parse_special: with it, the texts of control
 * and unknown tokens (<|im_start|>, <start_of_turn>, <s>, ...) in the text
 * become those tokens, as user-defined ones always do (chat templates). */
lb_status lb_tokenizer_encode_special(const lb_tokenizer *t, const char *text, size_t len, int add_bos,
                                      int parse_special, int32_t **ids, int *n_ids);

/* The text bytes of one token: SPM "▁" -> ' ', <0xAB> byte tokens -> that byte,
 * GPT-2 byte-level unicode -> raw bytes; control tokens (BOS/EOS) -> "".
 * The pointer stays valid while the tokenizer lives. */
const char *lb_tokenizer_piece(const lb_tokenizer *t, int32_t id, size_t *len);

/* Text of a token sequence: the concatenated pieces, minus the space that
 * SPM's dummy prefix put in front of the text: when tokenizer.ggml.add_space_prefix
 * is on, one leading ' ' is dropped from the first non-empty piece (and from the
 * first one after each user-defined token, which llama.cpp also prefixes). So
 * decode(encode(s)) == s for valid UTF-8 (for SPM: without U+2581, which it cannot
 * tell from an escaped space). Unlike llama_detokenize there is no clean-up of
 * spaces before punctuation. *out is malloc'ed and NUL-terminated; ids outside
 * the vocabulary give LB_ERR_ARG. Printing lb_tokenizer_piece one token at a time
 * gives the same bytes plus that leading space. */
lb_status lb_tokenizer_decode(const lb_tokenizer *t, const int32_t *ids, int n, char **out,
                              size_t *len);

/* Raw vocabulary string of a token as stored in GGUF (NUL-terminated). */
const char *lb_tokenizer_token_text(const lb_tokenizer *t, int32_t id);

#endif
