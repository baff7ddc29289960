/* Scalar element-wise ops, which define the results every level must give
 * bit for bit (kernels/vmath.h: exp and the 16-lane sums), and the
 * per-level tables. */
#include "kernels/vecops.h"

#include <math.h>

#include "kernels/x86/vecops_x86.h"
#include "kernels/vmath.h"

static void rmsnorm_scalar(float *y, const float *x, const float *w, int n, float eps) {
    float lanes[16] = {0};
    for (int j = 0; j < n; j++) lanes[j % 16] = fmaf(x[j], x[j], lanes[j % 16]);
    const float scale = 1.0f / sqrtf(lb_hsum16(lanes) / (float)n + eps);
    for (int j = 0; j < n; j++) y[j] = w[j] * (scale * x[j]);
}

static void add_scalar(float *y, const float *a, int n) {
    for (int j = 0; j < n; j++) y[j] += a[j];
}

static void silu_mul_scalar(float *g, const float *u, int n) {
    for (int j = 0; j < n; j++) g[j] = lb_silu_canon(g[j]) * u[j];
}

static void gelu_mul_scalar(float *g, const float *u, int n) {
    for (int j = 0; j < n; j++) g[j] = lb_gelu_canon(g[j]) * u[j];
}

static void rope_scalar(float *v, const float *cs, const float *sn, int n, int neox) {
    const int h = neox ? n / 2 : 1, step = neox ? 1 : 2, end = neox ? n / 2 : n;
    for (int j = 0; j < end; j += step) {
        const float v0 = v[j], v1 = v[j + h];
        v[j] = v0 * cs[j] + v1 * sn[j];
        v[j + h] = v1 * cs[j + h] + v0 * sn[j + h];
    }
}

void lb_log_softmax(const float *x, int n, float *out) {
    float maxv = x[0];
    for (int i = 1; i < n; i++) maxv = x[i] > maxv ? x[i] : maxv;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - maxv);
    const float lse = (float)log(sum) + maxv;
    for (int i = 0; i < n; i++) out[i] = x[i] - lse;
}

void lb_rope_table(float *cs, float *sn, float pos, const float *inv_freq, int n, int neox) {
    const int half = n / 2;
    for (int i = 0; i < half; i++) {
        const float val = pos * inv_freq[i];
        const float c = cosf(val), s = sinf(val);
        const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
        cs[a] = cs[b] = c;
        sn[a] = -s; /* v0 * c + v1 * -s == v0 * c - v1 * s exactly */
        sn[b] = s;
    }
}

static const lb_vecops ops_scalar = {LB_ISA_SCALAR, rmsnorm_scalar, add_scalar, silu_mul_scalar, gelu_mul_scalar,
                                     rope_scalar};
#if LB_HAVE_X86_KERNELS
static const lb_vecops ops_avx2 = {LB_ISA_AVX2, lb_rmsnorm_avx2, lb_add_avx2, lb_silu_mul_avx2, lb_gelu_mul_avx2,
                                   lb_rope_avx2};
static const lb_vecops ops_avx512 = {LB_ISA_AVX512, lb_rmsnorm_avx512, lb_add_avx512, lb_silu_mul_avx512,
                                     lb_gelu_mul_avx512, lb_rope_avx512};
#endif

const lb_vecops *lb_vecops_get_at(lb_isa level) {
#if LB_HAVE_X86_KERNELS
    /* AMX adds nothing for these: they take the AVX-512 code */
    if (lb_isa_is_x86(level) && level >= LB_ISA_AVX512) return &ops_avx512;
    if (lb_isa_is_x86(level)) return &ops_avx2;
#endif
    (void)level;
    return &ops_scalar;
}

const lb_vecops *lb_vecops_get(void) { return lb_vecops_get_at(lb_cpu_level()); }
