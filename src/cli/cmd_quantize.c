/* lowbit quantize IN.gguf OUT.gguf TYPE */
#include <string.h>

#include "cli/cli.h"
#include "core/common.h"
#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/gq.h"
#include "formats/gc.h"
#include "formats/grid.h"
#include "formats/repack.h"
#include "formats/types.h"

static void help(void) {
    printf("usage: lowbit quantize [options] IN.gguf OUT.gguf TYPE\n\n"
           "Converts every weight matrix to TYPE; norms and vectors stay as they are.\n"
           "Matrices whose row length is not a multiple of TYPE's block keep a wider type.\n\n"
           "  -t, --threads N   threads (default: all cores)\n"
           "  -v, --verbose     more logging (e.g. each matrix's GPTQ scale refit)\n"
           "  -h, --help        this help\n"
           "      --imatrix F   importance matrix from lowbit imatrix (CB2, CB3, Q2_K, Q3_K, IQ4_XS use it)\n"
           "      --codebooks F CB2/CB3: codebooks from lowbit codebooks (default: discover them\n"
           "                    from IN, with --count N books (4, 8, 16; default 8) and --seed S)\n"
           "      --gptq F      GPTQ: round every matrix with a Hessian in F (lowbit calibrate) with\n"
           "                    GPTQ's error feedback onto TYPE's grid (same file format, better weights)\n"
           "      --damp X      GPTQ dampening, a fraction of the mean Hessian diagonal (default: 0.1\n"
           "                    for types of 3 bits per weight or more, 0.01 below)\n"
           "      --act-order   GPTQ: columns in descending Hessian diagonal (static groups)\n"
           "      --gptq-block N  GPTQ lazy-batch columns (default 128)\n"
           "      --gptq-refit  after GPTQ, refit each row's group scales to the layer's output error with\n"
           "                    the codes kept (least squares; GQ types, Q4_0, Q5_0, Q8_0, IQ4_NL)\n"
           "      --sym         GQ types (GC too): symmetric groups (zero point 2^(b-1)), plain or with --gptq\n"
           "      --token-embedding-type T  the embedding's type (default: TYPE; MX: Q4_K, or Q6_K when\n"
           "                    it is also the output head)\n"
           "      --output-tensor-type T    the output head's type (default: TYPE; MX: Q6_K)\n"
           "      --mx-hi F     MX: share of each matrix's 32-column groups in 4 bits (default 0.25)\n"
           "      --mx-outliers F  MX: share of weights kept as fp16 outliers (default 0.002)\n"
           "      --mx-rank R   MX: groups for 4 bits by eq9 (with --gptq's Hessian; the default) or by\n"
           "                    error (their 2-bit tiles' error; the default without a Hessian)\n"
           "      --from-uniform  BCQ types: convert uniform inputs of as many bits (GQ{q}_G{g} with g a\n"
           "                    multiple of the BCQ group; Q4_0, Q4_1 for BCQ4_G32; GQ{q}_GC for BCQ{q}_GC)\n"
           "                    exactly (LUT-GEMM App. C)\n"
           "      --bcq-iters N BCQ: alternating least-squares iterations after the greedy and uniform\n"
           "                    starts (default 8; 0: the starts only)\n"
           "      --act-bits P  ABQ types: the activation bits (1..8, default 8; 16: unquantized, WqA16) stored as the file's\n"
           "                    default (lowbit.abq.act_bits); run / perplexity / bench --act-bits override it\n"
           "      --act-bits-down P  ABQ types: ffn_down's input at P bits instead (its input, after the\n"
           "                    gated activation, is the one seed 004 finds most sensitive)\n"
           "      --smooth-alpha A  SmoothQuant's balance vectors (0..1), folded into attn_norm, ffn_norm and\n"
           "                    ffn_up's rows (for ffn_down) and the matrices reading them: s_j = rms(X_j)^A /\n"
           "                    max|W_j|^(1-A), rms from --imatrix (needed); any output type, meant for the ABQ\n"
           "                    types' p-bit activations\n"
           "      --abq-search TEXT  ABQ types: per layer, choose the smoothing alpha (none, 0.25, 0.5, 0.75)\n"
           "                    and the clipping cap (1, 0.95, 0.9, 0.85) that minimise the block output's\n"
           "                    error (seed 004's eq. (2)) on TEXT, greedily layer by layer (IN: F32/F16/BF16);\n"
           "                    the choices go to lowbit.abq.search_alpha / search_clip (info prints them)\n"
           "      --abq-search-chunks N  chunks of -c tokens of TEXT to calibrate on (default 8)\n"
           "      --abq-down-bits P  --abq-search: per layer, ffn_down's input at P bits where that lowers\n"
           "                    the layer's eq. (2) by at least --abq-down-gain F of it (default 0.05), else\n"
           "                    at --act-bits-down / --act-bits (lowbit.abq.act_bits_ffn_down_layers)\n"
           "      --abq-akl W   --abq-search: seed 004's eq. (5), the objective plus W times the symmetric KL\n"
           "                    between the block's quantized and fp attention maps (eq. (4); default 0: off)\n"
           "      --abq-dc      --abq-search: seed 004's distribution correction (eq. (3)): each layer's ffn_down\n"
           "                    quantized as W + gamma a b^T, a and b fitted to the block's output error,\n"
           "                    kept where that lowers the objective (lowbit.abq.search_dc: gamma per layer)\n"
           "      --abq-smooth-vo  --abq-search: smooth attn_output's input too, its 1/s carried by attn_v's\n"
           "                    rows and bias, one scale per KV head's channel (GQA)\n"
           "      --abq-dc-ridge R  --abq-dc: the fit's ridge, a share of the inputs' mean square (default 10)\n"
           "  -c, --ctx-size N  --abq-search: tokens per chunk (default 512)\n\n"
           "MX (seed 002, docs/mixed.md) keeps in every layer matrix the most sensitive groups\n"
           "(eq. 9: by the Hessian of --gptq's file, else --imatrix, else w^2) in 4 bits, the rest\n"
           "in 2 bits with 4-bit second-order scales, and a few fp16 outliers; with --gptq the\n"
           "weights are rounded with GPTQ's error feedback. The embedding and head take the types above.\n\n"
           "GQ4_GC, GQ3_GC, GQ2_GC (GPTQ's group_size -1, docs/gq.md) keep one scale and zero point\n"
           "per row, in a side tensor NAME.gq_sz (F16, 2 values per row) beside each matrix.\n"
           "BCQ4_GC .. BCQ1_GC: BCQ with one group per row, its q alphas and z in NAME.bcq_az\n"
           "(F16, q + 1 values per row); run as BCQ{q}_G128 (docs/bcq.md).\n\n"
           "BCQ{q}_G{g} (seed 003, docs/bcq.md): w = sum_i alpha_i b_i + z per group of g, b_i = +-1,\n"
           "q bit planes, fp16 alpha_i and z; --imatrix and --gptq weight its quantizer.\n\n"
           "ABQ_W{q} (seed 004, docs/abq.md): q bit planes per group of 128, fp16 scale and integer zero\n"
           "point; ABQ_W2S the balanced grid {-2..2} in 3 planes; activations quantized per token to P bits\n"
           "(--act-bits), the matmul a sum of plane popcounts; --imatrix weights the clipping search.\n\n"
           "types: MX (2/4/16-bit mixed, ~2.9-3.1 bpw)");
    const int types[] = {LB_TYPE_F32, LB_TYPE_F16, LB_TYPE_BF16, LB_TYPE_Q8_0, LB_TYPE_Q4_0, LB_TYPE_Q4_1,
                         LB_TYPE_Q5_0, LB_TYPE_Q5_1, LB_TYPE_IQ4_NL, LB_TYPE_IQ4_XS, LB_TYPE_MXFP4,
                         LB_TYPE_Q2_K, LB_TYPE_Q3_K, LB_TYPE_Q4_K, LB_TYPE_Q5_K, LB_TYPE_Q6_K,
                         LB_TYPE_Q4_0_4X4, LB_TYPE_Q4_0_4X8, LB_TYPE_Q4_0_8X8, LB_TYPE_IQ4_NL_4X4,
                         LB_TYPE_IQ4_NL_4X8, LB_TYPE_IQ4_NL_8X8, LB_TYPE_Q8_0_4X4, LB_TYPE_Q8_0_4X8,
                         LB_TYPE_Q8_0_8X8, LB_TYPE_CB2, LB_TYPE_CB3, LB_TYPE_Q2_K_16X4, LB_TYPE_CB2_16X4,
                         LB_TYPE_CB3_16X4, LB_TYPE_Q3_K_16X4, LB_TYPE_Q4_K_16X4, LB_TYPE_Q5_K_16X4,
                         LB_TYPE_Q6_K_16X4, LB_TYPE_IQ4_XS_16X4, LB_TYPE_Q4_1_16X4, LB_TYPE_Q5_0_16X4,
                         LB_TYPE_Q5_1_16X4, LB_TYPE_GQ4_G128, LB_TYPE_GQ4_G64, LB_TYPE_GQ4_G32, LB_TYPE_GQ4_G16,
                         LB_TYPE_GQ3_G128, LB_TYPE_GQ3_G64, LB_TYPE_GQ3_G32, LB_TYPE_GQ3_G16, LB_TYPE_GQ2_G128,
                         LB_TYPE_GQ2_G64, LB_TYPE_GQ2_G32, LB_TYPE_GQ2_G16, LB_TYPE_GQ4_GC, LB_TYPE_GQ3_GC,
                         LB_TYPE_GQ2_GC, LB_TYPE_BCQ4_GC, LB_TYPE_BCQ3_GC, LB_TYPE_BCQ2_GC, LB_TYPE_BCQ1_GC,
#define BCQ_HELP(name, NAME, Q, G) LB_TYPE_##NAME,
                         LB_BCQ_LIST(BCQ_HELP)
#undef BCQ_HELP
#define ABQ_HELP(name, NAME, Q) LB_TYPE_##NAME,
                         LB_ABQ_LIST(ABQ_HELP)
#undef ABQ_HELP
                         };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const lb_type_traits *t = lb_traits(types[i]);
        if (t && lb_gc_is(types[i]))
            printf(" %s (%d bpw + %d bits per row)", t->name, lb_gc_bits(types[i]), 16 * lb_gc_side_n(types[i]));
        else if (t && lb_traits(lb_type_base(types[i]))->from_float) printf(" %s (%.2f bpw)", t->name, lb_type_bits_per_weight(types[i]));
    }
    printf("\n");
}

int cmd_quantize(int argc, char **argv) {
    cli_args a = {argc, 1, argv, "quantize", 0};
    const char *pos[3] = {0};
    int n_pos = 0, threads = 0, bcq_iters = -2;
    lb_quantize_options opt = {0};
    const char *embd_name = NULL, *out_name = NULL;
    opt.mx_hi = 0.25f, opt.mx_outliers = 0.002f; /* the defaults, for a flag given alone */
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_flag(&a, "-t", "--threads")) threads = cli_int(&a, 1, 1024);
        else if (cli_flag(&a, "-v", "--verbose")) lb_log_level = 2;
        else if (cli_flag(&a, "--imatrix", NULL)) opt.imatrix = cli_value(&a);
        else if (cli_flag(&a, "--codebooks", NULL)) opt.codebooks = cli_value(&a);
        else if (cli_flag(&a, "--count", NULL)) opt.cb_count = cli_int(&a, 4, 16);
        else if (cli_flag(&a, "--seed", NULL)) opt.cb_seed = cli_u64(&a);
        else if (cli_flag(&a, "--gptq", NULL)) opt.gptq = cli_value(&a);
        else if (cli_flag(&a, "--damp", NULL)) opt.gptq_damp = cli_float(&a, 1e-6f, 10.0f);
        else if (cli_flag(&a, "--act-order", NULL)) opt.gptq_act_order = 1;
        else if (cli_flag(&a, "--sym", NULL)) opt.sym = 1;
        else if (cli_flag(&a, "--gptq-block", NULL)) opt.gptq_block = cli_int(&a, 16, 4096);
        else if (cli_flag(&a, "--gptq-refit", NULL)) opt.gptq_refit = 1;
        else if (cli_flag(&a, "--token-embedding-type", NULL)) embd_name = cli_value(&a);
        else if (cli_flag(&a, "--output-tensor-type", NULL)) out_name = cli_value(&a);
        else if (cli_flag(&a, "--mx-hi", NULL)) opt.mx_set = 1, opt.mx_hi = (float)cli_float(&a, 0.0, 1.0);
        else if (cli_flag(&a, "--mx-outliers", NULL)) opt.mx_set = 1, opt.mx_outliers = (float)cli_float(&a, 0.0, 0.5);
        else if (cli_flag(&a, "--mx-rank", NULL)) {
            const char *v = cli_value(&a);
            if (v && !strcmp(v, "eq9")) opt.mx_rank = 0;
            else if (v && !strcmp(v, "error")) opt.mx_rank = 2;
            else if (v) { fprintf(stderr, "lowbit quantize: --mx-rank wants eq9 or error, not '%s'\n", v); a.bad = 1; }
        }
        else if (cli_flag(&a, "--from-uniform", NULL)) opt.from_uniform = 1;
        else if (cli_flag(&a, "--bcq-iters", NULL)) bcq_iters = cli_int(&a, 0, 1000);
        else if (cli_flag(&a, "--act-bits", NULL)) opt.act_bits = cli_act_bits(&a);
        else if (cli_flag(&a, "--act-bits-down", NULL)) opt.act_bits_down = cli_act_bits(&a);
        else if (cli_flag(&a, "--smooth-alpha", NULL)) opt.smooth_set = 1, opt.smooth_alpha = (float)cli_float(&a, 0.0, 1.0);
        else if (cli_flag(&a, "--abq-search", NULL)) opt.abq_search = cli_value(&a);
        else if (cli_flag(&a, "--abq-search-chunks", NULL)) opt.abq_search_chunks = cli_int(&a, 1, 100000);
        else if (cli_flag(&a, "--abq-down-bits", NULL)) opt.abq_down_bits = cli_int(&a, 2, 8);
        else if (cli_flag(&a, "--abq-akl", NULL)) opt.abq_akl = (float)cli_float(&a, 0.0, 100.0);
        else if (cli_flag(&a, "--abq-dc", NULL)) opt.abq_dc = 1;
        else if (cli_flag(&a, "--abq-smooth-vo", NULL)) opt.abq_smooth_vo = 1;
        else if (cli_flag(&a, "--abq-dc-ridge", NULL)) opt.abq_dc_ridge = (float)cli_float(&a, 1e-6, 1e6);
        else if (cli_flag(&a, "--abq-down-gain", NULL)) opt.abq_down_gain_set = 1, opt.abq_down_gain = (float)cli_float(&a, 0.0, 0.99);
        else if (cli_flag(&a, "-c", "--ctx-size")) opt.abq_search_ctx = cli_int(&a, 2, 1 << 20);
        else if (argv[a.i][0] == '-' && argv[a.i][1]) cli_unknown(&a);
        else if (n_pos < 3) pos[n_pos++] = argv[a.i];
        else { fprintf(stderr, "lowbit quantize: unexpected argument '%s'\n", argv[a.i]); a.bad = 1; }
    }
    if (a.bad) return CLI_USAGE;
    if (n_pos != 3) { fprintf(stderr, "lowbit quantize: expected IN.gguf OUT.gguf TYPE (see --help)\n"); return CLI_USAGE; }
    int type = lb_type_from_name(pos[2]);
    if (type < 0 || (type != LB_TYPE_MX && !lb_gc_is(type) && !lb_traits(lb_type_base(type))->from_float)) { /* interleaved: via the base type */
        fprintf(stderr, "lowbit quantize: unknown or unsupported type '%s' (see --help)\n", pos[2]);
        return CLI_USAGE;
    }
    if (type == LB_TYPE_Q6_K_16X4_V1) {
        fprintf(stderr, "lowbit quantize: %s is the older Q6_K_16X4 plane order, read only (loads convert it): "
                        "write Q6_K_16X4\n", pos[2]);
        return CLI_USAGE;
    }
    if (opt.sym && !lb_gq_bits(lb_type_base(type)) && !lb_gqc_bits(type)) {
        fprintf(stderr, "lowbit quantize: --sym applies to the GQ types only (%s has one fixed convention)\n", pos[2]);
        return CLI_USAGE;
    }
    const lb_grid *grid = type == LB_TYPE_MX || lb_gc_is(type) ? NULL : lb_grid_get(lb_type_base(type));
    if (opt.gptq_refit && (!opt.gptq || !grid || !grid->codes)) {
        fprintf(stderr,
                "lowbit quantize: --gptq-refit needs --gptq and a type with one scale per group (GQ types, Q4_0, Q5_0, "
                "Q8_0, IQ4_NL), not %s%s\n",
                pos[2], opt.gptq ? "" : " without --gptq");
        return CLI_USAGE;
    }
    const char *names[2] = {embd_name, out_name};
    int *dst[2] = {&opt.token_embd_type, &opt.output_type}, *set[2] = {&opt.token_embd_type_set, &opt.output_type_set};
    for (int i = 0; i < 2; i++) {
        if (!names[i]) continue;
        const int t = lb_type_from_name(names[i]);
        if (t < 0 || t == LB_TYPE_MX || (!lb_traits(lb_type_base(t))->from_float && !lb_gc_is(t)) || lb_type_base(t) != t) {
            fprintf(stderr, "lowbit quantize: --%s: unknown or unsupported type '%s' (a plain type: F16, Q4_K, Q6_K, ...)\n",
                    i ? "output-tensor-type" : "token-embedding-type", names[i]);
            return CLI_USAGE;
        }
        *dst[i] = t, *set[i] = 1;
    }
    if ((opt.from_uniform || bcq_iters != -2) && !lb_bcq_bits(type) && !lb_bcqc_bits(type)) {
        fprintf(stderr, "lowbit quantize: --from-uniform and --bcq-iters apply to the BCQ types only\n");
        return CLI_USAGE;
    }
    if ((opt.act_bits || opt.act_bits_down) && !lb_abq_bits(type)) {
        fprintf(stderr, "lowbit quantize: %s applies to the ABQ types only\n", opt.act_bits ? "--act-bits" : "--act-bits-down");
        return CLI_USAGE;
    }
    if ((opt.abq_search || opt.abq_search_chunks || opt.abq_search_ctx) && !lb_abq_bits(type)) {
        fprintf(stderr, "lowbit quantize: --abq-search applies to the ABQ types only, not %s\n", pos[2]);
        return CLI_USAGE;
    }
    if ((opt.abq_search_chunks || opt.abq_search_ctx || opt.abq_down_bits || opt.abq_down_gain_set || opt.abq_akl ||
         opt.abq_dc || opt.abq_smooth_vo) && !opt.abq_search) {
        fprintf(stderr, "lowbit quantize: --abq-search-chunks, --abq-down-bits, --abq-down-gain, --abq-akl, --abq-dc, "
                        "--abq-smooth-vo and -c go with --abq-search TEXT\n");
        return CLI_USAGE;
    }
    if (opt.abq_dc_ridge > 0.0f && !opt.abq_dc) {
        fprintf(stderr, "lowbit quantize: --abq-dc-ridge goes with --abq-dc\n");
        return CLI_USAGE;
    }
    if (opt.abq_down_gain_set && !opt.abq_down_bits) {
        fprintf(stderr, "lowbit quantize: --abq-down-gain goes with --abq-down-bits P\n");
        return CLI_USAGE;
    }
    const int down_now = opt.act_bits_down ? opt.act_bits_down : opt.act_bits ? opt.act_bits : 8;
    if (opt.abq_down_bits && opt.abq_down_bits <= down_now) {
        fprintf(stderr, "lowbit quantize: --abq-down-bits %d must be above ffn_down's %d bits (--act-bits-down, --act-bits)\n",
                opt.abq_down_bits, down_now);
        return CLI_USAGE;
    }
    if (opt.abq_search && (opt.act_bits == LB_ABQ_ACT_F32 || opt.act_bits_down == LB_ABQ_ACT_F32)) {
        fprintf(stderr, "lowbit quantize: --abq-search fits the weights to quantized activations; with 16-bit "
                        "(unquantized) activations there is nothing to fit: quantize without it\n");
        return CLI_USAGE;
    }
    if (opt.abq_search && (opt.smooth_set || opt.gptq)) {
        fprintf(stderr, "lowbit quantize: --abq-search chooses the smoothing itself: not with --smooth-alpha or --gptq\n");
        return CLI_USAGE;
    }
    if (bcq_iters != -2) opt.bcq_iters = bcq_iters > 0 ? bcq_iters : -1;
    if ((opt.mx_set || opt.mx_rank) && type != LB_TYPE_MX) {
        fprintf(stderr, "lowbit quantize: --mx-hi, --mx-outliers and --mx-rank apply to TYPE MX only\n");
        return CLI_USAGE;
    }
    if (!strcmp(pos[0], pos[1])) { fprintf(stderr, "lowbit quantize: output must differ from input\n"); return CLI_USAGE; }
    lb_quantize_params qp = {type, threads, cli_progress, NULL};
    lb_quantize_stats st;
    double t0 = lb_time_s();
    if (opt.cb_count && opt.cb_count != 4 && opt.cb_count != 8 && opt.cb_count != 16) {
        fprintf(stderr, "lowbit quantize: --count must be 4, 8 or 16\n");
        return CLI_USAGE;
    }
    lb_status s = lb_quantize_file_ex(pos[0], pos[1], &qp, &opt, &st);
    if (s) {
        cli_error("quantize", s);
        return s == LB_ERR_INTERRUPTED ? 130 : CLI_FAIL;
    }
    printf("quantized %s -> %s (%s) in %.1f s\n", pos[0], pos[1], lb_type_name(type), lb_time_s() - t0);
    if (st.n_mx)
        printf("  tensors: %d in (%d matrices to MX, %d to the embedding's and head's types, %d kept a wider type, "
               "%d copied)\n", st.n_tensors, st.n_mx, st.n_quantized - st.n_mx, st.n_fallback,
               st.n_tensors - st.n_quantized - st.n_fallback);
    else if (st.n_own_type)
        printf("  tensors: %d (%d to %s, %d to the embedding's and head's types, %d kept a wider type, %d copied)\n",
               st.n_tensors, st.n_quantized - st.n_own_type, lb_type_name(type), st.n_own_type, st.n_fallback,
               st.n_tensors - st.n_quantized - st.n_fallback);
    else
        printf("  tensors: %d (%d to %s, %d kept a wider type, %d copied)\n", st.n_tensors, st.n_quantized,
               lb_type_name(type), st.n_fallback, st.n_tensors - st.n_quantized - st.n_fallback);
    if (lb_abq_bits(type)) {
        printf("  ABQ: activations at %d bits by default (lowbit.abq.act_bits)", opt.act_bits ? opt.act_bits : 8);
        if (opt.act_bits_down) printf(", ffn_down's at %d (lowbit.abq.act_bits_ffn_down)", opt.act_bits_down);
        printf("\n");
    }
    if (opt.smooth_set)
        printf("  smoothing: %d groups folded (alpha %.2f)\n", st.n_smooth_groups, (double)opt.smooth_alpha);
    if (st.n_search_layers)
        printf("  ABQ search: %d layers on %d chunks, eq. (%d) summed over layers %.6f (default configuration %.6f)\n",
               st.n_search_layers, st.search_chunks, opt.abq_akl ? 5 : 2, st.search_obj_best, st.search_obj_default);
    if (opt.abq_akl)
        printf("  ABQ search: eq. (5) with the attention-map KL at weight %g; eq. (4) summed over layers %.6f (default "
               "configuration %.6f)\n", (double)opt.abq_akl, st.search_akl_best, st.search_akl_default);
    if (opt.abq_down_bits)
        printf("  ABQ search: ffn_down's input at %d bits in %d of %d layers, at %d elsewhere (lowbit.abq.act_bits_ffn_down_layers)\n",
               opt.abq_down_bits, st.n_search_down_raised, st.n_search_layers, down_now);
    if (opt.abq_dc)
        printf("  ABQ search: distribution correction (eq. (3)) kept on ffn_down in %d of %d layers (lowbit.abq.search_dc)\n",
               st.n_search_dc, st.n_search_layers);
    if (opt.gptq) printf("  GPTQ: %d matrices rounded with the Hessians of %s\n", st.n_gptq, opt.gptq);
    if (opt.from_uniform)
        printf("  from uniform: %d matrices converted, %lld of %lld groups exact (%lld with z rounded to fp16), "
               "%d quantized from their values\n", st.n_from_uniform, (long long)(st.uniform_groups - st.uniform_inexact),
               (long long)st.uniform_groups, (long long)st.uniform_inexact, st.n_quantized - st.n_from_uniform);
    printf("  size: %.2f MiB -> %.2f MiB, %lld parameters, %.3f bits per weight\n", st.bytes_in / 1048576.0,
           st.bytes_out / 1048576.0, (long long)st.n_params, st.bpw_out);
    printf("  layer matrices: %.4f bits per weight (the embedding and the output head apart)\n", st.layer_bpw);
    if (st.n_mx)
        printf("  MX: %d matrices, %.4f bits per weight stored (tiles, group maps, outliers with row pointers); "
               "eq. (10): %.4f\n", st.n_mx, st.mx_bpw, st.mx_bpw_eq10);
    return CLI_OK;
}
