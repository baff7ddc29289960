// The CUDA side of lb_cuda.h: device query, the activation workspace, the
// choice of path, cuBLAS, and freeing matrices (cuda_host.c makes them).
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

namespace {

// Made on first use, shared by all matrices (one host thread at a time).
cublasHandle_t g_cublas = nullptr;
struct {
    void *buf = nullptr;
    size_t cap = 0;
    lbcu_act act{};
} g_ws;

int check_cublas(cublasStatus_t st, const char *what, int line) {
    if (st == CUBLAS_STATUS_SUCCESS) return 0;
    lbcu_set_error("cuda_api.cu:%d: %s: %s (%d)", line, what, cublasGetStatusString(st), (int)st);
    return -1;
}

int ensure_cublas() {
    if (g_cublas) return 0;
    return check_cublas(cublasCreate(&g_cublas), "cublasCreate", __LINE__);
}

size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

unsigned g_epoch = 1;

bool is_bcq(const lb_cuda_matrix *W) { return lbcu_is_bcq(W->type); }
bool is_abq(const lb_cuda_matrix *W) { return lbcu_is_abq(W->type); }

// The activation format a path needs for W.
int act_kind(const lb_cuda_matrix *W, lb_cuda_path path) {
    if (W->type == LBCU_F32) return LBCU_ACT_F32;
    if (W->type == LBCU_F16 || path == LB_CUDA_FP16) return LBCU_F16;
    if (is_bcq(W)) return LBCU_ACT_F32;
    if (is_abq(W)) return LBCU_ABQ_ACT;
    return W->type == LBCU_Q4_K ? LBCU_Q8_K : LBCU_Q8_0;
}

lb_cuda_path resolve(const lb_cuda_matrix *W, int M, lb_cuda_path path) {
    if (W->type == LBCU_F16) return LB_CUDA_FP16;
    if (path == LB_CUDA_AUTO) {
        // ABQ keeps its WqAp semantics at every M: its BMMA GEMV, or GEMM above 16 rows
        if (is_abq(W)) return LB_CUDA_GEMV;
        return M <= LB_CUDA_GEMV_MAX_M ? LB_CUDA_GEMV : LB_CUDA_FP16;
    }
    return path;
}

// Lays out the workspace for M rows of K in format kind, growing it if needed.
int ws_layout(int kind, int M, int64_t K, lbcu_act *a) {
    // ABQ: groups padded to chunks of 4 (cuda_abq.cu)
    const size_t mk = (size_t)M * (size_t)K, mg = (size_t)M * 4 * (size_t)LBCU_ABQ_CHUNKS(K);
    size_t need;
    if (kind == LBCU_F16) need = align256(mk * 2);
    else if (kind == LBCU_ACT_F32) need = align256(mk * 4);
    else if (kind == LBCU_ABQ_ACT) need = align256(mg * 128) + align256(mg * 4) + 2 * align256((size_t)M * 4);
    else need = align256(mk) + align256(mk / 32 * 2) + align256(mk / 256 * 4) + align256(mk / 16 * 2);
    if (need > g_ws.cap) {
        LBCU_CHECK(cudaDeviceSynchronize()); // kernels in flight may still read the old one
        lbcu_bump_epoch();
        if (g_ws.buf) LBCU_CHECK(cudaFree(g_ws.buf));
        g_ws.buf = nullptr, g_ws.cap = 0, g_ws.act = lbcu_act{};
        LBCU_CHECK(cudaMalloc(&g_ws.buf, need));
        g_ws.cap = need;
    }
    char *p = (char *)g_ws.buf;
    *a = lbcu_act{};
    a->kind = kind, a->M = M, a->K = K;
    if (kind == LBCU_F16) {
        a->xh = (__half *)p;
        return 0;
    }
    if (kind == LBCU_ACT_F32) {
        a->xf = (const float *)p;
        return 0;
    }
    if (kind == LBCU_ABQ_ACT) {
        a->planes = (uint32_t *)p, p += align256(mg * 128);
        a->sums = (int32_t *)p, p += align256(mg * 4);
        a->ad = (float *)p, p += align256((size_t)M * 4);
        a->az = (int32_t *)p;
        return 0;
    }
    a->qs = (int8_t *)p, p += align256(mk);
    a->d0 = (uint16_t *)p, p += align256(mk / 32 * 2);
    a->dk = (float *)p, p += align256(mk / 256 * 4);
    a->s16 = (int16_t *)p;
    return 0;
}

// p: the bits of ABQ activations (ignored by the other kinds)
int quantize_into_ws(int kind, const float *X, int M, int64_t K, int p, cudaStream_t s) {
    lbcu_act a;
    g_ws.act = lbcu_act{}; // nothing valid until the kernel is queued
    if (ws_layout(kind, M, K, &a)) return -1;
    if (kind == LBCU_F16) LBCU_CHECK(lbcu_to_half(X, (int64_t)M * K, a.xh, s));
    else if (kind == LBCU_ACT_F32)
        LBCU_CHECK(cudaMemcpyAsync((void *)a.xf, X, (size_t)M * (size_t)K * 4, cudaMemcpyDeviceToDevice, s));
    else if (kind == LBCU_ABQ_ACT) {
        if (K % LBCU_ABQ_G || p < 1 || p > 8) {
            lbcu_set_error("lb_cuda: ABQ activations need K a multiple of 128 and 1..8 bits (K %lld, %d bits)",
                           (long long)K, p);
            return -1;
        }
        a.p = p;
        LBCU_CHECK(lbcu_quantize_abq(X, M, K, p, a, s));
    }
    else if (kind == LBCU_Q8_K) LBCU_CHECK(lbcu_quantize_q8_k(X, M, K, a, s));
    else LBCU_CHECK(lbcu_quantize_q8_0(X, M, K, a, s));
    g_ws.act = a;
    return 0;
}

int check_args(const lb_cuda_matrix *W, int M, const void *p) {
    if (!W || M < 1 || !p) {
        lbcu_set_error("lb_cuda: %s", !W ? "no matrix" : M < 1 ? "M < 1" : "NULL device pointer");
        return -1;
    }
    return 0;
}

// The GEMV kernels on prepared activations, in passes of LB_CUDA_GEMV_MAX_M rows.
int gemv_passes(lb_cuda_matrix *W, const lbcu_act &a, int M, float *Y, cudaStream_t s) {
    if (is_abq(W)) { // its own passes: the BMMA GEMV up to 16 rows, the GEMM above
        LBCU_CHECK(lbcu_gemv_abq(W, a, 0, M, Y, W->N, s));
        return 0;
    }
    for (int m0 = 0; m0 < M; m0 += LB_CUDA_GEMV_MAX_M) {
        const int mc = M - m0 < LB_CUDA_GEMV_MAX_M ? M - m0 : LB_CUDA_GEMV_MAX_M;
        if (is_bcq(W)) LBCU_CHECK(lbcu_gemv_bcq(W, a, m0, mc, Y, W->N, s));
        else LBCU_CHECK(lbcu_gemv(W, a, m0, mc, Y, W->N, s));
    }
    return 0;
}

// F32 weights: Y^T (N x M) = W (K x N column-major)^T X^T, cuBLAS SGEMM
// (default math mode: fp32 products, no TF32).
int sgemm(const lb_cuda_matrix *W, const float *X, int M, float *Y, cudaStream_t s) {
    if (ensure_cublas()) return -1;
    if (check_cublas(cublasSetStream(g_cublas, s), "cublasSetStream", __LINE__)) return -1;
    const float alpha = 1.0f, beta = 0.0f;
    const int N = (int)W->N, K = (int)W->K;
    return check_cublas(cublasSgemm(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W->w32, K, X, K, &beta, Y, N),
                        "cublasSgemm", __LINE__);
}

} // namespace

void lbcu_bump_epoch(void) { g_epoch++; }

extern "C" {

unsigned lb_cuda_scratch_epoch(void) { return g_epoch; }

int lb_cuda_device_count(void) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        lbcu_set_error("cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        (void)cudaGetLastError(); // clear it
        return 0;
    }
    if (n == 0) lbcu_set_error("cudaGetDeviceCount: no device");
    return n;
}

int lb_cuda_device_info_get(int dev, lb_cuda_device_info *out) {
    cudaDeviceProp p;
    memset(out, 0, sizeof *out);
    LBCU_CHECK(cudaGetDeviceProperties(&p, dev));
    snprintf(out->name, sizeof out->name, "%s", p.name);
    out->major = p.major, out->minor = p.minor, out->sm_count = p.multiProcessorCount;
    out->total_mem = p.totalGlobalMem, out->l2_bytes = (size_t)p.l2CacheSize;
    LBCU_CHECK(cudaDriverGetVersion(&out->driver_version));
    LBCU_CHECK(cudaRuntimeGetVersion(&out->runtime_version));
    return 0;
}

void lb_cuda_release(void) {
    lbcu_bump_epoch();
    lbcu_bcq_release();
    lb_cuda_ops_release();
    if (g_cublas) cublasDestroy(g_cublas);
    g_cublas = nullptr;
    if (g_ws.buf) {
        (void)cudaDeviceSynchronize();
        (void)cudaFree(g_ws.buf);
    }
    g_ws.buf = nullptr, g_ws.cap = 0, g_ws.act = lbcu_act{};
}

int lbcu_alloc_copy(void **dev, const void *host, size_t bytes) {
    *dev = nullptr;
    LBCU_CHECK(cudaMalloc(dev, bytes ? bytes : 16));
    if (host) LBCU_CHECK(cudaMemcpy(*dev, host, bytes, cudaMemcpyHostToDevice));
    else LBCU_CHECK(cudaMemset(*dev, 0, bytes ? bytes : 16));
    return 0;
}

void lbcu_free(void *dev) {
    if (dev) (void)cudaFree(dev);
}

void lb_cuda_matrix_free(lb_cuda_matrix *W) {
    if (!W) return;
    void *p[] = {W->q, W->d, W->lo_qs, W->lo_meta, W->hi_qs, W->hi_meta, W->lo_group, W->hi_group, W->row_ptr,
                 W->outliers, W->w16, W->w32, W->row_e};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) lbcu_free(p[i]);
    free(W);
}

int lb_cuda_matrix_make_fp16(lb_cuda_matrix *W, void *stream) {
    if (!W) {
        lbcu_set_error("lb_cuda_matrix_make_fp16: no matrix");
        return -1;
    }
    if (W->w16) return 0;
    if (W->type == LBCU_F32) {
        lbcu_set_error("lb_cuda_matrix_make_fp16: an F32 matrix has no fp16 copy (cuBLAS SGEMM multiplies it)");
        return -1;
    }
    void *p = nullptr;
    LBCU_CHECK(cudaMalloc(&p, (size_t)W->N * (size_t)W->K * 2));
    const cudaError_t e = lbcu_dequant_fp16(W, (__half *)p, (cudaStream_t)stream);
    if (e != cudaSuccess) {
        cudaFree(p);
        LBCU_CHECK(e);
    }
    W->w16 = (uint16_t *)p;
    return 0;
}

int lb_cuda_prepare(const lb_cuda_matrix *W, const float *X_dev, int M, lb_cuda_path path, void *stream) {
    if (check_args(W, M, X_dev)) return -1;
    return quantize_into_ws(act_kind(W, resolve(W, M, path)), X_dev, M, W->K, W->act_bits, (cudaStream_t)stream);
}

int lb_cuda_run_prepared(lb_cuda_matrix *W, int M, float *Y_dev, lb_cuda_path path, void *stream) {
    if (check_args(W, M, Y_dev)) return -1;
    const cudaStream_t s = (cudaStream_t)stream;
    const lb_cuda_path p = resolve(W, M, path);
    const lbcu_act &a = g_ws.act;
    if (a.kind != act_kind(W, p) || a.K != W->K || a.M < M || (a.kind == LBCU_ABQ_ACT && a.p != W->act_bits)) {
        lbcu_set_error("lb_cuda_run_prepared: the workspace holds %d rows of %lld in format %d, not %d rows of %lld in "
                       "format %d (call lb_cuda_prepare first)",
                       a.M, (long long)a.K, a.kind, M, (long long)W->K, act_kind(W, p));
        return -1;
    }
    if (W->type == LBCU_F32) return sgemm(W, a.xf, M, Y_dev, s);
    if (p == LB_CUDA_GEMV) return gemv_passes(W, a, M, Y_dev, s);
    // prefill: Y^T (N x M, column-major) = W16 (K x N column-major, i.e. N rows of K) ^T X^T (K x M)
    if (lb_cuda_matrix_make_fp16(W, stream) || ensure_cublas()) return -1;
    if (check_cublas(cublasSetStream(g_cublas, s), "cublasSetStream", __LINE__)) return -1;
    const float alpha = 1.0f, beta = 0.0f;
    const int N = (int)W->N, K = (int)W->K;
    return check_cublas(cublasGemmEx(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W->w16, CUDA_R_16F, K, a.xh,
                                     CUDA_R_16F, K, &beta, Y_dev, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT),
                        "cublasGemmEx", __LINE__);
}

int lb_cuda_matmul_path(lb_cuda_matrix *W, const float *X_dev, int M, float *Y_dev, lb_cuda_path path, void *stream) {
    if (!check_args(W, M, X_dev) && Y_dev && W->type == LBCU_F32) return sgemm(W, X_dev, M, Y_dev, (cudaStream_t)stream);
    // BCQ's table-lookup kernel reads fp32 activations as they are: no copy
    // into the workspace when they are 16-byte aligned (its vector loads)
    if (!check_args(W, M, X_dev) && Y_dev && is_bcq(W) && resolve(W, M, path) == LB_CUDA_GEMV &&
        (uintptr_t)X_dev % 16 == 0) {
        lbcu_act a{};
        a.kind = LBCU_ACT_F32, a.M = M, a.K = W->K, a.xf = X_dev;
        return gemv_passes(W, a, M, Y_dev, (cudaStream_t)stream);
    }
    if (lb_cuda_prepare(W, X_dev, M, path, stream)) return -1;
    return lb_cuda_run_prepared(W, M, Y_dev, path, stream);
}

int lb_cuda_matmul(lb_cuda_matrix *W, const float *X_dev, int M, float *Y_dev, void *stream) {
    return lb_cuda_matmul_path(W, X_dev, M, Y_dev, LB_CUDA_AUTO, stream);
}

int lbcu_quantize_to_host(int act_type, const float *X_dev, int M, int64_t K, int8_t *qs, uint16_t *d0, float *dk,
                          int16_t *s16) {
    if (quantize_into_ws(act_type, X_dev, M, K, 0, nullptr)) return -1;
    LBCU_CHECK(cudaDeviceSynchronize());
    const lbcu_act &a = g_ws.act;
    const size_t mk = (size_t)M * (size_t)K;
    LBCU_CHECK(cudaMemcpy(qs, a.qs, mk, cudaMemcpyDeviceToHost));
    if (act_type == LBCU_Q8_0) LBCU_CHECK(cudaMemcpy(d0, a.d0, mk / 32 * 2, cudaMemcpyDeviceToHost));
    else LBCU_CHECK(cudaMemcpy(dk, a.dk, mk / 256 * 4, cudaMemcpyDeviceToHost));
    LBCU_CHECK(cudaMemcpy(s16, a.s16, mk / 16 * 2, cudaMemcpyDeviceToHost));
    return 0;
}

int lbcu_abq_act_to_host(const float *X_dev, int M, int64_t K, int p, uint8_t *planes, int32_t *sums, float *d,
                         int32_t *z) {
    if (quantize_into_ws(LBCU_ABQ_ACT, X_dev, M, K, p, nullptr)) return -1;
    LBCU_CHECK(cudaDeviceSynchronize());
    const lbcu_act &a = g_ws.act;
    const size_t mg = (size_t)M * 4 * (size_t)LBCU_ABQ_CHUNKS(K);
    LBCU_CHECK(cudaMemcpy(planes, a.planes, mg * 128, cudaMemcpyDeviceToHost));
    LBCU_CHECK(cudaMemcpy(sums, a.sums, mg * 4, cudaMemcpyDeviceToHost));
    LBCU_CHECK(cudaMemcpy(d, a.ad, (size_t)M * 4, cudaMemcpyDeviceToHost));
    LBCU_CHECK(cudaMemcpy(z, a.az, (size_t)M * 4, cudaMemcpyDeviceToHost));
    return 0;
}

} // extern "C"
