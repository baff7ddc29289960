/* Pieces of a work unit shared by the scalar and SIMD attention kernels
 * (kernels/attention.h): scratch layout, query gather, row key ranges, and
 * the final normalization. */
#ifndef LB_ATTENTION_IMPL_H
#define LB_ATTENTION_IMPL_H

#include <math.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/attention.h"
#include "kernels/vmath.h"

#define LB_ATTN_ROWS 64 /* query rows (tokens x group) per unit, when the group is smaller */
/* the same for the AMX-BF16 kernel, whose tiles of a K or V block are made
 * once per unit: TinyLlama's prefill attention, 512 tokens, 1 thread, 6.8 ms
 * at 64 rows, 5.1 at 256 (Xeon SPR-class VM; the AVX-512 kernel 9.5-10 ms
 * either way) */
#define LB_ATTN_ROWS_AMX 256

/* The running max is raised only when a score exceeds it by more than this
 * (exp(8) ~ 3000 leaves f32 sums far from overflow), so most blocks need no
 * horizontal max and no rescaling of O. */
#define LB_ATTN_SLACK 8.0f

typedef struct {
    float *qs; /* [M][head_dim] */
    float *o;  /* [M][hd_pad] unnormalized output */
    float *s;  /* [M][KB] scores, then probabilities */
    float *m;  /* [M] running max */
    float *lv; /* [M][16] running sums by lane (kernels/vmath.h order) */
    float *kw; /* [head_dim][KB]: a block of fp16 or q8_0 keys widened to f32 */
    float *vw; /* [KB][hd_pad]: and its values */
    float *x;  /* the AMX-BF16 kernel's tiles (kernels/x86/attention_amx_impl.h) */
} lb_attn_scr;

/* 32-value chunks of head_dim (the AMX-BF16 kernel's K dimension) */
static inline int lb_attn_amx_chunks(int hd) { return (hd + 31) / 32; }

/* Floats of scratch the AMX-BF16 kernel's tiles take for ms (a multiple of
 * 16) query rows: the queries' A tiles (hi and lo bf16), a K block's B
 * tiles, a V block's, the probabilities' A tiles */
static inline size_t lb_attn_amx_floats(int ms, int hd, int hdp) {
    const size_t nc = (size_t)lb_attn_amx_chunks(hd);
    return (size_t)ms * nc * 32 + nc * 2 * 512 + (size_t)hdp / 16 * 512 + (size_t)ms * 32;
}

/* A K block (KB keys) of element type `type` widened to f32, [head_dim][KB],
 * and nj V rows widened to f32, [nj][hd_pad]: exactly (kernels/attention.h),
 * so a kernel that widens otherwise must give these floats. */
void lb_attn_widen_k(const void *kb, int type, int hd, float *restrict kw);
void lb_attn_widen_v(const void *v, int type, int hd, int nj, float *restrict vw);

static inline size_t lb_attn_round16(size_t n) { return (n + 15) & ~(size_t)15; }

static inline lb_attn_scr lb_attn_scr_of(float *p, int M, int hd, int hdp) {
    lb_attn_scr s;
    s.qs = p;
    p += lb_attn_round16((size_t)M * hd);
    s.o = p;
    p += (size_t)M * hdp;
    s.s = p;
    p += (size_t)M * LB_ATTN_KB;
    s.m = p;
    p += lb_attn_round16((size_t)M);
    s.lv = p;
    p += (size_t)M * 16;
    s.kw = p;
    p += (size_t)hd * LB_ATTN_KB;
    s.vw = p;
    p += (size_t)LB_ATTN_KB * hdp;
    s.x = p;
    return s;
}

/* Row r = (t - t0) * group + i holds token t, query head kvh * group + i. */
static inline void lb_attn_begin(const lb_attn_args *a, int kvh, int t0, int t1, int hdp, lb_attn_scr *s) {
    const int g = a->n_head / a->n_head_kv, hd = a->head_dim, M = (t1 - t0) * g;
    for (int t = t0; t < t1; t++) {
        const float *q = a->q + (size_t)t * a->q_stride + (size_t)kvh * g * hd;
        float *d = s->qs + (size_t)(t - t0) * g * hd;
        memcpy(d, q, (size_t)g * hd * sizeof(float));
    }
    memset(s->o, 0, (size_t)M * hdp * sizeof(float));
    for (int r = 0; r < M; r++) s->m[r] = -INFINITY;
    memset(s->lv, 0, (size_t)M * 16 * sizeof(float));
}

/* Keys [*lo, *hi) of the block at kb0 that token t sees (empty if hi <= lo). */
static inline void lb_attn_row_keys(const lb_attn_args *a, int t, int kb0, int *lo, int *hi) {
    const int pos = a->pos0 + t;
    const int first = a->window > 0 && pos - a->window + 1 > 0 ? pos - a->window + 1 : 0;
    *lo = first - kb0 > 0 ? first - kb0 : 0;
    *hi = pos - kb0 + 1 < LB_ATTN_KB ? pos - kb0 + 1 : LB_ATTN_KB;
}

/* Keys [*kbeg, *kend) some token of [t0, t1) sees. */
static inline void lb_attn_unit_keys(const lb_attn_args *a, int t0, int t1, int *kbeg, int *kend) {
    const int p0 = a->pos0 + t0;
    *kbeg = a->window > 0 && p0 - a->window + 1 > 0 ? p0 - a->window + 1 : 0;
    *kend = a->pos0 + t1;
}

/* O / sum. O and the sums are relative to the row's running max m, so a
 * sink adds exp(sink - m) to the sum (ggml's soft_max with sinks, which
 * takes the max with the sink too: the same ratio). */
static inline void lb_attn_end(const lb_attn_args *a, int kvh, int t0, int t1, int hdp, const lb_attn_scr *s) {
    const int g = a->n_head / a->n_head_kv, hd = a->head_dim;
    for (int t = t0; t < t1; t++)
        for (int i = 0; i < g; i++) {
            const int r = (t - t0) * g + i;
            float sum = lb_hsum16(s->lv + (size_t)r * 16);
            if (a->sinks) sum += expf(a->sinks[kvh * g + i] - s->m[r]);
            const float inv = 1.0f / sum, *o = s->o + (size_t)r * hdp;
            float *d = a->out + (size_t)t * a->o_stride + (size_t)(kvh * g + i) * hd;
            for (int j = 0; j < hd; j++) d[j] = o[j] * inv;
        }
}

#endif
