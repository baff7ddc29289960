/* The CUDA backend's first piece (issue 22): weight matrices on the GPU and
 * Y = X W^T with them, built only with -DLOWBIT_CUDA=ON (docs/cuda.md).
 *
 *  - decode / small M (M <= LB_CUDA_GEMV_MAX_M): one GEMV kernel per type on
 *    int8 activations quantized on the GPU exactly as the CPU does it
 *    (Q8_0 for Q4_0, Q8_0 and MX; Q8_K for Q4_K), dp4a dot products, so the
 *    integer part of every dot product is the CPU reference's;
 *  - MX (seed 002): the 2-bit and 4-bit tiles and the fp16 outliers in one
 *    kernel (Algorithm 1: the second-order scale work of a tile overlapped
 *    with the loads of the codes, outliers added by the rows' owners);
 *  - prefill (larger M): the weights dequantized once to fp16 (cached in the
 *    matrix) and cuBLAS cublasGemmEx, fp16 in, fp32 compute and out;
 *  - F16 matrices: cuBLAS for every M, the yardstick;
 *  - BCQ{q}_G{g} (seed 003): LUT-GEMM, fp32 activations, tables of mu = 8
 *    in shared memory (cuda_bcq.cu);
 *  - ABQ_W{q} / ABQ_W2S (seed 004): activations quantized on the GPU to the
 *    matrix's p bits exactly as the CPU does, the product by binary tensor
 *    cores (mma.sync b1, AND + popc), the CPU's float bit for bit
 *    (cuda_abq.cu).
 *
 * Plain C. Pointers named *_dev are device memory; a stream is a
 * cudaStream_t passed as void * (NULL: the default stream). One host thread
 * at a time: the activation workspace and the cuBLAS handle are shared by
 * all matrices. Every call that can fail returns 0, or -1 with a message in
 * lb_cuda_last_error(). */
#ifndef LB_CUDA_H
#define LB_CUDA_H

#include <stddef.h>
#include <stdint.h>

/* The .cu files include this header too; only C sees lb_matrix (the
 * library's headers are C11, not C++). */
#ifndef __CUDACC__
#include "kernels/dispatch.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Message of the last failure (never NULL). */
const char *lb_cuda_last_error(void);

/* ---- the device ---- */

/* Number of CUDA devices; 0 when there is none or no driver (the reason in
 * lb_cuda_last_error). Device 0 is the one used. */
int lb_cuda_device_count(void);

typedef struct {
    char name[256];
    int major, minor;          /* compute capability */
    int sm_count;
    size_t total_mem;          /* bytes */
    size_t l2_bytes;
    int driver_version;        /* cudaDriverGetVersion: 13000 = CUDA 13.0 */
    int runtime_version;       /* cudaRuntimeGetVersion */
} lb_cuda_device_info;

int lb_cuda_device_info_get(int dev, lb_cuda_device_info *out);

/* Frees the activation workspace and the cuBLAS handle (both made on first
 * use). Matrices stay valid. */
void lb_cuda_release(void);

/* ---- weight matrices ---- */

typedef struct lb_cuda_matrix lb_cuda_matrix;

#ifndef __CUDACC__
/* Copies W (host memory) to the device: Q4_0, Q8_0, Q4_K (plain GGUF rows),
 * MX (W->data an lb_mx_view: its tiles, groups and CSR outliers), the plain
 * BCQ and ABQ types (ABQ: W->act_bits the activations' bits, 0 = 8), F16
 * or F32 (any K: cuBLAS SGEMM at every M, for what has no kernel here).
 * The device layout is the kernels' own (lb_cuda_internal.h): Q4_0 / Q8_0
 * split into code and scale arrays, MX tiles split into 16-byte aligned code
 * and scale parts; the bytes a kernel reads are those of the file. */
lb_cuda_matrix *lb_cuda_matrix_upload(const lb_matrix *W);
#endif
void lb_cuda_matrix_free(lb_cuda_matrix *W);
int lb_cuda_matrix_type(const lb_cuda_matrix *W);
int64_t lb_cuda_matrix_rows(const lb_cuda_matrix *W);  /* N */
int64_t lb_cuda_matrix_cols(const lb_cuda_matrix *W);  /* K */
/* Bytes of the weights as stored (lb_matrix_bytes of the source): what a
 * GEMV must read, the numerator of its GB/s. */
uint64_t lb_cuda_matrix_bytes(const lb_cuda_matrix *W);
/* Builds the fp16 copy the prefill path multiplies with (done by the first
 * call that needs it otherwise). F16 matrices have it from the upload. */
int lb_cuda_matrix_make_fp16(lb_cuda_matrix *W, void *stream);

/* ---- Y = X W^T ---- */

/* Largest M the automatic choice sends to the GEMV kernels. */
#define LB_CUDA_GEMV_MAX_M 8

typedef enum {
    LB_CUDA_AUTO = 0, /* GEMV for M <= LB_CUDA_GEMV_MAX_M, else FP16 */
    LB_CUDA_GEMV = 1, /* the int8 GEMV kernels (M > 8: in passes of 8 rows) */
    LB_CUDA_FP16 = 2, /* fp16 weights and activations, cuBLAS GEMM */
} lb_cuda_path;

/* Y_dev (M x N fp32, row-major) = X_dev (M x K fp32, row-major) W^T.
 * F16 and F32 matrices take cuBLAS on every path. */
int lb_cuda_matmul(lb_cuda_matrix *W, const float *X_dev, int M, float *Y_dev, void *stream);
int lb_cuda_matmul_path(lb_cuda_matrix *W, const float *X_dev, int M, float *Y_dev, lb_cuda_path path, void *stream);

/* The two halves of a matmul, for benchmarks: prepare converts X into the
 * shared workspace (int8 rows for GEMV, fp16 rows for FP16), run multiplies
 * the prepared activations by W. run fails unless the last prepare was for
 * a matrix of the same activation format, K and at least M rows. */
int lb_cuda_prepare(const lb_cuda_matrix *W, const float *X_dev, int M, lb_cuda_path path, void *stream);
int lb_cuda_run_prepared(lb_cuda_matrix *W, int M, float *Y_dev, lb_cuda_path path, void *stream);

/* The MX GEMV's second-order scales (docs/cuda.md): 1 staged per chunk of
 * 32 tiles in shared memory as in seed 002's Algorithm 1, 0 (the default:
 * 1.2-1.6x faster on an H200) computed by each thread in registers. on < 0
 * only asks. Returns the setting before the call. Both give the same
 * results to the bit. */
int lb_cuda_mx_smem_scales(int on);

/* Tests: quantizes X_dev (M x K) on the GPU to act_type (LB_TYPE_Q8_0 or
 * LB_TYPE_Q8_K) and writes M rows in the CPU's block format to rows (host),
 * to compare with lb_quantize_row_q8_0_ref / lb_quantize_row_q8_K_ref. */
int lb_cuda_quantize_to_host(int act_type, const float *X_dev, int M, int64_t K, void *rows);

/* The K-tile t_w of BCQ's LUT-GEMV (docs/cuda.md): 256 (32 tables of mu = 8
 * per block) or 128 (16); q = 4 always takes 128. Other values only ask.
 * Returns the setting before the call. Both give results within the same
 * bound (test_cuda_seeds runs both). */
int lb_cuda_bcq_tile(int tw);

/* Tests: quantizes X_dev (M x K, K a multiple of 128) on the GPU to ABQ
 * activations of p bits and writes M rows of block_abq_act (formats/abq.h)
 * to rows (host), to compare with lb_abq_quantize_act. */
int lb_cuda_abq_act_to_host(const float *X_dev, int M, int64_t K, int p, void *rows);

/* ---- the rest of the forward pass (cuda_ops.cu), for the model runner ---- */

/* Device memory: zeroed allocations (NULL on failure), copies queued on
 * stream (to_host then waits for the stream). */
void *lb_cuda_alloc(size_t bytes);
void lb_cuda_free(void *dev);
int lb_cuda_to_device(void *dev, const void *host, size_t bytes, void *stream);
int lb_cuda_to_host(void *host, const void *dev, size_t bytes, void *stream);
int lb_cuda_copy(void *dst_dev, const void *src_dev, size_t bytes, void *stream);
int lb_cuda_synchronize(void);

/* Streams (blocking: ordered with the legacy default stream) and CUDA
 * graphs: what is queued on a stream between capture_begin and capture_end
 * becomes a graph (NULL on failure; the stream is usable again either way),
 * replayed by graph_launch with one call: a decode step's few hundred small
 * launches at the cost of one. Nothing may synchronize or allocate while a
 * stream is captured. */
void *lb_cuda_stream_new(void);
void lb_cuda_stream_free(void *stream);
int lb_cuda_stream_sync(void *stream);
int lb_cuda_capture_begin(void *stream);
void *lb_cuda_capture_end(void *stream);
int lb_cuda_graph_launch(void *graph, void *stream);
/* Changes whenever a scratch buffer the kernels share is freed or moved
 * (lb_cuda_release too): a graph captured under another epoch must be
 * captured again. */
unsigned lb_cuda_scratch_epoch(void);
void lb_cuda_graph_free(void *graph);

/* y row i = w * rmsnorm(x row rows[i]) (rows NULL: row i), n rows of d:
 * scale = 1 / sqrt(mean(x^2) + eps), as the CPU's rmsnorm. */
int lb_cuda_rmsnorm_rows(float *y, const float *x, const int *rows, const float *w, int n, int d, float eps,
                         void *stream);
/* Per row of d: a = post * rmsnorm(a) (post given: Gemma 3), x += a, then
 * y = w * rmsnorm(x) (w given). */
int lb_cuda_residual(float *x, float *a, const float *post, float *y, const float *w, int n, int d, float eps,
                     void *stream);
/* out = silu(g) * u, or gelu_tanh(g) * u: n rows of ff (out's rows
 * contiguous, g's and u's rows ld floats apart; out may be g when ld = ff). */
int lb_cuda_gated(float *out, const float *g, const float *u, int n, int ff, size_t ld, int gelu, void *stream);

/* After the q, k, v matmuls of n tokens: biases, per-head RMSNorm of q and
 * k (Gemma 3), RoPE from the tokens' tables, q in place, k and v into the
 * KV cache. Cache of one layer and sequence: n_head_kv heads of n_ctx
 * positions of head_dim floats (K and V alike); sequence s's at + s *
 * seq_stride floats from k_cache / v_cache. */
typedef struct {
    float *q;                      /* n rows of n_head * head_dim, ld_q floats apart */
    const float *k, *v;            /* n rows of n_head_kv * head_dim, ld_kv floats apart */
    size_t ld_q, ld_kv;
    const float *bq, *bk, *bv;     /* biases or NULL */
    const float *q_norm, *k_norm;  /* head_dim weights or NULL */
    const float *cs, *sn;          /* n rows of rope_dim: lb_rope_table of each token's position */
    const int *pos, *seq;          /* per token */
    float *k_cache, *v_cache;
    size_t seq_stride;
    int n, n_head, n_head_kv, head_dim, rope_dim, neox, n_ctx;
    float eps;
} lb_cuda_qkv_args;
int lb_cuda_qkv(const lb_cuda_qkv_args *a, void *stream);

/* Causal attention of n tokens over their sequences' caches (layout as
 * lb_cuda_qkv_args): token t at pos[t] sees keys max(0, pos - window + 1)
 * (window > 0) .. pos; softmax(scale q . k) v. max_len: the most keys any
 * token sees (how far a decode step's keys may be split over the SMs). */
typedef struct {
    const float *q;                /* n rows, ld_q floats apart */
    size_t ld_q;
    float *out;                    /* n rows of n_head * head_dim */
    const float *k_cache, *v_cache;
    size_t seq_stride;
    const int *pos, *seq;
    int n, n_head, n_head_kv, head_dim, n_ctx, window, max_len;
    float scale;
    float softcap; /* > 0: scores softcap * tanh(s / softcap) (Gemma 2), as the CPU's lb_softcap_canon */
} lb_cuda_attn_args;
int lb_cuda_attention(const lb_cuda_attn_args *a, int sm_count, void *stream);
/* Frees the attention's scratch. */
void lb_cuda_ops_release(void);

/* ---- benchmarks (bench/cuda.c) ---- */

/* Launches a kernel that reads bytes (a multiple of 16) of buf_dev with
 * 16-byte loads on 8 blocks per SM: the read-bandwidth yardstick of the
 * GEMVs. sink_dev: one int it may write. */
int lb_cuda_bench_read(const void *buf_dev, size_t bytes, int *sink_dev, int sm_count, void *stream);
/* Measures the tensor cores' peak for mma.sync m16n8k128 b1 AND + popc
 * (kind 0) or m16n8k32 s8 (kind 1): *ops_per_s = 2 m n k per mma (bit or
 * int8 operations) per second, the best of 3 timed runs. */
int lb_cuda_bench_mma(int kind, int sm_count, int *sink_dev, double *ops_per_s);

#ifdef __cplusplus
}
#endif

#endif
