/* Pieces of the Hugging Face importer shared between hf.c (config.json and
 * safetensors weights) and hf_vocab.c (tokenizer.json). */
#ifndef LB_IMPORT_HF_H
#define LB_IMPORT_HF_H

#include "gguf/gguf.h"
#include "import/json.h"

/* Reads dir/name and parses it; *doc is NULL (and LB_OK returned) when the
 * file does not exist and `optional` is set. Errors name the file. */
lb_status hf_read_json(const char *dir, const char *name, int optional, json_doc **doc);

/* Writes the tokenizer.ggml.* keys from dir/tokenizer.json (+ optional
 * tokenizer_config.json; config.json supplies fallback bos/eos ids).
 * n_vocab is the embedding's row count: the vocabulary is padded up to it
 * and must not exceed it. arch is the GGUF architecture ("llama", "qwen2"). */
lb_status hf_write_vocab(gguf_writer *w, const char *dir, const json_value *config, int64_t n_vocab,
                         const char *arch);

#endif
