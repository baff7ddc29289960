/* QIGen (seed 001) for the GQ{b}_G{g} types: the kernels that
 * tools/qigen/qigen.c generates at build time from the paper's performance
 * model, their table, and the runtime that drives them (kernels/qigen.c):
 * Mini-GEMV blocking, the activation sums eq. (2) needs, the choice among
 * the generated candidates (the model's default, or the one `lowbit tune`
 * measured fastest), the prefill GEMM, and the lb_kernel_list entries.
 * Weights are in the interleaved layouts of formats/repack_qg.h (GQ*_QG),
 * repacked at load; docs/qigen.md has the whole story.
 *
 * A generated Micro-GEMV kernel (lb_qg_micro_fn) computes t_u row vectors
 * of VL rows each (VL: 8 rows for AVX2, 16 for AVX-512, 4 for NEON; rows
 * v0 VL .. (v0 + t_u) VL - 1) over nxb x-blocks (128 weights each) of one
 * activation row:
 *   w    the tensor at the first x-block of the K range (group 0);
 *   gs   bytes per 16-row group (16 * row size);
 *   act  i8: the Q8_0 blocks of the K range; f32: the fp32 activations;
 *   fa   i8: the activation scales d per Q8_0 block (fp32);
 *        f32: the activation sum per group (eq. (2)'s sum x);
 *   ia   i8: the activation sum per segment of min(g, 32) (exact int);
 *   y    output of row v0 VL (y[0 .. t_u VL)): set (first) or added to. */
#ifndef LB_QIGEN_H
#define LB_QIGEN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "formats/gq.h"
#include "kernels/cpu.h"
#include "kernels/dispatch.h"

enum { LB_QG_AVX2, LB_QG_AVX512, LB_QG_NEON, LB_QG_DOTPROD, LB_QG_N_ISA };
enum { LB_QG_I8, LB_QG_F32, LB_QG_N_VAR }; /* the two generated variants */

typedef void (*lb_qg_micro_fn)(const uint8_t *w, size_t gs, int v0, int nxb, const void *act, const float *fa,
                               const int32_t *ia, float *y, int first);
/* One 16-row group of nxb x-blocks -> 16 rows of Q8_0_4X4 (formats/repack.h) at dst. */
typedef void (*lb_qg_cvt_fn)(const uint8_t *xg, int nxb, uint8_t *dst);

/* A candidate: the Micro-GEMV tile (eq. (4)) and its Mini-GEMV block (eq. (5)). */
typedef struct {
    int mu, tu; /* activation units x row vectors */
    int mb, tb; /* weights along K (multiple of 128) x rows (multiple of 16 and t_u VL) */
    lb_qg_micro_fn fn;
} lb_qg_cand;

/* The candidates of one (ISA, GQ type, variant). */
typedef struct {
    int type;    /* the plain GQ type */
    int isa;     /* LB_QG_AVX2 ... */
    int variant; /* LB_QG_I8, LB_QG_F32 */
    int vl;      /* rows per vector register */
    int eta, l1_kib; /* the model's inputs */
    int n_cand, def; /* candidates, the model's default (most registers under eq. (4)) */
    const lb_qg_cand *cand;
    lb_qg_cvt_fn cvt; /* prefill: the weight-tile converter (i8, g >= 32), else NULL */
} lb_qg_set;

/* The generated table (qigen_table.c in the build directory), ended by type -1. */
extern const lb_qg_set lb_qg_sets[];

/* ---- helpers for the generated code ---- */
static inline int32_t lb_qg_ld32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint32_t lb_qg_ld32u(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
/* Software prefetch in the generated x-block loops: every row vector's
 * stream lb_qg_prefetch_bytes[isa] ahead (0: none), into L2
 * (lb_qg_prefetch_l2) or L1, as kernels/cpu.h's lb_cpu_prefetch_l2 says for
 * this CPU; LOWBIT_QG_PREFETCH=BYTES sets the distance of every ISA
 * (docs/qigen.md). Set once by the runtime before the first kernel runs. */
extern size_t lb_qg_prefetch_bytes[LB_QG_N_ISA];
extern int lb_qg_prefetch_l2;
static inline __attribute__((always_inline)) void lb_qg_prefetch(const uint8_t *p, size_t n, int l2) {
    if (l2)
        for (size_t o = 0; o < n; o += 64) __builtin_prefetch(p + o, 0, 2);
    else
        for (size_t o = 0; o < n; o += 64) __builtin_prefetch(p + o, 0, 3);
}

/* ---- runtime (kernels/qigen.c) ---- */

/* The set of (isa, type, variant); type may be the plain GQ type or its
 * _QG layout. NULL if not generated for this build's architecture. */
const lb_qg_set *lb_qg_find(int qisa, int type, int variant);
const char *lb_qg_isa_name(int qisa);
const char *lb_qg_variant_name(int variant);
/* The generated ISA that serves a dispatch level, -1 if none (scalar). */
int lb_qg_isa_of_level(lb_isa level);
/* The lowest dispatch level whose CPU runs a generated ISA's kernels. */
lb_isa lb_qg_level_of_isa(int qisa);
/* The variant the kernel table dispatches at an ISA (docs/qigen.md: int8,
 * measured faster than the fp32 one everywhere it was measured). */
int lb_qg_dispatch_variant(int qisa);

/* The candidate in force for a set: set by lb_qg_set_choice, else the tune
 * file's (read once, at first use: LOWBIT_TUNE_FILE, default
 * ~/.cache/lowbit/qigen-tune.txt; "off" reads none), else the model's default. */
int lb_qg_choice(const lb_qg_set *s);
/* Forces candidate idx for a set (-1: back to the tune file's or the default). */
void lb_qg_set_choice(const lb_qg_set *s, int idx);
/* Index of (mu, tu) in a set, -1 if none. */
int lb_qg_find_cand(const lb_qg_set *s, int mu, int tu);
/* The tune file path in force ("" when off). */
const char *lb_qg_tune_path(void);
/* Reads a tune file (replacing earlier tune choices; lb_qg_set_choice's stay):
 * returns the entries applied, -1 if the file is missing (silently) or
 * malformed (with a warning: then nothing of it is applied). */
int lb_qg_load_tune(const char *path);
/* Writes choices as a tune file: n lines of (isa, type, variant, mu, tu,
 * GB/s); entries of the existing file at path for other (isa, type,
 * variant) are kept. Temp name + rename. Returns 0 on success. */
typedef struct {
    int isa, type, variant, mu, tu;
    double gbs;
} lb_qg_tune_entry;
int lb_qg_write_tune(const char *path, const lb_qg_tune_entry *e, int n, const char *comment);

/* GEMV through candidate ci of s (mb > 0 overrides its m_b, rounded down to
 * a multiple of 128; tests): the lb_gemm_fn arguments, A plain rows of the
 * variant's activations (i8: Q8_0, f32: fp32), [n0, n1) whole 16-row groups. */
void lb_qg_gemv(const lb_qg_set *s, int ci, int mb, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
/* A whole product through candidate ci (the i8 or f32 variant, the
 * dispatched one or not): Y (M x N) = X (M x K fp32) times the _QG tensor W
 * transposed, N a multiple of 16, rows split over n_threads as lb_matmul
 * does. For lowbit tune and bench/qigen. */
void lb_qg_matmul(const lb_qg_set *s, int ci, const void *W, int64_t K, int64_t N, const float *X, int M, float *Y,
                  int n_threads);

/* ---- lb_kernel_list entries (kernels/dispatch.c; field order in dispatch.h) ----
 * GEMV: the generated i8 kernels on plain Q8_0 rows. GEMM (prefill, g >= 32):
 * each 16-row weight tile converted to Q8_0_4X4 (exact: d = s, quants
 * q - z) and multiplied by that layout's GEMM at the level, on its 4-row
 * activation groups; g = 16 (two scales per 32 weights, no Q8_0 form) runs
 * every row through the GEMV's Mini-GEMV blocks instead (act_rows 0). */
#define LB_QG_ARGS                                                                                            \
    int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, size_t a_row_size, int M, float *Y, \
        size_t ldy
#define LB_QG_DECL(name, NAME, B, G)                                                                          \
    void lb_gemv_##name##_qg_ref(LB_QG_ARGS);                                                                 \
    void lb_gemv_##name##_qg_avx2(LB_QG_ARGS);                                                                \
    void lb_gemm_##name##_qg_avx2(LB_QG_ARGS);                                                                \
    void lb_gemv_##name##_qg_avx512(LB_QG_ARGS);                                                              \
    void lb_gemm_##name##_qg_avx512(LB_QG_ARGS);                                                              \
    void lb_gemv_##name##_qg_neon(LB_QG_ARGS);                                                                \
    void lb_gemm_##name##_qg_neon(LB_QG_ARGS);                                                                \
    void lb_gemv_##name##_qg_dotprod(LB_QG_ARGS);                                                             \
    void lb_gemm_##name##_qg_dotprod(LB_QG_ARGS);                                                             \
    void lb_gemm_##name##_qg_i8mm(LB_QG_ARGS);
LB_GQ_LIST(LB_QG_DECL)
#undef LB_QG_DECL

/* scalar reference: any _QG tensor runs at any level */
#define LB_QG_REF_ENTRY(name, NAME, B, G)                                                                     \
    {LB_TYPE_##NAME##_QG, LB_TYPE_Q8_0, LB_ISA_SCALAR, #name "_qg_ref", lb_quantize_row_q8_0_ref, NULL, NULL, \
     lb_gemv_##name##_qg_ref},
#define LB_QG_REF_KERNELS LB_GQ_LIST(LB_QG_REF_ENTRY)

/* one level: name suffix NM, GEMV / GEMM suffixes GV / GM, the plain-row
 * quantizer QA, the 4-row group quantizer QX4 and its bytes per 4 x 32 */
#define LB_QG_ENTRY(name, NAME, G, LEVEL, NM, GV, GM, QA, QX4, X4B)                                           \
    {LB_TYPE_##NAME##_QG, LB_TYPE_Q8_0, LEVEL, #name "_qg_" NM, QA, NULL,                                    \
     (G) >= 32 ? lb_gemm_##name##_qg_##GM : NULL, lb_gemv_##name##_qg_##GV, (G) >= 32 ? 4 : 0,                \
     (G) >= 32 ? QX4 : NULL, (G) >= 32 ? (X4B) : 0, 0, 1},
#define LB_QG_AVX2_ENTRY(name, NAME, B, G)                                                                    \
    LB_QG_ENTRY(name, NAME, G, LB_ISA_AVX2, "avx2", avx2, avx2, lb_quantize_row_q8_0_avx2,                    \
                lb_quantize_q8_0x4_c8_avx2, sizeof(lb_block_q8_0x4a))
#define LB_QG_AVX512_ENTRY(name, NAME, B, G)                                                                  \
    LB_QG_ENTRY(name, NAME, G, LB_ISA_AVX512, "avx512", avx512, avx512, lb_quantize_row_q8_0_avx2,            \
                lb_quantize_q8_0x4v_avx512, sizeof(lb_block_q8_0x4v))
#define LB_QG_NEON_ENTRY(name, NAME, B, G)                                                                    \
    LB_QG_ENTRY(name, NAME, G, LB_ISA_NEON, "neon", neon, neon, lb_quantize_row_q8_0_neon,                    \
                lb_quantize_q8_0x4_c4_neon, sizeof(lb_block_q8_0x4a))
/* dotprod: the generated SDOT GEMV, the dotprod Q8_0_4X4 GEMM (i8mm uses these too) */
#define LB_QG_DOTPROD_ENTRY(name, NAME, B, G)                                                                 \
    LB_QG_ENTRY(name, NAME, G, LB_ISA_DOTPROD, "dotprod", dotprod, dotprod, lb_quantize_row_q8_0_neon,        \
                lb_quantize_q8_0x4_c4_neon, sizeof(lb_block_q8_0x4a))
/* i8mm: the dotprod GEMV; prefill by SMMLA, the converted tiles packed to Q8_0_4X8 */
#define LB_QG_I8MM_ENTRY(name, NAME, B, G)                                                                    \
    LB_QG_ENTRY(name, NAME, G, LB_ISA_I8MM, "i8mm", dotprod, i8mm, lb_quantize_row_q8_0_neon,                 \
                lb_quantize_q8_0x4_c8_neon, sizeof(lb_block_q8_0x4a))
#define LB_QG_X86_KERNELS LB_GQ_LIST(LB_QG_AVX2_ENTRY) LB_GQ_LIST(LB_QG_AVX512_ENTRY)
#define LB_QG_ARM_KERNELS LB_GQ_LIST(LB_QG_NEON_ENTRY) LB_GQ_LIST(LB_QG_DOTPROD_ENTRY) LB_GQ_LIST(LB_QG_I8MM_ENTRY)

#endif
