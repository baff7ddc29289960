/* Element-wise ops (kernels/vecops.h) at every ISA level this machine has:
 * every op bit-identical to the scalar level (one order of operations,
 * kernels/vmath.h), RoPE also to the v0*c - v1*s formula; against double
 * references: RMSNorm within 1e-6 relative of a double
 * computation, SiLU within 4e-7 relative (~3 ulp), GELU within 1e-6
 * relative or 1e-8 absolute (for x < -3 the output is tiny and the float
 * argument of exp, up to ~100, carries a relative error of 6e-8 * |arg|),
 * on lengths that leave vector tails. */
#include "kernels/vecops.h"
#include "test_util.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* the RoPE reference below unfused, as gcc compiles ISO C */
#endif

static double silu_ref(double x) { return x / (1.0 + exp(-x)); }
/* 0.5 x (1 + tanh(u)) without the cancellation of 1 + tanh(u) for x << 0 */
static double gelu_ref(double x) { return x / (1.0 + exp(-2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x))); }

static void check_level(lb_isa level, uint64_t *rng) {
    const lb_vecops *ref = lb_vecops_get_at(LB_ISA_SCALAR), *vo = lb_vecops_get_at(level);
    CHECK(vo->isa == level);
    const int lens[] = {1, 7, 8, 16, 31, 64, 80, 100, 2048, 5632};
    enum { MAXN = 5632 };
    static float x[MAXN], y[MAXN], z[MAXN], w[MAXN], u[MAXN], a[MAXN], r_out[MAXN];
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int n = lens[li];
        for (int i = 0; i < n; i++) {
            x[i] = 4.0f * lb_test_randf(rng);
            w[i] = lb_test_randf(rng);
            a[i] = lb_test_randf(rng);
            u[i] = lb_test_randf(rng);
        }
        /* add: exact */
        memcpy(y, x, n * sizeof(float));
        memcpy(z, x, n * sizeof(float));
        ref->add(y, a, n);
        vo->add(z, a, n);
        CHECK_MSG(!memcmp(y, z, n * sizeof(float)), "%s add n=%d", lb_isa_name(level), n);
        /* rmsnorm, in place and not */
        double ss = 0.0;
        for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
        const double sc = 1.0 / sqrt(ss / n + 1e-5);
        memcpy(z, x, n * sizeof(float));
        vo->rmsnorm(y, x, w, n, 1e-5f);
        vo->rmsnorm(z, z, w, n, 1e-5f);
        ref->rmsnorm(r_out, x, w, n, 1e-5f);
        CHECK_MSG(!memcmp(y, r_out, n * sizeof(float)), "%s rmsnorm n=%d: not the scalar bits", lb_isa_name(level), n);
        int bad = 0;
        for (int i = 0; i < n; i++) {
            const double r = w[i] * sc * x[i];
            if (!(fabs(y[i] - r) <= 1e-6 * fabs(r) + 1e-12) || y[i] != z[i]) bad++;
        }
        CHECK_MSG(bad == 0, "%s rmsnorm n=%d: %d off", lb_isa_name(level), n, bad);
        /* silu and gelu over a wide range, tails included */
        for (int i = 0; i < n; i++) x[i] = (float)(-100.0 + 200.0 * i / n) * (li % 2 ? 0.1f : 1.0f);
        memcpy(y, x, n * sizeof(float));
        vo->silu_mul(y, u, n);
        memcpy(r_out, x, n * sizeof(float));
        ref->silu_mul(r_out, u, n);
        CHECK_MSG(!memcmp(y, r_out, n * sizeof(float)), "%s silu n=%d: not the scalar bits", lb_isa_name(level), n);
        bad = 0;
        for (int i = 0; i < n; i++) {
            const double r = silu_ref(x[i]) * u[i];
            if (!(fabs(y[i] - r) <= 4e-7 * fabs(r) + 1e-35)) bad++;
        }
        CHECK_MSG(bad == 0, "%s silu n=%d: %d off", lb_isa_name(level), n, bad);
        memcpy(y, x, n * sizeof(float));
        vo->gelu_mul(y, u, n);
        memcpy(r_out, x, n * sizeof(float));
        ref->gelu_mul(r_out, u, n);
        CHECK_MSG(!memcmp(y, r_out, n * sizeof(float)), "%s gelu n=%d: not the scalar bits", lb_isa_name(level), n);
        bad = 0;
        for (int i = 0; i < n; i++) {
            const double r = gelu_ref(x[i]) * u[i];
            const double tol = 1e-6 * fabs(r) + 1e-8;
            if (!(fabs(y[i] - r) <= tol)) bad++;
        }
        CHECK_MSG(bad == 0, "%s gelu n=%d: %d off", lb_isa_name(level), n, bad);
    }
    /* rope: both layouts, exact against the two-multiply formula */
    const int dims[] = {2, 8, 14, 64, 80, 128, 256};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int n = dims[di];
        float inv_freq[128], cs[256], sn[256], v[256], want[256];
        for (int i = 0; i < n / 2; i++) inv_freq[i] = 1.0f / powf(10000.0f, (float)(2 * i) / (float)n);
        for (int neox = 0; neox < 2; neox++)
            for (int pos = 0; pos < 3000; pos += 997) {
                lb_rope_table(cs, sn, (float)pos, inv_freq, n, neox);
                for (int i = 0; i < n; i++) v[i] = want[i] = lb_test_randf(rng);
                for (int i = 0; i < n / 2; i++) {
                    const float val = (float)pos * inv_freq[i], c = cosf(val), s = sinf(val);
                    const int p = neox ? i : 2 * i, q = neox ? i + n / 2 : 2 * i + 1;
                    const float v0 = want[p], v1 = want[q];
                    want[p] = v0 * c - v1 * s;
                    want[q] = v0 * s + v1 * c;
                }
                vo->rope(v, cs, sn, n, neox);
                CHECK_MSG(!memcmp(v, want, n * sizeof(float)), "%s rope n=%d neox=%d pos=%d", lb_isa_name(level), n,
                          neox, pos);
            }
    }
}

int main(void) {
    const lb_isa levels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512};
    const lb_isa detected = lb_cpu_detected();
    for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
        if (lb_cpu_force_level(levels[li]) != levels[li] || lb_vecops_get()->isa != levels[li]) {
            printf("level %s: not available here\n", lb_isa_name(levels[li]));
            continue;
        }
        uint64_t rng = 0x2545f4914f6cdd1dull;
        check_level(levels[li], &rng);
        printf("level %s: checked\n", lb_isa_name(levels[li]));
    }
    lb_cpu_force_level(detected);
#if defined(__x86_64__)
    /* every x86 level runs SIMD code (levels above AVX-512, e.g. AMX, the AVX-512 code) */
    for (int l = 0; l < LB_ISA_COUNT; l++)
        if (lb_isa_is_x86((lb_isa)l))
            CHECK_MSG(lb_vecops_get_at((lb_isa)l)->isa == (l >= LB_ISA_AVX512 ? LB_ISA_AVX512 : LB_ISA_AVX2),
                      "level %s", lb_isa_name((lb_isa)l));
#endif
    return lb_test_result("test_vecops");
}
