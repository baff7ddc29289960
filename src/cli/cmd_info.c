/* lowbit info MODEL: metadata, tensor table, parameter count, bits per weight. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "formats/abq.h"
#include "formats/gc.h"
#include "formats/mx.h"
#include "formats/types.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"
#include "model/repack.h"

static void help(void) {
    printf("usage: lowbit info [options] MODEL.gguf\n\n"
           "  -a, --all-tensors   list every tensor (default: first 2 layers and the rest summarised)\n"
           "  -h, --help          this help\n");
}

static void print_value(const gguf_kv *kv) {
    const void *d = kv->data;
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64;
            int64_t i64; float f32; double f64; } v;
    size_t sz = gguf_vtype_size(kv->type);
    if (sz) memcpy(&v, d, sz);
    switch (kv->type) {
    case GGUF_TYPE_UINT8: printf("%u", v.u8); break;
    case GGUF_TYPE_INT8: printf("%d", v.i8); break;
    case GGUF_TYPE_UINT16: printf("%u", v.u16); break;
    case GGUF_TYPE_INT16: printf("%d", v.i16); break;
    case GGUF_TYPE_UINT32: printf("%u", v.u32); break;
    case GGUF_TYPE_INT32: printf("%d", v.i32); break;
    case GGUF_TYPE_UINT64: printf("%llu", (unsigned long long)v.u64); break;
    case GGUF_TYPE_INT64: printf("%lld", (long long)v.i64); break;
    case GGUF_TYPE_FLOAT32: printf("%g", v.f32); break;
    case GGUF_TYPE_FLOAT64: printf("%g", v.f64); break;
    case GGUF_TYPE_BOOL: printf("%s", v.u8 ? "true" : "false"); break;
    case GGUF_TYPE_STRING:
        printf("\"%.*s%s\"", (int)LB_MIN(kv->str.len, 72), kv->str.ptr, kv->str.len > 72 ? "..." : "");
        break;
    case GGUF_TYPE_ARRAY:
        printf("[%s x %llu]", gguf_vtype_name(kv->arr_type), (unsigned long long)kv->arr_n);
        if (kv->arr_type == GGUF_TYPE_STRING && kv->strs && kv->arr_n) {
            printf(" \"%.*s\"", (int)LB_MIN(kv->strs[0].len, 24), kv->strs[0].ptr);
            if (kv->arr_n > 1) printf(", \"%.*s\"", (int)LB_MIN(kv->strs[1].len, 24), kv->strs[1].ptr);
            if (kv->arr_n > 2) printf(", ...");
        }
        break;
    default: printf("?");
    }
}

static int layer_of(const gguf_tensor *t) {
    if (t->name.len > 4 && !memcmp(t->name.ptr, "blk.", 4)) return atoi(t->name.ptr + 4);
    return -1;
}

/* An expert's weights: a 3-D blk.N.ffn_X_exps.weight, or one 2-D
 * blk.N.ffn_X.E.weight an expert (Mixtral's first layout). */
static int is_expert_tensor(const gguf_tensor *t) {
    if (t->n_dims == 3 && t->name.len > 12 && !memcmp(t->name.ptr + t->name.len - 12, "_exps.weight", 12)) return 1;
    char part[16];
    int il, e;
    return t->n_dims == 2 && lb_legacy_expert_name(t->name.ptr, t->name.len, &il, part, &e);
}

/* quantize --abq-search's per-layer choices (lowbit.abq.search_alpha,
 * search_clip; alpha -1: no smoothing). */
static void print_abq_search(const gguf_file *g) {
    const gguf_kv *a = gguf_get_arr(g, "lowbit.abq.search_alpha", GGUF_TYPE_FLOAT32);
    const gguf_kv *c = gguf_get_arr(g, "lowbit.abq.search_clip", GGUF_TYPE_FLOAT32);
    if (!a || !c || a->arr_n != c->arr_n) return;
    uint32_t chunks = 0, ctx = 0;
    gguf_get_u32(g, "lowbit.abq.search_chunks", &chunks);
    gguf_get_u32(g, "lowbit.abq.search_ctx", &ctx);
    uint32_t vo = 0;
    gguf_get_u32(g, "lowbit.abq.search_smooth_vo", &vo);
    printf("  %-8s block search (%u chunks of %u tokens%s), per layer alpha / clip:", "", chunks, ctx,
           vo ? "; attn_output's input smoothed through attn_v" : "");
    for (uint64_t l = 0; l < a->arr_n; l++) {
        float al, cl;
        memcpy(&al, (const char *)a->data + 4 * l, 4);
        memcpy(&cl, (const char *)c->data + 4 * l, 4);
        if (l % 6 == 0) printf("\n  %-8s", "");
        if (al < 0.0f) printf("  %2llu: none/%.2f", (unsigned long long)l, (double)cl);
        else printf("  %2llu: %.2f/%.2f", (unsigned long long)l, (double)al, (double)cl);
    }
    printf("\n");
}

/* A per-layer array of the ABQ search (FLOAT32 printed as %.2f, UINT32 as
 * %u), 12 layers a line after its title. */
static void print_per_layer(const gguf_file *g, const char *key, int type, const char *title) {
    const gguf_kv *a = gguf_get_arr(g, key, type);
    if (!a) return;
    printf("  %-8s %s (%s):", "", title, key);
    for (uint64_t l = 0; l < a->arr_n; l++) {
        if (l % 12 == 0) printf("\n  %-8s", "");
        if (type == GGUF_TYPE_FLOAT32) {
            float v;
            memcpy(&v, (const char *)a->data + 4 * l, 4);
            printf("  %2llu: %.2f", (unsigned long long)l, (double)v);
        } else {
            uint32_t v;
            memcpy(&v, (const char *)a->data + 4 * l, 4);
            printf("  %2llu: %u", (unsigned long long)l, v);
        }
    }
    printf("\n");
}

int cmd_info(int argc, char **argv) {
    cli_args a = {argc, 1, argv, "info", 0};
    const char *path = NULL;
    int all = 0;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_flag(&a, "-a", "--all-tensors")) all = 1;
        else if (cli_flag(&a, "-m", "--model")) path = cli_value(&a);
        else if (argv[a.i][0] == '-') cli_unknown(&a);
        else if (!path) path = argv[a.i];
        else { fprintf(stderr, "lowbit info: unexpected argument '%s'\n", argv[a.i]); a.bad = 1; }
    }
    if (a.bad) return CLI_USAGE;
    if (!path) { fprintf(stderr, "lowbit info: expected MODEL.gguf (see --help)\n"); return CLI_USAGE; }
    gguf_file *g = NULL;
    lb_status s = gguf_open(path, &g);
    if (s) { cli_error("info", s); return CLI_FAIL; }

    printf("file: %s (GGUF v%u, %.2f MiB, alignment %u)\n\n", path, gguf_version(g),
           gguf_file_size(g) / 1048576.0, gguf_alignment(g));
    printf("metadata (%lld keys):\n", (long long)gguf_n_kv(g));
    for (int64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_kv *kv = gguf_kv_at(g, i);
        printf("  %-44.*s = ", (int)kv->key.len, kv->key.ptr);
        print_value(kv);
        printf("\n");
    }

    /* which type holds most matrix weights: the file's main type */
    enum { NT = 2048 };
    int64_t *params_by_type = calloc(NT, sizeof *params_by_type);
    uint64_t *bytes_by_type = calloc(NT, sizeof *bytes_by_type);
    int *count_by_type = calloc(NT, sizeof *count_by_type);
    if (!params_by_type || !bytes_by_type || !count_by_type) return CLI_FAIL;
    int64_t total_params = 0, expert_params = 0, embd_params = 0; /* expert_*: MoE experts' 3-D tensors */
    uint64_t expert_bytes = 0, embd_bytes = 0;
    uint64_t total_bytes = 0;
    int main_type = -1;
    /* MX matrices (formats/mx.h): their tiles count as weights, their maps
     * and outliers as bytes of the matrix, not parameters */
    int n_mx = 0, mx_bad = 0;
    int64_t mx_weights = 0, mx_hi_groups = 0, mx_groups = 0, mx_outliers = 0;
    uint64_t mx_bytes = 0, gc_side_bytes = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        const int side = (t->type == LB_TYPE_I8 || t->type == LB_TYPE_I32) && lb_mx_side_piece(t->name.ptr, t->name.len);
        if (t->type == LB_TYPE_MX2 || t->type == LB_TYPE_MX4 || side) mx_bytes += t->size;
        /* a GC matrix's per-row scales and zeros: bytes of its type, not parameters */
        if (t->type == LB_TYPE_F16 && lb_gc_is_side(t->name.ptr, t->name.len)) {
            total_bytes += t->size;
            gc_side_bytes += t->size;
            continue;
        }
        if (t->type == LB_TYPE_MX2 || t->type == LB_TYPE_MX4) mx_weights += n;
        if (t->type == LB_TYPE_MX2) {
            /* the matrix as the loader checks it */
            char name[300];
            snprintf(name, sizeof name, "%.*s", (int)LB_MIN(t->name.len, 250), t->name.ptr);
            const gguf_tensor *map = gguf_find_tensor(g, (strcat(name, LB_MX_SFX_MAP), name));
            name[t->name.len < 250 ? t->name.len : 250] = 0;
            const gguf_tensor *hi = gguf_find_tensor(g, (strcat(name, LB_MX_SFX_HI), name));
            name[t->name.len < 250 ? t->name.len : 250] = 0;
            const gguf_tensor *rows = gguf_find_tensor(g, (strcat(name, LB_MX_SFX_ROWS), name));
            name[t->name.len < 250 ? t->name.len : 250] = 0;
            const gguf_tensor *outl = gguf_find_tensor(g, (strcat(name, LB_MX_SFX_OUT), name));
            lb_mx_view *v = NULL;
            if (map && map->type == LB_TYPE_I8 && (!hi || hi->type == LB_TYPE_MX4) && (!rows || rows->type == LB_TYPE_I32) &&
                (!outl || outl->type == LB_TYPE_I32)) {
                const lb_mx_parts p = {16 * t->ne[1], 32 * map->ne[0], map->data, t->data, hi ? hi->data : NULL, t->size,
                                       hi ? hi->size : 0, rows ? rows->data : NULL, rows ? rows->ne[0] : 0,
                                       outl ? outl->data : NULL, outl ? outl->ne[0] : 0};
                if (lb_mx_view_make(&p, &v) != LB_OK) v = NULL;
            }
            if (v) {
                n_mx++;
                mx_groups += v->n_lo + v->n_hi, mx_hi_groups += v->n_hi;
                mx_outliers += v->row_ptr ? v->row_ptr[v->N] : 0;
                lb_free_aligned(v);
            } else {
                mx_bad++;
                fprintf(stderr, "warning: MX matrix %.*s does not load: %s\n", (int)t->name.len, t->name.ptr, lb_last_error());
            }
        }
        if (side) continue;
        if (t->type < NT) {
            params_by_type[t->type] += n;
            bytes_by_type[t->type] += t->size;
            count_by_type[t->type]++;
            if (t->n_dims >= 2 && (main_type < 0 || params_by_type[t->type] > params_by_type[main_type])) main_type = (int)t->type;
        }
        total_params += n;
        total_bytes += t->size;
        if (is_expert_tensor(t)) expert_params += n, expert_bytes += t->size;
        if (t->name.len == 17 && !memcmp(t->name.ptr, "token_embd.weight", 17)) embd_params = n, embd_bytes = t->size;
    }

    printf("\ntensors (%lld):\n", (long long)gguf_n_tensors(g));
    printf("  %-36s %-8s %-24s %10s\n", "name", "type", "shape (ne0 = row)", "MiB");
    int hidden = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        int layer = layer_of(t);
        char shape[64];
        int len = snprintf(shape, sizeof shape, "%lld", (long long)t->ne[0]);
        for (int d = 1; d < t->n_dims; d++) len += snprintf(shape + len, sizeof shape - (size_t)len, " x %lld", (long long)t->ne[d]);
        const char *tn = gguf_type_label(t->type);
        const char *note = "";
        char why[160] = "";
        if (main_type >= 0 && t->n_dims >= 2 && (int)t->type != main_type) {
            const lb_type_traits *mt = lb_traits(main_type);
            if (mt && t->ne[0] % mt->blck) {
                snprintf(why, sizeof why, "  <- kept wider: row of %lld is not a multiple of %s's block of %d",
                         (long long)t->ne[0], mt->name, mt->blck);
                note = why;
            }
        }
        if (!all && layer >= 2 && !*note) { hidden++; continue; }
        printf("  %-36.*s %-8s %-24s %10.3f%s\n", (int)t->name.len, t->name.ptr, tn ? tn : "?", shape,
               t->size / 1048576.0, note);
    }
    if (hidden) printf("  ... %d more tensors in later layers (-a to list all)\n", hidden);

    printf("\ntypes:\n");
    for (int t = 0; t < NT; t++) {
        if (!count_by_type[t] || ((t == LB_TYPE_MX2 || t == LB_TYPE_MX4) && n_mx)) continue; /* the MX line below */
        uint32_t abits = 8; /* ABQ: the file's activation bits choose the kernel (16: fp32 rows) */
        gguf_get_u32(g, "lowbit.abq.act_bits", &abits);
        const lb_kernel *k = !lb_traits(t) ? NULL
                             : lb_abq_bits(t) ? lb_kernel_get_act(t, (int)abits, lb_cpu_level())
                                              : lb_kernel_get(t);
        const char *kname = t == LB_TYPE_MXFP4 ? "as MXFP4_NL (below)" : k ? k->name : "none (cannot compute)";
        printf("  %-8s %4d tensors %14lld weights %10.2f MiB  %6.3f bpw  kernel: %s\n", lb_type_name(t) ? lb_type_name(t) : "?",
               count_by_type[t], (long long)params_by_type[t], bytes_by_type[t] / 1048576.0,
               params_by_type[t] ? 8.0 * bytes_by_type[t] / params_by_type[t] : 0.0, kname);
        if (lb_abq_bits(t)) {
            uint32_t p = abits;
            if (p == LB_ABQ_ACT_F32)
                printf("  %-8s activations unquantized, fp32 (16 bits: WqA16; lowbit.abq.act_bits; --act-bits P overrides)\n",
                       "");
            else
                printf("  %-8s activations quantized per token to %u bits (lowbit.abq.act_bits; --act-bits P overrides)\n",
                       "", p);
            if (gguf_get_u32(g, "lowbit.abq.act_bits_ffn_down", &p))
                printf("  %-8s ffn_down's inputs (every layer) to %u bits%s (lowbit.abq.act_bits_ffn_down)\n", "", p,
                       p == LB_ABQ_ACT_F32 ? ", i.e. unquantized (fp32)" : "");
            /* quantize --abq-down-bits: ffn_down's input bits per layer, as the search chose */
            print_per_layer(g, "lowbit.abq.act_bits_ffn_down_layers", GGUF_TYPE_UINT32,
                            "ffn_down's inputs per layer, bits (--act-bits P overrides)");
            /* quantize --abq-dc: eq. (3)'s gamma on ffn_down per layer (0: no correction) */
            print_per_layer(g, "lowbit.abq.search_dc", GGUF_TYPE_FLOAT32,
                            "ffn_down's distribution correction W + gamma a b^T per layer, gamma");
            print_abq_search(g);
        }
        if (t == LB_TYPE_MXFP4) { /* model_load.c: converted, exactly, then as MXFP4_NL */
            const int rq = lb_repack_target_matrix(LB_TYPE_MXFP4_NL, 16, 0);
            printf("  %-8s converted at load to MXFP4_NL (exact: the same codes, the scale as fp16; 4.5 bits per "
                   "weight in memory), then to %s, kernel: %s\n", "", lb_type_name(rq), lb_kernel_get(rq)->name);
            continue;
        }
        /* what loading does with a matrix of whole 16-row blocks (LOWBIT_REPACK; ABQ: at the file's bits) */
        const int rt = lb_repack_target_matrix(t, 16, lb_abq_bits(t) ? (int)abits : 0);
        if (rt != t) {
            /* the embedding keeps its plain rows for lookups; a tied head
             * (no output.weight) multiplies by a repacked copy of it */
            const gguf_tensor *te = gguf_find_tensor(g, "token_embd.weight");
            const int tied = !gguf_find_tensor(g, "output.weight") && te && (int)te->type == t;
            printf("  %-8s matrices repacked at load to %s (token_embd keeps its rows%s), kernel: %s\n", "",
                   lb_type_name(rt), tied ? "; the tied output head gets a repacked copy" : "",
                   lb_kernel_get_act(rt, lb_abq_bits(t) ? (int)abits : 0, lb_cpu_level())->name);
            const int rt_odd = lb_repack_target_matrix(t, 17, lb_abq_bits(t) ? (int)abits : 0);
            if (rt_odd != rt) /* ABQ's 3-bit layouts have no tail rows (model/repack.h) */
                printf("  %-8s (those of rows not a multiple of 16 to %s)\n", "", lb_type_name(rt_odd));
        }
    }
    if (gc_side_bytes)
        printf("  %-8s the GC matrices' per-row grids (.gq_sz, .bcq_az side tensors): %.3f MiB\n", "",
               gc_side_bytes / 1048576.0);
    if (n_mx || mx_bad) {
        const lb_kernel *k = lb_kernel_get(LB_TYPE_MX);
        const double alpha = mx_groups ? 1.0 - (double)mx_hi_groups / (double)mx_groups : 1.0;
        printf("  %-8s %4d matrices %13lld weights %10.2f MiB  %6.3f bpw  kernel: %s\n", "MX", n_mx,
               (long long)mx_weights, mx_bytes / 1048576.0, mx_weights ? 8.0 * mx_bytes / mx_weights : 0.0,
               k ? k->name : "none");
        printf("  %-8s %.1f %% of groups in 4 bits, %.3f %% of weights as outliers; eq. (10): %.4f bpw%s\n", "",
               100.0 * (1.0 - alpha), mx_weights ? 100.0 * mx_outliers / mx_weights : 0.0,
               lb_mx_bpw_eq10(alpha, LB_MX_G1, LB_MX_ROWS, 4) + (mx_weights ? 32.0 * mx_outliers / mx_weights : 0.0),
               mx_bad ? " (some matrices do not load: see the warnings)" : "");
    }
    printf("\nparameters: %lld (%.3f M)\n", (long long)total_params, total_params / 1e6);
    {
        /* MoE: what a token works with (llama.cpp's "30B.A3B") */
        const char *arch = gguf_get_str(g, "general.architecture");
        char key[96];
        uint32_t ne = 0, nu = 0;
        snprintf(key, sizeof key, "%s.expert_count", arch ? arch : "?");
        const int has_ne = gguf_get_u32(g, key, &ne);
        snprintf(key, sizeof key, "%s.expert_used_count", arch ? arch : "?");
        if (has_ne && gguf_get_u32(g, key, &nu) && ne > 0 && nu <= ne && expert_params > 0) {
            /* the matrices a token multiplies: all but the experts it skips and
             * the embedding table (one row looked up), unless it is the head too */
            const int tied = !gguf_find_tensor(g, "output.weight");
            const double skip = (double)expert_params * (ne - nu) / ne + (tied ? 0.0 : (double)embd_params);
            const double skip_b = (double)expert_bytes * (ne - nu) / ne + (tied ? 0.0 : (double)embd_bytes);
            printf("experts: %u a layer, %u used a token: a token multiplies %.3f M weights (%.2f MiB), %u/%u of "
                   "the experts' %.3f M\n", ne, nu, (total_params - skip) / 1e6, (total_bytes - skip_b) / 1048576.0,
                   nu, ne, expert_params / 1e6);
        }
    }
    printf("bits per weight: %.3f overall (%.2f MiB of tensors)\n",
           total_params ? 8.0 * total_bytes / total_params : 0.0, total_bytes / 1048576.0);
    printf("cpu: %s (kernels at level %s)\n", lb_cpu_features_string(), lb_isa_name(lb_cpu_level()));
    free(params_by_type);
    free(bytes_by_type);
    free(count_by_type);
    gguf_close(g);
    return CLI_OK;
}
