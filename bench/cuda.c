/* The CUDA kernels (src/kernels/cuda) at seed 002's shapes against cuBLAS
 * fp16 and the GPU's measured memory bandwidth (bench/cuda.sh builds and
 * runs it; docs/cuda.md).
 *
 * N x K = 4096 x 4096, 11008 x 4096, 4096 x 11008 and M = 1, 16, 512, for
 * Q4_0, Q8_0, Q4_K, MX (2/4-bit, outliers), seed 003's BCQ{4,3,2}_G128
 * (LUT-GEMM), seed 004's ABQ_W4 at 8 and 4 activation bits, ABQ_W2 and
 * ABQ_W2S at 8 (BMMA; AUTO keeps them on it at every M: the GEMV, in passes of 8
 * up to M = 16, the GEMM above) and
 * F16 through cuBLAS (the yardstick), each with random codes and sane
 * scales (no kernel's speed depends on the values). Per cell, timed with CUDA events around each run,
 * the L2 flushed before each (a memset of 4x its size, outside the events:
 * a 9 MB matrix would otherwise be read from a 50 MB L2), a few warm-up
 * runs, the median of --reps (default 25):
 *   call    lb_cuda_matmul: activations converted (int8 for the GEMVs, fp16
 *           for cuBLAS) plus the product;
 *   kernel  the product alone on activations converted beforehand;
 *   GB/s    the matrix's stored bytes (lb_matrix_bytes: MX's tiles, map and
 *           outliers) over the kernel time, and that as a share of the read
 *           bandwidth measured in the same run (a read-only kernel; a 1 GiB
 *           device-to-device copy is printed beside it, counting bytes read
 *           plus written);
 *   speedup cuBLAS fp16's time over this one's at the same shape and M.
 * At 8 < M <= 32 (M = 16 by default) the quantized types run both paths:
 * the automatic one (fp16 weights + cuBLAS) and the GEMV in passes of 8 rows.
 * MX's GEMV runs in both variants (lb_cuda_mx_smem_scales): the paper's
 * shared-memory staging of the second-order scales, and registers.
 * The first line says which GPU and driver it ran on.
 * Options: --reps N, --shapes NxK[,NxK...] (N a multiple of 16, K of 256),
 * --m M[,M...] (at most 8 shapes and 8 values of M), --bw-mib N (the
 * bandwidth buffers, default 1024). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "formats/abq.h"
#include "formats/bcq.h"
#include "formats/kquants.h"
#include "formats/mx.h"
#include "kernels/cuda/lb_cuda.h"
#include "kernels/dispatch.h"

#define CU(call)                                                                                              \
    do {                                                                                                      \
        const cudaError_t e_ = (call);                                                                        \
        if (e_ != cudaSuccess) {                                                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)
#define LB(call)                                                                                              \
    do {                                                                                                      \
        if (call) {                                                                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, lb_cuda_last_error());              \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static void fill_random(void *p, size_t n) {
    uint8_t *b = p;
    for (size_t i = 0; i < n; i += 8) {
        const uint64_t r = next_rand();
        memcpy(b + i, &r, n - i < 8 ? n - i : 8);
    }
}

static int reps = 25;
static void *flush_buf;
static size_t flush_bytes;
static cudaEvent_t ev0, ev1;

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* What one timed run does. */
typedef struct {
    int kind; /* 0 lb_cuda_matmul_path, 1 lb_cuda_run_prepared, 2 read kernel, 3 D2D copy */
    lb_cuda_matrix *W;
    const float *X;
    float *Y;
    int M;
    lb_cuda_path path;
    const void *src;
    void *dst;
    size_t bytes;
    int *sink;
    int sms;
} job;

static void run_job(const job *j) {
    switch (j->kind) {
    case 0: LB(lb_cuda_matmul_path(j->W, j->X, j->M, j->Y, j->path, NULL)); break;
    case 1: LB(lb_cuda_run_prepared(j->W, j->M, j->Y, j->path, NULL)); break;
    case 2: LB(lb_cuda_bench_read(j->src, j->bytes, j->sink, j->sms, NULL)); break;
    default: CU(cudaMemcpyAsync(j->dst, j->src, j->bytes, cudaMemcpyDeviceToDevice, 0)); break;
    }
}

/* median seconds of n timed runs after 3 warm-ups, each after an L2 flush */
static double time_job(const job *j, int n) {
    float ms[256];
    if (n > 256) n = 256;
    for (int i = 0; i < 3; i++) run_job(j);
    CU(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++) {
        CU(cudaMemsetAsync(flush_buf, i & 0xff, flush_bytes, 0));
        CU(cudaEventRecord(ev0, 0));
        run_job(j);
        CU(cudaEventRecord(ev1, 0));
        CU(cudaEventSynchronize(ev1));
        CU(cudaEventElapsedTime(&ms[i], ev0, ev1));
    }
    qsort(ms, (size_t)n, sizeof ms[0], cmp_float);
    return 1e-3 * (n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]));
}

/* random codes with sane scales, as the file's rows */
static lb_matrix make_rows(int type, int64_t N, int64_t K, int act_bits, void **mem) {
    const size_t rs = lb_row_size(type, K), n = rs * (size_t)N;
    uint8_t *b = malloc(n);
    if (!b) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    if (type == LB_TYPE_F16) {
        lb_fp16 tab[4096];
        for (int i = 0; i < 4096; i++) tab[i] = lb_f32_to_fp16(0.04f * ((float)i / 4096.0f - 0.5f));
        lb_fp16 *w = (lb_fp16 *)b;
        for (size_t i = 0; i < n / 2; i++) w[i] = tab[next_rand() & 4095];
    } else if (lb_bcq_is_plain(type)) {
        fill_random(b, n); /* planes; then alpha_i and z of every group */
        const int q = lb_bcq_bits(type);
        for (size_t i = 0; i < n; i += (size_t)LB_BCQ_SIZE(q, lb_bcq_group(type)))
            for (int a = 0; a <= q; a++) {
                const lb_fp16 h = lb_f32_to_fp16(a < q ? 0.01f / (float)(1 << a) : 0.001f);
                memcpy(b + i + 2 * a, &h, 2);
            }
    } else if (lb_abq_bits(type)) {
        fill_random(b, n); /* planes (W2S: a few codes 5..7, harmless here); d and z */
        const size_t bs = lb_traits(type)->type_size;
        const lb_fp16 d = lb_f32_to_fp16(0.002f);
        const int16_t z = 1;
        for (size_t i = 0; i < n; i += bs) {
            memcpy(b + i, &d, 2);
            if (!lb_abq_is_balanced(type)) memcpy(b + i + 2, &z, 2);
        }
    } else {
        fill_random(b, n);
        const lb_fp16 d = lb_f32_to_fp16(type == LB_TYPE_Q8_0 ? 0.0002f : type == LB_TYPE_Q4_0 ? 0.003f : 0.0005f);
        const size_t bs = lb_traits(type)->type_size;
        for (size_t i = 0; i < n; i += bs) {
            memcpy(b + i, &d, 2);
            if (type == LB_TYPE_Q4_K) memcpy(b + i + 2, &d, 2); /* dmin */
        }
    }
    *mem = b;
    return (lb_matrix){type, K, N, rs, b, act_bits};
}

static void gpu_line(const lb_cuda_device_info *info) {
    char drv[256] = "";
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        if (fgets(drv, sizeof drv, f)) drv[strcspn(drv, "\n")] = 0;
        fclose(f);
    }
    printf("GPU: %s (sm_%d%d, %d SMs, %.1f GiB, L2 %.0f MiB); driver: %s (CUDA driver API %d.%d, runtime %d.%d)\n\n",
           info->name, info->major, info->minor, info->sm_count, (double)info->total_mem / (1u << 30),
           (double)info->l2_bytes / (1u << 20), drv[0] ? drv : "/proc/driver/nvidia/version unreadable",
           info->driver_version / 1000, info->driver_version % 1000 / 10, info->runtime_version / 1000,
           info->runtime_version % 1000 / 10);
}

/* "a,b,c" (or "NxK,NxK" with two per item) into v; the count, or -1 */
static int parse_list(const char *s, int64_t *v, int max, int pairs) {
    int n = 0;
    while (*s && n < max) {
        char *e;
        v[n++] = strtoll(s, &e, 10);
        if (pairs) {
            if (*e != 'x' || n >= max) return -1;
            v[n++] = strtoll(e + 1, &e, 10);
        }
        if (*e && *e != ',') return -1;
        s = *e ? e + 1 : e;
    }
    return *s ? -1 : n;
}

int main(int argc, char **argv) {
    int64_t shapes[16] = {4096, 4096, 11008, 4096, 4096, 11008}, Ms[8] = {1, 16, 512};
    int n_shapes = 3, n_m = 3, bw_mib = 1024;
    for (int i = 1; i < argc; i++) {
        int ok = i + 1 < argc;
        if (ok && !strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else if (ok && !strcmp(argv[i], "--shapes")) ok = (n_shapes = parse_list(argv[++i], shapes, 16, 1) / 2) > 0;
        else if (ok && !strcmp(argv[i], "--m")) ok = (n_m = parse_list(argv[++i], Ms, 8, 0)) > 0;
        else if (ok && !strcmp(argv[i], "--bw-mib")) ok = (bw_mib = atoi(argv[++i])) > 0;
        else ok = 0;
        for (int j = 0; ok && j < n_shapes; j++) ok = shapes[2 * j] > 0 && shapes[2 * j] % 16 == 0 && shapes[2 * j + 1] > 0 && shapes[2 * j + 1] % 256 == 0;
        for (int j = 0; ok && j < n_m; j++) ok = Ms[j] > 0 && Ms[j] <= 65536;
        if (!ok) {
            fprintf(stderr, "usage: %s [--reps N] [--shapes NxK,...] [--m M,...] [--bw-mib N]\n"
                            "  median of N timed runs per cell (default 25); shapes default 4096x4096,11008x4096,\n"
                            "  4096x11008 (N %% 16 == 0, K %% 256 == 0); M default 1,16,512; bandwidth buffers\n"
                            "  of N MiB (default 1024)\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (lb_cuda_device_count() < 1) {
        fprintf(stderr, "no CUDA device: %s\n", lb_cuda_last_error());
        return 1;
    }
    lb_cuda_device_info info;
    LB(lb_cuda_device_info_get(0, &info));
    gpu_line(&info);
    CU(cudaEventCreate(&ev0));
    CU(cudaEventCreate(&ev1));
    flush_bytes = info.l2_bytes * 4 > ((size_t)256 << 20) ? info.l2_bytes * 4 : (size_t)256 << 20;
    if (flush_bytes > (size_t)bw_mib << 20) flush_bytes = (size_t)bw_mib << 20; /* a small --bw-mib: a smoke test */
    CU(cudaMalloc(&flush_buf, flush_bytes));

    /* ---- memory bandwidth, measured here ---- */
    const size_t gib = (size_t)bw_mib << 20; /* 1 GiB unless --bw-mib */
    void *src = NULL, *dst = NULL;
    int *sink = NULL;
    CU(cudaMalloc(&src, gib));
    CU(cudaMalloc(&dst, gib));
    CU(cudaMalloc((void **)&sink, 16));
    CU(cudaMemset(src, 1, gib));
    const job copy = {.kind = 3, .src = src, .dst = dst, .bytes = gib};
    const job rd = {.kind = 2, .src = src, .bytes = gib, .sink = sink, .sms = info.sm_count};
    const double t_copy = time_job(&copy, 9), t_read = time_job(&rd, 9);
    const double bw_copy = 2.0 * (double)gib / t_copy, bw_read = (double)gib / t_read;
    CU(cudaFree(src));
    CU(cudaFree(dst));
    printf("memory bandwidth: read-only kernel %.0f GB/s (%d MiB read, %.3f ms); device-to-device copy %.0f GB/s "
           "(%d MiB read + written, %.3f ms). %% below is of the read-only figure.\n\n",
           bw_read / 1e9, bw_mib, t_read * 1e3, bw_copy / 1e9, bw_mib, t_copy * 1e3);

    double b1_ops = 0, s8_ops = 0;
    LB(lb_cuda_bench_mma(0, info.sm_count, sink, &b1_ops));
    LB(lb_cuda_bench_mma(1, info.sm_count, sink, &s8_ops));
    printf("tensor cores: mma m16n8k128 b1 (AND + popc) %.0f T bit-ops/s; mma m16n8k32 s8 %.0f T int8-ops/s; b1 / s8 "
           "per instruction %.2f (a b1 mma holds 4x the products of an s8 one)\n\n",
           b1_ops / 1e12, s8_ops / 1e12, (b1_ops / 4096.0) / (s8_ops / 1024.0));
    printf("| N x K | M | weights | bpw | path | MB | call us | kernel us | GB/s | %% of read BW | speedup vs cuBLAS fp16 "
           "(call) | (kernel) |\n");
    printf("|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");

    static const int types[] = {LB_TYPE_F16,       LB_TYPE_Q4_0,      LB_TYPE_Q8_0,      LB_TYPE_Q4_K,
                                LB_TYPE_MX,        LB_TYPE_BCQ4_G128, LB_TYPE_BCQ3_G128, LB_TYPE_BCQ2_G128,
                                LB_TYPE_ABQ_W4,    LB_TYPE_ABQ_W4,    LB_TYPE_ABQ_W2,    LB_TYPE_ABQ_W2S};
    static const int act_bits[] = {0, 0, 0, 0, 0, 0, 0, 0, 8, 4, 8, 8};
    enum { NT = sizeof types / sizeof types[0] };
    for (int si = 0; si < n_shapes; si++) {
        const int64_t N = shapes[2 * si], K = shapes[2 * si + 1];
        lb_cuda_matrix *D[NT];
        for (int ti = 0; ti < NT; ti++) {
            void *mem = NULL;
            lb_mx_view *v = NULL;
            lb_matrix W;
            if (types[ti] == LB_TYPE_MX) {
                const lb_mx_params p = lb_mx_default_params();
                mem = malloc(lb_mx_random_size(N, K, &p));
                lb_mx_parts parts;
                lb_mx_random_pieces(N, K, &p, 22, mem, &parts);
                if (lb_mx_view_make(&parts, &v)) {
                    fprintf(stderr, "MX view: %s\n", lb_last_error());
                    return 1;
                }
                W = (lb_matrix){LB_TYPE_MX, K, N, 0, v, 0};
            } else {
                W = make_rows(types[ti], N, K, act_bits[ti], &mem);
            }
            D[ti] = lb_cuda_matrix_upload(&W);
            if (!D[ti]) {
                fprintf(stderr, "upload %s: %s\n", lb_type_name(types[ti]), lb_cuda_last_error());
                return 1;
            }
            if (v) lb_free_aligned(v);
            free(mem);
        }
        for (int mi = 0; mi < n_m; mi++) {
            const int M = (int)Ms[mi];
            float *X = NULL, *Y = NULL;
            CU(cudaMalloc((void **)&X, sizeof(float) * (size_t)(M * K)));
            CU(cudaMalloc((void **)&Y, sizeof(float) * (size_t)(M * N)));
            {
                float *h = malloc(sizeof(float) * (size_t)(M * K));
                for (int64_t i = 0; i < M * K; i++) h[i] = (float)((int64_t)(next_rand() % 2001) - 1000) / 500.0f;
                CU(cudaMemcpy(X, h, sizeof(float) * (size_t)(M * K), cudaMemcpyHostToDevice));
                free(h);
            }
            double base_call = 0, base_kernel = 0;
            for (int ti = 0; ti < NT; ti++) {
                for (int variant = 0; variant < 4; variant++) {
                    /* 0 the automatic path; 1 the GEMV path, in passes of 8 rows, where the automatic choice is
                     * fp16 (8 < M <= 32); MX's GEMV with its scales in registers (2: automatic, 3: forced) */
                    const int forced = variant & 1, regs = variant >> 1;
                    lb_cuda_path path = forced ? LB_CUDA_GEMV : LB_CUDA_AUTO;
                    if (forced && (types[ti] == LB_TYPE_F16 || lb_abq_bits(types[ti]) || M <= LB_CUDA_GEMV_MAX_M ||
                                   M > 32))
                        continue;
                    /* variant 2 of BCQ (q < 4): the LUT-GEMV's K-tile of 128 instead of 256 */
                    const int bcq_narrow = lb_bcq_is_plain(types[ti]) && lb_bcq_bits(types[ti]) < 4;
                    if (regs && (types[ti] == LB_TYPE_MX ? !forced && M > LB_CUDA_GEMV_MAX_M
                                                         : !bcq_narrow || forced || M > LB_CUDA_GEMV_MAX_M))
                        continue;
                    lb_cuda_mx_smem_scales(!regs);
                    lb_cuda_bcq_tile(regs ? 128 : 256);
                    const job call = {.kind = 0, .W = D[ti], .X = X, .Y = Y, .M = M, .path = path};
                    const double t_call = time_job(&call, reps);
                    LB(lb_cuda_prepare(D[ti], X, M, path, NULL));
                    const job kern = {.kind = 1, .W = D[ti], .X = X, .Y = Y, .M = M, .path = path};
                    const double t_kernel = time_job(&kern, reps);
                    if (ti == 0) base_call = t_call, base_kernel = t_kernel;
                    const double bytes = (double)lb_cuda_matrix_bytes(D[ti]);
                    const int abq = lb_abq_bits(types[ti]) > 0, bcq = lb_bcq_is_plain(types[ti]);
                    const int gemv = types[ti] != LB_TYPE_F16 && (forced || abq || M <= LB_CUDA_GEMV_MAX_M);
                    char pname[32], tname[48];
                    snprintf(tname, sizeof tname, "%s%s", lb_type_name(types[ti]),
                             !bcq || !gemv ? "" : regs ? " (LUT, t_w 128)" : lb_bcq_bits(types[ti]) < 4 ? " (LUT, t_w 256)" : " (LUT, t_w 128)");
                    if (abq) snprintf(tname, sizeof tname, "%s A%d (BMMA)", lb_type_name(types[ti]), act_bits[ti]);
                    if (!gemv) snprintf(pname, sizeof pname, "fp16 GEMM");
                    else if (abq && M > 2 * LB_CUDA_GEMV_MAX_M) snprintf(pname, sizeof pname, "BMMA GEMM");
                    else if (M <= LB_CUDA_GEMV_MAX_M) snprintf(pname, sizeof pname, "GEMV");
                    else snprintf(pname, sizeof pname, "GEMV x%d", (M + LB_CUDA_GEMV_MAX_M - 1) / LB_CUDA_GEMV_MAX_M);
                    lb_cuda_mx_smem_scales(1);
                    lb_cuda_bcq_tile(256);
                    printf("| %lld x %lld | %d | %s | %.2f | %s | %.1f | %.1f | %.1f | %.0f | %.0f | %.2f | %.2f |\n",
                           (long long)N, (long long)K, M,
                           types[ti] == LB_TYPE_F16 ? "F16 (cuBLAS)"
                           : types[ti] != LB_TYPE_MX ? tname
                           : !gemv                   ? "MX"
                           : regs                    ? "MX (scales in registers)"
                                                     : "MX (Alg. 1, smem scales)",
                           8.0 * bytes / ((double)N * (double)K), pname,
                           bytes / 1e6, t_call * 1e6, t_kernel * 1e6, bytes / t_kernel / 1e9,
                           100.0 * bytes / t_kernel / bw_read, base_call / t_call, base_kernel / t_kernel);
                    fflush(stdout);
                }
            }
            CU(cudaFree(X));
            CU(cudaFree(Y));
        }
        for (int ti = 0; ti < NT; ti++) lb_cuda_matrix_free(D[ti]);
    }
    CU(cudaFree(flush_buf));
    CU(cudaFree(sink));
    lb_cuda_release();
    printf("\nreps %d (median), L2 flushed before each run (%.0f MiB memset). fp16 GEMM rows of quantized types read "
           "their fp16 copy (2 bytes a weight) although GB/s counts the stored bytes.\n",
           reps, (double)flush_bytes / (1 << 20));
    return 0;
}
