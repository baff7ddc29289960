/* The chat template and prompt tokens of a loaded model (model/chat_template.h),
 * shared by lowbit chat and lowbit serve. */
#include <string.h>

#include "model/chat_template.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

lb_status lb_chat_template_of_text(const lb_model *m, const char *jinja, lb_chat_template *out) {
    const int bos = lb_token_bos(m), eos = lb_token_eos(m);
    return lb_chat_template_detect(jinja, bos >= 0 ? lb_tokenizer_token_text(m->tok, bos) : "",
                                   eos >= 0 ? lb_tokenizer_token_text(m->tok, eos) : "", out);
}

lb_status lb_chat_template_of_model(const lb_model *m, const char *name, lb_chat_template *out) {
    const int bos = lb_token_bos(m), eos = lb_token_eos(m);
    const char *bt = bos >= 0 ? lb_tokenizer_token_text(m->tok, bos) : "";
    const char *et = eos >= 0 ? lb_tokenizer_token_text(m->tok, eos) : "";
    if (name) return lb_chat_template_named(name, bt, et, out);
    const char *jinja = m->gguf ? gguf_get_str(m->gguf, "tokenizer.chat_template") : NULL;
    if (!jinja) return lb_fail(LB_ERR_UNSUPPORTED, "the model has no tokenizer.chat_template");
    lb_status s = lb_chat_template_detect(jinja, bt, et, out);
    return s ? lb_fail_prefix(s, "the model's chat template") : LB_OK;
}

lb_status lb_chat_tokenize(const lb_model *m, const char *text, int32_t **ids, int *n) {
    int add_bos = lb_add_bos_default(m);
    const int bos = lb_token_bos(m);
    if (bos >= 0) {
        const char *bt = lb_tokenizer_token_text(m->tok, bos);
        if (bt[0] && !strncmp(text, bt, strlen(bt))) add_bos = 0;
    }
    return lb_tokenizer_encode_special(m->tok, text, strlen(text), add_bos, 1, ids, n);
}

const char *lb_harmony_piece(lb_harmony *h, const lb_model *m, int32_t token, size_t *len, lb_harmony_kind *kind) {
    const char *piece = lb_token_to_piece(m, token, len);
    *kind = lb_harmony_step(h, lb_tokenizer_token_text(m->tok, token), piece, *len);
    return piece;
}

const char *lb_think_piece(const lb_model *m, int32_t token, size_t *len) {
    const char *piece = lb_token_to_piece(m, token, len);
    if (*len || !m->tok) return piece;
    const char *text = lb_tokenizer_token_text(m->tok, token); /* a control token prints nothing */
    if (strcmp(text, "<think>") && strcmp(text, "</think>")) return piece;
    *len = strlen(text);
    return text;
}
