/* The BCQ{q}_G{g}_LUT layouts of formats/bcq.h (16 rows interleaved for the
 * table-lookup kernels): traits, repack / unpack of whole tensors, the
 * scalar GEMV every fast kernel is tested against (it unpacks a row and
 * calls the plain reference dot, so it gives its bits), and the mu = 8
 * float tables with their scalar dot. */
#include <omp.h>
#include <stdlib.h>

#include "formats/bcq.h"

#include "core/fp_strict.h"

enum { R = LB_BCQ_ROWS };

/* row r's plain block <-> its place in an x-block */
static void put_row(int q, int g, const uint8_t *blk, uint8_t *xb, int r) {
    for (int i = 0; i <= q; i++) memcpy(xb + 32 * i + 2 * r, blk + 2 * i, 2); /* alpha_0 .. alpha_{q-1}, z */
    const uint8_t *pl = blk + 2 * (q + 1);
    uint8_t *xp = xb + 32 * (q + 1);
    for (int k = 0; k < q * g / 8; k++) xp[R * k + r] = pl[k];
}

static void get_row(int q, int g, const uint8_t *xb, int r, uint8_t *blk) {
    for (int i = 0; i <= q; i++) memcpy(blk + 2 * i, xb + 32 * i + 2 * r, 2);
    uint8_t *pl = blk + 2 * (q + 1);
    const uint8_t *xp = xb + 32 * (q + 1);
    for (int k = 0; k < q * g / 8; k++) pl[k] = xp[R * k + r];
}

/* rows [16 rg, 16 rg + 16) of a tensor of K: plain rows <-> x-blocks */
static void tensor_pass(int lut_type, uint8_t *plain, uint8_t *packed, int64_t K, int64_t N, int to_packed) {
    const int q = lb_bcq_bits(lut_type), g = lb_bcq_group(lut_type);
    const size_t bs = LB_BCQ_SIZE(q, g), xs = LB_BCQ_XSIZE(q, g), row = (size_t)(K / g) * bs;
    const int64_t groups = N / R, nb = K / g;
#pragma omp parallel for schedule(static) if (groups * nb > 4096)
    for (int64_t rg = 0; rg < groups; rg++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *xb = packed + (size_t)rg * R * row + (size_t)b * xs;
            for (int r = 0; r < R; r++) {
                const size_t off = ((size_t)rg * R + (size_t)r) * row + (size_t)b * bs;
                if (to_packed) put_row(q, g, plain + off, xb, r);
                else get_row(q, g, xb, r, plain + off);
            }
        }
    const size_t tail = (size_t)groups * R * row;
    if (to_packed) memcpy(packed + tail, plain + tail, (size_t)(N % R) * row);
    else memcpy(plain + tail, packed + tail, (size_t)(N % R) * row);
}

void lb_repack_bcq_tensor(int lut_type, const void *plain, void *packed, int64_t K, int64_t N) {
    /* the pass reads `plain` when packing (the cast only shares the walk) */
    if (lb_bcq_plain_of_lut(lut_type) >= 0) tensor_pass(lut_type, (uint8_t *)(uintptr_t)plain, packed, K, N, 1);
}

void lb_unpack_bcq_tensor(int lut_type, const void *packed, void *plain, int64_t K, int64_t N) {
    if (lb_bcq_plain_of_lut(lut_type) >= 0) tensor_pass(lut_type, plain, (uint8_t *)(uintptr_t)packed, K, N, 0);
}

/* Row r of the 16-row group at xg (K/g x-blocks) as plain blocks */
static void unpack_row(int q, int g, const uint8_t *xg, int64_t K, int r, uint8_t *row) {
    const size_t bs = LB_BCQ_SIZE(q, g), xs = LB_BCQ_XSIZE(q, g);
    for (int64_t b = 0; b < K / g; b++) get_row(q, g, xg + (size_t)b * xs, r, row + (size_t)b * bs);
}

/* ---- traits: to_float decodes one whole group of 16 rows (k = 16 K) ---- */
static void group_to_float(int lut_type, const void *src, float *dst, int64_t k) {
    const int q = lb_bcq_bits(lut_type), g = lb_bcq_group(lut_type);
    const int64_t K = k / R;
    if (k % ((int64_t)R * g)) {
        for (int64_t i = 0; i < k; i++) dst[i] = 0.0f;
        return;
    }
    const lb_type_traits *bt = lb_traits(lb_bcq_plain_of_lut(lut_type));
    uint8_t blk[LB_BCQ_SIZE(4, 128)];
    const size_t xs = LB_BCQ_XSIZE(q, g);
    for (int64_t b = 0; b < K / g; b++)
        for (int r = 0; r < R; r++) {
            get_row(q, g, (const uint8_t *)src + (size_t)b * xs, r, blk);
            bt->to_float(blk, dst + r * K + b * g, g);
        }
}

/* ---- the scalar GEMV on the layout ---- */
static void gemv_ref(int lut_type, lb_vec_dot_fn dot, int64_t K, const void *W, size_t w_row_size, int n0, int n1,
                     const void *A, size_t a_row_size, int M, float *Y, size_t ldy) {
    const int q = lb_bcq_bits(lut_type), g = lb_bcq_group(lut_type);
    uint8_t *row = malloc(w_row_size);
    if (!row) return;
    for (int n = n0; n < n1; n += R) {
        const uint8_t *xg = (const uint8_t *)W + (size_t)n * w_row_size;
        for (int r = 0; r < R; r++) {
            unpack_row(q, g, xg, K, r, row);
            for (int m = 0; m < M; m++) dot(K, Y + (size_t)m * ldy + n + r, row, (const char *)A + (size_t)m * a_row_size);
        }
    }
    free(row);
}

#define BCQ_LUT_DEFINE(name, NAME, Q, G)                                                                     \
    static void to_float_##name##_lut(const void *s, float *d, int64_t k) {                                 \
        group_to_float(LB_TYPE_##NAME##_LUT, s, d, k);                                                      \
    }                                                                                                       \
    void lb_gemv_##name##_lut_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, \
                                  size_t a_row_size, int M, float *Y, size_t ldy) {                         \
        gemv_ref(LB_TYPE_##NAME##_LUT, lb_vec_dot_##name##_lut4_ref, K, W, w_row_size, n0, n1, A, a_row_size, \
                 M, Y, ldy);                                                                                \
    }
LB_BCQ_LIST(BCQ_LUT_DEFINE)
#undef BCQ_LUT_DEFINE

static const lb_type_traits lut_traits[] = {
#define BCQ_LUT_TRAITS(name, NAME, Q, G) \
    {#NAME "_LUT", G, LB_BCQ_SIZE(Q, G), 1, LB_TYPE_Q8_0_LUT4, to_float_##name##_lut, NULL, NULL},
    LB_BCQ_LIST(BCQ_LUT_TRAITS)
#undef BCQ_LUT_TRAITS
};

const lb_type_traits *lb_bcq_lut_traits_(int type);
const lb_type_traits *lb_bcq_lut_traits_(int type) {
    const int p = lb_bcq_plain_of_lut(type);
    return p < 0 ? NULL : &lut_traits[p - LB_BCQ_FIRST];
}

/* ---- mu = 8 float tables ---- */

size_t lb_bcq_f8_size(int64_t K) { return (size_t)(K / 8) * 256 * sizeof(float) + (size_t)(K / 32) * sizeof(float); }

void lb_bcq_f8_prepare(const float *x, int64_t K, void *act) {
    float *T = act, *sums = T + (size_t)(K / 8) * 256;
    for (int64_t k = 0; k < K / 8; k++, T += 256) {
        float lo[16], hi[16];
        const float *v = x + 8 * k;
        for (int e = 0; e < 16; e++) {
            float a = (e & 1) ? v[0] : -v[0], b = (e & 1) ? v[4] : -v[4];
            for (int t = 1; t < 4; t++) {
                a += (e >> t & 1) ? v[t] : -v[t];
                b += (e >> t & 1) ? v[4 + t] : -v[4 + t];
            }
            lo[e] = a, hi[e] = b;
        }
        for (int e = 0; e < 256; e++) T[e] = lo[e & 15] + hi[e >> 4];
    }
    for (int64_t c = 0; c < K / 32; c++) {
        float s = 0.0f;
        for (int j = 0; j < 32; j++) s += x[32 * c + j];
        sums[c] = s;
    }
}

static float dot_f8(int q, int g, int64_t K, const uint8_t *w, const float *T, const float *sums) {
    const size_t bs = LB_BCQ_SIZE(q, g);
    const int nc = g / 32, nk = g / 8;
    float y = 0.0f;
    for (int64_t gi = 0; gi < K / g; gi++, w += bs, T += (size_t)nk * 256, sums += nc) {
        lb_fp16 h;
        float gs = 0.0f;
        for (int c = 0; c < nc; c++) gs += sums[c];
        memcpy(&h, w + 2 * q, 2);
        y += lb_fp16_to_f32(h) * gs;
        for (int i = 0; i < q; i++) {
            const uint8_t *pl = w + 2 * (q + 1) + i * nk;
            float p = 0.0f;
            for (int k = 0; k < nk; k++) p += T[256 * k + pl[k]];
            memcpy(&h, w + 2 * i, 2);
            y += lb_fp16_to_f32(h) * p;
        }
    }
    return y;
}

float lb_bcq_dot_f8_ref(int type, int64_t K, const void *w, const void *act) {
    const int q = lb_bcq_bits(type), g = lb_bcq_group(type);
    const float *T = act;
    return dot_f8(q, g, K, w, T, T + (size_t)(K / 8) * 256);
}

void lb_bcq_gemv_f8_ref(int lut_type, int64_t K, const void *W, int64_t N, const void *act, float *y) {
    const int q = lb_bcq_bits(lut_type), g = lb_bcq_group(lut_type);
    const size_t row = (size_t)(K / g) * LB_BCQ_SIZE(q, g);
    const float *T = act, *sums = T + (size_t)(K / 8) * 256;
    uint8_t *buf = malloc(row);
    if (!buf) return;
    for (int64_t n = 0; n < N; n++) {
        const uint8_t *w = (const uint8_t *)W + (size_t)n * row;
        if (n < N - N % R) {
            unpack_row(q, g, (const uint8_t *)W + (size_t)(n - n % R) * row, K, (int)(n % R), buf);
            w = buf;
        }
        y[n] = dot_f8(q, g, K, w, T, sums);
    }
    free(buf);
}
