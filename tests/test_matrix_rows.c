/* lb_matrix_rows (model/model.h): rows of a matrix as a matrix of their own,
 * as the loader splits phi3's fused attn_qkv and ffn_up. For a plain type
 * (Q8_0), row-interleaved layouts (Q4_0_8X8, Q4_K_16X4, Q6_K_16X4), MX (a
 * view with tiles and outliers) and GQ4_GC (a view with a side tensor), at
 * every x86 level this machine has: lb_matmul of each piece must give
 * exactly the bits the whole matrix gives those rows, for 1 and 5 activation
 * rows (decode and prefill paths). Splits inside a row group, and rows past
 * the end, are refused. */
#include "formats/gc.h"
#include "formats/gqc.h"
#include "formats/mx.h"
#include "formats/repack.h"
#include "formats/types.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"
#include "model/model.h"
#include "test_util.h"

enum { K = 256, N = 96 };

/* The pieces [0, 32), [32, 64), [64, 96) against the whole, bit for bit. */
static void check_pieces(const lb_matrix *whole, const char *what) {
    uint64_t seed = 5;
    for (int M = 1; M <= 5; M += 4) {
        float *x = malloc(sizeof(float) * K * M), *y = malloc(sizeof(float) * N * M), *ys = malloc(sizeof(float) * N * M);
        for (int i = 0; i < K * M; i++) x[i] = lb_test_randf(&seed);
        void *scr = malloc(lb_matmul_scratch_size(whole, M));
        lb_matmul(whole, x, M, y, N, scr, 2);
        for (int r0 = 0; r0 < N; r0 += 32) {
            lb_matrix part;
            void *alloc = NULL;
            CHECK_OK(lb_matrix_rows(whole, r0, 32, &part, &alloc));
            CHECK(part.N == 32 && part.K == K && part.type == whole->type);
            lb_matmul(&part, x, M, ys, 32, scr, 2);
            int bad = 0;
            for (int m = 0; m < M; m++)
                bad += memcmp(ys + (size_t)m * 32, y + (size_t)m * N + r0, 32 * sizeof(float)) != 0;
            CHECK_MSG(!bad, "%s at %s, M = %d: rows %d..%d differ from the whole matrix's", what,
                      lb_isa_name(lb_cpu_level()), M, r0, r0 + 32);
            lb_free_aligned(alloc);
        }
        free(scr);
        free(x);
        free(y);
        free(ys);
    }
}

static void check_refusals(const lb_matrix *whole, int group, const char *what) {
    lb_matrix part;
    void *alloc = NULL;
    CHECK_MSG(lb_matrix_rows(whole, 80, 32, &part, &alloc) == LB_ERR_ARG && !alloc, "%s: rows past the end", what);
    if (group > 1)
        CHECK_MSG(lb_matrix_rows(whole, group / 2, 32, &part, &alloc) == LB_ERR_UNSUPPORTED && !alloc &&
                      strstr(lb_last_error(), "inside one of its"),
                  "%s: a split inside a %d-row group: %s", what, group, lb_last_error());
}

int main(void) {
    uint64_t seed = 11;
    float *w = malloc(sizeof(float) * K * N);
    for (int i = 0; i < K * N; i++) w[i] = lb_test_randf(&seed) * 0.05f;

    /* plain rows and three row-interleaved layouts from them */
    static const struct { int base, type, group; } plain[] = {
        {LB_TYPE_Q8_0, LB_TYPE_Q8_0, 1},
        {LB_TYPE_Q4_0, LB_TYPE_Q4_0_8X8, 8},
        {LB_TYPE_Q4_K, LB_TYPE_Q4_K_16X4, 16},
        {LB_TYPE_Q6_K, LB_TYPE_Q6_K_16X4, 16},
    };
    lb_matrix mats[6];
    void *bufs[6] = {0};
    const char *names[6];
    int groups[6], n_mats = 0;
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        const size_t rs = lb_row_size(plain[i].base, K);
        uint8_t *q = malloc(rs * N), *r = lb_malloc_aligned(rs * N);
        for (int n = 0; n < N; n++) lb_traits(plain[i].base)->from_float(w + (size_t)n * K, q + n * rs, K);
        if (plain[i].type != plain[i].base) lb_repack_tensor(plain[i].type, q, r, K, N);
        else memcpy(r, q, rs * N);
        free(q);
        mats[n_mats] = (lb_matrix){plain[i].type, K, N, rs, r, 0};
        bufs[n_mats] = r;
        names[n_mats] = lb_type_name(plain[i].type);
        groups[n_mats++] = plain[i].group;
    }
    /* MX: random tiles, 25 % of the groups in 4 bits, 1 % outliers (so every piece has some) */
    lb_mx_params mp = lb_mx_default_params();
    mp.outlier_frac = 0.01;
    void *mx_buf = lb_malloc_aligned(lb_mx_random_size(N, K, &mp));
    lb_mx_parts parts;
    lb_mx_random_pieces(N, K, &mp, 3, mx_buf, &parts);
    lb_mx_view *mv = NULL;
    CHECK_OK(lb_mx_view_make(&parts, &mv));
    CHECK(mv && mv->row_ptr && mv->row_ptr[32] > 0 && mv->row_ptr[64] > mv->row_ptr[32] && mv->row_ptr[96] > mv->row_ptr[64]);
    mats[n_mats] = (lb_matrix){LB_TYPE_MX, K, N, 0, mv, 0};
    names[n_mats] = "MX";
    groups[n_mats++] = LB_MX_ROWS;
    /* GQ4_GC: GPTQ-style rows, a scale and zero point each */
    const size_t grs = lb_row_size(LB_TYPE_GQ4_GC, K);
    uint8_t *codes = malloc(grs * N);
    lb_fp16 *side = malloc(sizeof(lb_fp16) * 2 * N);
    for (int n = 0; n < N; n++) {
        int z;
        lb_gqc_quantize_row(LB_TYPE_GQ4_GC, w + (size_t)n * K, codes + n * grs, K, 0, NULL, &side[2 * n], &z);
        side[2 * n + 1] = lb_gqc_zero_fp16(z);
    }
    lb_gc_view *gv = NULL;
    CHECK_OK(lb_gc_view_make(LB_TYPE_GQ4_GC, N, K, codes, (uint64_t)N * grs, side, 2 * N, &gv));
    mats[n_mats] = (lb_matrix){LB_TYPE_GQ4_GC, K, N, grs, gv, 0};
    names[n_mats] = "GQ4_GC";
    groups[n_mats++] = 1;

    const lb_isa levels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_NEON, LB_ISA_DOTPROD, LB_ISA_I8MM};
    const lb_isa detected = lb_cpu_detected();
    for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
        if (lb_cpu_force_level(levels[li]) != levels[li]) continue;
        for (int i = 0; i < n_mats; i++)
            if (mats[i].data && lb_kernel_get(mats[i].type)) check_pieces(&mats[i], names[i]);
        printf("level %s: %d types split and compared\n", lb_isa_name(levels[li]), n_mats);
    }
    lb_cpu_force_level(detected);
    for (int i = 0; i < n_mats; i++)
        if (mats[i].data) check_refusals(&mats[i], groups[i], names[i]);

    for (int i = 0; i < 6; i++) lb_free_aligned(bufs[i]);
    lb_free_aligned(mv);
    lb_free_aligned(mx_buf);
    lb_free_aligned(gv);
    free(codes);
    free(side);
    free(w);
    return lb_test_result("test_matrix_rows");
}
