/* ABQ_W{q}, ABQ_W2S and the ABQ_ACT activations: block access, the
 * per-token activation quantizer, the integer reference dots and the load
 * checks (layout and arithmetic in formats/abq.h; the weight quantizer in
 * formats/abq_quant.c). */
#include <math.h>
#include <string.h>

#include "formats/abq.h"

/* ---- type geometry ---- */

int lb_abq_bits(int type) {
    if (type >= LB_TYPE_ABQ_W1 && type <= LB_TYPE_ABQ_W8) return type - LB_TYPE_ABQ_W1 + 1;
    return type == LB_TYPE_ABQ_W2S ? 3 : 0;
}

int lb_abq_is_balanced(int type) { return type == LB_TYPE_ABQ_W2S; }

int lb_abq_type(int q) { return q >= 1 && q <= LB_ABQ_MAX_BITS ? LB_TYPE_ABQ_W1 + q - 1 : -1; }

/* bytes before the planes: d and z, or d alone for W2S */
static int header_bytes(int type) { return lb_abq_is_balanced(type) ? 2 : 4; }

static size_t block_bytes(int type) { return (size_t)header_bytes(type) + LB_ABQ_PLANE * (size_t)lb_abq_bits(type); }

float lb_abq_block_d(int type, const void *blk) {
    (void)type;
    lb_fp16 d;
    memcpy(&d, blk, sizeof d); /* d leads every block */
    return lb_fp16_to_f32(d);
}

int lb_abq_block_z(int type, const void *blk) {
    if (lb_abq_is_balanced(type)) return 2;
    int16_t z;
    memcpy(&z, (const uint8_t *)blk + 2, sizeof z);
    return z;
}

const uint8_t *lb_abq_block_plane(int type, const void *blk, int s) {
    return (const uint8_t *)blk + header_bytes(type) + LB_ABQ_PLANE * s;
}

int lb_abq_get_code(int type, const void *blk, int j) {
    int c = 0;
    for (int s = 0; s < lb_abq_bits(type); s++) c |= ((lb_abq_block_plane(type, blk, s)[j / 8] >> (j % 8)) & 1) << s;
    return c;
}

/* ---- activations ---- */

lb_abq_act_scale lb_abq_act_scale_of(const float *x, int64_t j0, int64_t k, float lo, float hi, int p) {
    lb_abq_act_scale s;
    s.p = p < 1 || p > LB_ABQ_MAX_BITS ? LB_ABQ_MAX_BITS : p; /* planes beyond 8 do not exist */
    s.cmax = (1 << s.p) - 1;
    for (int64_t j = j0; j < k; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    s.d = (hi - lo) / (float)s.cmax;
    s.id = s.d > 0.0f ? 1.0f / s.d : 0.0f;
    s.z = s.d > 0.0f ? (int)LB_MIN(LB_MAX(lrintf(-lo * s.id), 0), s.cmax) : 0;
    return s;
}

void lb_abq_quantize_act(const float *x, void *vy, int64_t k, int p_in) {
    block_abq_act *y = vy;
    /* the range always holds 0, so an all-zero row stays exact and z is a code */
    const lb_abq_act_scale sc = lb_abq_act_scale_of(x, 0, k, 0.0f, 0.0f, p_in);
    const float d = sc.d, id = sc.id;
    const int z = sc.z, p = sc.p, cmax = sc.cmax;
    for (int64_t i = 0; i < k / LB_ABQ_G; i++) {
        block_abq_act *b = &y[i];
        memset(b, 0, sizeof *b);
        b->d = d, b->z = (int16_t)z, b->p = (uint8_t)p;
        for (int j = 0; j < LB_ABQ_G; j++) {
            const float v = x[i * LB_ABQ_G + j] * id;
            /* comparisons before the conversion: NaN and huge values stay in range */
            const int c = v >= (float)cmax ? cmax : v > -(float)cmax ? (int)LB_MIN(LB_MAX(lrintf(v) + z, 0), cmax) : 0;
            b->sum += c;
            b->c[j] = (int8_t)(c - 128);
            for (int t = 0; t < p; t++) b->b[t][j / 8] |= (uint8_t)(((c >> t) & 1) << (j % 8));
        }
    }
}

void lb_quantize_row_abq_act_ref(const float *x, void *y, int64_t k) { lb_abq_quantize_act(x, y, k, LB_ABQ_MAX_BITS); }

void lb_dequantize_row_abq_act(const void *vx, float *y, int64_t k) {
    const block_abq_act *x = vx;
    for (int64_t i = 0; i < k / LB_ABQ_G; i++)
        for (int j = 0; j < LB_ABQ_G; j++) {
            int c = 0;
            for (int t = 0; t < x[i].p && t < LB_ABQ_MAX_BITS; t++) c |= ((x[i].b[t][j / 8] >> (j % 8)) & 1) << t;
            y[i * LB_ABQ_G + j] = x[i].d * (float)(c - x[i].z);
        }
}

/* ---- weights: dequantization and the integer dots ---- */

static void dequantize_row(int type, const void *x, float *y, int64_t k) {
    const size_t bs = block_bytes(type);
    for (int64_t i = 0; i < k / LB_ABQ_G; i++) {
        const void *blk = (const uint8_t *)x + i * bs;
        const float d = lb_abq_block_d(type, blk);
        const int z = lb_abq_block_z(type, blk);
        for (int j = 0; j < LB_ABQ_G; j++) y[i * LB_ABQ_G + j] = d * (float)(lb_abq_get_code(type, blk, j) - z);
    }
}

int32_t lb_abq_group_dot_codes(int type, const void *wblk, const block_abq_act *a) {
    const int zw = lb_abq_block_z(type, wblk);
    int32_t sum = 0;
    for (int j = 0; j < LB_ABQ_G; j++) {
        int ca = 0;
        for (int t = 0; t < a->p; t++) ca |= ((a->b[t][j / 8] >> (j % 8)) & 1) << t;
        sum += (lb_abq_get_code(type, wblk, j) - zw) * (ca - a->z);
    }
    return sum;
}

static int popcount64(uint64_t v) {
    int n = 0;
    for (; v; v &= v - 1) n++;
    return n;
}

static int plane_popcount(const uint8_t *w, const uint8_t *a) {
    uint64_t w0, w1, a0, a1;
    memcpy(&w0, w, 8), memcpy(&w1, w + 8, 8);
    if (!a) return popcount64(w0) + popcount64(w1);
    memcpy(&a0, a, 8), memcpy(&a1, a + 8, 8);
    return popcount64(w0 & a0) + popcount64(w1 & a1);
}

int32_t lb_abq_group_dot_planes(int type, const void *wblk, const block_abq_act *a) {
    const int q = lb_abq_bits(type), zw = lb_abq_block_z(type, wblk);
    int32_t P = 0, Sw = 0;
    for (int s = 0; s < q; s++) {
        const uint8_t *ws = lb_abq_block_plane(type, wblk, s);
        Sw += plane_popcount(ws, NULL) << s;
        for (int t = 0; t < a->p; t++) P += plane_popcount(ws, a->b[t]) << (s + t);
    }
    return P - a->z * Sw - zw * a->sum + LB_ABQ_G * zw * a->z;
}

float lb_abq_row_dot(int type, int64_t n, const void *w, const void *va) {
    const block_abq_act *a = va;
    const size_t bs = block_bytes(type);
    double acc = 0.0;
    for (int64_t i = 0; i < n / LB_ABQ_G; i++) {
        const void *blk = (const uint8_t *)w + i * bs;
        acc += (double)lb_abq_block_d(type, blk) * (double)lb_abq_group_dot_planes(type, blk, &a[i]);
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

/* The A16 reference (formats/abq.h, LB_ABQ_ACT_F32): the weights' exact
 * floats times the activations, summed in double. */
float lb_abq_row_dot_f32(int type, int64_t n, const void *w, const float *x) {
    const int codes = lb_abq_plain_of_codes(type) >= 0;
    const int64_t nb = n / LB_ABQ_G;
    double acc = 0.0;
    for (int64_t i = 0; i < nb; i++) {
        float d;
        int z;
        uint8_t c[LB_ABQ_G];
        if (codes) {
            lb_abq_codes_group(type, w, nb, i, &d, &z, c);
        } else {
            const void *blk = (const uint8_t *)w + (size_t)i * block_bytes(type);
            d = lb_abq_block_d(type, blk), z = lb_abq_block_z(type, blk);
            for (int j = 0; j < LB_ABQ_G; j++) c[j] = (uint8_t)lb_abq_get_code(type, blk, j);
        }
        for (int j = 0; j < LB_ABQ_G; j++) acc += (double)(d * (float)(c[j] - z)) * (double)x[i * LB_ABQ_G + j];
    }
    return (float)acc;
}

#define ABQ_DEFINE(name, NAME, Q)                                                                            \
    void lb_dequantize_row_##name(const void *x, float *y, int64_t k) { dequantize_row(LB_TYPE_##NAME, x, y, k); } \
    void lb_quantize_row_##name##_ref(const float *x, void *y, int64_t k) {                                 \
        lb_abq_quantize_row_imp(LB_TYPE_##NAME, x, y, k, NULL);                                             \
    }                                                                                                       \
    void lb_vec_dot_##name##_ref(int64_t n, float *s, const void *w, const void *a) {                       \
        *s = lb_abq_row_dot(LB_TYPE_##NAME, n, w, a);                                                       \
    }                                                                                                       \
    void lb_vec_dot_##name##_f32_ref(int64_t n, float *s, const void *w, const void *a) {                   \
        *s = lb_abq_row_dot_f32(LB_TYPE_##NAME, n, w, a);                                                   \
    }
LB_ABQ_LIST(ABQ_DEFINE)
#undef ABQ_DEFINE

static const lb_type_traits abq_traits[] = {
#define ABQ_ENTRY(name, NAME, Q)                                                                             \
    {#NAME, LB_ABQ_G, sizeof(block_##name), 1, LB_TYPE_ABQ_ACT, lb_dequantize_row_##name,                    \
     lb_quantize_row_##name##_ref, lb_vec_dot_##name##_ref},
    LB_ABQ_LIST(ABQ_ENTRY)
#undef ABQ_ENTRY
};

/* ABQ_ACT has no from_float in its traits: no weight matrix is quantized to
 * it (`quantize` refuses it); the kernels name its quantizer. */
static const lb_type_traits traits_abq_act = {"ABQ_ACT", LB_ABQ_G, sizeof(block_abq_act), 1, LB_TYPE_ABQ_ACT,
                                              lb_dequantize_row_abq_act, NULL, NULL};

const lb_type_traits *lb_abq_traits(int type) {
    if (type == LB_TYPE_ABQ_ACT) return &traits_abq_act;
    if (type >= LB_TYPE_ABQ_W1 && type <= LB_TYPE_ABQ_W2S) return &abq_traits[type - LB_TYPE_ABQ_W1];
    return NULL;
}

/* ---- load checks ---- */

lb_status lb_abq_check_blocks(int type, const void *data, int64_t K, int64_t rows) {
    const int q = lb_abq_bits(type);
    if (!q) return LB_OK;
    if (K % LB_ABQ_G) return lb_fail(LB_ERR_FORMAT, "%s: row length %lld is not a multiple of %d", lb_type_name(type),
                                     (long long)K, LB_ABQ_G);
    const size_t bs = block_bytes(type);
    const int64_t nb = K / LB_ABQ_G;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < nb; i++) {
            const uint8_t *blk = (const uint8_t *)data + (size_t)(r * nb + i) * bs;
            const float d = lb_abq_block_d(type, blk);
            if (!isfinite(d))
                return lb_fail(LB_ERR_FORMAT, "%s: row %lld, group %lld: scale d is %g (not finite)",
                               lb_type_name(type), (long long)r, (long long)i, (double)d);
            const int z = lb_abq_block_z(type, blk);
            if (z < 0 || z > (1 << q) - 1)
                return lb_fail(LB_ERR_FORMAT, "%s: row %lld, group %lld: zero point %d outside 0..%d",
                               lb_type_name(type), (long long)r, (long long)i, z, (1 << q) - 1);
            if (!lb_abq_is_balanced(type)) continue;
            /* bit balance: plane 2 set means code 4 only, so planes 0 and 1 must be clear there */
            const uint8_t *p0 = blk + 2, *p1 = p0 + LB_ABQ_PLANE, *p2 = p1 + LB_ABQ_PLANE;
            for (int j = 0; j < LB_ABQ_PLANE; j++)
                if (p2[j] & (p0[j] | p1[j]))
                    return lb_fail(LB_ERR_FORMAT,
                                   "ABQ_W2S: row %lld, group %lld: code above 4 in byte %d of the planes "
                                   "(the balanced grid holds -2..2)",
                                   (long long)r, (long long)i, j);
        }
    return LB_OK;
}
