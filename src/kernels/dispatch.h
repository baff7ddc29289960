/* The one dispatch point: for each weight type, the kernel in force at the
 * current ISA level (kernels/cpu.h). The model only ever calls lb_matmul. */
#ifndef LB_DISPATCH_H
#define LB_DISPATCH_H

#include "formats/types.h"
#include "kernels/cpu.h"

/* Y[m*ldy + n] = dot(W row n, A row m) for m in [0,M), n in [n0,n1).
 * A rows are activations already converted to the kernel's act_type. */
typedef void (*lb_gemm_fn)(int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                           const void *A, size_t a_row_size, int M, float *Y, size_t ldy);

/* act_rows fp32 rows (x, x + ldx, ...) of k values -> one group of
 * activation blocks (e.g. lb_block_q8_0x4a, formats/repack.h). */
typedef void (*lb_quantize_x4_fn)(const float *x, size_t ldx, void *y, int64_t k);

/* fp32 row of k values -> act_type row at bits (ABQ's p: formats/abq.h). */
typedef void (*lb_quantize_bits_fn)(const float *x, void *y, int64_t k, int bits);

typedef struct {
    int type;                   /* weight type */
    int act_type;               /* activations are converted to this type */
    lb_isa isa;                 /* level the kernel needs */
    const char *name;           /* e.g. "q4_0_q8_0_avx2" */
    lb_from_float_fn quantize_act; /* fp32 row -> act_type row */
    lb_vec_dot_fn vec_dot;      /* one weight row x one activation row */
    lb_gemm_fn gemm;            /* optional: many rows at once (NULL: vec_dot loop) */
    /* ---- appended fields (leave positional initializers above valid) ----
     * Interleaved weight types (formats/repack.h) have no vec_dot: W is the
     * whole tensor, [n0, n1) whole row groups, and
     *   gemv takes M plain act_type rows (quantize_act), any M;
     *   gemm, when act_rows AR is 4 or 16, takes M/AR groups of AR rows
     *        written by quantize_act_x4 (a_row_size = bytes per group,
     *        M % AR == 0).
     * The driver sends the first M - M % AR rows to gemm, the tail to gemv. */
    lb_gemm_fn gemv;
    int act_rows;               /* 4 or 16: gemm wants quantize_act_x4 groups; 0: plain rows */
    lb_quantize_x4_fn quantize_act_x4;
    size_t act_x4_block;        /* bytes per group x 32 values (<= act_rows / 4 * LB_ACT_X4_MAX_BLOCK) */
    unsigned cpu_needs;         /* LB_CPU_* features needed beyond isa (kernels/cpu.h); 0: none */
    int whole_m;                /* 1: gemm blocks K itself and decodes each weight tile once per
                                 * call, so the driver passes as many activation rows as fit 3/4
                                 * of the L2; 2: it also blocks K (its working set per activation row is
                                 * a K chunk, whatever K is: the AMX-BF16 GEMM, ABQ's AVX2 code GEMM),
                                 * and takes up to 1024 rows; 0: tiles of LB_ACT_TILE_BYTES
                                 * (kernels/matmul.c) */
    int act_whole_row;          /* 1: quantize_act needs whole rows (a per-token scale, ABQ): the
                                 * driver never splits one row's blocks among threads */
    lb_quantize_bits_fn quantize_act_bits; /* when set, activations take the matrix's act_bits
                                 * (lb_matrix) through this instead of quantize_act (ABQ) */
} lb_kernel;

/* Upper bound of act_x4_block per 4 rows over all kernels: scratch sizes use
 * it, so a context stays valid whatever kernel level is forced later. */
#define LB_ACT_X4_MAX_BLOCK 272 /* the AMX int8 256-chunk groups (formats/q8_256.h) */

/* Best kernel for type at the current level, NULL if the type has no dot. */
const lb_kernel *lb_kernel_get(int type);
/* Same for an explicit level (tests compare each level with the reference). */
const lb_kernel *lb_kernel_get_at(int type, lb_isa level);

/* A weight matrix: N rows of K weights, row-major as in GGUF (ne0 = K). */
typedef struct {
    int type;
    int64_t K, N;
    size_t row_size;
    const void *data;
    int act_bits; /* kernels with quantize_act_bits (ABQ): the bits its activations are quantized
                   * to, 1..8, a property of the matrix (the file's lowbit.abq.* keys, model_load.c);
                   * 0: the kernel's default (8) */
} lb_matrix;

/* The kernel for matrix W: lb_kernel_get(W->type), but for an ABQ matrix
 * at 16 activation bits (formats/abq.h, LB_ABQ_ACT_F32) the one taking fp32
 * rows. Every caller that runs W goes through this. */
const lb_kernel *lb_kernel_for(const lb_matrix *W);
/* The same for a type, activation bits and level (the tests). */
const lb_kernel *lb_kernel_get_act(int type, int act_bits, lb_isa level);

/* Bytes W's weights occupy: row_size * N, or for MX (data an lb_mx_view,
 * formats/mx.h) what its tiles, map and outliers store, for GQ{b}_GC (data
 * an lb_gc_view, formats/gc.h) its codes and per-row grids. */
uint64_t lb_matrix_bytes(const lb_matrix *W);

/* Bytes of activation scratch lb_matmul needs for M rows against W (for
 * M <= 4 enough for each of up to 16 threads to convert the rows itself). */
size_t lb_matmul_scratch_size(const lb_matrix *W, int M);

/* Y (M x N, row stride ldy) = X (M x K, row stride K) times W transposed.
 * scratch must hold lb_matmul_scratch_size(W, M) bytes. Multi-threaded. */
void lb_matmul(const lb_matrix *W, const float *X, int M, float *Y, size_t ldy, void *scratch,
               int n_threads);

/* The same for several matrices reading one X (attention's Q, K, V; the
 * FFN's gate and up): Y[i] = X times W[i] transposed. Matrices of one type
 * and K share one activation conversion and one parallel region; otherwise
 * this is one lb_matmul each. scratch: the largest lb_matmul_scratch_size. */
void lb_matmul_multi(const lb_matrix *const *W, int nw, const float *X, int M, float *const *Y, const size_t *ldy,
                     void *scratch, int n_threads);

/* One row each: Y[i] (W[i]->N floats) = W[i] times X[i] (K floats), in one
 * parallel region when the matrices share a type and K (a MoE token's
 * experts' down projections, each reading its own hidden row). scratch:
 * lb_matmul_rows_scratch_size(W[0], nw) bytes, and lb_matmul_scratch_size's
 * for one row of each matrix. */
size_t lb_matmul_rows_scratch_size(const lb_matrix *W, int nw);
void lb_matmul_rows(const lb_matrix *const *W, int nw, const float *const *X, float *const *Y, void *scratch,
                    int n_threads);

#endif
