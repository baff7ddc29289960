/* Element-wise row operations of the forward pass (norms, residual adds,
 * gated activations, RoPE), one implementation per ISA level. Each works on
 * one row; the caller spreads rows over threads. lb_vecops_get returns the
 * table for the level in force (kernels/cpu.h), so forcing a level takes
 * effect at once. */
#ifndef LB_VECOPS_H
#define LB_VECOPS_H

#include "kernels/cpu.h"

typedef struct {
    lb_isa isa;
    /* y = x / rms(x) * w (y may be x) */
    void (*rmsnorm)(float *y, const float *x, const float *w, int n, float eps);
    /* y += a */
    void (*add)(float *y, const float *a, int n);
    /* g = silu(g) * u, silu(g) = g / (1 + exp(-g)): vector exp within ~2 ulp */
    void (*silu_mul)(float *g, const float *u, int n);
    /* g = gelu_tanh(g) * u, within ~1e-6 relative of the tanhf formula */
    void (*gelu_mul)(float *g, const float *u, int n);
    /* Rotates the first n values of v: v[j] = v[j] * cs[j] + v[partner(j)] * sn[j],
     * partner(j) = j ^ 1 (interleaved pairs) or j +- n/2 (neox); cs and sn
     * come from lb_rope_table, so the result is the reference's exactly. */
    void (*rope)(float *v, const float *cs, const float *sn, int n, int neox);
} lb_vecops;

const lb_vecops *lb_vecops_get(void);
const lb_vecops *lb_vecops_get_at(lb_isa level);

/* One position's RoPE table for n = rope_dim values: angle_i = pos * inv_freq[i]
 * (i < n/2), laid out for rope(): cos in both members of pair i, -sin in the
 * first and +sin in the second. */
void lb_rope_table(float *cs, float *sn, float pos, const float *inv_freq, int n, int neox);

/* out[i] = x[i] - log(sum_j exp(x[j])), n >= 1, the sum in double (out may
 * be x): the perplexity tool's KLD and the ABQ search's attention maps. */
void lb_log_softmax(const float *x, int n, float *out);

#endif
