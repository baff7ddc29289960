/* Shared pieces of the `lowbit` subcommands: flag parsing that spells shared
 * flags the same everywhere, and the common model options. */
#ifndef LB_CLI_H
#define LB_CLI_H

#include <stdio.h>

#include "lowbit.h"
#include "model/chat_template.h"

/* Exit codes: 0 ok, 1 runtime failure, 2 bad usage. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef struct {
    int argc, i;
    char **argv;
    const char *cmd;
    int bad; /* set when a flag's value is missing or malformed */
} cli_args;

/* True if argv[i] is one of the spellings (NULL-terminated list in the macro). */
int cli_flag(cli_args *a, const char *s1, const char *s2);
/* The value after the current flag (advances), or NULL with an error printed. */
const char *cli_value(cli_args *a);
int cli_int(cli_args *a, int lo, int hi);
/* ABQ activation bits: 1..8, or 16 (LB_ABQ_ACT_F32: fp32 activations) */
int cli_act_bits(cli_args *a);
double cli_float(cli_args *a, double lo, double hi);
unsigned long long cli_u64(cli_args *a);
void cli_unknown(cli_args *a);

/* Model options every subcommand that loads a model accepts. */
typedef struct {
    const char *model;
    int threads;
    const char *isa;
    int verbose;
    int act_bits; /* ABQ models: activation bits (0: the file's default) */
} cli_common;
/* Consumes -m/--model, -t/--threads, --isa, --act-bits, -v/--verbose; returns 1 if it did. */
int cli_common_flag(cli_args *a, cli_common *c);
#define CLI_COMMON_HELP                                                      \
    "  -m, --model FILE     GGUF model\n"                                    \
    "  -t, --threads N      threads (default: all cores)\n"                  \
    "      --isa LEVEL      force a lower kernel level: scalar|avx2|avx512|amx|neon|dotprod|i8mm\n" \
    "                       (also LOWBIT_ISA=...)\n"                         \
    "      --act-bits P     ABQ models: quantize activations to P bits, 1..8, or 16: keep them in\n" \
    "                       fp32 (WqA16; default: the file's lowbit.abq.act_bits, set by quantize)\n" \
    "  -v, --verbose        more logging\n"                                  \
    "  -h, --help           this help\n"                                     \
    "  (llama.cpp's -ngl N, -fa [on|off|auto], --jinja, --mlock, --no-mmap and -cb are accepted\n" \
    "   and ignored, each with a note saying why)\n"
/* --device DEV (run, perplexity, bench, serve): consumed into *device;
 * returns 1 if it did. */
int cli_device_flag(cli_args *a, const char **device);
#define CLI_DEVICE_HELP                                                                          \
    "      --device DEV     cpu (default) or cuda: the whole forward pass on the GPU, weights\n" \
    "                       in the file's layouts (needs a build with -DLOWBIT_CUDA=ON)\n"
/* The KV cache's flags (run, chat, perplexity, bench, serve), as llama.cpp
 * spells them: -ctk/--cache-type-k and -ctv/--cache-type-v, f32, f16, q8_0
 * or q4_0 (LB_TYPE_F32 / _F16 / _Q8_0 / _Q4_0), and --swa-full; returns 1 if it consumed
 * the flag. cli_cache_apply puts them in a context's params. */
typedef struct {
    int type_k, type_v, swa_full;
} cli_cache;
int cli_cache_flag(cli_args *a, cli_cache *kv);
void cli_cache_apply(const cli_cache *kv, lb_context_params *cp);
/* One cache type name (f32, f16, q8_0, q4_0) as its LB_TYPE_; -1 after printing
 * "lowbit CMD: FLAG V: ..." for any other. */
int cli_cache_type(const char *cmd, const char *flag, const char *v);
#define CLI_CACHE_HELP                                                                              \
    "  -ctk, --cache-type-k T  KV cache keys: f32 (default), f16 (half the memory, as llama.cpp's\n" \
    "                       default; faster attention at long contexts), q8_0 (17/64 of it) or\n"  \
    "                       q4_0 (9/64)\n"                                                          \
    "  -ctv, --cache-type-v T  KV cache values: f32 (default), f16, q8_0 or q4_0\n"                    \
    "      --swa-full       sliding-window layers keep every position (default: a ring of the\n" \
    "                       window plus a batch, which cannot go back further than a batch)\n"
/* Reasoning models' flags (chat, serve; cli/cli_reasoning.c), as llama.cpp
 * spells them: --reasoning-budget -1|0 (0: thinking off, the template's
 * enable_thinking false), --chat-template-kwargs JSON (a flat object:
 * enable_thinking, thinking (DeepSeek-V3.1's name for it), reasoning_effort;
 * other keys are warned about and ignored), --reasoning-effort E (gpt-oss)
 * and --reasoning-format none|deepseek|auto (whether a <think> block is
 * split from the answer). Values are checked as they are parsed (before the
 * model loads); cli_reasoning_apply sets them on the model's template and
 * warns where its template has no thinking switch. */
typedef struct {
    char effort[8]; /* "": the template's */
    int thinking;   /* -1: the template's default, 0 off, 1 on */
    int format;     /* 1 split (deepseek, auto: the default), 0 none */
} cli_reasoning;
#define CLI_REASONING_INIT {"", -1, 1}
int cli_reasoning_flag(cli_args *a, cli_reasoning *r);
void cli_reasoning_apply(const char *cmd, const cli_reasoning *r, lb_chat_template *t);
#define CLI_REASONING_HELP                                                                            \
    "      --reasoning-budget N  -1: the model thinks as its template says (default); 0: thinking\n"   \
    "                       off (Qwen 3, GLM-4.5 to 4.7: the template's enable_thinking false)\n"     \
    "      --chat-template-kwargs JSON  the template's switches, e.g. '{\"enable_thinking\": false}',\n" \
    "                       '{\"thinking\": true}' (DeepSeek-V3.1), '{\"reasoning_effort\": \"high\"}'\n" \
    "      --reasoning-effort E  gpt-oss: low, medium (default) or high: how long it reasons\n"         \
    "      --reasoning-format F  deepseek or auto (default): a reply's <think> block is the\n"          \
    "                       reasoning, shown apart from the answer; none: the reply as it is\n"
/* The chat template of chat and serve: --chat-template-file FILE's text (a
 * Jinja template, recognised as the model's would be), else the family
 * --chat-template NAME, else the model's own. */
lb_status cli_chat_template(const char *cmd, const lb_model *m, const char *name, const char *file,
                            lb_chat_template *out);
/* LB_DEVICE_CPU for NULL or "cpu"; for "cuda", LB_DEVICE_CUDA once the
 * backend is registered, a GPU found and load-time repacking turned off (the
 * GPU takes the file's layouts); -1 after printing why not. Call before
 * loading the model. */
int cli_device_apply(const char *cmd, const char *device);
/* Applies --isa/--verbose; prints an error and returns nonzero on failure. */
int cli_common_apply(const cli_common *c);
lb_status cli_load_model(const cli_common *c, lb_model **m);
void cli_error(const char *cmd, lb_status s);
/* Reads a text file and tokenizes it as the model does (BOS by its default);
 * *toks is malloc'd (free it), NULL on failure. */
lb_status cli_tokenize_file(lb_model *m, const char *path, int32_t **toks, int *n_tok);
void cli_install_sigint(void);
void cli_progress(void *user, const char *what, int done, int total);
/* Calibration text in chunks (imatrix, calibrate; cli/text_chunks.c). */
typedef struct {
    const char *file, *out;
    int n_ctx, max_chunks, skip; /* tokens per chunk; 0: all chunks; chunks skipped first */
} cli_chunk_opts;
#define CLI_CHUNK_OPTS_DEFAULT {NULL, NULL, 512, 0, 0}
/* Consumes -f/--file, -o/--output, -c/--ctx-size, --chunks, --skip-chunks; 1 if it did. */
int cli_chunk_flag(cli_args *a, cli_chunk_opts *o);
#define CLI_CHUNK_HELP(out_what)                                                                 \
    "  -f, --file FILE      calibration text (keep it apart from the text you score)\n"          \
    "  -o, --output FILE    " out_what " to write (GGUF; a temporary name until complete)\n"     \
    "  -c, --ctx-size N     tokens per chunk (default 512)\n"                                    \
    "      --chunks N       use N chunks (default: all the text)\n"                              \
    "      --skip-chunks N  start after the first N chunks of the text (e.g. past the ones\n"    \
    "                       lowbit perplexity scores)\n"
/* CLI_OK if -m, -f and -o were given, else CLI_USAGE with a message naming out_name. */
int cli_chunk_check(const char *cmd, const cli_common *co, const cli_chunk_opts *o, const char *out_name);
/* Loads the model, tokenizes the text and counts the chunks after --skip-chunks
 * (at most --chunks); prints why not and returns CLI_FAIL when there is none.
 * *m and *toks are the caller's to free either way. */
int cli_chunk_open(const char *cmd, const cli_common *co, const cli_chunk_opts *o, lb_model **m, int32_t **toks,
                   int *n_chunk);
/* Chunk c (0-based, after the skipped ones), its first token set to BOS as a fresh text's. */
int32_t *cli_chunk_tokens(lb_model *m, const cli_chunk_opts *o, int32_t *toks, int c);
/* "done/total chunks, elapsed, about N s left" */
void cli_chunk_progress(double t0, int done, int total);
/* Sampling (run, chat): --temp --top-k --top-p --min-p --repeat-penalty
 * --repeat-last-n -s/--seed; 1 if it consumed the flag (*seed_set: -s given). */
/* Grammar flags (run, chat, serve; cli/cli_grammar.c): the GBNF text, from
 * --grammar, --grammar-file, -j/--json-schema or --json-schema-file. */
typedef struct {
    char *gbnf; /* NULL: no grammar */
} cli_grammar;
int cli_grammar_flag(cli_args *a, cli_grammar *g);
lb_status cli_grammar_new(const cli_grammar *g, const lb_model *m, lb_grammar **out);
void cli_grammar_free(cli_grammar *g);
#define CLI_GRAMMAR_HELP                                                                            \
    "      --grammar GBNF   constrain the output to a grammar (llama.cpp's GBNF, rule root)\n"       \
    "      --grammar-file FILE  the same, from a file\n"                                              \
    "  -j, --json-schema SCHEMA  constrain the output to JSON this JSON Schema allows\n"              \
    "      --json-schema-file FILE  the same, from a file (docs/grammar.md: the keywords read)\n"
int cli_sampler_flag(cli_args *a, lb_sampler_params *sp, int *seed_set);
#define CLI_SAMPLER_HELP                                                                          \
    "      --temp T         temperature (default 0.8; 0 = greedy)\n"                              \
    "      --top-k K        keep the K most likely tokens (default 40; 0 = off)\n"                \
    "      --top-p P        nucleus sampling threshold (default 0.95; 1 = off)\n"                 \
    "      --min-p P        drop tokens below P x the best probability (default 0.05; 0 = off)\n" \
    "      --repeat-penalty R   penalty for recent tokens (default 1.0 = off)\n"                  \
    "      --repeat-last-n N    how many recent tokens it looks at (default 64)\n"                \
    "  -s, --seed S         random seed (default: from the clock)\n"
/* Default context for run: the training length, capped so the KV cache stays modest. */
#define LB_CTX_DEFAULT(train) ((train) < 4096 ? (train) : 4096)

int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_codebooks(int argc, char **argv);
int cmd_imatrix(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
