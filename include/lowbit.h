/* lowbit: run large language models with 1-8-bit weights on CPUs.
 *
 * Public C API. Every handle is opaque and every fallible call returns an
 * lb_status; on failure lb_last_error() gives a readable message (per thread).
 * The library never calls exit() and never aborts on bad input. */
#ifndef LOWBIT_H
#define LOWBIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    LB_OK = 0,
    LB_ERR_IO,          /* file cannot be opened, read, written or renamed */
    LB_ERR_FORMAT,      /* file contents are malformed or inconsistent */
    LB_ERR_UNSUPPORTED, /* well-formed but not something lowbit handles */
    LB_ERR_NOMEM,       /* allocation failed */
    LB_ERR_ARG,         /* bad argument from the caller */
    LB_ERR_SHAPE,       /* mismatched tensor shapes */
    LB_ERR_INTERRUPTED, /* cancelled by the caller (e.g. Ctrl-C) */
} lb_status;

/* Message of the last failure on this thread (never NULL). */
const char *lb_last_error(void);
const char *lb_status_name(lb_status s);

/* Cancellation: long operations (quantize, convert, perplexity) poll this flag
 * and return LB_ERR_INTERRUPTED, cleaning up partial outputs. Signal-safe. */
void lb_request_cancel(void);
int lb_cancel_requested(void);

/* ---- tensor types (GGUF/ggml type ids; lowbit-only types start at 1000) ---- */
typedef enum {
    LB_TYPE_F32 = 0,
    LB_TYPE_F16 = 1,
    LB_TYPE_Q4_0 = 2,
    LB_TYPE_Q4_1 = 3,
    LB_TYPE_Q5_0 = 6,
    LB_TYPE_Q5_1 = 7,
    LB_TYPE_Q8_0 = 8,
    LB_TYPE_Q8_1 = 9,
    LB_TYPE_Q2_K = 10,
    LB_TYPE_Q3_K = 11,
    LB_TYPE_Q4_K = 12,
    LB_TYPE_Q5_K = 13,
    LB_TYPE_Q6_K = 14,
    LB_TYPE_Q8_K = 15,
    LB_TYPE_IQ4_NL = 20,
    LB_TYPE_IQ4_XS = 23,
    LB_TYPE_I8 = 24,
    LB_TYPE_I16 = 25,
    LB_TYPE_I32 = 26,
    LB_TYPE_I64 = 27,
    LB_TYPE_F64 = 28,
    LB_TYPE_BF16 = 30,
    LB_TYPE_MXFP4 = 39, /* gpt-oss's experts: formats/mxfp4.h */
    LB_TYPE_COUNT_GGML = 40,
    /* lowbit-only: group-wise codebook formats (src/formats/cb.h) */
    LB_TYPE_CB2 = 1010,
    LB_TYPE_CB3 = 1011,
    /* lowbit-only: rows interleaved R at a time in C-byte chunks for the
     * GEMV/GEMM kernels (src/formats/repack.h); need N % R == 0. */
    LB_TYPE_Q4_0_4X4 = 1000,
    LB_TYPE_Q4_0_4X8 = 1001,
    LB_TYPE_Q4_0_8X8 = 1002,
    LB_TYPE_IQ4_NL_4X4 = 1003,
    LB_TYPE_IQ4_NL_4X8 = 1004,
    LB_TYPE_IQ4_NL_8X8 = 1005,
    LB_TYPE_Q8_0_4X4 = 1006,
    LB_TYPE_Q8_0_4X8 = 1007,
    LB_TYPE_Q8_0_8X8 = 1008,
    /* lowbit-only: the 256-weight super-block formats with 16 rows
     * interleaved, one dword per row per vector (src/formats/repack.h) */
    LB_TYPE_Q2_K_16X4 = 1012,
    LB_TYPE_CB2_16X4 = 1013,
    LB_TYPE_CB3_16X4 = 1014,
    /* lowbit-only: the other formats of llama.cpp's K-quant mixes, 16 rows
     * interleaved the same way (src/formats/repack_kx.h) */
    LB_TYPE_Q3_K_16X4 = 1015,
    LB_TYPE_Q4_K_16X4 = 1016,
    LB_TYPE_Q5_K_16X4 = 1017,
    LB_TYPE_Q6_K_16X4_V1 = 1018, /* Q6_K_16X4's first plane order: read only (converted at load) */
    LB_TYPE_IQ4_XS_16X4 = 1019,
    LB_TYPE_Q4_1_16X4 = 1020,
    LB_TYPE_Q5_0_16X4 = 1021,
    LB_TYPE_Q5_1_16X4 = 1022,
    LB_TYPE_Q6_K_16X4 = 1023, /* planes in the order the kernels read them */
    /* lowbit-only: GPTQ's group-wise uniform storage, b bits per weight and
     * one fp16 scale + integer zero point per g weights (src/formats/gq.h) */
    LB_TYPE_GQ4_G128 = 1030,
    LB_TYPE_GQ4_G64 = 1031,
    LB_TYPE_GQ4_G32 = 1032,
    LB_TYPE_GQ4_G16 = 1033,
    LB_TYPE_GQ3_G128 = 1034,
    LB_TYPE_GQ3_G64 = 1035,
    LB_TYPE_GQ3_G32 = 1036,
    LB_TYPE_GQ3_G16 = 1037,
    LB_TYPE_GQ2_G128 = 1038,
    LB_TYPE_GQ2_G64 = 1039,
    LB_TYPE_GQ2_G32 = 1040,
    LB_TYPE_GQ2_G16 = 1041,
    /* lowbit-only: the GQ types with 16 rows interleaved (32-bit words of 16
     * rows side by side, scales and zeros next to them) for the kernels QIGen
     * generates (src/formats/repack_qg.h, src/kernels/qigen.h); repacked at load */
    LB_TYPE_GQ4_G128_QG = 1042,
    LB_TYPE_GQ4_G64_QG = 1043,
    LB_TYPE_GQ4_G32_QG = 1044,
    LB_TYPE_GQ4_G16_QG = 1045,
    LB_TYPE_GQ3_G128_QG = 1046,
    LB_TYPE_GQ3_G64_QG = 1047,
    LB_TYPE_GQ3_G32_QG = 1048,
    LB_TYPE_GQ3_G16_QG = 1049,
    LB_TYPE_GQ2_G128_QG = 1050,
    LB_TYPE_GQ2_G64_QG = 1051,
    LB_TYPE_GQ2_G32_QG = 1052,
    LB_TYPE_GQ2_G16_QG = 1053,
    /* lowbit-only: seed 002's 2/4/16 mixed precision inside one matrix
     * (src/formats/mx.h, docs/mixed.md). A file stores an MX matrix as
     * several tensors: its 2-bit tiles (MX2: 16 rows x 32 columns in 157
     * bytes), its 4-bit tiles (MX4: 296 bytes), a group map and fp16
     * outliers. MX names the loaded matrix (and `quantize`'s target); it is
     * never a tensor type in a file. */
    LB_TYPE_MX2 = 1060,
    LB_TYPE_MX4 = 1061,
    LB_TYPE_MX = 1062,
    /* lowbit-only: GPTQ's whole-column groups (group_size -1, seed 001 eq.
     * (1)): the GQ codes of b bits and one fp16 scale + integer zero per
     * row, kept in a side tensor NAME.gq_sz, F16 [2N] (src/formats/gqc.h) */
    LB_TYPE_GQ4_GC = 1063,
    LB_TYPE_GQ3_GC = 1064,
    LB_TYPE_GQ2_GC = 1065,
    /* lowbit-only: seed 003's extended binary-coding quantization (LUT-GEMM
     * eq. (3)): w = sum_i alpha_i b_i + z, b_i in {-1, +1}, q = 1..4 bit
     * planes and fp16 alpha_i, z per group of g = 128, 64, 32 weights of a
     * row (src/formats/bcq.h, docs/bcq.md) */
    LB_TYPE_BCQ4_G128 = 1066, LB_TYPE_BCQ4_G64 = 1067, LB_TYPE_BCQ4_G32 = 1068,
    LB_TYPE_BCQ3_G128 = 1069, LB_TYPE_BCQ3_G64 = 1070, LB_TYPE_BCQ3_G32 = 1071,
    LB_TYPE_BCQ2_G128 = 1072, LB_TYPE_BCQ2_G64 = 1073, LB_TYPE_BCQ2_G32 = 1074,
    LB_TYPE_BCQ1_G128 = 1075, LB_TYPE_BCQ1_G64 = 1076, LB_TYPE_BCQ1_G32 = 1077,
    /* the same with 16 rows interleaved for the table-lookup kernels
     * (src/formats/bcq.h); repacked at load */
    LB_TYPE_BCQ4_G128_LUT = 1078, LB_TYPE_BCQ4_G64_LUT = 1079, LB_TYPE_BCQ4_G32_LUT = 1080,
    LB_TYPE_BCQ3_G128_LUT = 1081, LB_TYPE_BCQ3_G64_LUT = 1082, LB_TYPE_BCQ3_G32_LUT = 1083,
    LB_TYPE_BCQ2_G128_LUT = 1084, LB_TYPE_BCQ2_G64_LUT = 1085, LB_TYPE_BCQ2_G32_LUT = 1086,
    LB_TYPE_BCQ1_G128_LUT = 1087, LB_TYPE_BCQ1_G64_LUT = 1088, LB_TYPE_BCQ1_G32_LUT = 1089,
    /* lowbit-only activation type of the BCQ kernels: Q8_0 blocks with their
     * 16-entry sign tables (mu = 4); never a weight type */
    LB_TYPE_Q8_0_LUT4 = 1090,
    /* lowbit-only: BCQ with whole-row groups: the planes of q bits and one
     * set of fp16 alpha_i, z per row, kept in a side tensor NAME.bcq_az, F16
     * [(q+1) N] (src/formats/bcqc.h) */
    LB_TYPE_BCQ4_GC = 1091, LB_TYPE_BCQ3_GC = 1092, LB_TYPE_BCQ2_GC = 1093, LB_TYPE_BCQ1_GC = 1094,
    /* ABQ (seed 004, src/formats/abq.h): bit-plane weights, q planes per
     * group of 128 with fp16 scale and integer zero point; ABQ_W2S the
     * balanced 2-bit grid {-2..2}; activations quantized per token to p bits
     * (ABQ_ACT, never a weight type) */
    LB_TYPE_ABQ_ACT = 1100,
    LB_TYPE_ABQ_W1 = 1101, LB_TYPE_ABQ_W2 = 1102, LB_TYPE_ABQ_W3 = 1103, LB_TYPE_ABQ_W4 = 1104,
    LB_TYPE_ABQ_W5 = 1105, LB_TYPE_ABQ_W6 = 1106, LB_TYPE_ABQ_W7 = 1107, LB_TYPE_ABQ_W8 = 1108,
    LB_TYPE_ABQ_W2S = 1109,
    /* their code layouts for the int8 kernels, made at load, never in a file
     * (formats/abq.h): codes in 2 or 4 bits per weight instead of planes */
    LB_TYPE_ABQ_W1_C2 = 1110, LB_TYPE_ABQ_W2_C2 = 1111, LB_TYPE_ABQ_W3_C4 = 1112, LB_TYPE_ABQ_W4_C4 = 1113,
    LB_TYPE_ABQ_W2S_C4 = 1114,
    /* the same codes with 16 rows interleaved for the AVX-512 VNNI decode
     * (formats/abq.h), made at load, never in a file */
    LB_TYPE_ABQ_W1_C2X16 = 1115, LB_TYPE_ABQ_W2_C2X16 = 1116, LB_TYPE_ABQ_W3_C4X16 = 1117,
    LB_TYPE_ABQ_W4_C4X16 = 1118, LB_TYPE_ABQ_W2S_C4X16 = 1119,
    LB_TYPE_ABQ_W3_C3X16 = 1120, LB_TYPE_ABQ_W2S_C3X16 = 1121,
    /* MXFP4's codes in IQ4_NL's block (an fp16 scale, 16 nibble bytes),
     * made from a file's MXFP4 at load, never in a file (formats/mxfp4.h),
     * and its interleaved layouts as IQ4_NL's (formats/repack.h) */
    LB_TYPE_MXFP4_NL = 1122,
    LB_TYPE_MXFP4_NL_4X4 = 1123, LB_TYPE_MXFP4_NL_4X8 = 1124, LB_TYPE_MXFP4_NL_8X8 = 1125,
} lb_type;

const char *lb_type_name(int type);           /* "Q4_0", or NULL if unknown */
int lb_type_from_name(const char *name);       /* -1 if unknown (case-insensitive) */
double lb_type_bits_per_weight(int type);      /* 0 if unknown */

/* ---- models ---- */
typedef struct lb_model lb_model;
typedef struct lb_context lb_context;

typedef struct {
    int n_threads;     /* 0: all cores */
    int verbose;       /* log loading details to stderr */
    int act_bits;      /* ABQ types: activation bits 1..8, or 16: unquantized (fp32); 0: the file's lowbit.abq.act_bits (else 8) */
} lb_model_params;

typedef struct {
    int n_ctx;         /* 0: the model's context length from metadata (per sequence) */
    int n_batch;       /* max tokens per lb_eval call; 0: 512 */
    int n_threads;     /* 0: the model's default */
    int n_seq;         /* sequences with a KV cache of n_ctx positions each (lb_eval_multi); 0: 1 */
    int device;        /* LB_DEVICE_CPU (0), or LB_DEVICE_CUDA: the whole forward pass on the GPU */
    int type_k, type_v; /* KV cache elements: LB_TYPE_F32 (0, the default), LB_TYPE_F16 (half the memory;
                         * llama.cpp's default), LB_TYPE_Q8_0 (17/64 of it: llama.cpp's Q8_0 rounding of
                         * each 32 values of a key or value) or LB_TYPE_Q4_0 (9/64: its Q4_0 rounding);
                         * the CUDA backend keeps F32 */
    int swa_full;       /* 1: sliding-window layers keep every position too (llama.cpp's --swa-full); 0 (the
                         * default): a ring of the window plus a batch (lb_seq_reusable) */
} lb_context_params;

/* Where a context runs its forward pass. LB_DEVICE_CUDA needs a build with
 * -DLOWBIT_CUDA=ON whose program called lb_cuda_backend_register (the CLI
 * does), a GPU, and a model loaded with repacking off (LOWBIT_REPACK=off or
 * lb_repack_set_mode("off"): the GPU takes the file's layouts). */
enum { LB_DEVICE_CPU = 0, LB_DEVICE_CUDA = 1 };

lb_model_params lb_model_default_params(void);
lb_context_params lb_context_default_params(void);

lb_status lb_model_load(const char *path, const lb_model_params *params, lb_model **out);
void lb_model_free(lb_model *model);

/* Shapes known to `lowbit bench --synthetic`: random weights of `type`. */
lb_status lb_model_synthetic(const char *shape, int type, const lb_model_params *params,
                             lb_model **out);
const char *const *lb_synthetic_shapes(void); /* NULL-terminated */

int lb_model_n_vocab(const lb_model *m);
int lb_model_n_ctx_train(const lb_model *m);
int lb_model_n_embd(const lb_model *m);
int lb_model_n_layer(const lb_model *m);
int64_t lb_model_n_params(const lb_model *m);  /* every tensor of the file, as llama.cpp counts */
uint64_t lb_model_size_bytes(const lb_model *m);   /* bytes of every tensor in the file (llama_model_size) */
const char *lb_model_arch(const lb_model *m);
const char *lb_model_desc(const lb_model *m);       /* e.g. "llama 260K Q8_0" */
/* Which kernel serves each weight type, one line per type. */
const char *lb_model_kernel_summary(const lb_model *m);

lb_status lb_context_new(lb_model *model, const lb_context_params *params, lb_context **out);
void lb_context_free(lb_context *ctx);
int lb_context_n_ctx(const lb_context *ctx);
int lb_context_threads(const lb_context *ctx);
/* Bytes of the KV cache (every sequence and layer, in the CPU's layout;
 * the CUDA backend's is close), and a line describing it: "KV cache: 4096
 * positions x 1 sequence, K f16, V f16, 88.0 MiB" */
uint64_t lb_context_kv_bytes(const lb_context *ctx);
const char *lb_context_kv_desc(const lb_context *ctx);
void lb_context_reset(lb_context *ctx); /* forget the KV cache */

/* Evaluate n tokens at positions pos..pos+n-1 (the KV cache must hold 0..pos-1;
 * pos below what was evaluated: see lb_seq_reusable).
 * logits: if all_logits, n * n_vocab floats, else n_vocab floats for the last token.
 * logits may be NULL. n may exceed n_batch: the call splits it. */
lb_status lb_eval(lb_context *ctx, const int32_t *tokens, int n, int pos, float *logits,
                  int all_logits);

/* Several sequences in one forward pass (continuous batching): each entry is
 * n tokens of sequence seq (0..n_seq-1, each at most once) at positions
 * pos..pos+n-1, attending to that sequence's own KV cache (which must hold
 * 0..pos-1). The matmuls see all the tokens as one batch: the total must be
 * <= n_batch. logits: n_vocab floats for the last token of every entry with
 * `logits` set (LB_LOGITS_ALL: for each of its n tokens), in entry order (may
 * be NULL if none is). */
enum { LB_LOGITS_ALL = 2 };
typedef struct {
    int seq, pos, n;
    const int32_t *tokens;
    int logits;
} lb_seq_batch;
lb_status lb_eval_multi(lb_context *ctx, const lb_seq_batch *batch, int n_entries, float *logits);

/* Copies what sequence src's KV cache holds for positions 0..n-1 to sequence
 * dst (a prompt prefix evaluated once, shared: llama.cpp's
 * llama_kv_cache_seq_cp). dst's positions from n on are undefined after it:
 * evaluate them before attending to them. src == dst or n == 0 does nothing. */
lb_status lb_seq_copy(lb_context *ctx, int src, int dst, int n);

/* Evaluation of sequence seq may go on from position n (n <= what its cache
 * holds, e.g. the prefix a new prompt shares with it): returns n, or 0 when
 * it must start over. A model with sliding-window layers keeps their keys in
 * a ring of the window plus a batch (lb_context_kv_desc says so), so a
 * sequence that has gone on more than that past n has lost the keys
 * position n sees; lb_eval, lb_eval_multi and lb_seq_copy refuse such an n
 * (LB_ERR_ARG). Without such layers, n. */
int lb_seq_reusable(const lb_context *ctx, int seq, int n);

/* ---- tokenizer (from the model's GGUF metadata) ---- */
int lb_token_bos(const lb_model *m); /* -1 if none */
int lb_token_eos(const lb_model *m);
int lb_add_bos_default(const lb_model *m);
int lb_token_is_eog(const lb_model *m, int32_t token); /* end of generation */
int lb_model_has_vocab(const lb_model *m);
/* The fill-in-the-middle tokens (prefix, suffix, middle) by their texts in
 * the code models' spellings (<|fim_prefix|>, <fim_prefix>, <PRE>, ...);
 * LB_ERR_UNSUPPORTED when the vocabulary has none. */
lb_status lb_token_fim(const lb_model *m, int32_t ids[3]);
/* Writes up to cap ids; *n_out gets the full count (call again if > cap). */
lb_status lb_tokenize(const lb_model *m, const char *text, size_t len, int add_bos, int32_t *out,
                      int cap, int *n_out);
/* The bytes of one token as it appears in text (byte tokens decoded, SPM
 * "▁" turned into a space). Returned pointer valid until the next call on
 * this thread. */
const char *lb_token_to_piece(const lb_model *m, int32_t token, size_t *len);

/* ---- sampling ---- */
typedef struct {
    float temp;            /* <= 0: greedy */
    int top_k;             /* <= 0: off */
    float top_p;           /* >= 1: off */
    float min_p;           /* <= 0: off */
    float repeat_penalty;  /* 1: off */
    int repeat_last_n;     /* how many recent tokens the penalties look at */
    uint64_t seed;
    /* OpenAI's penalties over the same recent tokens: a token seen c times
     * loses c * frequency_penalty + (c > 0) * presence_penalty (0: off) */
    float presence_penalty, frequency_penalty;
} lb_sampler_params;

typedef struct lb_sampler lb_sampler;
lb_sampler_params lb_sampler_default_params(void);
lb_status lb_sampler_new(const lb_sampler_params *p, int n_vocab, lb_sampler **out);
void lb_sampler_free(lb_sampler *s);
void lb_sampler_accept(lb_sampler *s, int32_t token); /* for the repetition penalty */
int32_t lb_sampler_sample(lb_sampler *s, const float *logits);

/* ---- grammar-constrained sampling (src/grammar/, docs/grammar.md) ----
 * A grammar in GBNF, llama.cpp's notation (root rule "root"), over model m's
 * vocabulary: only tokens whose text keeps the output a prefix of a sentence
 * of the grammar are drawn, and end-of-generation only once it is whole. */
typedef struct lb_grammar lb_grammar;
lb_status lb_grammar_new(const lb_model *m, const char *gbnf, lb_grammar **out);
void lb_grammar_free(lb_grammar *g);
int lb_grammar_allows(lb_grammar *g, int32_t token);
/* Moves past a generated token (LB_ERR_ARG if the grammar refuses it). */
lb_status lb_grammar_accept(lb_grammar *g, int32_t token);
/* 0: the text so far is not a whole sentence; 1: it is, and may go on; 2: it
 * is, and nothing may follow. */
int lb_grammar_complete(lb_grammar *g);
/* lb_sampler_sample from the tokens g allows (g NULL: no constraint). When
 * g allows none, an end-of-generation token (-1 if the model has none). */
int32_t lb_sampler_sample_grammar(lb_sampler *s, const float *logits, lb_grammar *g);
/* GBNF for any JSON value (object_only: a JSON object at the top, what
 * OpenAI's response_format json_object asks for). Static text. */
const char *lb_grammar_json(int object_only);
/* GBNF for the JSON values a JSON Schema allows (the subset docs/grammar.md
 * lists; other keywords are refused with LB_ERR_UNSUPPORTED, naming them).
 * *gbnf is malloc'd. */
lb_status lb_json_schema_to_grammar(const char *schema, size_t len, char **gbnf);

/* ---- file tools ---- */
typedef void (*lb_progress_fn)(void *user, const char *what, int done, int total);

lb_status lb_convert_llama2c(const char *model_bin, const char *tokenizer_bin, const char *out_gguf,
                             int out_type, lb_progress_fn progress, void *user);
lb_status lb_convert_hf(const char *hf_dir, const char *out_gguf, int out_type,
                        lb_progress_fn progress, void *user);
/* GPTQ checkpoints (AutoGPTQ / GPTQModel: qweight, qzeros, scales, g_idx)
 * keep their codes as GQ{b}_G{g} tensors (group_size -1: GQ{b}_GC and its
 * NAME.gq_sz), whatever out_type says; matrices no GQ type holds
 * (act-order g_idx with groups, 8 bits, ...) are refused
 * unless gptq_dequantize, which writes every GPTQ matrix as out_type floats
 * instead (exact with F32). docs/gptq-import.md. */
typedef struct {
    int out_type;            /* F32, F16, BF16, Q8_0 or Q4_0 */
    int gptq_dequantize;
} lb_convert_hf_options;
lb_status lb_convert_hf_ex(const char *hf_dir, const char *out_gguf, const lb_convert_hf_options *o,
                           lb_progress_fn progress, void *user);

typedef struct {
    int type;                /* target type for the big matrices */
    int n_threads;
    lb_progress_fn progress;
    void *user;
} lb_quantize_params;

typedef struct {
    int64_t n_params;
    uint64_t bytes_in, bytes_out;
    double bpw_out;          /* bits per weight of all tensors in the output */
    int n_tensors, n_quantized, n_fallback; /* fallback: kept a wider type */
    int n_own_type;          /* of n_quantized: the embedding and head, sent to their own types */
    int n_gptq;              /* matrices rounded with GPTQ (lb_quantize_options.gptq) */
    /* MX (type LB_TYPE_MX): its matrices, the bits per weight they store
     * (tiles, group maps, outliers with row pointers) and eq. (10)'s figure
     * for them (seed 002: 2-bit share, outliers at 32 bits) */
    int n_mx;
    double mx_bpw, mx_bpw_eq10;
    /* the layer matrices (blk.N.*, 2-D) alone: embedding and head apart */
    double layer_bpw;
    /* --from-uniform (BCQ): matrices converted from a uniform type, their
     * groups, and the groups whose z is not an fp16 (rounded, not exact) */
    int n_from_uniform;
    int64_t uniform_groups, uniform_inexact;
    int n_smooth_groups;     /* --smooth-alpha: groups whose balance vector was folded in */
    int n_search_layers;     /* abq_search: layers calibrated */
    int search_chunks;       /* abq_search: chunks of calibration text used */
    double search_obj_default, search_obj_best; /* abq_search: its objective, summed over layers */
    double search_akl_default, search_akl_best; /* abq_search with abq_akl: eq. (4), summed over layers */
    int n_search_down_raised; /* abq_search with abq_down_bits: layers whose ffn_down input was raised */
    int n_search_dc;          /* abq_search with abq_dc: layers that kept the correction */
} lb_quantize_stats;

lb_status lb_quantize_file(const char *in_gguf, const char *out_gguf, const lb_quantize_params *p,
                           lb_quantize_stats *stats);

/* Options of the codebook formats and of importance-weighted quantization. */
typedef struct {
    /* CB2 / CB3: a GGUF holding lowbit.codebooks.* (`lowbit codebooks`);
     * NULL: the codebooks are discovered from the input model */
    const char *codebooks;
    int cb_count;            /* books when discovering: 4, 8 or 16 (0: 8) */
    uint64_t cb_seed;        /* seed when discovering */
    /* importance matrix from `lowbit imatrix` (NULL: none); used by CB2,
     * CB3, Q2_K and Q3_K */
    const char *imatrix;
    /* GPTQ: a calibration file from `lowbit calibrate` (NULL: none). Every
     * matrix with a Hessian there is rounded with GPTQ's error feedback onto
     * the output type's grid (model/gptq.h); the rest quantize as usual */
    const char *gptq;
    float gptq_damp;         /* dampening, a fraction of the mean diagonal (0: per matrix, 0.1 for types of
                              * >= 3 bits per weight, 0.01 below) */
    int gptq_act_order;      /* columns in descending Hessian diagonal, static groups */
    int gptq_block;          /* lazy-batch columns (0: 128) */
    int gptq_refit;          /* after GPTQ, each row's group scales refit by least squares on the layer's
                              * output error, the codes kept (GQ types, Q4_0, Q5_0, Q8_0, IQ4_NL; docs/gptq.md) */
    int sym;                 /* GQ types: symmetric groups, z = 2^(b-1) (rounding and GPTQ) */
    /* The embedding's and the output head's types, as llama-quantize's
     * --token-embedding-type / --output-tensor-type, when *_set (else: the
     * target type; with MX: Q4_K for the embedding, Q6_K for the head and
     * for a tied embedding, which is the head too) */
    int token_embd_type_set, token_embd_type, output_type_set, output_type;
    /* MX: with mx_set, the share of each matrix's 32-column groups in 4 bits
     * and the share of its weights kept as fp16 outliers (else 0.25, 0.002) */
    int mx_set;
    float mx_hi, mx_outliers;
    /* MX: which groups take 4 bits: 0, by eq. (9) with the Hessian of gptq,
     * else by their 2-bit tiles' error (importance-weighted by the imatrix);
     * 2: by that error with the Hessian too (diag H weighting it) */
    int mx_rank;
    /* BCQ types (docs/bcq.md): from_uniform converts uniform q-bit inputs
     * (GQ{q}_G*, Q4_0, Q4_1) to BCQ exactly (LUT-GEMM App. C) instead of
     * re-quantizing; bcq_iters: the quantizer's alternating iterations
     * (0: the default, 8; < 0: none, the starts only) */
    int from_uniform;
    int bcq_iters;
    /* ABQ types (docs/abq.md): the activation bits stored as the file's
     * default, lowbit.abq.act_bits (1..8, or 16: unquantized; 0: 8); act_bits_down, when set,
     * ffn_down's (lowbit.abq.act_bits_ffn_down: seed 004 finds its input the
     * most sensitive) */
    int act_bits;
    int act_bits_down;
    /* SmoothQuant's balance vectors (ABQ's initialisation, docs/abq.md) folded
     * into attn_norm, ffn_norm, ffn_up's rows and the matrices reading them, with
     * smooth_set: s_j = rms(X_j)^alpha / max|W_j|^(1 - alpha), rms from the
     * imatrix (required) */
    int smooth_set;
    float smooth_alpha;
    /* ABQ types: the block-wise calibration search (model/abq_search.h,
     * docs/abq.md) on the text in the file abq_search (NULL: none), in
     * abq_search_chunks chunks (0: 8) of abq_search_ctx tokens (0: 512):
     * per layer a smoothing alpha and a clipping cap chosen on the block
     * output's error, stored as lowbit.abq.search_alpha / search_clip */
    const char *abq_search;
    int abq_search_chunks;
    int abq_search_ctx;
    /* ABQ search: a per-layer p for ffn_down's input. With abq_down_bits
     * above ffn_down's bits (act_bits_down, else act_bits), each layer keeps
     * ffn_down's input at abq_down_bits where that lowers its eq. (2) by at
     * least abq_down_gain of it (with abq_down_gain_set; else 0.05), stored
     * as lowbit.abq.act_bits_ffn_down_layers (one per layer); 0: off */
    int abq_down_bits;
    int abq_down_gain_set;
    float abq_down_gain;
    /* ABQ search: eq. (5), the objective plus abq_akl times eq. (4), the
     * symmetric KL between the block's quantized and fp attention maps;
     * 0: eq. (2) alone */
    float abq_akl;
    /* ABQ search: eq. (3)'s distribution-correction vectors on every
     * layer's ffn_down (W + gamma a b^T, a and b fitted to the block's
     * output error, gamma in {1, 0.5} kept where it lowers the objective),
     * stored as lowbit.abq.search_dc (gamma per layer, 0: none); abq_dc_ridge
     * the fit's ridge (0: 10). 0: off */
    int abq_dc;
    float abq_dc_ridge;
    /* ABQ search: smoothing also for attn_output's input, carried by
     * attn_v's rows and bias, one scale per KV head's column (GQA); stored
     * as lowbit.abq.search_smooth_vo = 1. 0: off */
    int abq_smooth_vo;
} lb_quantize_options;

/* lb_quantize_file with options (o may be NULL). */
lb_status lb_quantize_file_ex(const char *in_gguf, const char *out_gguf, const lb_quantize_params *p,
                              const lb_quantize_options *o, lb_quantize_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
