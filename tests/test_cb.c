/* CB2 / CB3 codebook formats: field packing, dequantization against the
 * format's definition, quantize round trips, the dot product against the
 * dequantized one, AVX2 kernels against the scalar reference (bit-exact),
 * deterministic codebook discovery, the codebook registry, malformed codebook
 * metadata, and the whole path quantize -> load -> eval, imatrix included. */
#include "test_util.h"

#include "formats/cb_gguf.h"
#include "kernels/x86/cb_x86.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"
#include "model/imatrix.h"
#include "model/model.h"

static const int types[2] = {LB_TYPE_CB2, LB_TYPE_CB3};

/* Books with count C for k centroids: spread shapes, ascending, in range. */
static lb_cb_books make_books(int C, int k, uint64_t seed) {
    lb_cb_books b;
    memset(&b, 0, sizeof b);
    b.count = C;
    b.k = k;
    for (int c = 0; c < C; c++) {
        int v = -64 + (int)(lb_test_rand(&seed) % 8);
        for (int i = 0; i < k; i++) {
            b.v[c][i] = (int8_t)LB_MIN(63, v);
            v += 1 + (int)(lb_test_rand(&seed) % (120 / k));
        }
    }
    return b;
}

/* The same shapes as narrow books (formats/cb.h: |c| <= 127 / smax); used by
 * the x86 kernel checks only, so unused in the Arm build. */
__attribute__((unused)) static lb_cb_books make_narrow_books(int C, int k, uint64_t seed) {
    lb_cb_books b = make_books(C, k, seed);
    const int lim = lb_cb_narrow_limit(C);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < k; i++) b.v[c][i] = (int8_t)lroundf((float)b.v[c][i] * (float)lim / 64.0f);
    return b;
}

/* Student-t-like heavy-tailed values with a per-row scale. */
static void fill_weights(float *x, int64_t n, uint64_t seed) {
    for (int64_t i = 0; i < n; i++) {
        const float u = lb_test_randf(&seed), v = lb_test_randf(&seed);
        x[i] = 0.02f * u / (0.3f + fabsf(v));
    }
}

static double rel_err(const float *a, const float *b, int64_t n) {
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        s += (double)a[i] * a[i];
    }
    return s > 0 ? sqrt(e / s) : sqrt(e);
}

static void test_fields(void) {
    uint8_t f[CB_NSUB], g[CB_NSUB], meta[12];
    uint64_t seed = 5;
    for (int trial = 0; trial < 200; trial++) {
        for (int j = 0; j < CB_NSUB; j++) f[j] = (uint8_t)(lb_test_rand(&seed) & 63);
        lb_cb_pack_meta(f, meta);
        lb_cb_unpack_meta(meta, g);
        CHECK(!memcmp(f, g, CB_NSUB));
    }
    CHECK(sizeof(block_cb2) == 78 && sizeof(block_cb3) == 110);
    CHECK(fabs(lb_type_bits_per_weight(LB_TYPE_CB2) - 2.4375) < 1e-12);
    CHECK(fabs(lb_type_bits_per_weight(LB_TYPE_CB3) - 3.4375) < 1e-12);
    CHECK(lb_type_from_name("cb2") == LB_TYPE_CB2 && lb_type_from_name("CB3") == LB_TYPE_CB3);
    /* rows that are not a multiple of 256 keep a wider type (as Q2_K / Q3_K) */
    CHECK(lb_type_fallback(LB_TYPE_CB2, 640) == lb_type_fallback(LB_TYPE_Q2_K, 640));
    CHECK(lb_type_fallback(LB_TYPE_CB3, 640) == lb_type_fallback(LB_TYPE_Q3_K, 640));
    CHECK(lb_type_fallback(LB_TYPE_CB3, 512) == LB_TYPE_CB3);
}

/* A hand-made block decodes to d * s_j * book[cb_j][q] at every position. */
static void test_dequant_definition(void) {
    for (int t = 0; t < 2; t++) {
        const int type = types[t], k = lb_cb_k(type);
        for (int C = 4; C <= 16; C *= 2) {
            lb_cb_books b = make_books(C, k, 11 + C);
            CHECK_OK(lb_cb_acquire(type, &b));
            const lb_cb_set *set = lb_cb_current(type);
            lb_cb_unpacked u;
            uint64_t seed = 99 + C;
            u.d = 0.0037f;
            for (int j = 0; j < CB_NSUB; j++) {
                u.cb[j] = (uint8_t)(lb_test_rand(&seed) % C);
                u.s[j] = (uint8_t)(1 + lb_test_rand(&seed) % set->smax);
            }
            for (int i = 0; i < QK_CB; i++) u.q[i] = (uint8_t)(lb_test_rand(&seed) % k);
            unsigned char blk[sizeof(block_cb3)];
            lb_cb_pack(type, set, &u, blk);
            float y[QK_CB];
            lb_traits(type)->to_float(blk, y, QK_CB);
            const float d = lb_fp16_to_f32(lb_f32_to_fp16(u.d));
            int bad = 0;
            for (int i = 0; i < QK_CB; i++) {
                const int j = i / CB_SUB;
                if (y[i] != d * (float)u.s[j] * (float)b.v[u.cb[j]][u.q[i]]) bad++;
            }
            CHECK_MSG(bad == 0, "%s C=%d: %d values differ from the definition", lb_type_name(type), C, bad);
            lb_cb_release(type);
        }
    }
}

static void test_round_trip_and_dot(void) {
    const int64_t K = 1024;
    float *x = malloc(K * sizeof *x), *y = malloc(K * sizeof *y), *a = malloc(K * sizeof *a);
    float *ad = malloc(K * sizeof *ad);
    void *q = malloc(lb_row_size(LB_TYPE_CB3, K));
    block_q8_K *qa = malloc(lb_row_size(LB_TYPE_Q8_K, K));
    fill_weights(x, K, 7);
    uint64_t seed = 77;
    for (int64_t i = 0; i < K; i++) a[i] = lb_test_randf(&seed) * (i % 97 == 0 ? 20.0f : 1.0f);
    lb_quantize_row_q8_K_ref(a, qa, K);
    lb_dequantize_row_q8_K(qa, ad, K);
    for (int t = 0; t < 2; t++) {
        const int type = types[t];
        const lb_type_traits *tr = lb_traits(type);
        /* the built-in books */
        tr->from_float(x, q, K);
        tr->to_float(q, y, K);
        const double e = rel_err(x, y, K);
        /* 2 bits: Lloyd-Max on a Gaussian gives 0.34; 3 bits 0.18 */
        CHECK_MSG(e < (type == LB_TYPE_CB2 ? 0.36 : 0.20), "%s round trip error %.4f", tr->name, e);
        double ref = 0;
        for (int64_t i = 0; i < K; i++) ref += (double)y[i] * ad[i];
        float s;
        tr->vec_dot(K, &s, q, qa);
        CHECK_MSG(fabs(s - ref) <= 1e-5 * (fabs(ref) + 1e-3), "%s dot %.7g vs dequantized %.7g", tr->name, s, ref);
        /* with an importance vector that ignores half the columns, the
         * weighted error on the other half must not get worse */
        float *imp = malloc(K * sizeof *imp);
        for (int64_t i = 0; i < K; i++) imp[i] = (i / 8) % 2 ? 1.0f : 1e-4f;
        float *y2 = malloc(K * sizeof *y2);
        lb_quantize_row_cb_imp(type, x, q, K, imp);
        tr->to_float(q, y2, K);
        double e_plain = 0, e_imp = 0;
        for (int64_t i = 0; i < K; i++)
            if (imp[i] == 1.0f) {
                e_plain += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
                e_imp += ((double)x[i] - y2[i]) * ((double)x[i] - y2[i]);
            }
        CHECK_MSG(e_imp < 0.8 * e_plain, "%s: importance weighting did not help (%.3g vs %.3g)", tr->name, e_imp, e_plain);
        free(imp);
        free(y2);
    }
    free(x), free(y), free(a), free(ad), free(q), free(qa);
}

static void test_edge_cases(void) {
    const int64_t K = 512;
    float x[512], y[512];
    unsigned char q[2 * sizeof(block_cb3)];
    for (int t = 0; t < 2; t++) {
        const lb_type_traits *tr = lb_traits(types[t]);
        /* all zero */
        memset(x, 0, sizeof x);
        tr->from_float(x, q, K);
        tr->to_float(q, y, K);
        int nz = 0;
        for (int i = 0; i < K; i++) nz += y[i] != 0.0f;
        CHECK_MSG(nz == 0, "%s: zeros decode to %d non-zeros", tr->name, nz);
        /* one spike in a block of zeros, a constant block, huge and tiny values */
        for (int i = 0; i < K; i++) x[i] = i < 256 ? (i == 3 ? 5.0f : 0.0f) : 0.25f;
        tr->from_float(x, q, K);
        tr->to_float(q, y, K);
        CHECK_MSG(fabsf(y[3] - 5.0f) < 0.1f, "%s: spike decodes to %g", tr->name, y[3]);
        CHECK_MSG(rel_err(x + 256, y + 256, 256) < 0.1, "%s: constant block error %.3f", tr->name,
                  rel_err(x + 256, y + 256, 256));
        for (int i = 0; i < K; i++) x[i] = (i % 2 ? 1e5f : -3e4f) * (1 + i % 5);
        tr->from_float(x, q, K);
        tr->to_float(q, y, K);
        int finite = 1;
        for (int i = 0; i < K; i++) finite &= isfinite(y[i]);
        CHECK_MSG(finite, "%s: huge values decode to non-finite values", tr->name);
        for (int i = 0; i < K; i++) x[i] = 1e-9f * (float)(i % 7 - 3);
        tr->from_float(x, q, K);
        tr->to_float(q, y, K);
        finite = 1;
        for (int i = 0; i < K; i++) finite &= isfinite(y[i]);
        CHECK(finite);
        /* NaN input must not crash (its block is garbage, the rest is not) */
        fill_weights(x, K, 3);
        x[10] = NAN;
        tr->from_float(x, q, K);
        tr->to_float(q, y, K);
        CHECK(rel_err(x + 256, y + 256, 256) < 0.4);
    }
}

/* The AVX2 kernels form the same integer block sums as the reference and
 * differ only in float rounding and order (tolerance: dot_mag): every book
 * count, both lookups and the dispatched choice, random blocks (fields,
 * indices and fp16 scales over their whole range) and random activations,
 * -128 included; and the GEMM kernel for 1 and 7 rows. */
/* Sum of the magnitudes of a dot's per-block terms. The kernels' block sums
 * are exact integers, but they scale partial sums in float lanes and add in
 * another order than the reference: the stated tolerance is 1e-5 of this. */
#if LB_HAVE_X86_KERNELS /* its only user below; unused elsewhere (e.g. in the Arm build) */
static double dot_mag(int type, int64_t K, const unsigned char *w, const block_q8_K *qa) {
    double mag = 0;
    for (int64_t ib = 0; ib < K / QK_CB; ib++) {
        float blk;
        lb_traits(type)->vec_dot(QK_CB, &blk, w + ib * lb_traits(type)->type_size, qa + ib);
        mag += fabs(blk);
    }
    return mag;
}
#endif

static void test_avx2(void) {
#if LB_HAVE_X86_KERNELS
    if (lb_cpu_detected() < LB_ISA_AVX2 || !lb_isa_is_x86(lb_cpu_detected())) {
        printf("no AVX2: skipping the AVX2 kernel checks\n");
        return;
    }
    const int64_t K = 2048;
    unsigned char *w = malloc(lb_row_size(LB_TYPE_CB3, K));
    block_q8_K *qa = malloc(lb_row_size(LB_TYPE_Q8_K, K));
    float *a = malloc(K * sizeof *a);
    uint64_t seed = 1234;
    for (int t = 0; t < 2; t++) {
        const int type = types[t];
        const size_t bs = lb_traits(type)->type_size;
        const int cb2 = type == LB_TYPE_CB2;
        lb_vec_dot_fn fast[3] = {cb2 ? lb_vec_dot_cb2_q8_K_avx2 : lb_vec_dot_cb3_q8_K_avx2,
                                 cb2 ? lb_vec_dot_cb2_q8_K_avx2_combined : lb_vec_dot_cb3_q8_K_avx2_combined,
                                 cb2 ? lb_vec_dot_cb2_q8_K_avx2_pairs : lb_vec_dot_cb3_q8_K_avx2_pairs};
        for (int Cn = 0; Cn < 6; Cn++) {
            const int C = 4 << (Cn % 3), nar = Cn >= 3;
            lb_cb_books b = nar ? make_narrow_books(C, lb_cb_k(type), 40 + C) : make_books(C, lb_cb_k(type), 40 + C);
            CHECK_OK(lb_cb_acquire(type, &b));
            CHECK(lb_cb_current(type)->narrow == nar);
            int bad = 0;
            for (int trial = 0; trial < 20; trial++) {
                for (size_t i = 0; i < lb_row_size(type, K); i++) w[i] = (unsigned char)lb_test_rand(&seed);
                for (int64_t ib = 0; ib < K / QK_CB; ib++) /* finite d: any fp16 below 2^15 */
                    memcpy(w + ib * bs + bs - 2, &(lb_fp16){(lb_fp16)(lb_test_rand(&seed) & 0x77ff)}, 2);
                for (int64_t i = 0; i < K; i++) a[i] = lb_test_randf(&seed) * (trial % 3 ? 1.0f : 1e3f);
                lb_quantize_row_q8_K_ref(a, qa, K);
                if (trial == 0) { /* the extreme activation -128 too */
                    for (int i = 0; i < 64; i++) qa[0].qs[i] = -128;
                    for (int j = 0; j < 4; j++) qa[0].bsums[j] = -128 * 16;
                }
                float ref, got;
                lb_traits(type)->vec_dot(K, &ref, w, qa);
                const double mag = dot_mag(type, K, w, qa);
                for (int v = 0; v < 3; v++) {
                    fast[v](K, &got, w, qa);
                    if (!(fabs((double)got - ref) <= 1e-5 * mag)) {
                        if (bad++ < 3)
                            fprintf(stderr, "%s C=%d variant %d: %.9g vs ref %.9g\n", lb_type_name(type), C, v, got, ref);
                    }
                }
            }
            CHECK_MSG(bad == 0, "%s C=%d: %d AVX2 results differ from the reference", lb_type_name(type), C, bad);
            const lb_kernel *kern = lb_kernel_get_at(type, LB_ISA_AVX2);
            CHECK(kern && kern->isa == LB_ISA_AVX2 && kern->act_type == LB_TYPE_Q8_K && kern->gemm);
            /* the GEMM: 5 weight rows x 7 activation rows (and 1), Y strided,
             * against the reference dot of each pair */
            if (kern && kern->gemm) {
                const size_t wrs = lb_row_size(type, K), ars = lb_row_size(LB_TYPE_Q8_K, K);
                unsigned char *W5 = malloc(5 * wrs);
                block_q8_K *A7 = malloc(7 * ars);
                float Y[7 * 9];
                for (size_t i = 0; i < 5 * wrs; i++) W5[i] = (unsigned char)lb_test_rand(&seed);
                for (int r = 0; r < 5; r++)
                    for (int64_t ib = 0; ib < K / QK_CB; ib++)
                        memcpy(W5 + r * wrs + ib * bs + bs - 2, &(lb_fp16){(lb_fp16)(0x2000 + lb_test_rand(&seed) % 0x1000)}, 2);
                for (int m = 0; m < 7; m++) {
                    for (int64_t i = 0; i < K; i++) a[i] = lb_test_randf(&seed);
                    lb_quantize_row_q8_K_ref(a, (char *)A7 + m * ars, K);
                }
                int gbad = 0;
                for (int M = 1; M <= 7; M += 6) {
                    for (int i = 0; i < 7 * 9; i++) Y[i] = -1.0f;
                    kern->gemm(K, W5, wrs, 1, 5, A7, ars, M, Y, 9);
                    for (int m = 0; m < M; m++)
                        for (int r = 0; r < 9; r++) {
                            float ref = -1.0f;
                            double mag = 0;
                            if (r >= 1 && r < 5) {
                                lb_traits(type)->vec_dot(K, &ref, W5 + r * wrs, (char *)A7 + m * ars);
                                mag = dot_mag(type, K, W5 + r * wrs, (const block_q8_K *)((char *)A7 + m * ars));
                            }
                            if (!(fabs((double)Y[m * 9 + r] - ref) <= 1e-5 * mag)) gbad++;
                        }
                }
                CHECK_MSG(gbad == 0, "%s C=%d: %d GEMM results differ from the reference", lb_type_name(type), C, gbad);
                free(W5), free(A7);
            }
            lb_cb_release(type);
        }
    }
    free(w), free(qa), free(a);
#endif
}

static void test_discovery(void) {
    const int64_t n = 256 * 400;
    float *x = malloc(n * sizeof *x);
    fill_weights(x, n, 21);
    lb_cb_groups G = {0};
    CHECK_OK(lb_cb_groups_add(&G, x, n, 0, 0.5, 9));
    CHECK(G.n > n / 16 * 4 / 10 && G.n < n / 16 * 6 / 10); /* about half sampled */
    for (int k = 4; k <= 8; k += 4) {
        lb_cb_books b1, b2, b3;
        lb_cb_discover_params p = {8, k, 3, 0, 0, 5, 1, NULL, NULL};
        CHECK_OK(lb_cb_discover(&G, &p, &b1));
        p.n_threads = 2;
        CHECK_OK(lb_cb_discover(&G, &p, &b2));
        CHECK_MSG(!memcmp(&b1, &b2, sizeof b1), "k=%d: books differ between 1 and 2 threads", k);
        CHECK_OK(lb_cb_discover(&G, &p, &b3));
        CHECK(!memcmp(&b1, &b3, sizeof b1));
        CHECK_OK(lb_cb_books_validate(&b1));
        p.seed = 4;
        CHECK_OK(lb_cb_discover(&G, &p, &b3));
        CHECK_OK(lb_cb_books_validate(&b3));
        /* the books must beat the built-in set on the data they came from */
        const int type = k == 4 ? LB_TYPE_CB2 : LB_TYPE_CB3;
        float *y = malloc(n * sizeof *y);
        void *q = malloc(lb_row_size(type, n));
        lb_traits(type)->from_float(x, q, n);
        lb_traits(type)->to_float(q, y, n);
        const double e_builtin = rel_err(x, y, n);
        CHECK_OK(lb_cb_acquire(type, &b1));
        lb_traits(type)->from_float(x, q, n);
        lb_traits(type)->to_float(q, y, n);
        const double e_own = rel_err(x, y, n);
        lb_cb_release(type);
        printf("k=%d: error %.4f with discovered books, %.4f with the built-in ones\n", k, e_own, e_builtin);
        /* 2-bit Lloyd-Max on a Gaussian: 0.34, 3-bit: 0.18 */
        CHECK(e_own < (k == 4 ? 0.30 : 0.15) && e_own < e_builtin * 1.1);
        free(y), free(q);
    }
    /* bad parameters and too little data fail cleanly */
    lb_cb_books b;
    lb_cb_discover_params bad = {5, 4, 1, 0, 0, 0, 1, NULL, NULL};
    CHECK(lb_cb_discover(&G, &bad, &b) == LB_ERR_ARG);
    lb_cb_groups tiny = {0};
    CHECK_OK(lb_cb_groups_add(&tiny, x, 64, 0, 1.0, 1));
    lb_cb_discover_params ok = {4, 4, 1, 0, 0, 0, 1, NULL, NULL};
    CHECK(lb_cb_discover(&tiny, &ok, &b) == LB_ERR_ARG);
    lb_cb_groups_free(&tiny);
    lb_cb_groups_free(&G);
    free(x);
}

static void test_registry(void) {
    lb_cb_books a = make_books(4, 4, 1), b = make_books(8, 4, 2);
    CHECK_OK(lb_cb_acquire(LB_TYPE_CB2, &a));
    CHECK_OK(lb_cb_acquire(LB_TYPE_CB2, &a)); /* same books: another reference */
    lb_status s = lb_cb_acquire(LB_TYPE_CB2, &b);
    CHECK(s == LB_ERR_UNSUPPORTED && strstr(lb_last_error(), "codebooks"));
    CHECK_OK(lb_cb_acquire(LB_TYPE_CB3, &(lb_cb_books){4, 8, {{-8, -4, -2, -1, 1, 2, 4, 8}}})); /* other type: independent */
    lb_cb_release(LB_TYPE_CB3);
    lb_cb_release(LB_TYPE_CB2);
    CHECK(lb_cb_acquire(LB_TYPE_CB2, &b) == LB_ERR_UNSUPPORTED);
    lb_cb_release(LB_TYPE_CB2);
    CHECK_OK(lb_cb_acquire(LB_TYPE_CB2, &b)); /* free again: replaced */
    CHECK(lb_cb_current(LB_TYPE_CB2)->books.count == 8);
    lb_cb_release(LB_TYPE_CB2);
    lb_cb_books wrong_k = make_books(4, 8, 3);
    CHECK(lb_cb_acquire(LB_TYPE_CB2, &wrong_k) == LB_ERR_FORMAT);
}

/* Writes a GGUF with given codebook keys (and optionally one CB2 tensor). */
typedef struct {
    int count_type; /* GGUF value type of the count key, -1: absent */
    uint32_t count;
    int arr_type;   /* element type of the array, -1: absent */
    int n;          /* array entries */
    int8_t v[128];
    int with_tensor;
} meta_case;

static const char *write_case(const meta_case *c, const char *name) {
    gguf_writer *w = gguf_writer_new();
    if (c->count_type == GGUF_TYPE_UINT32) gguf_writer_set_u32(w, "lowbit.codebooks.cb2.count", c->count);
    if (c->count_type == GGUF_TYPE_STRING) gguf_writer_set_str(w, "lowbit.codebooks.cb2.count", "four");
    if (c->arr_type >= 0) gguf_writer_set_arr(w, "lowbit.codebooks.cb2", (gguf_vtype)c->arr_type, c->v, (uint64_t)c->n);
    static unsigned char blk[sizeof(block_cb2)];
    const int64_t ne[2] = {256, 1};
    if (c->with_tensor) gguf_writer_add_tensor(w, "blk.0.attn_q.weight", LB_TYPE_CB2, 2, ne, blk);
    const char *path = lb_test_tmp(name);
    CHECK_OK(gguf_writer_write(w, path, NULL, NULL, NULL, NULL));
    gguf_writer_free(w);
    return path;
}

static lb_status read_case(const char *path, int *found) {
    gguf_file *g = NULL;
    lb_status s = gguf_open(path, &g);
    if (s) return s;
    lb_cb_books b;
    s = lb_cb_books_read(g, LB_TYPE_CB2, &b, found);
    if (s == LB_OK) {
        int held;
        s = lb_cb_acquire_for_file(g, &held);
        if (s == LB_OK) lb_cb_release_held(held);
    }
    gguf_close(g);
    return s;
}

static void test_malformed_metadata(void) {
    meta_case good = {GGUF_TYPE_UINT32, 4, GGUF_TYPE_INT8, 16, {-40, -10, 10, 40, -50, -20, 0, 30, -30, -5, 5, 30, -60, -1, 1, 60}, 1};
    int found = 0;
    CHECK_OK(read_case(write_case(&good, "cb_good.gguf"), &found));
    CHECK(found == 1);
    struct {
        const char *what, *expect;
        meta_case c;
    } bad[8];
    int nb = 0;
    for (int i = 0; i < 8; i++) bad[i].c = good;
    bad[nb].what = "count 5", bad[nb].expect = "expected 4, 8 or 16", bad[nb++].c.count = 5;
    bad[nb].what = "array too short", bad[nb].expect = "entries", bad[nb++].c.n = 12;
    bad[nb].what = "uint8 array", bad[nb].expect = "int8", bad[nb++].c.arr_type = GGUF_TYPE_UINT8;
    bad[nb].what = "value out of range", bad[nb].expect = "outside", bad[nb].c.v[3] = 100, nb++;
    bad[nb].what = "not ascending", bad[nb].expect = "ascending", bad[nb].c.v[1] = -45, nb++;
    bad[nb].what = "count missing", bad[nb].expect = "missing", bad[nb++].c.count_type = -1;
    bad[nb].what = "count a string", bad[nb].expect = "not an integer", bad[nb++].c.count_type = GGUF_TYPE_STRING;
    bad[nb].what = "CB2 tensor without books", bad[nb].expect = "no lowbit.codebooks.cb2",
    bad[nb].c.count_type = -1, bad[nb++].c.arr_type = -1;
    for (int i = 0; i < nb; i++) {
        char name[64];
        snprintf(name, sizeof name, "cb_bad%d.gguf", i);
        lb_status s = read_case(write_case(&bad[i].c, name), &found);
        CHECK_MSG(s == LB_ERR_FORMAT && strstr(lb_last_error(), bad[i].expect), "%s: status %d, message '%s'",
                  bad[i].what, s, lb_last_error());
    }
    /* a model load must report it too, and not crash */
    lb_model *m = NULL;
    lb_status s = lb_model_load(lb_test_tmp("cb_bad0.gguf"), NULL, &m);
    CHECK(s != LB_OK && m == NULL);
}

/* Relative error of the logits of model file `path` for 32 tokens against ref. */
static double logit_error(const char *path, const int32_t *toks, const float *ref, float *got) {
    lb_model *m = NULL;
    lb_context *ctx = NULL;
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    double e = 1e9;
    CHECK_OK(lb_model_load(path, NULL, &m));
    if (m) CHECK_OK(lb_context_new(m, &cp, &ctx));
    if (ctx) {
        CHECK_OK(lb_eval(ctx, toks, 32, 0, got, 1));
        e = rel_err(ref, got, 32 * (int64_t)lb_model_n_vocab(m));
    }
    lb_context_free(ctx);
    lb_model_free(m);
    return e;
}

static int same_file(const char *a, const char *b) {
    char *d1 = NULL, *d2 = NULL;
    size_t l1 = 0, l2 = 0;
    int same = lb_read_file(a, &d1, &l1) == LB_OK && lb_read_file(b, &d2, &l2) == LB_OK && l1 == l2 && !memcmp(d1, d2, l1);
    free(d1), free(d2);
    return same;
}

/* tiny-F32 (dim 256, heavy-tailed random weights) to CB2 / CB3: codebooks
 * learned on the fly and saved, the same from the saved file, with an
 * imatrix collected on other tokens; loaded and evaluated against F32, and
 * compared with llama.cpp's own Q2_K / Q3_K files of the same model. */
static void test_model_path(void) {
    const char *f32 = lb_test_shared("interop/tiny-F32.gguf");
    if (!lb_test_have(f32)) {
        printf("no %s: skipping the model path\n", f32);
        return;
    }
    lb_model *m = NULL;
    CHECK_OK(lb_model_load(f32, NULL, &m));
    if (!m) return;
    lb_context_params cp = lb_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    lb_context *ctx = NULL;
    CHECK_OK(lb_context_new(m, &cp, &ctx));
    const int V = lb_model_n_vocab(m);
    int32_t calib[48], toks[32];
    for (int i = 0; i < 48; i++) calib[i] = (i * 101 + 17) % V;
    for (int i = 0; i < 32; i++) toks[i] = (i * 37 + 5) % V;
    float *ref = malloc(48 * (size_t)V * sizeof *ref), *got = malloc(48 * (size_t)V * sizeof *got);
    /* the imatrix sees the calibration tokens only */
    lb_imatrix_collector *col = NULL;
    CHECK_OK(lb_imatrix_collector_new(ctx, &col));
    CHECK_OK(lb_eval(ctx, calib, 48, 0, ref, 1));
    char imat[4096];
    snprintf(imat, sizeof imat, "%s", lb_test_tmp("cb_tiny.imatrix.gguf"));
    CHECK_OK(lb_imatrix_collector_write(col, imat, 1, 48, "test tokens"));
    lb_imatrix_collector_free(col);
    CHECK(ctx->on_matmul == NULL);
    lb_context_reset(ctx);
    CHECK_OK(lb_eval(ctx, toks, 32, 0, ref, 1));
    lb_imatrix *im = NULL;
    CHECK_OK(lb_imatrix_load(imat, &im));
    const float *q_imp = lb_imatrix_get(im, "blk.0.attn_q.weight", 19, 256);
    CHECK(lb_imatrix_count(im) == 15 && q_imp && lb_imatrix_get(im, "output.weight", 13, 256));
    CHECK(!lb_imatrix_get(im, "blk.0.attn_q.weight", 19, 128)); /* wrong width */
    if (q_imp) {
        double sum = 0;
        for (int i = 0; i < 256; i++) sum += q_imp[i];
        CHECK(sum > 0 && isfinite(sum));
    }
    lb_imatrix_free(im);
    lb_context_free(ctx);
    lb_model_free(m);

    for (int t = 0; t < 2; t++) {
        const int type = types[t];
        char books[4096], out[4096], out2[4096], out3[4096];
        snprintf(books, sizeof books, "%s", lb_test_tmp(t ? "cb_tiny_books1.gguf" : "cb_tiny_books0.gguf"));
        snprintf(out, sizeof out, "%s", lb_test_tmp(t ? "cb_tiny_CB3.gguf" : "cb_tiny_CB2.gguf"));
        snprintf(out2, sizeof out2, "%s", lb_test_tmp(t ? "cb_tiny_CB3_file.gguf" : "cb_tiny_CB2_file.gguf"));
        snprintf(out3, sizeof out3, "%s", lb_test_tmp(t ? "cb_tiny_CB3_imat.gguf" : "cb_tiny_CB2_imat.gguf"));
        lb_quantize_params qp = {type, 2, NULL, NULL};
        lb_quantize_options o = {.cb_count = 8, .cb_seed = 7};
        lb_quantize_stats st;
        CHECK_OK(lb_quantize_file_ex(f32, out, &qp, &o, &st));
        CHECK(st.n_quantized == 16 && st.n_fallback == 0);
        gguf_file *g = NULL;
        lb_cb_books b;
        int found = 0;
        CHECK_OK(gguf_open(out, &g));
        if (g) CHECK_OK(lb_cb_books_read(g, type, &b, &found));
        CHECK(found && b.count == 8);
        gguf_close(g);
        if (!found) continue;
        gguf_writer *w = gguf_writer_new();
        CHECK_OK(lb_cb_books_write(w, type, &b));
        CHECK_OK(gguf_writer_write(w, books, NULL, NULL, NULL, NULL));
        gguf_writer_free(w);
        o.codebooks = books;
        CHECK_OK(lb_quantize_file_ex(f32, out2, &qp, &o, &st));
        CHECK_MSG(same_file(out, out2), "%s: quantizing with the saved books differs", lb_type_name(type));
        o.imatrix = imat;
        CHECK_OK(lb_quantize_file_ex(f32, out3, &qp, &o, &st));
        if (t == 1) { /* a codebook file without this type's books is refused */
            o.codebooks = lb_test_tmp("cb_tiny_books0.gguf");
            lb_status s = lb_quantize_file_ex(f32, lb_test_tmp("cb_never.gguf"), &qp, &o, &st);
            CHECK(s == LB_ERR_FORMAT && strstr(lb_last_error(), "no CB3 codebooks"));
        }

        const double e = logit_error(out, toks, ref, got), e_imat = logit_error(out3, toks, ref, got);
        const double e_k = logit_error(lb_test_shared(t ? "interop/tiny-Q3_K.gguf" : "interop/tiny-Q2_K.gguf"), toks, ref, got);
        printf("tiny model, relative logit error vs F32: %s %.3f (%.3f with imatrix), llama.cpp %s %.3f\n",
               lb_type_name(type), e, e_imat, t ? "Q3_K" : "Q2_K", e_k);
        CHECK(e < e_k && e_imat < e_k);

        /* while a CB model is loaded, other books for its type are refused */
        CHECK_OK(lb_model_load(out, NULL, &m));
        lb_cb_books other = make_books(8, lb_cb_k(type), 5);
        CHECK(lb_cb_acquire(type, &other) == LB_ERR_UNSUPPORTED);
        lb_model_free(m);
        CHECK_OK(lb_cb_acquire(type, &other)); /* released with the model */
        lb_cb_release(type);
    }
    free(ref), free(got);
}

/* An imatrix entry for a matrix whose rows fall back to a type that takes
 * no importance (Q2_K -> IQ4_NL for 320-wide rows) must not break quantize. */
static void test_imatrix_fallback(void) {
    float w[4 * 320 + 4 * 256], sum2[320], cnt = 10.0f;
    uint64_t seed = 8;
    for (int i = 0; i < 4 * 320 + 4 * 256; i++) w[i] = lb_test_randf(&seed);
    for (int i = 0; i < 320; i++) sum2[i] = 1.0f + (float)(i % 7);
    const int64_t ne_a[2] = {320, 4}, ne_b[2] = {256, 4}, ne_s[1] = {320}, ne_c[1] = {1};
    gguf_writer *g = gguf_writer_new();
    CHECK_OK(gguf_writer_add_tensor(g, "blk.0.ffn_up.weight", LB_TYPE_F32, 2, ne_a, w));
    CHECK_OK(gguf_writer_add_tensor(g, "blk.0.ffn_down.weight", LB_TYPE_F32, 2, ne_b, w + 4 * 320));
    char model[4096], imat[4096];
    snprintf(model, sizeof model, "%s", lb_test_tmp("cb_fallback_model.gguf"));
    snprintf(imat, sizeof imat, "%s", lb_test_tmp("cb_fallback_imat.gguf"));
    CHECK_OK(gguf_writer_write(g, model, NULL, NULL, NULL, NULL));
    gguf_writer_free(g);
    g = gguf_writer_new();
    CHECK_OK(gguf_writer_set_str(g, "general.type", "imatrix"));
    CHECK_OK(gguf_writer_add_tensor(g, "blk.0.ffn_up.weight.in_sum2", LB_TYPE_F32, 1, ne_s, sum2));
    CHECK_OK(gguf_writer_add_tensor(g, "blk.0.ffn_up.weight.counts", LB_TYPE_F32, 1, ne_c, &cnt));
    CHECK_OK(gguf_writer_write(g, imat, NULL, NULL, NULL, NULL));
    gguf_writer_free(g);
    const int targets[4] = {LB_TYPE_Q2_K, LB_TYPE_Q3_K, LB_TYPE_CB2, LB_TYPE_CB3};
    for (int i = 0; i < 4; i++) {
        lb_quantize_params qp = {targets[i], 1, NULL, NULL};
        lb_quantize_options o = {.cb_count = 4, .cb_seed = 1, .imatrix = imat};
        lb_quantize_stats st;
        CHECK_OK(lb_quantize_file_ex(model, lb_test_tmp("cb_fallback_out.gguf"), &qp, &o, &st));
        CHECK(st.n_quantized == 1 && st.n_fallback == 1);
    }
}

int main(void) {
    test_fields();
    test_dequant_definition();
    test_round_trip_and_dot();
    test_edge_cases();
    test_avx2();
    test_discovery();
    test_registry();
    test_malformed_metadata();
    test_model_path();
    test_imatrix_fallback();
    return lb_test_result("test_cb");
}
