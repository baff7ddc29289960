/* Attention driver (work units over threads), the KV cache writer and the
 * portable kernel (Arm and LOWBIT_ISA=scalar; the x86 kernels are in
 * kernels/attention_x86.c). See kernels/attention.h for the method. */
#include "kernels/attention.h"

#include <omp.h>

#include "core/common.h"
#include "formats/types.h"
#include "kernels/attention_impl.h"
#include "kernels/x86/attention_x86.h"

int lb_attn_ctx_pad(int n_ctx) { return (n_ctx + LB_ATTN_KB - 1) / LB_ATTN_KB * LB_ATTN_KB; }
int lb_attn_hd_pad(int head_dim) { return (head_dim + LB_ATTN_VPAD - 1) / LB_ATTN_VPAD * LB_ATTN_VPAD; }

static int tiles_kernel(lb_attn_block_fn fn) {
#if LB_HAVE_X86_KERNELS
    return fn == lb_attn_block_amx;
#else
    (void)fn;
    return 0;
#endif
}
/* query rows per unit: whole groups, about `target` rows (at least one group) */
static int rows_near(int group, int target) { return LB_MAX(target / group, 1) * group; }
static int unit_rows(int group, lb_attn_block_fn fn) {
    return rows_near(group, tiles_kernel(fn) ? LB_ATTN_ROWS_AMX : LB_ATTN_ROWS);
}

/* for any kernel (a level forced or a feature turned off later must still
 * fit): the AMX-BF16 kernel's units, the largest, rows rounded up to 16
 * (its row tiles), and its tiles; on x86 builds only */
size_t lb_attn_scratch_floats(int head_dim, int group) {
    const int x86 = LB_HAVE_X86_KERNELS;
    const size_t M = lb_attn_round16((size_t)rows_near(group, x86 ? LB_ATTN_ROWS_AMX : LB_ATTN_ROWS)), hdp = (size_t)lb_attn_hd_pad(head_dim);
    const size_t tiles = x86 ? lb_attn_amx_floats((int)M, head_dim, (int)hdp) : 0;
    return lb_attn_round16(M * head_dim) + M * hdp + M * LB_ATTN_KB + lb_attn_round16(M) + M * 16 +
           (size_t)head_dim * LB_ATTN_KB + LB_ATTN_KB * hdp + tiles;
}

int lb_attn_kv_type(int t) {
    return t == LB_TYPE_F16 ? LB_KV_F16 : t == LB_TYPE_Q8_0 ? LB_KV_Q8_0 : t == LB_TYPE_Q4_0 ? LB_KV_Q4_0 : LB_KV_F32;
}
const char *lb_attn_kv_type_name(int kv) {
    return kv == LB_KV_F16 ? "f16" : kv == LB_KV_Q8_0 ? "q8_0" : kv == LB_KV_Q4_0 ? "q4_0" : "f32";
}

/* bytes of a q8_0 or q4_0 K block's codes (the scales follow) */
static size_t k_codes_bytes(int head_dim, int type) {
    return (size_t)(type == LB_KV_Q4_0 ? (head_dim + 1) / 2 : head_dim) * LB_ATTN_KB;
}

size_t lb_attn_k_block_bytes(int head_dim, int type) {
    if (type == LB_KV_Q8_0 || type == LB_KV_Q4_0)
        return k_codes_bytes(head_dim, type) + (size_t)lb_attn_hd_pad(head_dim) / QK8_0 * LB_ATTN_KB * sizeof(lb_fp16);
    return (size_t)head_dim * LB_ATTN_KB * (type == LB_KV_F16 ? 2 : 4);
}
size_t lb_attn_v_row_bytes(int head_dim, int type) {
    const size_t hdp = (size_t)lb_attn_hd_pad(head_dim);
    if (type == LB_KV_Q8_0) return hdp / QK8_0 * sizeof(block_q8_0);
    if (type == LB_KV_Q4_0) return hdp / QK4_0 * sizeof(block_q4_0);
    return hdp * (type == LB_KV_F16 ? 2 : 4);
}
size_t lb_attn_k_bytes(int n_ctx, int n_head_kv, int head_dim, int type) {
    return (size_t)n_head_kv * (n_ctx / LB_ATTN_KB) * lb_attn_k_block_bytes(head_dim, type);
}
size_t lb_attn_v_bytes(int n_ctx, int n_head_kv, int head_dim, int type) {
    return (size_t)n_head_kv * n_ctx * lb_attn_v_row_bytes(head_dim, type);
}

/* fp16(s[i]) for i < n: F16C where the level has it, else lb_f32_to_fp16
 * (the same bits: both round to nearest even) */
static void to_fp16(const float *s, lb_fp16 *d, int n) {
#if LB_HAVE_X86_KERNELS
    if (lb_isa_is_x86(lb_cpu_level()) && lb_cpu_level() >= LB_ISA_AVX2) {
        lb_attn_to_fp16_f16c(s, d, n);
        return;
    }
#endif
    for (int i = 0; i < n; i++) d[i] = lb_f32_to_fp16(s[i]);
}

/* dst[i * dst_step] = src[i] for i < n, as f32 or as fp16 */
static void put_row(void *dst, size_t off, int f16, const float *src, int n, size_t dst_step) {
    if (f16) {
        lb_fp16 *d = (lb_fp16 *)dst + off, h[256];
        for (int i0 = 0; i0 < n; i0 += 256) {
            const int k = LB_MIN(256, n - i0);
            to_fp16(src + i0, h, k);
            for (int i = 0; i < k; i++) d[(size_t)(i0 + i) * dst_step] = h[i];
        }
    } else {
        float *d = (float *)dst + off;
        for (int i = 0; i < n; i++) d[(size_t)i * dst_step] = src[i];
    }
}

/* values g * 32 .. g * 32 + 31 of x (hd floats, zero-padded to hd_pad)
 * rounded as Q8_0, or as Q4_0 */
static void group_of(const float *x, int hd, int g, float pad[QK8_0]) {
    memset(pad, 0, QK8_0 * sizeof(float));
    memcpy(pad, x + g * QK8_0, (size_t)LB_MIN(QK8_0, hd - g * QK8_0) * sizeof(float));
}
static block_q8_0 q8_group(const float *x, int hd, int g) {
    float pad[QK8_0];
    block_q8_0 q;
    group_of(x, hd, g, pad);
    lb_quantize_row_q8_0_ref(pad, &q, QK8_0);
    return q;
}
static block_q4_0 q4_group(const float *x, int hd, int g) {
    float pad[QK4_0];
    block_q4_0 q;
    group_of(x, hd, g, pad);
    lb_quantize_row_q4_0_ref(pad, &q, QK4_0);
    return q;
}

/* the 4-bit code of value i (0..31) of a Q4_0 block */
static inline int q4_code(const block_q4_0 *q, int i) { return i < 16 ? q->qs[i] & 15 : q->qs[i - 16] >> 4; }

void lb_attn_store_kv(void *kc, void *vc, int k_type, int v_type, int n_ctx, int n_head_kv, int head_dim,
                      const float *k, size_t k_stride, const float *v, size_t v_stride, int n, int pos0) {
    static const float zeros[LB_ATTN_VPAD];
    const int hd = head_dim, hdp = lb_attn_hd_pad(hd), nblk = n_ctx / LB_ATTN_KB, ng = hdp / QK8_0;
    const size_t kblk = lb_attn_k_block_bytes(hd, k_type), vrow = lb_attn_v_row_bytes(hd, v_type);
    for (int t = 0; t < n; t++) {
        const int p = (pos0 + t) % n_ctx, j = p % LB_ATTN_KB; /* p: the slot */
        for (int h = 0; h < n_head_kv; h++) {
            const float *kx = k + (size_t)t * k_stride + (size_t)h * hd, *vx = v + (size_t)t * v_stride + (size_t)h * hd;
            char *kb = (char *)kc + ((size_t)h * nblk + p / LB_ATTN_KB) * kblk;
            if (k_type == LB_KV_Q8_0) { /* codes [hd][KB], then scales [hd_pad / 32][KB] */
                int8_t *codes = (int8_t *)kb;
                lb_fp16 *scales = (lb_fp16 *)(kb + k_codes_bytes(hd, k_type));
                for (int g = 0; g < ng; g++) {
                    const block_q8_0 q = q8_group(kx, hd, g);
                    for (int d = g * QK8_0; d < LB_MIN(hd, g * QK8_0 + QK8_0); d++)
                        codes[(size_t)d * LB_ATTN_KB + j] = q.qs[d % QK8_0];
                    scales[(size_t)g * LB_ATTN_KB + j] = q.d;
                }
            } else if (k_type == LB_KV_Q4_0) { /* codes [(hd + 1) / 2][KB], two dimensions a byte; scales */
                uint8_t *codes = (uint8_t *)kb;
                lb_fp16 *scales = (lb_fp16 *)(kb + k_codes_bytes(hd, k_type));
                for (int g = 0; g < ng; g++) {
                    const block_q4_0 q = q4_group(kx, hd, g);
                    for (int d = g * QK4_0; d < LB_MIN(hd, g * QK4_0 + QK4_0); d += 2) {
                        const int hi = d + 1 < hd ? q4_code(&q, (d + 1) % QK4_0) : 8; /* 8: a zero */
                        codes[(size_t)(d / 2) * LB_ATTN_KB + j] = (uint8_t)(q4_code(&q, d % QK4_0) | hi << 4);
                    }
                    scales[(size_t)g * LB_ATTN_KB + j] = q.d;
                }
            } else {
                put_row(kb, (size_t)j, k_type == LB_KV_F16, kx, hd, LB_ATTN_KB);
            }
            char *vr = (char *)vc + ((size_t)h * n_ctx + p) * vrow;
            if (v_type == LB_KV_Q8_0) {
                for (int g = 0; g < ng; g++) ((block_q8_0 *)vr)[g] = q8_group(vx, hd, g);
            } else if (v_type == LB_KV_Q4_0) {
                for (int g = 0; g < ng; g++) ((block_q4_0 *)vr)[g] = q4_group(vx, hd, g);
            } else {
                put_row(vr, 0, v_type == LB_KV_F16, vx, hd, 1);
                put_row(vr, (size_t)hd, v_type == LB_KV_F16, zeros, hdp - hd, 1);
            }
        }
    }
}

void lb_attn_copy_kv(void *kd, void *vd, const void *ks, const void *vs, int k_type, int v_type, int n_ctx,
                     int n_head_kv, int head_dim, int n) {
    const int nblk = n_ctx / LB_ATTN_KB;
    const size_t kblk = lb_attn_k_block_bytes(head_dim, k_type), vrow = lb_attn_v_row_bytes(head_dim, v_type);
    const size_t kn = (size_t)(n + LB_ATTN_KB - 1) / LB_ATTN_KB * kblk;
    for (int h = 0; h < n_head_kv; h++) {
        memcpy((char *)kd + (size_t)h * nblk * kblk, (const char *)ks + (size_t)h * nblk * kblk, kn);
        memcpy((char *)vd + (size_t)h * n_ctx * vrow, (const char *)vs + (size_t)h * n_ctx * vrow, (size_t)n * vrow);
    }
}

/* A K block (KB keys) widened to f32, [head_dim][KB], and nj V rows widened
 * to f32, [nj][hd_pad]: exact for every element type (the portable kernel,
 * and the SIMD kernels' reference for their own widening). */
void lb_attn_widen_k(const void *kb, int type, int hd, float *restrict kw) {
    const size_t n = (size_t)hd * LB_ATTN_KB;
    if (type == LB_KV_F16) {
        for (size_t i = 0; i < n; i++) kw[i] = lb_fp16_to_f32(((const lb_fp16 *)kb)[i]);
    } else if (type == LB_KV_Q8_0) {
        const int8_t *codes = kb;
        const lb_fp16 *scales = (const lb_fp16 *)((const char *)kb + n);
        for (int d = 0; d < hd; d++)
            for (int j = 0; j < LB_ATTN_KB; j++)
                kw[(size_t)d * LB_ATTN_KB + j] =
                    codes[(size_t)d * LB_ATTN_KB + j] * lb_fp16_to_f32(scales[(size_t)(d / QK8_0) * LB_ATTN_KB + j]);
    } else if (type == LB_KV_Q4_0) {
        const uint8_t *codes = kb;
        const lb_fp16 *scales = (const lb_fp16 *)((const char *)kb + k_codes_bytes(hd, type));
        for (int d = 0; d < hd; d++)
            for (int j = 0; j < LB_ATTN_KB; j++) {
                const int c = codes[(size_t)(d / 2) * LB_ATTN_KB + j] >> 4 * (d & 1) & 15;
                kw[(size_t)d * LB_ATTN_KB + j] =
                    (float)(c - 8) * lb_fp16_to_f32(scales[(size_t)(d / QK4_0) * LB_ATTN_KB + j]);
            }
    } else {
        memcpy(kw, kb, n * sizeof(float));
    }
}

void lb_attn_widen_v(const void *v, int type, int hd, int nj, float *restrict vw) {
    const int hdp = lb_attn_hd_pad(hd);
    if (type == LB_KV_Q8_0) {
        for (int j = 0; j < nj; j++)
            lb_dequantize_row_q8_0((const block_q8_0 *)v + (size_t)j * (hdp / QK8_0), vw + (size_t)j * hdp, hdp);
    } else if (type == LB_KV_Q4_0) {
        for (int j = 0; j < nj; j++)
            lb_dequantize_row_q4_0((const block_q4_0 *)v + (size_t)j * (hdp / QK4_0), vw + (size_t)j * hdp, hdp);
    } else if (type == LB_KV_F16) {
        for (size_t i = 0; i < (size_t)nj * hdp; i++) vw[i] = lb_fp16_to_f32(((const lb_fp16 *)v)[i]);
    } else {
        memcpy(vw, v, (size_t)nj * hdp * sizeof(float));
    }
}

/* The portable kernel, which fixes the results (the SIMD kernels repeat its
 * operations in the same order, so every level gives the same bits): per
 * block of KB keys and query row, S = q K^T * scale, each dot product one
 * fmaf chain over head_dim; keys the row may not see are -inf; when a score
 * exceeds the running max m by LB_ATTN_SLACK, m becomes the block's max and
 * O and the sums are scaled by expf(old m - new m); P = exp(S - m)
 * (kernels/vmath.h), summed into 16 lanes; O += P V as fmaf chains over the
 * keys in order.
 * The inner loops have constant trip counts and local or restrict-qualified
 * operands, so compilers vectorize them at -O2 (NEON on Arm). */
static void qk_row(const float *q, const float *kt, int hd, float *restrict s) {
    float acc[LB_ATTN_KB] = {0};
    for (int d = 0; d < hd; d++) {
        const float qd = q[d], *kr = kt + (size_t)d * LB_ATTN_KB;
        for (int j = 0; j < LB_ATTN_KB; j++) acc[j] = fmaf(qd, kr[j], acc[j]);
    }
    memcpy(s, acc, sizeof acc);
}

static void pv_row(float *restrict o, const float *restrict p, const float *restrict v, int nj, int hdp) {
    for (int j = 0; j < nj; j++) {
        const float pj = p[j], *vr = v + (size_t)j * hdp;
        for (int d = 0; d < hdp; d += LB_ATTN_VPAD)
            for (int i = 0; i < LB_ATTN_VPAD; i++) o[d + i] = fmaf(pj, vr[d + i], o[d + i]);
    }
}

static void block_scalar(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch) {
    const int g = a->n_head / a->n_head_kv, hd = a->head_dim, hdp = lb_attn_hd_pad(hd), M = (t1 - t0) * g;
    const int KB = LB_ATTN_KB;
    lb_attn_scr s = lb_attn_scr_of(scratch, M, hd, hdp);
    lb_attn_begin(a, kvh, t0, t1, hdp, &s);
    int kbeg, kend;
    lb_attn_unit_keys(a, t0, t1, &kbeg, &kend);
    const size_t kblk = lb_attn_k_block_bytes(hd, a->k_type), vrow = lb_attn_v_row_bytes(hd, a->v_type);
    const char *kbase = (const char *)a->k + (size_t)kvh * (a->n_ctx / KB) * kblk;
    const char *vbase = (const char *)a->v + (size_t)kvh * a->n_ctx * vrow;
    for (int kb0 = kbeg / KB * KB; kb0 < kend; kb0 += KB) {
        const int jlo = LB_MAX(kbeg - kb0, 0), jhi = LB_MIN(kend - kb0, KB), slot0 = kb0 % a->n_ctx; /* a ring's wrap */
        const char *kb = kbase + (size_t)(slot0 / KB) * kblk, *vr = vbase + (size_t)(slot0 + jlo) * vrow;
        const float *kt = (const float *)kb, *vb = (const float *)vr;
        if (a->k_type != LB_KV_F32) {
            lb_attn_widen_k(kb, a->k_type, hd, s.kw);
            kt = s.kw;
        }
        if (a->v_type != LB_KV_F32) {
            lb_attn_widen_v(vr, a->v_type, hd, jhi - jlo, s.vw);
            vb = s.vw;
        }
        for (int r = 0; r < M; r++) {
            float *sr = s.s + (size_t)r * KB, *lv = s.lv + (size_t)r * 16;
            int lo, hi;
            lb_attn_row_keys(a, t0 + r / g, kb0, &lo, &hi);
            if (hi <= lo) continue; /* P = 0: O unchanged */
            qk_row(s.qs + (size_t)r * hd, kt, hd, sr);
            float mx = -INFINITY;
            const float cap = a->softcap, two_cap = cap > 0.0f ? 2.0f / cap : 0.0f;
            for (int j = 0; j < KB; j++) {
                float x = sr[j] * a->scale;
                if (cap > 0.0f) x = lb_softcap_canon(x, two_cap, cap);
                sr[j] = j >= lo && j < hi ? x : -INFINITY;
                mx = sr[j] > mx ? sr[j] : mx;
            }
            float mr = s.m[r];
            if (mx > mr + LB_ATTN_SLACK) {
                if (mr > -INFINITY) {
                    const float alpha = expf(mr - mx);
                    float *o = s.o + (size_t)r * hdp;
                    for (int d = 0; d < hdp; d++) o[d] *= alpha;
                    for (int i = 0; i < 16; i++) lv[i] *= alpha;
                }
                s.m[r] = mr = mx;
            }
            for (int j = 0; j < KB; j++) sr[j] = lb_exp_canon(sr[j] - mr);
            for (int i = 0; i < 16; i++) lv[i] = (lv[i] + sr[i]) + sr[i + 16];
            pv_row(s.o + (size_t)r * hdp, sr + jlo, vb, jhi - jlo, hdp);
        }
    }
    lb_attn_end(a, kvh, t0, t1, hdp, &s);
}

lb_attn_block_fn lb_attn_block_get_at(lb_isa level) {
#if LB_HAVE_X86_KERNELS
    /* the AMX level with AMX-BF16 (LOWBIT_CPU_OFF=amx-bf16 turns it off):
     * the tile unit's kernel, which hands units of fewer than 16 rows (decode)
     * to the AVX-512 code it is compiled with */
    if (level == LB_ISA_AMX && (lb_cpu_extra_features() & LB_CPU_AMXBF16)) return lb_attn_block_amx;
    if (lb_isa_is_x86(level) && level >= LB_ISA_AVX512) return lb_attn_block_avx512; /* and AMX without AMX-BF16 */
    if (lb_isa_is_x86(level)) return lb_attn_block_avx2;
#endif
    (void)level;
    return block_scalar;
}

void lb_attention(const lb_attn_args *a, float *scratch, int n_threads) {
    const lb_attn_block_fn fn = lb_attn_block_get_at(lb_cpu_level());
    const int g = a->n_head / a->n_head_kv, nkv = a->n_head_kv;
    /* tokens per unit: LB_ATTN_ROWS (_AMX) rows, fewer while that leaves threads idle */
    int T = unit_rows(g, fn) / g;
    while (T > 1 && (int64_t)((a->n + T - 1) / T) * nkv < 4 * n_threads) T = (T + 1) / 2;
    const int nb = (a->n + T - 1) / T, units = nb * nkv;
    /* multiply-adds, roughly: below ~32k (a microsecond) waking threads costs
     * more (a region of 2 threads: 0.6 us on a Zen 4 VM). The threshold was
     * 256k, which left decode attention on one thread, the others waiting,
     * until a TinyLlama token saw 128 keys: 410 us of a 13 ms token in tg128
     * (W2*A8, 2 threads), 240-280 us on both threads. Otherwise the whole
     * team, even when there are fewer units than threads (decode: one per KV
     * head): a team of another size than the matmuls' makes OpenMP park and
     * wake the rest of its pool at every layer (on 16 threads, TinyLlama
     * Q4_0 decode fell from 153 to 32 t/s once a token saw 128 keys and
     * attention took a team of 4) */
    const int64_t keys = a->window > 0 ? LB_MIN(a->pos0 + a->n, a->window) : a->pos0 + a->n;
    int nth = (int64_t)a->n * a->n_head * keys * a->head_dim < (1 << 15) ? 1 : n_threads;
    if (nth < 1) nth = 1;
    const size_t per = lb_attn_scratch_floats(a->head_dim, g);
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1)
    for (int u = 0; u < units; u++) {
        /* the last token blocks see the most keys: they go first */
        const int tb = nb - 1 - u / nkv, kvh = u % nkv;
        fn(a, kvh, tb * T, LB_MIN(a->n, tb * T + T), scratch + (size_t)omp_get_thread_num() * per);
    }
}
