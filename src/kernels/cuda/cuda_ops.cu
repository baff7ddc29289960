// The forward pass's steps between the matmuls, on the GPU (lb_cuda.h, "the
// rest of the forward pass"): RMSNorm, the residual add, the gated
// activations, q/k/v's bias, norms, RoPE and the cache write, and attention.
// Each follows the CPU's scalar formula (kernels/vecops.c, kernels/vmath.h,
// kernels/attention.c); the order of float sums differs, so results agree
// within rounding, not to the bit (tests/cuda/test_cuda_forward.c).
#include <math.h>

#include "cuda_common.cuh"

namespace {

constexpr int kRowThreads = 256; // a block per row for the row-wise kernels

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every
// thread gets the total. red: 32 floats of shared memory.
__device__ float block_sum(float v, float *red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = lbcu_warp_sum(v);
    __syncthreads(); // red may still be read by a previous call
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float t = lane < nw ? red[lane] : 0.0f;
    return lbcu_warp_sum(t);
}

// 1 / sqrt(mean(x^2) + eps) of row x (d floats), as rmsnorm_scalar.
__device__ float rms_scale(const float *x, int d, float eps, float *red) {
    float ss = 0.0f;
    for (int j = threadIdx.x; j < d; j += blockDim.x) ss = fmaf(x[j], x[j], ss);
    ss = block_sum(ss, red);
    return 1.0f / sqrtf(ss / (float)d + eps);
}

// y row i = w * (scale * x row rows[i]) (rows NULL: row i).
__global__ void rmsnorm_rows_kernel(float *y, const float *x, const int *rows, const float *w, int d, float eps) {
    __shared__ float red[32];
    const int i = blockIdx.x;
    const float *xi = x + (size_t)(rows ? rows[i] : i) * d;
    float *yi = y + (size_t)i * d;
    const float sc = rms_scale(xi, d, eps, red);
    for (int j = threadIdx.x; j < d; j += blockDim.x) yi[j] = w[j] * (sc * xi[j]);
}

// Per row: a = post_norm(a) * post (if post), x += a, y = norm(x) * w (if w).
__global__ void residual_kernel(float *x, float *a, const float *post, float *y, const float *w, int d, float eps) {
    __shared__ float red[32];
    const size_t o = (size_t)blockIdx.x * d;
    float *xi = x + o, *ai = a + o;
    if (post) {
        const float sc = rms_scale(ai, d, eps, red);
        for (int j = threadIdx.x; j < d; j += blockDim.x) ai[j] = post[j] * (sc * ai[j]);
    }
    for (int j = threadIdx.x; j < d; j += blockDim.x) xi[j] += ai[j];
    if (!w) return;
    __syncthreads(); // every x of the row written before the norm reads them
    const float sc = rms_scale(xi, d, eps, red);
    for (int j = threadIdx.x; j < d; j += blockDim.x) y[o + j] = w[j] * (sc * xi[j]);
}

// out = act(g) * u, n rows of ff (g and u rows ld apart): SiLU x / (1 + e^-x),
// or GELU(tanh) as lb_gelu_canon: x / (1 + e^(x * -2 sqrt(2/pi) * (1 + 0.044715 x^2))).
__global__ void gated_kernel(float *out, const float *g, const float *u, int64_t n, int ff, int64_t ld, int gelu) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n * ff; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = i / ff, j = i - t * ff;
        const float x = g[t * ld + j];
        const float e = gelu ? expf((x * (-2.0f * 0.7978845608028654f)) * fmaf(x * x, 0.044715f, 1.0f)) : expf(-x);
        out[i] = x / (1.0f + e) * u[t * ld + j];
    }
}

// One warp per (token, head): the q heads first, then the k heads. Bias,
// the head's RMSNorm (Gemma 3), RoPE from the token's table row
// (lb_rope_table's cos / signed sin, rope_scalar's pairs), q in place, k and
// v into the token's sequence's cache at its position.
__global__ void qkv_kernel(lb_cuda_qkv_args a) {
    __shared__ float buf[4][256];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int gh = blockIdx.x * 4 + warp; // global head index over n tokens x (n_head + n_head_kv)
    const int nh = a.n_head + a.n_head_kv, hd = a.head_dim;
    if (gh >= a.n * nh) return;
    const int t = gh / nh, h = gh % nh, is_k = h >= a.n_head, hh = is_k ? h - a.n_head : h;
    float *qrow = a.q + (size_t)t * a.ld_q + (size_t)hh * hd;
    const float *src = is_k ? a.k + (size_t)t * a.ld_kv + (size_t)hh * hd : qrow;
    const float *bias = is_k ? (a.bk ? a.bk + (size_t)hh * hd : nullptr) : (a.bq ? a.bq + (size_t)hh * hd : nullptr);
    const float *nw = is_k ? a.k_norm : a.q_norm;
    float *b = buf[warp];
    float ss = 0.0f;
    for (int j = lane; j < hd; j += 32) {
        const float v = src[j] + (bias ? bias[j] : 0.0f);
        b[j] = v;
        ss = fmaf(v, v, ss);
    }
    __syncwarp();
    if (nw) {
        const float sc = 1.0f / sqrtf(lbcu_warp_sum(ss) / (float)hd + a.eps);
        for (int j = lane; j < hd; j += 32) b[j] = nw[j] * (sc * b[j]);
        __syncwarp();
    }
    const float *cs = a.cs + (size_t)t * a.rope_dim, *sn = a.sn + (size_t)t * a.rope_dim;
    const int rd = a.rope_dim, half = rd / 2;
    float *dst = qrow;
    if (is_k) {
        const size_t c = (size_t)a.seq[t] * a.seq_stride + ((size_t)hh * a.n_ctx + a.pos[t]) * hd;
        dst = a.k_cache + c;
        const float *vs = a.v + (size_t)t * a.ld_kv + (size_t)hh * hd;
        const float *bv = a.bv ? a.bv + (size_t)hh * hd : nullptr;
        for (int j = lane; j < hd; j += 32) a.v_cache[c + j] = vs[j] + (bv ? bv[j] : 0.0f);
    }
    for (int j = lane; j < hd; j += 32) {
        float r = b[j];
        if (j < rd) {
            // partner of j and which member of its pair j is
            const int first = a.neox ? j < half : (j & 1) == 0;
            const int p = a.neox ? (first ? j + half : j - half) : (first ? j + 1 : j - 1);
            r = b[j] * cs[j] + b[p] * sn[j];
        }
        dst[j] = r;
    }
}

// Attention, one block of 4 warps per (token, head) and split of the keys:
// each warp walks every 4th key of the split with an online softmax (q . k
// by the warp, lanes along the head), then the warps' partial sums combine
// in shared memory. One split: the output; several (a decode step's few
// heads spread over the GPU): partial (max, sum, acc) rows for combine_kernel.
template <int VPL> // values per lane: ceil(head_dim / 32)
__global__ void __launch_bounds__(128) attn_kernel(lb_cuda_attn_args a, int n_split, float *part) {
    __shared__ float sm_m[4], sm_l[4];
    __shared__ float sm_acc[4][VPL * 32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int th = blockIdx.x, split = blockIdx.y;
    const int t = th / a.n_head, h = th % a.n_head, hd = a.head_dim;
    const int kvh = h / (a.n_head / a.n_head_kv), pos = a.pos[t];
    const int lo = a.window > 0 && pos - a.window + 1 > 0 ? pos - a.window + 1 : 0;
    const int len = pos + 1 - lo, chunk = (len + n_split - 1) / n_split;
    const int j0 = lo + split * chunk, j1 = min(pos + 1, j0 + chunk);
    const size_t kv = (size_t)a.seq[t] * a.seq_stride + (size_t)kvh * a.n_ctx * hd;
    const float *K = a.k_cache + kv, *V = a.v_cache + kv;
    const float *q = a.q + (size_t)t * a.ld_q + (size_t)h * hd;
    float qv[VPL], acc[VPL];
#pragma unroll
    for (int i = 0; i < VPL; i++) {
        const int j = lane + 32 * i;
        qv[i] = j < hd ? q[j] : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int p = j0 + warp; p < j1; p += 4) {
        const float *kp = K + (size_t)p * hd, *vp = V + (size_t)p * hd;
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < VPL; i++) {
            const int j = lane + 32 * i;
            if (j < hd) dot = fmaf(qv[i], kp[j], dot);
        }
        float s = lbcu_warp_sum(dot) * a.scale;
        if (a.softcap > 0.0f) s = a.softcap * (1.0f - 2.0f / (1.0f + expf(s * (2.0f / a.softcap))));
        const float mn = fmaxf(m, s), c = expf(m - mn), e = expf(s - mn); // m = -inf: c = 0
        l = l * c + e;
#pragma unroll
        for (int i = 0; i < VPL; i++) {
            const int j = lane + 32 * i;
            acc[i] = acc[i] * c + (j < hd ? e * vp[j] : 0.0f);
        }
        m = mn;
    }
    if (lane == 0) sm_m[warp] = m, sm_l[warp] = l;
#pragma unroll
    for (int i = 0; i < VPL; i++) sm_acc[warp][lane + 32 * i] = acc[i];
    __syncthreads();
    if (warp) return;
    float M = fmaxf(fmaxf(sm_m[0], sm_m[1]), fmaxf(sm_m[2], sm_m[3]));
    float f[4], L = 0.0f;
#pragma unroll
    for (int w = 0; w < 4; w++) {
        f[w] = sm_m[w] == -INFINITY ? 0.0f : expf(sm_m[w] - M);
        L += sm_l[w] * f[w];
    }
    if (n_split == 1) {
        float *out = a.out + ((size_t)t * a.n_head + h) * hd;
        for (int j = lane; j < hd; j += 32)
            out[j] = (sm_acc[0][j] * f[0] + sm_acc[1][j] * f[1] + sm_acc[2][j] * f[2] + sm_acc[3][j] * f[3]) / L;
        return;
    }
    float *pr = part + ((size_t)th * n_split + split) * (hd + 2);
    if (lane == 0) pr[0] = M, pr[1] = L;
    for (int j = lane; j < hd; j += 32)
        pr[2 + j] = sm_acc[0][j] * f[0] + sm_acc[1][j] * f[1] + sm_acc[2][j] * f[2] + sm_acc[3][j] * f[3];
}

// The splits of one (token, head): a warp.
__global__ void combine_kernel(lb_cuda_attn_args a, int n_split, const float *part) {
    const int th = blockIdx.x, lane = threadIdx.x, hd = a.head_dim;
    const float *pr = part + (size_t)th * n_split * (hd + 2);
    float M = -INFINITY;
    for (int s = 0; s < n_split; s++) M = fmaxf(M, pr[(size_t)s * (hd + 2)]);
    float L = 0.0f;
    for (int s = 0; s < n_split; s++) {
        const float ms = pr[(size_t)s * (hd + 2)];
        if (ms != -INFINITY) L += pr[(size_t)s * (hd + 2) + 1] * expf(ms - M);
    }
    float *out = a.out + (size_t)th * hd; // th = t n_head + h
    for (int j = lane; j < hd; j += 32) {
        float o = 0.0f;
        for (int s = 0; s < n_split; s++) {
            const float ms = pr[(size_t)s * (hd + 2)];
            if (ms != -INFINITY) o += pr[(size_t)s * (hd + 2) + 2 + j] * expf(ms - M);
        }
        out[j] = o / L;
    }
}

// Scratch for the attention's partial rows (grown on demand, one host thread).
float *g_part = nullptr;
size_t g_part_cap = 0;

int launch_ok(const char *what) {
    const cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return 0;
    lbcu_set_error("%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return -1;
}

} // namespace

extern "C" {

void *lb_cuda_alloc(size_t bytes) {
    void *p = nullptr;
    if (lbcu_alloc_copy(&p, nullptr, bytes)) return nullptr;
    return p;
}

void lb_cuda_free(void *dev) { lbcu_free(dev); }

int lb_cuda_to_device(void *dev, const void *host, size_t bytes, void *stream) {
    LBCU_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream));
    return 0;
}

int lb_cuda_to_host(void *host, const void *dev, size_t bytes, void *stream) {
    LBCU_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream));
    LBCU_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    return 0;
}

int lb_cuda_copy(void *dst_dev, const void *src_dev, size_t bytes, void *stream) {
    LBCU_CHECK(cudaMemcpyAsync(dst_dev, src_dev, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
    return 0;
}

int lb_cuda_synchronize(void) {
    LBCU_CHECK(cudaDeviceSynchronize());
    return 0;
}

void *lb_cuda_stream_new(void) {
    cudaStream_t s = nullptr;
    const cudaError_t e = cudaStreamCreate(&s); // blocking: ordered with the legacy default stream
    if (e != cudaSuccess) {
        lbcu_set_error("cudaStreamCreate: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return nullptr;
    }
    return s;
}

void lb_cuda_stream_free(void *stream) {
    if (stream) (void)cudaStreamDestroy((cudaStream_t)stream);
}

int lb_cuda_stream_sync(void *stream) {
    LBCU_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    return 0;
}

int lb_cuda_capture_begin(void *stream) {
    LBCU_CHECK(cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal));
    return 0;
}

void *lb_cuda_capture_end(void *stream) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t x = nullptr;
    cudaError_t e = cudaStreamEndCapture((cudaStream_t)stream, &g);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
    if (g) (void)cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        lbcu_set_error("capturing a CUDA graph: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        (void)cudaGetLastError(); // a failed capture leaves the error sticky for the next check
        return nullptr;
    }
    return x;
}

int lb_cuda_graph_launch(void *graph, void *stream) {
    LBCU_CHECK(cudaGraphLaunch((cudaGraphExec_t)graph, (cudaStream_t)stream));
    return 0;
}

void lb_cuda_graph_free(void *graph) {
    if (graph) (void)cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

int lb_cuda_rmsnorm_rows(float *y, const float *x, const int *rows, const float *w, int n, int d, float eps,
                         void *stream) {
    if (n < 1) return 0;
    rmsnorm_rows_kernel<<<n, kRowThreads, 0, (cudaStream_t)stream>>>(y, x, rows, w, d, eps);
    return launch_ok("lb_cuda_rmsnorm_rows");
}

int lb_cuda_residual(float *x, float *a, const float *post, float *y, const float *w, int n, int d, float eps,
                     void *stream) {
    if (n < 1) return 0;
    residual_kernel<<<n, kRowThreads, 0, (cudaStream_t)stream>>>(x, a, post, y, w, d, eps);
    return launch_ok("lb_cuda_residual");
}

int lb_cuda_gated(float *out, const float *g, const float *u, int n, int ff, size_t ld, int gelu, void *stream) {
    if (n < 1) return 0;
    const int64_t blocks = ((int64_t)n * ff + 255) / 256;
    gated_kernel<<<(unsigned)(blocks < 65535 ? blocks : 65535), 256, 0, (cudaStream_t)stream>>>(out, g, u, n, ff,
                                                                                                  (int64_t)ld, gelu);
    return launch_ok("lb_cuda_gated");
}

int lb_cuda_qkv(const lb_cuda_qkv_args *a, void *stream) {
    if (a->head_dim > 256 || a->rope_dim > a->head_dim || a->n_head % a->n_head_kv) {
        lbcu_set_error("lb_cuda_qkv: head_dim %d (at most 256), rope_dim %d, %d heads over %d kv heads", a->head_dim,
                       a->rope_dim, a->n_head, a->n_head_kv);
        return -1;
    }
    if (a->n < 1) return 0;
    const int heads = a->n * (a->n_head + a->n_head_kv);
    qkv_kernel<<<(heads + 3) / 4, 128, 0, (cudaStream_t)stream>>>(*a);
    return launch_ok("lb_cuda_qkv");
}

int lb_cuda_attention(const lb_cuda_attn_args *a, int sm_count, void *stream) {
    const cudaStream_t st = (cudaStream_t)stream;
    if (a->head_dim > 256 || a->n_head % a->n_head_kv) {
        lbcu_set_error("lb_cuda_attention: head_dim %d (at most 256), %d heads over %d kv heads", a->head_dim,
                       a->n_head, a->n_head_kv);
        return -1;
    }
    if (a->n < 1) return 0;
    const int blocks = a->n * a->n_head;
    // Few (token, head) pairs (decode): split the keys so every SM gets
    // about two blocks, at least 16 keys a split.
    int n_split = 1;
    const int want = 2 * (sm_count > 0 ? sm_count : 132);
    if (blocks < want) {
        n_split = (want + blocks - 1) / blocks;
        const int by_len = (a->max_len + 15) / 16;
        if (n_split > by_len) n_split = by_len;
        if (n_split > 64) n_split = 64;
        if (n_split < 1) n_split = 1;
    }
    if (n_split > 1) {
        const size_t need = (size_t)blocks * n_split * (a->head_dim + 2);
        if (need > g_part_cap) {
            cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
            LBCU_CHECK(cudaStreamIsCapturing(st, &cs));
            if (cs != cudaStreamCaptureStatusNone) {
                lbcu_set_error("lb_cuda_attention: its scratch would grow while a graph is captured");
                return -1;
            }
            LBCU_CHECK(cudaDeviceSynchronize());
            lbcu_bump_epoch();
            lbcu_free(g_part);
            g_part = nullptr, g_part_cap = 0;
            LBCU_CHECK(cudaMalloc(&g_part, need * sizeof(float)));
            g_part_cap = need;
        }
    }
    const dim3 grid(blocks, n_split);
    const int vpl = (a->head_dim + 31) / 32;
    if (vpl <= 1) attn_kernel<1><<<grid, 128, 0, st>>>(*a, n_split, g_part);
    else if (vpl <= 2) attn_kernel<2><<<grid, 128, 0, st>>>(*a, n_split, g_part);
    else if (vpl <= 4) attn_kernel<4><<<grid, 128, 0, st>>>(*a, n_split, g_part);
    else attn_kernel<8><<<grid, 128, 0, st>>>(*a, n_split, g_part);
    if (launch_ok("lb_cuda_attention")) return -1;
    if (n_split > 1) {
        combine_kernel<<<blocks, 32, 0, st>>>(*a, n_split, g_part);
        if (launch_ok("lb_cuda_attention (combine)")) return -1;
    }
    return 0;
}

void lb_cuda_ops_release(void) {
    if (g_part) {
        (void)cudaDeviceSynchronize();
        lbcu_free(g_part);
    }
    g_part = nullptr, g_part_cap = 0;
}

} // extern "C"
