/* Repack at load: the matrices of a Q4_0 / IQ4_NL / Q8_0 (MXFP4 as MXFP4_NL; and Q2_K / CB2 /
 * CB3: formats/repack.h's 16-row super-block layouts) model are
 * rewritten once into the interleaved layout the kernels of this CPU read
 * fastest, so every matmul afterwards streams R rows per load. Costs one
 * pass over the weights (memory bandwidth; well under a second for 1B
 * parameters). Repacked matrices live in new owned buffers (on huge pages
 * where the kernel allows): a buffer the model owned is freed, a mapped
 * file is never written. */
#include "model/repack.h"

#include <stdlib.h>
#include <strings.h>

#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/gc.h"
#include "formats/repack.h"
#include "formats/repack_kx.h"
#include "formats/repack_qg.h"

enum { MODE_UNSET = -1, MODE_OFF, MODE_AUTO, MODE_4X4, MODE_4X8, MODE_8X8 };
static int repack_mode = MODE_UNSET;
static const char *const mode_names[] = {"off", "auto", "4x4", "4x8", "8x8"};

static int parse_mode(const char *s) {
    if (!s || !*s) return MODE_AUTO;
    if (!strcasecmp(s, "0") || !strcasecmp(s, "none") || !strcasecmp(s, "no")) return MODE_OFF;
    for (int i = 0; i < 5; i++)
        if (!strcasecmp(s, mode_names[i])) return i;
    return MODE_UNSET;
}

int lb_repack_set_mode(const char *mode) {
    const int m = parse_mode(mode);
    if (m == MODE_UNSET) return 0;
    repack_mode = m;
    return 1;
}

static int mode_in_force(void) {
    if (repack_mode == MODE_UNSET) {
        const char *env = getenv("LOWBIT_REPACK");
        repack_mode = parse_mode(env);
        if (repack_mode == MODE_UNSET) {
            lb_log(0, "warning: LOWBIT_REPACK=%s is not one of auto|off|4x4|4x8|8x8; using auto\n", env);
            repack_mode = MODE_AUTO;
        }
    }
    return repack_mode;
}

const char *lb_repack_mode(void) { return mode_names[mode_in_force()]; }

/* Layouts to try, best first, per ISA family (measured with bench/kernels:
 * on AVX2 the 8-row layouts need the fewest combine steps per row). */
static const int prefs_x86[][2] = {{8, 8}, {4, 8}, {4, 4}};
static const int prefs_i8mm[][2] = {{4, 8}, {8, 8}, {4, 4}};
static const int prefs_dotprod[][2] = {{4, 4}, {4, 8}, {8, 8}};

int lb_repack_target(int type) {
    if (type == LB_TYPE_Q6_K_16X4_V1) {
        /* an older lowbit file's Q6_K plane order (formats/repack_kx.h):
         * to the current layout where its kernels run, else plain Q6_K,
         * in every mode (no kernel reads the old order) */
        const int t = lb_repack_target(LB_TYPE_Q6_K);
        return t == LB_TYPE_Q6_K_16X4 ? t : LB_TYPE_Q6_K;
    }
    if (lb_gc_is(type)) {
        /* whole-row groups (formats/gc.h): expanded into G128 blocks and
         * repacked where a fast kernel runs them (QIGen's, the table
         * lookup's), else kept (scalar reference) */
        const int g = lb_gc_g128(type), t = lb_repack_target(g);
        return t != g ? t : type;
    }
    if (lb_abq_codes_of(type) >= 0) {
        /* ABQ: the code layout of the int8 kernels where one runs, 16 rows
         * interleaved where the VNNI decode of that layout runs (formats/abq.h),
         * but not at the AMX level, whose prefill GEMM reads the row layout
         * (lb_repack_target_matrix keeps the row layout for 16 activation bits) */
        const int t = lb_abq_codes_of(type), x = lb_abq_x16_of(t), x3 = lb_abq_x16_3_of(t);
        const lb_kernel *k = mode_in_force() == MODE_OFF ? NULL : lb_kernel_get(t);
        const lb_kernel *kx = k ? lb_kernel_get(x) : NULL, *k3 = k && x3 >= 0 ? lb_kernel_get(x3) : NULL;
        /* W3 and W2S: 3-bit fields where their kernel runs, for matrices of
         * N a multiple of 16 (lb_repack_target_matrix takes C4X16 for the others) */
        if (k3 && k3->isa != LB_ISA_SCALAR && k->isa != LB_ISA_AMX) return x3;
        if (kx && kx->isa != LB_ISA_SCALAR && k->isa != LB_ISA_AMX) return x;
        return k && k->isa != LB_ISA_SCALAR ? t : type;
    }
    if (lb_bcq_is_plain(type)) {
        /* BCQ: the 16-row layout of the table-lookup kernels where one runs */
        const int t = lb_bcq_lut_of(type);
        const lb_kernel *k = mode_in_force() == MODE_OFF ? NULL : lb_kernel_get(t);
        return k && k->isa != LB_ISA_SCALAR ? t : type;
    }
    const int kq = lb_repack_is_kq(type) || lb_repack_is_kx(type) || lb_repack_is_qg(type);
    if (type != LB_TYPE_Q4_0 && type != LB_TYPE_IQ4_NL && type != LB_TYPE_MXFP4_NL && type != LB_TYPE_Q8_0 && !kq)
        return type;
    const int mode = mode_in_force();
    if (mode == MODE_OFF) return type;
    if (kq) {
        /* the super-block formats (and the legacy types of K-quant mixes,
         * and the GQ types: formats/repack_qg.h) have one layout, 16 rows
         * (formats/repack.h, repack_kx.h), used in
         * every mode but off where a non-scalar kernel exists (Q2_K's
         * AVX-512 one needs VBMI; without it the plain AVX2 kernels stay) */
        const int t = lb_repack_find(type, 16, 4);
        const lb_kernel *k = t >= 0 ? lb_kernel_get(t) : NULL;
        return k && k->isa != LB_ISA_SCALAR ? t : type;
    }
    const lb_isa level = lb_cpu_level();
    const int (*prefs)[2] = level == LB_ISA_I8MM ? prefs_i8mm : level >= LB_ISA_NEON ? prefs_dotprod : prefs_x86;
    for (int i = 0; i < 3; i++) {
        int R = prefs[i][0], C = prefs[i][1];
        if (mode != MODE_AUTO) {
            if (i) break;
            R = mode == MODE_8X8 ? 8 : 4;
            C = mode == MODE_4X4 ? 4 : 8;
        }
        const int t = lb_repack_find(type, R, C);
        const lb_kernel *k = t >= 0 ? lb_kernel_get(t) : NULL;
        /* the scalar reference of a layout is no faster than the plain one */
        if (k && k->isa != LB_ISA_SCALAR) return t;
    }
    return type;
}

int lb_repack_target_matrix(int type, int64_t N, int act_bits) {
    int t = lb_repack_target(type);
    const int rows = lb_abq_codes_of_x16(t);
    if (rows >= 0 && act_bits == LB_ABQ_ACT_F32) return rows;               /* the fp32 kernels' layout */
    if (lb_abq_x16_bits(t) == 3 && N % 16) t = lb_abq_x16_of(rows);         /* no 3-bit tail rows */
    return t;
}

typedef struct {
    int n;
    uint64_t bytes;
    int to_type;
    int act_bits; /* of the last matrix counted */
} tally;

/* Rewrites one matrix as `type` into dst (a slice of an owned buffer). A
 * buffer the model owned is freed; a mapped file's is left alone. */
static lb_status repack_matrix(lb_model *m, lb_matrix *w, int type, int replace, void *dst) {
    if (lb_gc_is(w->type)) {
        /* GC (a view of the file): each row as G128 blocks (its scale and
         * zero in every block), then the G128 repack */
        const size_t row = lb_row_size(lb_type_base(type), w->K);
        void *g128 = malloc(row * (size_t)w->N);
        if (!g128) return lb_fail(LB_ERR_NOMEM, "out of memory expanding a %s matrix", lb_type_name(w->type));
        lb_gc_view_to_g128(w->data, 0, w->N, g128);
        lb_repack_tensor(type, g128, dst, w->K, w->N);
        free(g128);
        w->row_size = row;
    } else if (w->type == LB_TYPE_Q6_K_16X4_V1) {
        /* the older plane order: unpacked, then repacked unless kept plain */
        if (type == LB_TYPE_Q6_K) {
            lb_unpack_tensor(w->type, w->data, dst, w->K, w->N);
        } else {
            void *plain = malloc(w->row_size * (size_t)w->N);
            if (!plain) return lb_fail(LB_ERR_NOMEM, "out of memory converting a %s matrix", lb_type_name(w->type));
            lb_unpack_tensor(w->type, w->data, plain, w->K, w->N);
            lb_repack_tensor(type, plain, dst, w->K, w->N);
            free(plain);
        }
    } else if (lb_abq_plain_of_codes(type) >= 0) {
        /* ABQ codes: rows of their own size */
        lb_repack_tensor(type, w->data, dst, w->K, w->N);
        w->row_size = lb_row_size(type, w->K);
    } else if (lb_abq_codes_of_x16(type) >= 0) {
        /* ABQ codes, 16 rows interleaved: through the row layout a block at a time */
        if (!lb_abq_planes_to_x16(type, w->data, dst, w->K, w->N))
            return lb_fail(LB_ERR_NOMEM, "out of memory repacking a %s matrix", lb_type_name(w->type));
        w->row_size = lb_row_size(type, w->K);
    } else {
        lb_repack_tensor(type, w->data, dst, w->K, w->N);
    }
    const int i = replace ? lb_model_owned_index(m, w->data) : -1;
    if (i >= 0) {
        lb_free_aligned(m->owned[i]);
        m->owned[i] = NULL;
    }
    w->data = dst;
    w->type = type;
    return LB_OK;
}

/* Row lookups (the embedding) need plain rows. */
static lb_status unpack_embedding(lb_model *m) {
    lb_matrix *e = &m->tok_embd;
    if (e->data && lb_gc_is(e->type)) {
        /* GC: rows as G128 blocks (the lookup dequantizes one row); a tied
         * output keeps the GC view */
        const int g = lb_gc_g128(e->type);
        const size_t row = lb_row_size(g, e->K);
        void *dst = lb_model_own(m, lb_malloc_aligned(row * (size_t)e->N));
        if (!dst) return lb_fail(LB_ERR_NOMEM, "out of memory expanding token_embd");
        lb_gc_view_to_g128(e->data, 0, e->N, dst);
        lb_log(2, "token_embd is stored as %s: expanded to %s for row lookups\n", lb_type_name(e->type),
               lb_type_name(g));
        *e = (lb_matrix){g, e->K, e->N, row, dst, 0};
        return LB_OK;
    }
    if (!e->data || !lb_repack_layout_of(e->type)) return LB_OK;
    const size_t bytes = e->row_size * (size_t)e->N;
    void *dst = lb_model_own(m, lb_malloc_aligned(bytes));
    if (!dst) return lb_fail(LB_ERR_NOMEM, "out of memory unpacking token_embd");
    lb_unpack_tensor(e->type, e->data, dst, e->K, e->N);
    lb_log(2, "token_embd is stored as %s: unpacked to %s for row lookups\n", lb_type_name(e->type),
           lb_type_name(lb_type_base(e->type)));
    /* a tied output keeps reading the interleaved original */
    e->type = lb_type_base(e->type);
    e->data = dst;
    return LB_OK;
}

lb_status lb_model_repack(lb_model *m) {
    lb_status s = unpack_embedding(m);
    if (s) return s;
    /* mode off: only Q6_K_16X4_V1 changes (lb_repack_target) */
    const double t0 = lb_time_s();
    static const int bases[] = {LB_TYPE_Q4_0, LB_TYPE_IQ4_NL, LB_TYPE_MXFP4_NL, LB_TYPE_Q8_0, LB_TYPE_Q2_K, LB_TYPE_CB2,
                                LB_TYPE_CB3,  LB_TYPE_Q3_K,   LB_TYPE_Q4_K, LB_TYPE_Q5_K, LB_TYPE_Q6_K,
                                LB_TYPE_IQ4_XS, LB_TYPE_Q4_1, LB_TYPE_Q5_0, LB_TYPE_Q5_1, LB_TYPE_Q6_K_16X4_V1,
                                LB_TYPE_GQ4_G128, LB_TYPE_GQ4_G64, LB_TYPE_GQ4_G32, LB_TYPE_GQ4_G16,
                                LB_TYPE_GQ3_G128, LB_TYPE_GQ3_G64, LB_TYPE_GQ3_G32, LB_TYPE_GQ3_G16,
                                LB_TYPE_GQ2_G128, LB_TYPE_GQ2_G64, LB_TYPE_GQ2_G32, LB_TYPE_GQ2_G16,
                                LB_TYPE_GQ4_GC, LB_TYPE_GQ3_GC, LB_TYPE_GQ2_GC,
                                LB_TYPE_BCQ4_GC, LB_TYPE_BCQ3_GC, LB_TYPE_BCQ2_GC, LB_TYPE_BCQ1_GC,
#define BCQ_BASE(name, NAME, Q, G) LB_TYPE_##NAME,
                                LB_BCQ_LIST(BCQ_BASE)
#undef BCQ_BASE
                                LB_TYPE_ABQ_W1, LB_TYPE_ABQ_W2, LB_TYPE_ABQ_W3, LB_TYPE_ABQ_W4, LB_TYPE_ABQ_W2S,
                                };
    enum { NB = sizeof bases / sizeof bases[0] };
    tally t[NB];
    for (int i = 0; i < NB; i++) t[i] = (tally){0, 0, -1, 0};
    /* One buffer per layer (and one for the output): its 2 MiB pages are
     * huge pages (lb_malloc_huge), which most single matrices are too
     * small to fill, and at most one layer's plain and repacked copies are
     * alive at once. */
    const int cap = lb_layer_n_matrices(&m->hp);
    lb_matrix **ws = malloc((size_t)cap * sizeof *ws);
    size_t *off = malloc((size_t)cap * sizeof *off);
    int *to = malloc((size_t)cap * sizeof *to);
    if (!ws || !off || !to) s = lb_fail(LB_ERR_NOMEM, "out of memory");
    for (int u = 0; u <= m->hp.n_layer && s == LB_OK; u++) {
        int nw = 0;
        if (u == 0) ws[nw++] = &m->output;
        else nw = lb_layer_matrices(&m->hp, &m->layers[u - 1], ws);
        size_t total = 0;
        for (int i = 0; i < nw; i++) {
            to[i] = ws[i]->data ? lb_repack_target_matrix(ws[i]->type, ws[i]->N, ws[i]->act_bits) : ws[i]->type;
            off[i] = total;
            /* the layout's rows are its base type's (a GC matrix grows to G128's),
             * but ABQ's code layouts have rows of their own (and so do the X16
             * ones: 16 rows of their row layout, or 3.5 bits a weight) */
            const int sized = lb_abq_plain_of_codes(to[i]) >= 0 || lb_abq_codes_of_x16(to[i]) >= 0 ? to[i]
                                                                                               : lb_type_base(to[i]);
            if (to[i] != ws[i]->type) total += (lb_row_size(sized, ws[i]->K) * (size_t)ws[i]->N + 63) & ~(size_t)63;
        }
        if (!total) continue;
        uint8_t *buf = lb_model_own(m, lb_malloc_huge(total));
        if (!buf) {
            s = lb_fail(LB_ERR_NOMEM, "out of memory repacking %s (%.1f MiB)", u ? "a layer" : "the output matrix",
                        total / 1048576.0);
            break;
        }
        for (int i = 0; i < nw; i++) {
            lb_matrix *w = ws[i];
            if (to[i] == w->type) continue;
            const int from = w->type;
            /* a tied output gets its own copy: the embedding keeps plain rows */
            if ((s = repack_matrix(m, w, to[i], w->data != m->tok_embd.data, buf + off[i]))) break;
            int bi = 0;
            while (bi < NB - 1 && bases[bi] != from) bi++;
            tally *c = &t[bi];
            c->n++;
            c->bytes += w->row_size * (uint64_t)w->N;
            c->to_type = to[i];
            c->act_bits = w->act_bits; /* ABQ: its kernel depends on them (kernels/dispatch.h) */
        }
    }
    free(ws);
    free(off);
    free(to);
    if (s) return s;
    for (int i = 0; i < NB; i++)
        if (t[i].n) {
            /* GC: expanded; V1: converted; ABQ: planes to codes */
            const int from = lb_gc_is(bases[i]) || bases[i] == LB_TYPE_Q6_K_16X4_V1 || lb_abq_bits(bases[i])
                                 ? bases[i]
                                 : lb_type_base(t[i].to_type);
            lb_log(1, "repacked %d %s matrices (%.1f MiB) to %s for kernel %s in %.2f s\n", t[i].n, lb_type_name(from),
                   t[i].bytes / 1048576.0, lb_type_name(t[i].to_type),
                   lb_kernel_get_act(t[i].to_type, t[i].act_bits, lb_cpu_level())->name,
                   lb_time_s() - t0);
        }
    return LB_OK;
}
