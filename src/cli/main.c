/* lowbit: one command, several subcommands. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "formats/abq.h"
#include "core/common.h"
#include "kernels/cpu.h"
#include "model/repack.h"
#ifdef LOWBIT_HAVE_CUDA
#include "kernels/cuda/lb_cuda.h"
#include "model/forward_cuda.h"
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
/* In the sanitized build only: clang 14's LeakSanitizer misreads the dynamic
 * TLS blocks that libmicrohttpd's TLS libraries (gnutls and the rest, linked
 * for lowbit serve) leave under glibc 2.36, and crashes while scanning them at
 * exit ("Tracer caught signal 11", DTLS ranges such as 0xde-0x20000011e0).
 * Not tracking __tls_get_addr avoids that; ASAN_OPTIONS still overrides it. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "intercept_tls_get_addr=0"; }
#endif
#endif

static void usage(FILE *f) {
    fprintf(f,
            "lowbit: run LLMs with 1-8-bit weights on CPUs\n\n"
            "usage: lowbit SUBCOMMAND [options]   (lowbit SUBCOMMAND --help for its options)\n\n"
            "  run         generate text from a prompt\n"
            "  chat        talk with an instruction-tuned model (its chat template, turn by turn)\n"
            "  perplexity  perplexity of a text file (llama.cpp's method), KL divergence\n"
            "  bench       prompt processing and generation speed (real or synthetic model)\n"
            "  quantize    convert a GGUF model to another weight type\n"
            "  codebooks   learn the CB2/CB3 codebooks of a model\n"
            "  imatrix     importance matrix (squared activations) from calibration text\n"
            "  calibrate   layer-input Hessians from calibration text (for quantize --gptq)\n"
            "  tune        time the generated GQ kernels on this CPU, keep the fastest (QIGen)\n"
            "  info        metadata, tensors and bits per weight of a GGUF model\n"
            "  convert     import llama2.c checkpoints or Hugging Face directories to GGUF\n"
            "  serve       OpenAI-compatible HTTP server with continuous batching\n");
}

int cli_flag(cli_args *a, const char *s1, const char *s2) {
    const char *arg = a->argv[a->i];
    return (s1 && !strcmp(arg, s1)) || (s2 && !strcmp(arg, s2));
}

const char *cli_value(cli_args *a) {
    if (a->i + 1 >= a->argc) {
        fprintf(stderr, "lowbit %s: %s needs a value\n", a->cmd, a->argv[a->i]);
        a->bad = 1;
        return NULL;
    }
    return a->argv[++a->i];
}

int cli_int(cli_args *a, int lo, int hi) {
    const char *flag = a->argv[a->i], *v = cli_value(a);
    if (!v) return lo;
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end || x < lo || x > hi) {
        fprintf(stderr, "lowbit %s: %s expects an integer in %d..%d, got '%s'\n", a->cmd, flag, lo, hi, v);
        a->bad = 1;
        return lo;
    }
    return (int)x;
}

int cli_act_bits(cli_args *a) {
    const char *flag = a->argv[a->i], *v = cli_value(a);
    if (!v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end || x < 1 || x > LB_ABQ_ACT_F32 || !lb_abq_act_bits_ok((int)x)) {
        fprintf(stderr, "lowbit %s: %s expects 1..8 activation bits, or 16 for unquantized (fp32) activations, got '%s'\n",
                a->cmd, flag, v);
        a->bad = 1;
        return 0;
    }
    return (int)x;
}

double cli_float(cli_args *a, double lo, double hi) {
    const char *flag = a->argv[a->i], *v = cli_value(a);
    if (!v) return lo;
    char *end;
    double x = strtod(v, &end);
    if (*v == 0 || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "lowbit %s: %s expects a number in %g..%g, got '%s'\n", a->cmd, flag, lo, hi, v);
        a->bad = 1;
        return lo;
    }
    return x;
}

unsigned long long cli_u64(cli_args *a) {
    const char *flag = a->argv[a->i], *v = cli_value(a);
    if (!v) return 0;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (*v == 0 || *end || *v == '-') {
        fprintf(stderr, "lowbit %s: %s expects a non-negative integer, got '%s'\n", a->cmd, flag, v);
        a->bad = 1;
    }
    return x;
}

void cli_unknown(cli_args *a) {
    fprintf(stderr, "lowbit %s: unknown option '%s' (see lowbit %s --help)\n", a->cmd, a->argv[a->i], a->cmd);
    a->bad = 1;
}

/* llama.cpp's flags that copied command lines carry and that change nothing
 * here: accepted with a note saying why, so the command line runs. -fa takes
 * an optional on/off/auto (or llama-bench's 0/1). */
static int compat_flag(cli_args *a) {
    static const struct {
        const char *s1, *s2;
        int value; /* 1: takes one, 2: an optional on/off/auto/0/1 */
        const char *why;
    } flags[] = {
        {"--jinja", NULL, 0, "chat templates are always the model's, formatted by lowbit's C formatters"},
        {"-ngl", "--n-gpu-layers", 1, "lowbit runs on the CPU (--device cuda: every layer on the GPU)"},
        {"-fa", "--flash-attn", 2, "lowbit's attention is always the fused kind"},
        {"--mlock", NULL, 0, "the file stays mapped as the kernel pages it"},
        {"--no-mmap", NULL, 0, "the file is mapped, and matrices repacked at load are copies anyway"},
        {"-cb", "--cont-batching", 0, "serve always batches its slots"},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if (!cli_flag(a, flags[i].s1, flags[i].s2)) continue;
        const char *flag = a->argv[a->i];
        if (flags[i].value == 1 && !cli_value(a)) return 1;
        if (flags[i].value == 2 && a->i + 1 < a->argc) {
            const char *v = a->argv[a->i + 1];
            if (!strcmp(v, "on") || !strcmp(v, "off") || !strcmp(v, "auto") || !strcmp(v, "0") || !strcmp(v, "1"))
                a->i++;
        }
        fprintf(stderr, "lowbit %s: note: %s (llama.cpp's) ignored: %s\n", a->cmd, flag, flags[i].why);
        return 1;
    }
    return 0;
}

int cli_common_flag(cli_args *a, cli_common *c) {
    if (compat_flag(a)) return 1;
    if (cli_flag(a, "-m", "--model")) c->model = cli_value(a);
    else if (cli_flag(a, "-t", "--threads")) c->threads = cli_int(a, 1, 1024);
    else if (cli_flag(a, "--isa", NULL)) c->isa = cli_value(a);
    else if (cli_flag(a, "-v", "--verbose")) c->verbose = 1;
    else if (cli_flag(a, "--act-bits", NULL)) c->act_bits = cli_act_bits(a);
    else return 0;
    return 1;
}

int cli_sampler_flag(cli_args *a, lb_sampler_params *sp, int *seed_set) {
    if (cli_flag(a, "--temp", NULL)) sp->temp = (float)cli_float(a, 0, 100);
    else if (cli_flag(a, "--top-k", NULL)) sp->top_k = cli_int(a, 0, 1 << 24);
    else if (cli_flag(a, "--top-p", NULL)) sp->top_p = (float)cli_float(a, 0, 1);
    else if (cli_flag(a, "--min-p", NULL)) sp->min_p = (float)cli_float(a, 0, 1);
    else if (cli_flag(a, "--repeat-penalty", NULL)) sp->repeat_penalty = (float)cli_float(a, 0.01, 100);
    else if (cli_flag(a, "--repeat-last-n", NULL)) sp->repeat_last_n = cli_int(a, 0, 1 << 20);
    else if (cli_flag(a, "-s", "--seed")) { sp->seed = cli_u64(a); *seed_set = 1; }
    else return 0;
    return 1;
}

int cli_cache_type(const char *cmd, const char *flag, const char *v) {
    if (!strcmp(v, "f32")) return LB_TYPE_F32;
    if (!strcmp(v, "f16")) return LB_TYPE_F16;
    if (!strcmp(v, "q8_0")) return LB_TYPE_Q8_0;
    if (!strcmp(v, "q4_0")) return LB_TYPE_Q4_0;
    fprintf(stderr, "lowbit %s: %s %s: the KV cache holds f32, f16, q8_0 or q4_0 (llama.cpp's other quantized "
                    "caches, q4_1, iq4_nl, q5_0 and q5_1, are not supported)\n", cmd, flag, v);
    return -1;
}

int cli_cache_flag(cli_args *a, cli_cache *kv) {
    int *t;
    if (cli_flag(a, "--swa-full", NULL)) return kv->swa_full = 1;
    if (cli_flag(a, "-ctk", "--cache-type-k")) t = &kv->type_k;
    else if (cli_flag(a, "-ctv", "--cache-type-v")) t = &kv->type_v;
    else return 0;
    const char *flag = a->argv[a->i], *v = cli_value(a);
    if (!v) return 1;
    const int type = cli_cache_type(a->cmd, flag, v);
    if (type < 0) a->bad = 1;
    else *t = type;
    return 1;
}

void cli_cache_apply(const cli_cache *kv, lb_context_params *cp) {
    cp->type_k = kv->type_k, cp->type_v = kv->type_v, cp->swa_full = kv->swa_full;
}

int cli_device_flag(cli_args *a, const char **device) {
    if (!cli_flag(a, "--device", NULL)) return 0;
    *device = cli_value(a);
    return 1;
}

int cli_device_apply(const char *cmd, const char *device) {
    if (!device || !strcmp(device, "cpu")) return LB_DEVICE_CPU;
    if (strcmp(device, "cuda")) {
        fprintf(stderr, "lowbit %s: --device %s: expected cpu or cuda\n", cmd, device);
        return -1;
    }
#ifdef LOWBIT_HAVE_CUDA
    if (lb_cuda_device_count() < 1) {
        fprintf(stderr, "lowbit %s: --device cuda: no CUDA device (%s)\n", cmd, lb_cuda_last_error());
        return -1;
    }
    lb_cuda_backend_register();
    lb_repack_set_mode("off");
    return LB_DEVICE_CUDA;
#else
    fprintf(stderr, "lowbit %s: --device cuda: this lowbit was built without the CUDA backend "
                    "(cmake -DLOWBIT_CUDA=ON, with nvcc installed)\n", cmd);
    return -1;
#endif
}

int cli_common_apply(const cli_common *c) {
    if (c->verbose) lb_log_level = 2;
    if (c->isa) {
        int want = lb_isa_from_name(c->isa);
        if (want < 0) {
            fprintf(stderr, "lowbit: --isa %s: expected scalar|avx2|avx512|amx|neon|dotprod|i8mm\n", c->isa);
            return 1;
        }
        lb_isa got = lb_cpu_force_level((lb_isa)want);
        if ((int)got != want)
            fprintf(stderr, "lowbit: --isa %s is not available on this CPU; using %s\n", c->isa, lb_isa_name(got));
    }
    return 0;
}

lb_status cli_load_model(const cli_common *c, lb_model **m) {
    lb_model_params mp = lb_model_default_params();
    mp.n_threads = c->threads;
    mp.verbose = c->verbose;
    mp.act_bits = c->act_bits;
    return lb_model_load(c->model, &mp, m);
}

lb_status cli_tokenize_file(lb_model *m, const char *path, int32_t **toks, int *n_tok) {
    *toks = NULL;
    *n_tok = 0;
    char *text = NULL;
    size_t len;
    lb_status s = lb_read_file(path, &text, &len);
    if (s) return s;
    const int cap = (int)LB_MIN(len + 16, (size_t)1 << 30);
    if (!(*toks = malloc((size_t)cap * sizeof **toks))) s = lb_fail(LB_ERR_NOMEM, "out of memory tokenizing %s", path);
    if (s == LB_OK) s = lb_tokenize(m, text, len, lb_add_bos_default(m), *toks, cap, n_tok);
    free(text);
    if (s) {
        free(*toks);
        *toks = NULL;
    }
    return s;
}

void cli_error(const char *cmd, lb_status s) {
    fprintf(stderr, "lowbit %s: error: %s (%s)\n", cmd, lb_last_error(), lb_status_name(s));
}

static volatile sig_atomic_t sigint_count = 0;
static void on_sigint(int sig) {
    (void)sig;
    lb_request_cancel();
    if (++sigint_count >= 2) {
        /* second Ctrl-C: don't wait for the work to notice */
        lb_outfile_cleanup_all();
        _exit(130);
    }
}

void cli_install_sigint(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void cli_progress(void *user, const char *what, int done, int total) {
    (void)user;
    if (!isatty(2) && done != total && done % 16) return;
    fprintf(stderr, "\r[%4d/%4d] %-60.60s", done, total, what ? what : "");
    if (done == total) fprintf(stderr, "\n");
    fflush(stderr);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(sub, "--version")) {
        printf("lowbit 0.1\n");
        return CLI_OK;
    }
    cli_install_sigint();
    if (!strcmp(sub, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(sub, "chat")) return cmd_chat(argc - 1, argv + 1);
    if (!strcmp(sub, "perplexity")) return cmd_perplexity(argc - 1, argv + 1);
    if (!strcmp(sub, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(sub, "quantize")) return cmd_quantize(argc - 1, argv + 1);
    if (!strcmp(sub, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(sub, "convert")) return cmd_convert(argc - 1, argv + 1);
    if (!strcmp(sub, "codebooks")) return cmd_codebooks(argc - 1, argv + 1);
    if (!strcmp(sub, "imatrix")) return cmd_imatrix(argc - 1, argv + 1);
    if (!strcmp(sub, "calibrate")) return cmd_calibrate(argc - 1, argv + 1);
    if (!strcmp(sub, "tune")) return cmd_tune(argc - 1, argv + 1);
    if (!strcmp(sub, "serve")) return cmd_serve(argc - 1, argv + 1);
    fprintf(stderr, "lowbit: unknown subcommand '%s'\n\n", sub);
    usage(stderr);
    return CLI_USAGE;
}

lb_status cli_chat_template(const char *cmd, const lb_model *m, const char *name, const char *file,
                            lb_chat_template *out) {
    if (!file) return lb_chat_template_of_model(m, name, out);
    char *text = NULL;
    size_t len = 0;
    lb_status s = lb_read_file(file, &text, &len);
    if (!s && strlen(text) != len) s = lb_fail(LB_ERR_FORMAT, "%s holds a NUL byte: not a template", file);
    if (!s) s = lb_chat_template_of_text(m, text, out);
    free(text);
    (void)cmd;
    return s;
}
