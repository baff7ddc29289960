/* The runtime of the QIGen kernels (kernels/qigen.h): Mini-GEMV loops around
 * the generated Micro-GEMV kernels, the activation sums of eq. (2), the
 * choice of candidate (forced, tune file, model default), the prefill GEMM
 * (weight tiles converted to Q8_0_4X4 for the level's Q8_0 GEMM), the
 * scalar reference and the per-type entry points of the kernel table. */
#include "kernels/qigen.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "formats/repack.h"
#include "formats/repack_qg.h"
#include "kernels/arm/arm_kernels.h"
#include "kernels/x86/kernels_x86.h"
#include "kernels/x86/q4_0_repack_x86.h"
#include "kernels/x86/repack_avx512.h"

enum { N_GQ = LB_GQ_LAST - LB_GQ_FIRST + 1 };

static const char *const isa_names[LB_QG_N_ISA] = {"avx2", "avx512", "neon", "dotprod"};
static const char *const var_names[LB_QG_N_VAR] = {"i8", "f32"};

const char *lb_qg_isa_name(int qisa) { return qisa >= 0 && qisa < LB_QG_N_ISA ? isa_names[qisa] : "none"; }
const char *lb_qg_variant_name(int v) { return v >= 0 && v < LB_QG_N_VAR ? var_names[v] : "?"; }

int lb_qg_isa_of_level(lb_isa level) {
    if (level == LB_ISA_AVX2) return LB_QG_AVX2;
    if (level == LB_ISA_AVX512 || level == LB_ISA_AMX) return LB_QG_AVX512;
    if (level == LB_ISA_DOTPROD || level == LB_ISA_I8MM) return LB_QG_DOTPROD;
    if (lb_isa_is_arm(level)) return LB_QG_NEON;
    return -1;
}

lb_isa lb_qg_level_of_isa(int qisa) {
    static const lb_isa lv[LB_QG_N_ISA] = {LB_ISA_AVX2, LB_ISA_AVX512, LB_ISA_NEON, LB_ISA_DOTPROD};
    return qisa >= 0 && qisa < LB_QG_N_ISA ? lv[qisa] : LB_ISA_SCALAR;
}

/* int8 at every ISA (docs/qigen.md has the measurements); its Q8_0
 * activations are also the plain GQ reference's, which the driver gives the
 * plain tail rows of a matrix. */
int lb_qg_dispatch_variant(int qisa) {
    (void)qisa;
    return LB_QG_I8;
}

/* ---- the table, indexed ---- */

static const lb_qg_set *sets[LB_QG_N_ISA][LB_QG_N_VAR][N_GQ];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static void build_index(void) {
    for (const lb_qg_set *s = lb_qg_sets; s->type >= 0; s++)
        if (s->isa >= 0 && s->isa < LB_QG_N_ISA && s->variant >= 0 && s->variant < LB_QG_N_VAR && lb_gq_bits(s->type))
            sets[s->isa][s->variant][s->type - LB_GQ_FIRST] = s;
}

const lb_qg_set *lb_qg_find(int qisa, int type, int variant) {
    const int base = lb_gq_bits(type) ? type : lb_gq_type_of_qg(type);
    if (base < 0 || qisa < 0 || qisa >= LB_QG_N_ISA || variant < 0 || variant >= LB_QG_N_VAR) return NULL;
    pthread_once(&index_once, build_index);
    return sets[qisa][variant][base - LB_GQ_FIRST];
}

int lb_qg_find_cand(const lb_qg_set *s, int mu, int tu) {
    for (int i = 0; s && i < s->n_cand; i++)
        if (s->cand[i].mu == mu && s->cand[i].tu == tu) return i;
    return -1;
}

/* ---- choices: forced > tune file > model default (stored as index + 1) ---- */

static int forced[LB_QG_N_ISA][LB_QG_N_VAR][N_GQ];
static int tuned[LB_QG_N_ISA][LB_QG_N_VAR][N_GQ];
static pthread_once_t tune_once = PTHREAD_ONCE_INIT;
static pthread_once_t path_once = PTHREAD_ONCE_INIT;
static char tune_path[4096];

static void find_path(void) {
    const char *env = getenv("LOWBIT_TUNE_FILE"), *home = getenv("HOME");
    if (env && *env) {
        if (strcmp(env, "off")) snprintf(tune_path, sizeof tune_path, "%s", env);
    } else if (home && *home) {
        snprintf(tune_path, sizeof tune_path, "%s/.cache/lowbit/qigen-tune.txt", home);
    }
}

const char *lb_qg_tune_path(void) {
    pthread_once(&path_once, find_path);
    return tune_path;
}

static void load_default_tune(void) {
    const char *p = lb_qg_tune_path();
    if (*p) lb_qg_load_tune(p);
}

int lb_qg_choice(const lb_qg_set *s) {
    if (!s) return 0;
    pthread_once(&tune_once, load_default_tune);
    const int i = s->type - LB_GQ_FIRST, f = forced[s->isa][s->variant][i], t = tuned[s->isa][s->variant][i];
    return f && f <= s->n_cand ? f - 1 : t && t <= s->n_cand ? t - 1 : s->def;
}

void lb_qg_set_choice(const lb_qg_set *s, int idx) {
    if (!s) return;
    pthread_once(&tune_once, load_default_tune); /* a later first use must not override */
    forced[s->isa][s->variant][s->type - LB_GQ_FIRST] = idx >= 0 && idx < s->n_cand ? idx + 1 : 0;
}

/* ---- the tune file ----
 * Text, one entry a line: ISA TYPE VARIANT M_U T_U [GB/S]; '#' starts a
 * comment line. Written by `lowbit tune` (cli/cmd_tune.c). */

typedef struct {
    lb_qg_tune_entry *e;
    int n, cap;
} entry_list;

static int push(entry_list *l, lb_qg_tune_entry e) {
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 32;
        lb_qg_tune_entry *p = realloc(l->e, (size_t)cap * sizeof *p);
        if (!p) return 0;
        l->e = p, l->cap = cap;
    }
    l->e[l->n++] = e;
    return 1;
}

static int name_index(const char *const *names, int n, const char *s) {
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

/* Parses a whole file; 0 and a warning if any line is malformed, -1 if it
 * cannot be read (a warning unless it does not exist, or quiet). */
static int parse_tune(const char *path, entry_list *l, int quiet) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (!quiet && errno != ENOENT) lb_log(0, "warning: tune file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char buf[512];
    int ln = 0, ok = 1;
    while (ok && fgets(buf, sizeof buf, f)) {
        ln++;
        if (!strchr(buf, '\n') && !feof(f)) { /* a line longer than any valid one */
            lb_log(0, "warning: tune file %s line %d is too long: ignoring the file (rerun lowbit tune)\n", path, ln);
            ok = 0;
        }
        char *p = buf;
        while (*p == ' ' || *p == '\t') p++;
        if (!ok || *p == '#' || *p == '\n' || *p == '\r' || !*p) continue;
        char isa[32], type[32], var[32], extra[32];
        int mu, tu;
        double gbs = 0;
        const int n = sscanf(p, "%31s %31s %31s %d %d %lf %31s", isa, type, var, &mu, &tu, &gbs, extra);
        lb_qg_tune_entry e = {name_index(isa_names, LB_QG_N_ISA, isa), lb_type_from_name(type),
                              name_index(var_names, LB_QG_N_VAR, var), mu, tu, gbs};
        if ((n != 5 && n != 6) || e.isa < 0 || !lb_gq_bits(e.type) || e.variant < 0 || mu < 1 || mu > 64 || tu < 1 ||
            tu > 64 || !(gbs >= 0 && gbs < 1e6)) {
            lb_log(0, "warning: tune file %s line %d is malformed: ignoring the file (rerun lowbit tune)\n", path, ln);
            ok = 0;
        } else if (!push(l, e)) {
            ok = 0;
        }
    }
    if (ferror(f)) ok = 0;
    fclose(f);
    return ok;
}

int lb_qg_load_tune(const char *path) {
    entry_list l = {0};
    const int ok = parse_tune(path, &l, 0);
    int applied = -1;
    if (ok == 1) {
        memset(tuned, 0, sizeof tuned);
        applied = 0;
        for (int i = 0; i < l.n; i++) {
            const lb_qg_tune_entry *e = &l.e[i];
            const lb_qg_set *s = lb_qg_find(e->isa, e->type, e->variant);
            if (!s) continue; /* another architecture's entry */
            const int ci = lb_qg_find_cand(s, e->mu, e->tu);
            if (ci < 0) {
                lb_log(0, "warning: tune file %s: %s %s %s has no candidate (m_u, t_u) = (%d, %d) in this build; "
                       "using the model's default\n", path, isa_names[e->isa], lb_type_name(e->type), var_names[e->variant],
                       e->mu, e->tu);
                continue;
            }
            tuned[e->isa][e->variant][e->type - LB_GQ_FIRST] = ci + 1;
            applied++;
        }
    }
    free(l.e);
    return applied;
}

/* mkdir -p of path's directory */
static void make_parent_dirs(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
        *p = '/';
    }
}

int lb_qg_write_tune(const char *path, const lb_qg_tune_entry *e, int n, const char *comment) {
    entry_list keep = {0};
    if (parse_tune(path, &keep, 1) != 1) keep.n = 0;
    make_parent_dirs(path);
    lb_outfile o;
    if (lb_outfile_open(&o, path) != LB_OK) {
        free(keep.e);
        return -1;
    }
    fprintf(o.f, "# lowbit tune: the fastest generated QIGen Micro-GEMV (m_u, t_u) per GQ type (docs/qigen.md)\n");
    if (comment && *comment) fprintf(o.f, "# %s\n", comment);
    fprintf(o.f, "# isa type variant m_u t_u GB/s\n");
    for (int i = 0; i < keep.n; i++) {
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= keep.e[i].isa == e[j].isa && keep.e[i].type == e[j].type && keep.e[i].variant == e[j].variant;
        const lb_qg_tune_entry *k = &keep.e[i];
        if (!dup)
            fprintf(o.f, "%s %s %s %d %d %.2f\n", isa_names[k->isa], lb_type_name(k->type), var_names[k->variant], k->mu,
                    k->tu, k->gbs);
    }
    for (int i = 0; i < n; i++)
        fprintf(o.f, "%s %s %s %d %d %.2f\n", isa_names[e[i].isa], lb_type_name(e[i].type), var_names[e[i].variant],
                e[i].mu, e[i].tu, e[i].gbs);
    free(keep.e);
    return lb_outfile_commit(&o) == LB_OK ? 0 : -1;
}

/* ---- GEMV: Mini-GEMV blocks around the Micro-GEMV kernels ---- */

/* Default distances per ISA (bytes; spread over the bodies): AVX2 measured
 * on Zen 3 (one 16-row stream per tile), AVX-512 on the Xeon (up to ten
 * streams per tile: 3 KiB each then overran the L1; 1-2 KiB the plateau),
 * NEON and dotprod not measured. docs/qigen.md, "Prefetch" and "AVX-512 and AMX". */
static const size_t pf_default[LB_QG_N_ISA] = {3072, 1536, 3072, 3072};
size_t lb_qg_prefetch_bytes[LB_QG_N_ISA];
int lb_qg_prefetch_l2;
static pthread_once_t pf_once = PTHREAD_ONCE_INIT;

static void init_prefetch(void) {
    const char *e = getenv("LOWBIT_QG_PREFETCH");
    long v = -1;
    if (e && *e) {
        char *end;
        v = strtol(e, &end, 10);
        if (*end || v < 0 || v > (1 << 20)) {
            lb_log(0, "warning: LOWBIT_QG_PREFETCH=%s is not a byte count in 0..1048576; using the defaults\n", e);
            v = -1;
        }
    }
    lb_qg_prefetch_l2 = lb_cpu_prefetch_l2();
    for (int i = 0; i < LB_QG_N_ISA; i++) lb_qg_prefetch_bytes[i] = v >= 0 ? (size_t)v : pf_default[i];
}

/* i8 activation sums with SIMD: the driver hands a thread its rows in a
 * few calls plus stolen chunks of 64 rows, each call sums the row again, and
 * in scalar C that took as long as streaming a chunk's weights. Sum of the
 * signed bytes: sad of (a ^ 0x80) against 0 is sum(a + 128). */
#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
__attribute__((target("avx2,f16c"))) static void prep_i8_x86(int seg, int64_t nb, const block_q8_0 *q, float *fa,
                                                            int32_t *ia) {
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        fa[b] = _cvtsh_ss(q[b].d);
        const __m256i s = _mm256_sad_epu8(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)q[b].qs), flip),
                                          _mm256_setzero_si256());
        const __m128i lo = _mm256_castsi256_si128(s), hi = _mm256_extracti128_si256(s, 1);
        const int32_t s0 = (int32_t)(_mm_cvtsi128_si64(lo) + _mm_extract_epi64(lo, 1));
        const int32_t s1 = (int32_t)(_mm_cvtsi128_si64(hi) + _mm_extract_epi64(hi, 1));
        if (seg == 32) ia[b] = s0 + s1 - 32 * 128;
        else ia[2 * b] = s0 - 16 * 128, ia[2 * b + 1] = s1 - 16 * 128;
    }
}
#endif
#if LB_HAVE_ARM_KERNELS
#include <arm_neon.h>
static void prep_i8_neon(int seg, int64_t nb, const block_q8_0 *q, float *fa, int32_t *ia) {
    for (int64_t b = 0; b < nb; b++) {
        fa[b] = lb_fp16_to_f32(q[b].d);
        const int32_t s0 = vaddlvq_s8(vld1q_s8(q[b].qs)), s1 = vaddlvq_s8(vld1q_s8(q[b].qs + 16));
        if (seg == 32) ia[b] = s0 + s1;
        else ia[2 * b] = s0, ia[2 * b + 1] = s1;
    }
}
#endif

/* Per activation row the sums eq. (2) needs: i8: fa = d per Q8_0 block,
 * ia = sum of the quants per segment of min(g, 32); f32: fa = sum x per group. */
static void prep_row(int variant, int group, int64_t K, const void *a, float *fa, int32_t *ia) {
#if LB_HAVE_X86_KERNELS
    if (variant == LB_QG_I8 && lb_cpu_level() != LB_ISA_SCALAR) {
        prep_i8_x86(group < 32 ? 16 : 32, K / 32, a, fa, ia);
        return;
    }
#elif LB_HAVE_ARM_KERNELS
    if (variant == LB_QG_I8) {
        prep_i8_neon(group < 32 ? 16 : 32, K / 32, a, fa, ia);
        return;
    }
#endif
    if (variant == LB_QG_I8) {
        const block_q8_0 *q = a;
        const int seg = group < 32 ? 16 : 32;
        for (int64_t b = 0; b < K / 32; b++) {
            fa[b] = lb_fp16_to_f32(q[b].d);
            for (int h = 0; h < 32; h += seg) {
                int32_t s = 0;
                for (int i = h; i < h + seg; i++) s += q[b].qs[i];
                ia[(b * 32 + h) / seg] = s;
            }
        }
    } else {
        const float *x = a;
        for (int64_t gi = 0; gi < K / group; gi++) {
            float s = 0.0f;
            for (int i = 0; i < group; i++) s += x[gi * group + i];
            fa[gi] = s;
        }
    }
}

enum { PREP_STACK = 4096 }; /* floats + ints of activation sums on the stack */

void lb_qg_gemv(const lb_qg_set *s, int ci, int mb, int64_t K, const void *W, size_t wrs, int n0, int n1,
                const void *A, size_t ars, int M, float *Y, size_t ldy) {
    pthread_once(&pf_once, init_prefetch);
    const lb_qg_cand *c = &s->cand[ci];
    const int t1 = lb_qg_find_cand(s, c->mu, 1);
    const lb_qg_cand *c1 = &s->cand[t1 >= 0 ? t1 : ci]; /* the remainder of a row block: t_u = 1 */
    const int bits = lb_gq_bits(s->type), group = lb_gq_group(s->type), VL = s->vl, i8 = s->variant == LB_QG_I8;
    const int seg = group < 32 ? 16 : 32;
    const size_t gs = 16 * wrs, xbs = LB_QG_XBS(bits, group);
    mb = (mb > 0 ? mb : c->mb) / QK_GQ * QK_GQ;
    if (mb < QK_GQ) mb = QK_GQ;
    /* activation sums per row: nfa floats, nia ints */
    const int64_t nfa = i8 ? K / 32 : K / group, nia = i8 ? K / seg : 0;
    float fstack[PREP_STACK];
    int32_t istack[PREP_STACK];
    float *fa = fstack;
    int32_t *ia = istack;
    int MC = (int)LB_MIN((int64_t)M, PREP_STACK / LB_MAX(nfa, (int64_t)1));
    if (nia) MC = (int)LB_MIN((int64_t)MC, PREP_STACK / nia);
    if (MC < 1) {
        MC = 1;
        fa = malloc(sizeof(float) * (size_t)nfa);
        ia = malloc(sizeof(int32_t) * (size_t)LB_MAX(nia, (int64_t)1));
        if (!fa || !ia) {
            lb_log(0, "error: out of memory in the QIGen GEMV (K = %lld)\n", (long long)K);
            for (int m = 0; m < M; m++)
                for (int n = n0; n < n1; n++) Y[(size_t)m * ldy + n] = NAN;
            free(fa == fstack ? NULL : fa);
            free(ia == istack ? NULL : ia);
            return;
        }
    }
    for (int m0 = 0; m0 < M; m0 += MC) {
        const int mc = LB_MIN(MC, M - m0);
        for (int m = 0; m < mc; m++)
            prep_row(s->variant, group, K, (const char *)A + (size_t)(m0 + m) * ars, fa + m * nfa, ia + m * nia);
        /* Mini-GEMV blocks: t_b rows x m_b weights; the weights of a block
         * (eq. (5): with x and y, within the L1) serve every activation row */
        for (int r0 = n0; r0 < n1; r0 += c->tb) {
            const int v1 = LB_MIN(r0 + c->tb, n1) / VL;
            for (int64_t k0 = 0; k0 < K; k0 += mb) {
                const int nxb = (int)(LB_MIN((int64_t)mb, K - k0) / QK_GQ);
                const uint8_t *wk = (const uint8_t *)W + (size_t)(k0 / QK_GQ) * xbs;
                for (int m = 0; m < mc; m++) {
                    const char *arow = (const char *)A + (size_t)(m0 + m) * ars;
                    const void *act = i8 ? (const void *)(arow + (size_t)(k0 / 32) * sizeof(block_q8_0))
                                         : (const void *)(arow + (size_t)k0 * sizeof(float));
                    const float *fam = fa + m * nfa + (i8 ? k0 / 32 : k0 / group);
                    const int32_t *iam = ia + m * nia + (i8 ? k0 / seg : 0);
                    float *y = Y + (size_t)(m0 + m) * ldy;
                    int v = r0 / VL;
                    for (; v + c->tu <= v1; v += c->tu) c->fn(wk, gs, v, nxb, act, fam, iam, y + (size_t)v * VL, k0 == 0);
                    for (; v < v1; v++) c1->fn(wk, gs, v, nxb, act, fam, iam, y + (size_t)v * VL, k0 == 0);
                }
            }
        }
    }
    if (fa != fstack) free(fa);
    if (ia != istack) free(ia);
}

void lb_qg_matmul(const lb_qg_set *s, int ci, const void *W, int64_t K, int64_t N, const float *X, int M, float *Y,
                  int n_threads) {
    const int i8 = s->variant == LB_QG_I8;
    const size_t wrs = lb_row_size(s->type, K), ars = i8 ? lb_row_size(LB_TYPE_Q8_0, K) : (size_t)K * sizeof(float);
    void *q = NULL;
    if (i8) {
        q = lb_malloc_aligned(ars * (size_t)M);
        if (!q) return;
    }
    const lb_from_float_fn quant = lb_kernel_get(LB_TYPE_Q8_0)->quantize_act;
    const int groups = (int)(N / 16);
    if (n_threads < 1) n_threads = 1;
#pragma omp parallel num_threads(n_threads)
    {
        const int nth = omp_get_num_threads(), ith = omp_get_thread_num();
        if (i8) {
            /* each thread a slice of every row's blocks, as the driver does in decode */
            const int64_t nb = K / 32, b0 = nb * ith / nth, b1 = nb * (ith + 1) / nth;
            for (int m = 0; m < M && b1 > b0; m++)
                quant(X + (size_t)m * K + b0 * 32, (char *)q + (size_t)m * ars + (size_t)b0 * sizeof(block_q8_0),
                      (b1 - b0) * 32);
        }
#pragma omp barrier
        const int g0 = (int)((int64_t)groups * ith / nth), g1 = (int)((int64_t)groups * (ith + 1) / nth);
        if (g1 > g0) lb_qg_gemv(s, ci, 0, K, W, wrs, 16 * g0, 16 * g1, i8 ? q : (const void *)X, ars, M, Y, (size_t)N);
    }
    lb_free_aligned(q);
}

/* ---- scalar reference: unpack each row, the plain GQ reference dot ---- */

static void gemv_ref(int type, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, size_t ars, int M,
                     float *Y, size_t ldy) {
    const int qg = lb_qg_type_of(type);
    const lb_type_traits *t = lb_traits(type);
    uint8_t *rows = malloc(16 * wrs);
    if (!rows) {
        lb_log(0, "error: out of memory in the GQ reference GEMV\n");
        return;
    }
    for (int n = n0; n < n1; n += 16) {
        lb_unpack_tensor(qg, (const uint8_t *)W + (size_t)(n / 16) * 16 * wrs, rows, K, 16);
        for (int r = n; r < LB_MIN(n + 16, n1); r++)
            for (int m = 0; m < M; m++)
                t->vec_dot(K, Y + (size_t)m * ldy + r, rows + (size_t)(r - n) * wrs, (const char *)A + (size_t)m * ars);
    }
    free(rows);
}

/* ---- the kernel table's entry points ---- */

static void gemv_entry(int qisa, int type, int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A,
                       size_t ars, int M, float *Y, size_t ldy) {
    const lb_qg_set *s = lb_qg_find(qisa, type, lb_qg_dispatch_variant(qisa));
    if (!s) {
        gemv_ref(type, K, W, wrs, n0, n1, A, ars, M, Y, ldy);
        return;
    }
    lb_qg_gemv(s, lb_qg_choice(s), 0, K, W, wrs, n0, n1, A, ars, M, Y, ldy);
}

/* Prefill: 16-row tiles converted to Q8_0_4X4 (d = s, quants q - z; exact)
 * into a per-thread buffer, up to 3 at a time (the AVX-512 Q8_0 GEMM
 * decodes 48 rows per pass: 3 row vectors x 4 activation rows = 12 VNNI
 * chains; 16 rows a call left it 4, measured 14 % slower), then the
 * level's Q8_0_4X4 GEMM on the 4-row activation groups that the entry's
 * quantize_act_x4 wrote. AVX2 first packs the tile (pack, not NULL) for a
 * GEMM that uses q - z's small range: stored + 16 (0..31) they multiply
 * the activations by vpmaddubsw alone, as Q4_0's nibbles do, instead of
 * the sign trick that any Q8_0 quant needs (docs/qigen.md). */
enum { TILE_ROWS = 48, TILE_MAX_BYTES = 512 * 1024 };
static _Thread_local uint8_t *tile_buf;
static _Thread_local size_t tile_cap;
typedef void (*tile_pack_fn)(const void *src, size_t row_size, int rows, int64_t K, void *dst);

static void gemm_entry(int qisa, int type, lb_gemm_fn q8gemm, tile_pack_fn pack, int64_t K, const void *W, size_t wrs,
                       int n0, int n1, const void *A, size_t ars, int M, float *Y, size_t ldy) {
    const lb_qg_set *s = lb_qg_find(qisa, type, LB_QG_I8);
    const size_t qrow = (size_t)(K / 32) * sizeof(block_q8_0);
    const int rows = TILE_ROWS * qrow <= TILE_MAX_BYTES ? TILE_ROWS : 16;
    const size_t need = (size_t)rows * qrow * (pack ? 2 : 1); /* the pack's output after the tile */
    if (need > tile_cap) {
        lb_free_aligned(tile_buf);
        tile_buf = lb_malloc_aligned(need);
        tile_cap = tile_buf ? need : 0;
    }
    if (!s || !s->cvt || !tile_buf) {
        lb_log(0, "error: no QIGen GEMM tile for %s (K = %lld)\n", lb_type_name(type), (long long)K);
        for (int m = 0; m < M; m++)
            for (int n = n0; n < n1; n++) Y[(size_t)m * ldy + n] = NAN;
        return;
    }
    for (int n = n0; n < n1; n += rows) {
        const int nr = LB_MIN(rows, n1 - n);
        for (int g = 0; g < nr; g += 16)
            s->cvt((const uint8_t *)W + (size_t)((n + g) / 16) * 16 * wrs, (int)(K / QK_GQ), tile_buf + (size_t)g * qrow);
        const uint8_t *tile = tile_buf;
        if (pack) {
            pack(tile_buf, qrow, nr, K, tile_buf + (size_t)rows * qrow);
            tile = tile_buf + (size_t)rows * qrow;
        }
        q8gemm(K, tile, qrow, 0, nr, A, ars, M, Y + n, ldy);
    }
}

#define QG_REF_FN(name, NAME, B, G)                                                                          \
    void lb_gemv_##name##_qg_ref(LB_QG_ARGS) { gemv_ref(LB_TYPE_##NAME, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy); }
LB_GQ_LIST(QG_REF_FN)
#undef QG_REF_FN

#define QG_GEMV_FN(name, NAME, ISA, QISA)                                                                     \
    void lb_gemv_##name##_qg_##ISA(LB_QG_ARGS) {                                                              \
        gemv_entry(QISA, LB_TYPE_##NAME, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);                 \
    }
#define QG_GEMM_FN(name, NAME, ISA, QISA, Q8GEMM, PACK)                                                       \
    void lb_gemm_##name##_qg_##ISA(LB_QG_ARGS) {                                                              \
        gemm_entry(QISA, LB_TYPE_##NAME, Q8GEMM, PACK, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);    \
    }

#if LB_HAVE_X86_KERNELS
#define QG_X86_FNS(name, NAME, B, G)                                                                          \
    QG_GEMV_FN(name, NAME, avx2, LB_QG_AVX2)                                                                  \
    QG_GEMV_FN(name, NAME, avx512, LB_QG_AVX512)                                                              \
    QG_GEMM_FN(name, NAME, avx2, LB_QG_AVX2, lb_gemm_q8_0u5x8_q8_0x4_8x8_avx2, lb_pack_q8_0x4_u5x8_avx2)        \
    QG_GEMM_FN(name, NAME, avx512, LB_QG_AVX512, lb_gemm_q8_0x4_q8_0x4_4x4_avx512vnni, NULL)
LB_GQ_LIST(QG_X86_FNS)
#endif
#if LB_HAVE_ARM_KERNELS
#define QG_ARM_FNS(name, NAME, B, G)                                                                          \
    QG_GEMV_FN(name, NAME, neon, LB_QG_NEON)                                                                  \
    QG_GEMM_FN(name, NAME, neon, LB_QG_NEON, lb_gemm_q8_0x4_q8_0x4_4x4_neon, NULL)                            \
    QG_GEMV_FN(name, NAME, dotprod, LB_QG_DOTPROD)                                                            \
    QG_GEMM_FN(name, NAME, dotprod, LB_QG_NEON, lb_gemm_q8_0x4_q8_0x4_4x4_dotprod, NULL)                      \
    QG_GEMM_FN(name, NAME, i8mm, LB_QG_NEON, lb_gemm_q8_0x4_q8_0x4_4x8_i8mm, lb_pack_q8_0x4_c4_to_c8_neon)
LB_GQ_LIST(QG_ARM_FNS)
#endif
