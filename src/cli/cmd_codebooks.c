/* lowbit codebooks -m MODEL -o BOOKS.gguf --count C --bits 2|3: learns the
 * model-wide codebooks of CB2 / CB3 (seed 000, Algorithm 1 lines 1-10, plus
 * our refinement pass) and writes them to a metadata-only GGUF that
 * `lowbit quantize --codebooks` reads, for this model or another. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/common.h"
#include "formats/cb_gguf.h"

static void help(void) {
    printf("usage: lowbit codebooks -m MODEL -o BOOKS.gguf [options]\n\n"
           "Learns C codebooks of 4 (CB2) or 8 (CB3) int8 centroids from the model's weight\n"
           "matrices: every 16-weight group is scaled into the int8 range, the groups are\n"
           "clustered by their histograms (phase 1), each cluster's values by k-means into\n"
           "the book's centroids (phase 2), then the centroids are refined against the\n"
           "quantizer's own choices (phase 3). Deterministic for a seed.\n"
           "If BOOKS.gguf already holds the other type's codebooks they are kept.\n\n"
           "  -m, --model FILE   GGUF model (any weight type lowbit reads)\n"
           "  -o, --output FILE  codebook file to write\n"
           "      --count C      books: 4, 8 or 16 (default 8)\n"
           "      --bits B       2 (CB2, 4 centroids) or 3 (CB3, 8 centroids) (default 2)\n"
           "      --seed S       random seed (default 1)\n"
           "      --sample N     weight groups to learn from (default 1048576; 0: all)\n"
           "      --refine N     phase-3 passes (default 10; 0: the paper's algorithm only)\n"
           "  -t, --threads N    threads (default: all cores)\n"
           "  -h, --help         this help\n");
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Keeps the other type's books (and anything else) of an existing codebook file. */
static lb_status copy_existing(gguf_writer *w, const char *path) {
    if (access(path, F_OK) != 0) return LB_OK;
    gguf_file *g = NULL;
    lb_status s = gguf_open(path, &g);
    if (s) return lb_fail_prefix(s, "%s exists but is not a GGUF file", path);
    const char *type = gguf_get_str(g, "general.type");
    if (!type || strcmp(type, "lowbit.codebooks") || gguf_n_tensors(g) > 0)
        s = lb_fail(LB_ERR_ARG, "%s exists and is not a lowbit codebook file; not overwriting it", path);
    for (int64_t i = 0; i < gguf_n_kv(g) && s == LB_OK; i++) s = gguf_writer_copy_kv(w, gguf_kv_at(g, i));
    gguf_close(g);
    return s;
}

int cmd_codebooks(int argc, char **argv) {
    cli_args a = {argc, 1, argv, "codebooks", 0};
    const char *model = NULL, *out = NULL;
    int count = 8, bits = 2, refine = 10, threads = 0;
    unsigned long long seed = 1, sample = 1 << 20;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_flag(&a, "-m", "--model")) model = cli_value(&a);
        else if (cli_flag(&a, "-o", "--output")) out = cli_value(&a);
        else if (cli_flag(&a, "--count", NULL)) count = cli_int(&a, 4, 16);
        else if (cli_flag(&a, "--bits", NULL)) bits = cli_int(&a, 2, 3);
        else if (cli_flag(&a, "--seed", NULL)) seed = cli_u64(&a);
        else if (cli_flag(&a, "--sample", NULL)) sample = cli_u64(&a);
        else if (cli_flag(&a, "--refine", NULL)) refine = cli_int(&a, 0, 1000);
        else if (cli_flag(&a, "-t", "--threads")) threads = cli_int(&a, 1, 1024);
        else cli_unknown(&a);
    }
    if (a.bad) return CLI_USAGE;
    if (!model || !out) { fprintf(stderr, "lowbit codebooks: -m MODEL and -o BOOKS.gguf are required (see --help)\n"); return CLI_USAGE; }
    if (count != 4 && count != 8 && count != 16) { fprintf(stderr, "lowbit codebooks: --count must be 4, 8 or 16\n"); return CLI_USAGE; }
    if (sample > (1ull << 40)) { fprintf(stderr, "lowbit codebooks: --sample is absurdly large\n"); return CLI_USAGE; }

    const int type = bits == 2 ? LB_TYPE_CB2 : LB_TYPE_CB3;
    gguf_file *g = NULL;
    gguf_writer *w = NULL;
    lb_cb_books books;
    int64_t total = 0, used = 0;
    double t0 = lb_time_s();
    /* refuse a bad output before the work, keeping what a codebook file holds */
    w = gguf_writer_new();
    lb_status s = w ? copy_existing(w, out) : LB_ERR_NOMEM;
    if (s == LB_OK) s = gguf_open(model, &g);
    int held = 0;
    /* a CB model's own tensors can only be read with its books */
    if (s == LB_OK) s = lb_cb_acquire_for_file(g, &held);
    if (s == LB_OK) {
        lb_cb_discover_params p = {count, lb_cb_k(type), seed, 0, 0, refine, threads, cli_progress, NULL};
        fprintf(stderr, "learning %d %s codebooks from %s (seed %llu)\n", count, lb_type_name(type), model, seed);
        s = lb_cb_discover_file(g, &p, (int64_t)sample, &books, &total, &used);
    }
    lb_cb_release_held(held);
    if (s == LB_OK) {
        if (used < total)
            fprintf(stderr, "sampled %lld of %lld weight groups (%.2f%%; --sample 0 uses all)\n", (long long)used,
                    (long long)total, 100.0 * (double)used / (double)total);
        else
            fprintf(stderr, "used all %lld non-zero weight groups\n", (long long)used);
    }
    if (s == LB_OK) s = gguf_writer_set_str(w, "general.type", "lowbit.codebooks");
    if (s == LB_OK) s = lb_cb_books_write(w, type, &books);
    char key[96];
    const char *kind = bits == 2 ? "cb2" : "cb3";
    if (s == LB_OK) {
        snprintf(key, sizeof key, "lowbit.codebooks.%s.source", kind);
        s = gguf_writer_set_str(w, key, base_name(model));
    }
    if (s == LB_OK) {
        snprintf(key, sizeof key, "lowbit.codebooks.%s.seed", kind);
        s = gguf_writer_set_u64(w, key, seed);
    }
    if (s == LB_OK) {
        snprintf(key, sizeof key, "lowbit.codebooks.%s.groups", kind);
        s = gguf_writer_set_u64(w, key, (uint64_t)used);
    }
    if (s == LB_OK) s = gguf_writer_write(w, out, NULL, NULL, NULL, NULL);
    gguf_writer_free(w);
    gguf_close(g);
    if (s) {
        cli_error("codebooks", s);
        return s == LB_ERR_INTERRUPTED ? 130 : CLI_FAIL;
    }
    const int lim = lb_cb_discover_limit(count, books.k);
    printf("%d %s codebooks (centroids in [-%d, %d]) -> %s in %.1f s\n", count, lb_type_name(type), lim, lim, out,
           lb_time_s() - t0);
    for (int c = 0; c < books.count; c++) {
        printf("  book %2d:", c);
        for (int i = 0; i < books.k; i++) printf(" %4d", books.v[c][i]);
        printf("\n");
    }
    return CLI_OK;
}
