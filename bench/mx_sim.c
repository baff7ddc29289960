/* MX quality before MX files exist (docs/mixed.md): every layer matrix of an
 * F32 GGUF is quantized to MX (formats/mx.h) and written back dequantized,
 * as F32, so `lowbit perplexity --kl-divergence` scores exactly the weights
 * an MX file will hold. Prints the bits the MX matrices would store.
 *
 *   mx_sim BASE-F32.gguf OUT.gguf [--calib CALIB.gguf [--gptq [--act-order]]] [--hi 0.25]
 *          [--outliers 0.002] [-t N]
 *
 * With --calib (lowbit calibrate's file) groups are ranked by eq. (9) with
 * the diagonal of H^-1 (H damped by 1 % of its mean diagonal, as GPTQ) and
 * the errors weighted by diag H; without it by w^2 alone. --gptq rounds
 * again with GPTQ's error feedback onto the fitted grids (model/mx_gptq.h).
 * --fp16-scales: the ablation without second-order scales (the 2-bit
 * groups' scales kept in fp16; not a format MX files hold). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mx.h"
#include "gguf/gguf.h"
#include "model/calib.h"
#include "model/mx_gptq.h"

typedef struct {
    const gguf_file *in;
    const lb_calib *calib;
    lb_mx_params p;
    lb_gptq_params gp;
    int nt, gptq;
    uint64_t mx_bits, mx_weights, n_out;
    int n_mx;
} sim;

static int is_layer_matrix(const gguf_tensor *t) {
    static const char *kinds[] = {".attn_q.weight", ".attn_k.weight", ".attn_v.weight", ".attn_output.weight",
                                  ".ffn_gate.weight", ".ffn_up.weight", ".ffn_down.weight"};
    if (t->n_dims != 2 || t->type != LB_TYPE_F32 || t->name.len < 5 || memcmp(t->name.ptr, "blk.", 4)) return 0;
    if (t->ne[1] % LB_MX_ROWS || t->ne[0] % LB_MX_M) return 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const size_t n = strlen(kinds[i]);
        if (t->name.len > n && !memcmp(t->name.ptr + t->name.len - n, kinds[i], n)) return 1;
    }
    return 0;
}

static lb_status produce(void *user, int64_t index, void *dst, uint64_t nbytes) {
    sim *S = user;
    const gguf_tensor *t = gguf_tensor_at(S->in, index);
    memcpy(dst, t->data, nbytes);
    if (!is_layer_matrix(t)) return LB_OK;
    const int64_t K = t->ne[0], N = t->ne[1];
    float *H = S->calib ? malloc((size_t)K * (size_t)K * sizeof *H) : NULL;
    if (S->calib && !H) return lb_fail(LB_ERR_NOMEM, "out of memory");
    const int have = H && lb_calib_hessian(S->calib, t->name.ptr, t->name.len, K, H);
    lb_mx_matrix m;
    lb_status s = lb_mx_quantize_calibrated(t->data, N, K, have ? H : NULL, NULL, &S->p, &S->gp, S->gptq, &m, NULL);
    free(H);
    if (s == LB_OK) {
        lb_mx_dequantize(&m, dst);
        S->mx_bits += lb_mx_bits(N, K, m.n_hi, m.n_out);
        /* the ablation: each 2-bit tile's 32 fp16 first-order scales in
         * place of its 4-bit codes, two s2 and the z2 byte */
        if (m.s1) S->mx_bits += (uint64_t)(N / 16 * (K / 32 - m.n_hi)) * (32 * 16 - (16 * 8 + 4 * 8 + 8));
        S->mx_weights += (uint64_t)(N * K);
        S->n_out += (uint64_t)m.n_out;
        S->n_mx++;
        fprintf(stderr, "\r%-40.*s %s", (int)t->name.len, t->name.ptr,
                have ? (S->gptq ? "(eq. 9 with H^-1, GPTQ)" : "(eq. 9 with H^-1)") : "");
        lb_mx_free(&m);
    }
    return s;
}

int main(int argc, char **argv) {
    const char *in_path = NULL, *out_path = NULL, *calib_path = NULL;
    sim S = {.p = lb_mx_default_params(), .gp = lb_gptq_default_params(), .nt = omp_get_num_procs()};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--calib") && i + 1 < argc) calib_path = argv[++i];
        else if (!strcmp(argv[i], "--hi") && i + 1 < argc) S.p.hi_frac = (float)atof(argv[++i]);
        else if (!strcmp(argv[i], "--outliers") && i + 1 < argc) S.p.outlier_frac = (float)atof(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) S.nt = S.p.n_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gptq")) S.gptq = 1;
        else if (!strcmp(argv[i], "--fp16-scales")) S.p.fp16_scales = 1;
        else if (!strcmp(argv[i], "--act-order")) S.gp.act_order = 1;
        else if (argv[i][0] != '-' && !in_path) in_path = argv[i];
        else if (argv[i][0] != '-' && !out_path) out_path = argv[i];
        else {
            fprintf(stderr, "usage: mx_sim BASE-F32.gguf OUT.gguf [--calib CALIB [--gptq [--act-order]]] [--hi F] [--outliers F] [--fp16-scales] [-t N]\n");
            return 2;
        }
    }
    if (!in_path || !out_path) {
        fprintf(stderr, "usage: mx_sim BASE-F32.gguf OUT.gguf [--calib CALIB [--gptq [--act-order]]] [--hi F] [--outliers F] [--fp16-scales] [-t N]\n");
        return 2;
    }
    gguf_file *in = NULL;
    lb_calib *calib = NULL;
    gguf_writer *w = NULL;
    lb_status s = gguf_open(in_path, &in);
    if (s == LB_OK && calib_path) s = lb_calib_load(calib_path, &calib);
    if (s == LB_OK && !(w = gguf_writer_new())) s = LB_ERR_NOMEM;
    for (int64_t i = 0; s == LB_OK && i < gguf_n_kv(in); i++) s = gguf_writer_copy_kv(w, gguf_kv_at(in, i));
    for (int64_t i = 0; s == LB_OK && i < gguf_n_tensors(in); i++) {
        const gguf_tensor *t = gguf_tensor_at(in, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        s = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, NULL);
    }
    S.in = in, S.calib = calib, S.gp.n_threads = S.nt;
    if (s == LB_OK) s = gguf_writer_write(w, out_path, produce, &S, NULL, NULL);
    if (s == LB_OK)
        printf("\nMX: %d matrices, %.4f bits per weight stored (%.3f %% outliers, %.0f %% of groups in 4 bits), "
               "eq. (10) %.4f\n",
               S.n_mx, (double)S.mx_bits / (double)S.mx_weights, 100.0 * (double)S.n_out / (double)S.mx_weights,
               100.0 * S.p.hi_frac,
               lb_mx_bpw_eq10(1.0 - S.p.hi_frac, 16, 16, 4) + 32.0 * (double)S.n_out / (double)S.mx_weights);
    else
        fprintf(stderr, "\nmx_sim: %s\n", lb_last_error());
    gguf_writer_free(w);
    lb_calib_free(calib);
    gguf_close(in);
    return s == LB_OK ? 0 : 1;
}
