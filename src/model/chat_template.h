/* Chat templates without a Jinja engine: the model's tokenizer.chat_template
 * is recognised by distinctive substrings as one of the common families, and
 * a C formatter per family writes what the official Jinja template writes for
 * a conversation (with add_generation_prompt), its whitespace, BOS/EOS texts
 * and raise_exception() errors included. tests/test_chat_template.c checks
 * every family against jinja2's rendering of the real templates
 * (tests/data/chat-templates/, scripts/gen-chat-expected.py). */
#ifndef LB_CHAT_TEMPLATE_H
#define LB_CHAT_TEMPLATE_H

#include <stddef.h>

#include "core/common.h"

typedef enum {
    LB_CHAT_LLAMA2,            /* Llama 2 chat: [INST] <<SYS>> ... [/INST], BOS before every user turn */
    LB_CHAT_LLAMA3,            /* Llama 3: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    LB_CHAT_LLAMA31,           /* Llama 3.1-3.3: the same, always a system header with the dates */
    LB_CHAT_MISTRAL,           /* Mistral 7B Instruct v0.1/v0.2 (old): [INST] x [/INST]y</s>, no system */
    LB_CHAT_MISTRAL_V1,        /* Mistral's "v1": " [INST] x [/INST] y</s>", system before the first user */
    LB_CHAT_MISTRAL_V3,        /* Mistral's "v3" (7B v0.3, Large 2407): "[INST] x[/INST] y</s>", system in the last user */
    LB_CHAT_MISTRAL_V3_TEKKEN, /* Mistral's "v3-tekken" (Nemo): "[INST]x[/INST]y</s>" */
    LB_CHAT_MISTRAL_V7,        /* Mistral's "v7" (Large 2411): [SYSTEM_PROMPT] x[/SYSTEM_PROMPT] */
    LB_CHAT_CHATML,            /* ChatML (Qwen, Hermes, ...): <|im_start|>role\n...<|im_end|>\n; Qwen 3's <think> */
    LB_CHAT_GEMMA,             /* Gemma 1/2: <start_of_turn>user|model, no system role */
    LB_CHAT_GEMMA3,            /* Gemma 3: the same, the system message before the first user turn */
    LB_CHAT_PHI3,              /* Phi-3/3.5: <|role|>\n...<|end|>\n, an empty system message left out */
    LB_CHAT_GPT_OSS,           /* gpt-oss's harmony: <|start|>role<|message|>...<|end|>, a fixed system preamble */
    LB_CHAT_DEEPSEEK_R1,       /* DeepSeek-R1 and its distills: <｜User｜>...<｜Assistant｜>...<｜end▁of▁sentence｜>, <think> */
    LB_CHAT_GLM47,             /* GLM-4.7 / 4.7-Flash: [gMASK]<sop><|user|>...<|assistant|></think>..., <think> */
    LB_CHAT_COMMAND_R,         /* Command R / R+: <|START_OF_TURN_TOKEN|><|USER_TOKEN|>...<|END_OF_TURN_TOKEN|> */
    LB_CHAT_GLM45,             /* GLM-4.5 / 4.6 / 4.5-Air: [gMASK]<sop><|user|>\n...<|assistant|>\n<think></think>\n... */
    LB_CHAT_DEEPSEEK_V31,      /* DeepSeek-V3.1 (thinking off): <｜User｜>...<｜Assistant｜><think></think>... */
    LB_CHAT_MISTRAL_SMALL3,    /* Mistral Small 3.2: [SYSTEM_PROMPT] default or given [/SYSTEM_PROMPT][INST]x[/INST]y</s> */
    LB_CHAT_GRANITE,           /* Granite 3.x: <|start_of_role|>role<|end_of_role|>...<|end_of_text|>\n */
    LB_CHAT_COUNT
} lb_chat_family;

typedef struct {
    lb_chat_family family;
    /* details a family's templates vary in, read from the template text */
    char default_system[4096]; /* ChatML, Mistral Small 3: the system message when none is given, "" if none */
    int has_default_system;
    int default_system_date;  /* Mistral Small 3, Granite: where today's date goes into it (-1: nowhere) */
    char system_suffix[2][1536]; /* Granite: after the default system message, without and with `thinking` */
    int qwen3_think;          /* ChatML: Qwen 3's reasoning blocks (<think>) in assistant turns */
    char date[32];            /* Llama 3.1: date_string's default ("26 Jul 2024") */
    int date_now;             /* Llama 3.2+: strftime_now("%d %b %Y") (today), else `date` */
    char gemma_sep[8];        /* Gemma 3: after the system text in the first user turn ("\n\n") */
    char bos[64], eos[64];    /* the model's BOS and EOS token texts */
    char reasoning_effort[8]; /* gpt-oss: "low", "medium" (the template's default) or "high" */
    int thinking_switch;      /* the template reads enable_thinking (Qwen 3, GLM-4.5 to 4.7, DeepSeek-V3.1) or
                               * `thinking` (DeepSeek-V3.1, Granite 3.3) */
    int thinking;             /* enable_thinking: -1 undefined (the template's default), 0 false, 1 true */
    int tool_calls;           /* the template offers tools and writes calls and results: Qwen 2.5 / 3's
                               * Hermes style (<tools>, <tool_call>, <tool_response>), Llama 3.1 / 3.2's
                               * (tools in the first user turn, {"name", "parameters"} calls, ipython results)
                               * or Mistral v3's ([AVAILABLE_TOOLS], [TOOL_CALLS] with ids, [TOOL_RESULTS]) */
    char tools_head[512], tools_tail[512]; /* its texts before and after the tools' signatures */
    const char *const *tools; /* the tools offered (JSON text each, as `tool | tojson` writes it; n_tools);
                               * set per conversation, NULL: none */
    int n_tools;
} lb_chat_template;

/* A tool call an assistant message made: the function's name and its
 * arguments as JSON text (an object, written as Python's json.dumps writes it,
 * which is what the templates' `tojson` gives). */
typedef struct {
    const char *name, *arguments;
    const char *id; /* the call's id (Mistral's templates require 9 characters); NULL: none */
} lb_chat_tool_call;

typedef struct {
    const char *role;    /* "system", "user", "assistant", "tool" (a tool's result) */
    const char *content; /* UTF-8 */
    const lb_chat_tool_call *calls; /* assistant: the tool calls it made (n_calls of them) */
    int n_calls;
    const char *tool_call_id; /* tool: the id of the call it answers; NULL: none */
} lb_chat_msg;

/* Names for --chat-template: "llama2", "llama3", "llama3.1", "mistral",
 * "mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7", "chatml",
 * "gemma", "gemma3", "phi3", "gpt-oss", "deepseek-r1", "glm4.7", "command-r",
 * "glm4.5", "deepseek-v3.1", "mistral-small3", "granite"; NULL-terminated. */
const char *const *lb_chat_template_names(void);
const char *lb_chat_family_name(lb_chat_family f);

/* Recognises a Jinja template's family; LB_ERR_UNSUPPORTED (with a message)
 * if none matches. bos / eos: the token texts (may be NULL: ""). */
lb_status lb_chat_template_detect(const char *jinja, const char *bos, const char *eos, lb_chat_template *out);
/* A family by name (lb_chat_template_names); LB_ERR_ARG if unknown. */
lb_status lb_chat_template_named(const char *name, const char *bos, const char *eos, lb_chat_template *out);

/* gpt-oss's reasoning_effort: "low", "medium" or "high" (the names its
 * harmony format knows); LB_ERR_ARG for anything else. Other families have
 * no such setting and ignore it. _known: whether effort is one of them. */
int lb_chat_reasoning_effort_known(const char *effort);
lb_status lb_chat_set_reasoning_effort(lb_chat_template *t, const char *effort);

/* The thinking switch (chat_template_kwargs {"enable_thinking": on}, which
 * llama.cpp's --reasoning-budget 0 sets false): Qwen 3 and GLM think unless
 * it is false, DeepSeek-V3.1 only when it is true. -1 leaves it undefined.
 * Templates without the switch render as before (t->thinking_switch says
 * whether it does anything). */
lb_status lb_chat_set_thinking(lb_chat_template *t, int on);

/* Whether the generation prompt leaves the model inside a reasoning block
 * (it ends with an opening <think>: DeepSeek-R1, GLM-4.7 and DeepSeek-V3.1
 * thinking), so the reply starts with reasoning; a reply may also open one
 * itself (Qwen 3 writes <think> first). */
int lb_chat_prompt_opens_think(const lb_chat_template *t);

/* A reply split into reasoning and answer as llama.cpp's "deepseek"
 * reasoning format splits it: a <think> at its start (after whitespace;
 * or the prompt's, open = 1) opens the reasoning, the first </think> ends
 * it; the reasoning's leading and trailing newlines and the answer's
 * leading ones are dropped; anything after is the answer, tags and all.
 * Fed the reply's bytes in any pieces, it emits each byte once as it is
 * known (a possible tag or trailing newlines are held until the next bytes
 * or lb_think_finish); a reply without a reasoning block is all answer. */
struct lb_model;
typedef void (*lb_think_emit)(void *ud, int reasoning, const char *p, size_t n);
typedef struct {
    int state;      /* 0 the reply's start, 1 reasoning, 2 answer's leading newlines, 3 answer */
    int lead;       /* reasoning: no byte emitted yet (leading newlines dropped) */
    size_t n_nl;    /* reasoning: newlines held (dropped before </think>) */
    char hold[32];  /* the start's whitespace and a possible tag */
    size_t n_hold;
} lb_think_split;
void lb_think_init(lb_think_split *t, int open);
void lb_think_feed(lb_think_split *t, const char *p, size_t n, lb_think_emit emit, void *ud);
void lb_think_finish(lb_think_split *t, lb_think_emit emit, void *ud); /* the reply ended: what is held */
/* A token's piece for lb_think_feed (model/chat_model.c): its text, and
 * "<think>" / "</think>" also where a vocabulary marks them control tokens,
 * which print nothing. */
const char *lb_think_piece(const struct lb_model *m, int32_t token, size_t *len);

/* Formats the conversation as the template does, with the generation prompt
 * (the assistant's turn opened). date: Llama 3.2's strftime_now text, NULL for
 * today. The template's own errors (roles not alternating, a system role it
 * refuses) give LB_ERR_ARG with its message. *out is malloc'ed, NUL-terminated. */
lb_status lb_chat_apply(const lb_chat_template *t, const lb_chat_msg *msgs, int n_msgs, const char *date, char **out,
                        size_t *out_len);

/* A model's template (model/chat_model.c, for lowbit chat and serve): the
 * family `name` if given (--chat-template), else the model's
 * tokenizer.chat_template recognised; LB_ERR_UNSUPPORTED if it has none. */
struct lb_model;
lb_status lb_chat_template_of_model(const struct lb_model *m, const char *name, lb_chat_template *out);
/* A template text given apart from the model (llama.cpp's --chat-template-file),
 * recognised as lb_chat_template_detect does, with the model's BOS and EOS. */
lb_status lb_chat_template_of_text(const struct lb_model *m, const char *jinja, lb_chat_template *out);
/* A rendered prompt's tokens (*ids malloc'ed): the special tokens' texts as
 * those tokens, BOS as the model adds it unless the text begins with the
 * BOS text (templates that write it). */
lb_status lb_chat_tokenize(const struct lb_model *m, const char *text, int32_t **ids, int *n);

/* gpt-oss replies in harmony messages: <|channel|>NAME<|message|>TEXT<|end|>
 * (analysis: its reasoning), then <|start|>assistant<|channel|>final
 * <|message|>TEXT and <|return|>. Fed the generated tokens one at a time,
 * lb_harmony_piece gives each token's text and what it is: the answer
 * (the final channel's text), reasoning (analysis, commentary), or nothing
 * to show (the control tokens, channel names and headers such as
 * "assistant"). */
typedef enum { LB_HARMONY_NONE, LB_HARMONY_ANSWER, LB_HARMONY_REASONING } lb_harmony_kind;
typedef struct {
    int state;       /* 0 in a header, 1 reading a channel's name, 2 in a message */
    int answer;      /* the current message is the final channel's */
    char channel[16];
    size_t n_channel;
} lb_harmony;
void lb_harmony_init(lb_harmony *h);
/* One token: its text in the vocabulary (control tokens by name) and its
 * piece (what it prints as, len bytes). */
lb_harmony_kind lb_harmony_step(lb_harmony *h, const char *token_text, const char *piece, size_t len);
/* The same for a model's token id (model/chat_model.c); returns its piece. */
const char *lb_harmony_piece(lb_harmony *h, const struct lb_model *m, int32_t token, size_t *len,
                             lb_harmony_kind *kind);

#endif
