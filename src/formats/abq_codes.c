/* The ABQ code layouts (formats/abq.h, ABQ_W{q}_C4 / _C2): made at load from
 * the plane types for the int8 kernels. Repack both ways, dequantization and
 * the reference dot, which give the plane types' floats bit for bit (the
 * same integer group dot, the same double accumulation). */
#include <omp.h>
#include <string.h>

#include "formats/abq.h"

/* plane type -> code layout, in the order of LB_TYPE_ABQ_W1_C2 .. W2S_C4 */
static const int pairs[][2] = {
    {LB_TYPE_ABQ_W1, LB_TYPE_ABQ_W1_C2}, {LB_TYPE_ABQ_W2, LB_TYPE_ABQ_W2_C2}, {LB_TYPE_ABQ_W3, LB_TYPE_ABQ_W3_C4},
    {LB_TYPE_ABQ_W4, LB_TYPE_ABQ_W4_C4}, {LB_TYPE_ABQ_W2S, LB_TYPE_ABQ_W2S_C4},
};
enum { N_PAIRS = sizeof pairs / sizeof pairs[0], HEAD = 8 /* d, z, sw */ };

int lb_abq_codes_of(int type) {
    for (int i = 0; i < N_PAIRS; i++)
        if (pairs[i][0] == type) return pairs[i][1];
    return -1;
}

int lb_abq_plain_of_codes(int type) {
    for (int i = 0; i < N_PAIRS; i++)
        if (pairs[i][1] == type) return pairs[i][0];
    return -1;
}

/* bits per code: 2 for the _C2 layouts, 4 for the _C4 ones */
static int width(int ct) { return ct == LB_TYPE_ABQ_W1_C2 || ct == LB_TYPE_ABQ_W2_C2 ? 2 : 4; }
static size_t block_size(int ct) { return width(ct) == 2 ? sizeof(block_abq_c2) : sizeof(block_abq_c4); }

/* Where weight j's code lies: byte of qs[] and bit shift (formats/abq.h). */
static void place(int w, int j, int *byte, int *shift) {
    if (w == 4) *byte = 32 * (j / 64) + j % 32, *shift = 4 * ((j / 32) % 2);
    else *byte = j % 32, *shift = 2 * (j / 32);
}

int lb_abq_codes_get(int ct, const void *blk, int j) {
    const int w = width(ct);
    int b, sh;
    place(w, j, &b, &sh);
    return (((const uint8_t *)blk)[HEAD + b] >> sh) & ((1 << w) - 1);
}

static void group_to_codes(int plain, int ct, const uint8_t *src, uint8_t *dst) {
    memset(dst, 0, block_size(ct));
    const float d = lb_abq_block_d(plain, src); /* exact: an fp16 value */
    const int16_t z = (int16_t)lb_abq_block_z(plain, src);
    memcpy(dst, &d, 4);
    uint8_t c[LB_ABQ_G] = {0};
    for (int s = 0; s < lb_abq_bits(plain); s++) { /* plane by plane, byte by byte: a load makes every weight */
        const uint8_t *pl = lb_abq_block_plane(plain, src, s);
        for (int j = 0; j < LB_ABQ_G; j++) c[j] |= (uint8_t)(((pl[j / 8] >> (j % 8)) & 1) << s);
    }
    int32_t sw = 0;
    for (int j = 0; j < LB_ABQ_G; j++) {
        int b, sh;
        place(width(ct), j, &b, &sh);
        dst[HEAD + b] |= (uint8_t)(c[j] << sh);
        sw += c[j];
    }
    const int16_t sw16 = (int16_t)sw; /* <= 128 * 15 */
    memcpy(dst + 4, &sw16, 2);
    memcpy(dst + 6, &z, 2);
}

static void group_from_codes(int plain, int ct, const uint8_t *src, uint8_t *dst) {
    const int q = lb_abq_bits(plain), head = lb_abq_is_balanced(plain) ? 2 : 4;
    memset(dst, 0, (size_t)lb_row_size(plain, LB_ABQ_G));
    float d;
    memcpy(&d, src, 4);
    const lb_fp16 h = lb_f32_to_fp16(d); /* exact: d came from an fp16 */
    memcpy(dst, &h, 2);
    if (head == 4) memcpy(dst + 2, src + 6, 2); /* z, where the type stores it */
    for (int j = 0; j < LB_ABQ_G; j++) {
        const int c = lb_abq_codes_get(ct, src, j);
        for (int s = 0; s < q; s++) dst[head + LB_ABQ_PLANE * s + j / 8] |= (uint8_t)(((c >> s) & 1) << (j % 8));
    }
}

static void convert(int plain, const void *src, void *dst, int64_t K, int64_t N, int to_codes) {
    const int ct = lb_abq_codes_of(plain);
    if (ct < 0 || K % LB_ABQ_G) return;
    const int64_t nb = K / LB_ABQ_G;
    const size_t ps = (size_t)lb_row_size(plain, LB_ABQ_G), cs = block_size(ct);
#pragma omp parallel for schedule(static) if (N * nb > 4096)
    for (int64_t r = 0; r < N; r++)
        for (int64_t i = 0; i < nb; i++) {
            const size_t g = (size_t)(r * nb + i);
            if (to_codes) group_to_codes(plain, ct, (const uint8_t *)src + g * ps, (uint8_t *)dst + g * cs);
            else group_from_codes(plain, ct, (const uint8_t *)src + g * cs, (uint8_t *)dst + g * ps);
        }
}

void lb_abq_to_codes(int plain, const void *src, void *dst, int64_t K, int64_t N) { convert(plain, src, dst, K, N, 1); }
void lb_abq_from_codes(int plain, const void *src, void *dst, int64_t K, int64_t N) { convert(plain, src, dst, K, N, 0); }

/* ---- dequantization and the reference dot ---- */

static void head_of(const uint8_t *blk, float *d, int *z, int32_t *sw) {
    int16_t z16, sw16;
    memcpy(d, blk, 4), memcpy(&sw16, blk + 4, 2), memcpy(&z16, blk + 6, 2);
    *z = z16, *sw = sw16;
}

static void to_float(int ct, const void *x, float *y, int64_t k) {
    for (int64_t i = 0; i < k / LB_ABQ_G; i++) {
        const uint8_t *blk = (const uint8_t *)x + (size_t)i * block_size(ct);
        float d;
        int z;
        int32_t sw;
        head_of(blk, &d, &z, &sw);
        /* the plane types' expression (formats/abq.c) */
        for (int j = 0; j < LB_ABQ_G; j++) y[i * LB_ABQ_G + j] = d * (float)(lb_abq_codes_get(ct, blk, j) - z);
    }
}

static float row_dot(int ct, int64_t n, const void *w, const void *va) {
    const block_abq_act *a = va;
    double acc = 0.0;
    for (int64_t i = 0; i < n / LB_ABQ_G; i++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * block_size(ct);
        float d;
        int z;
        int32_t sw, P = 0;
        head_of(blk, &d, &z, &sw);
        for (int j = 0; j < LB_ABQ_G; j++) P += lb_abq_codes_get(ct, blk, j) * (a[i].c[j] + 128);
        acc += (double)d * (double)(P - a[i].z * sw - z * a[i].sum + LB_ABQ_G * z * a[i].z);
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

#define CODES_DEFINE(name, NAME, block)                                                                      \
    static void to_float_##name(const void *x, float *y, int64_t k) { to_float(LB_TYPE_##NAME, x, y, k); }     \
    void lb_vec_dot_##name##_ref(int64_t n, float *s, const void *w, const void *a) {                       \
        *s = row_dot(LB_TYPE_##NAME, n, w, a);                                                              \
    }
LB_ABQ_CODES_LIST(CODES_DEFINE)
#undef CODES_DEFINE

static const lb_type_traits codes_traits[] = {
#define CODES_ENTRY(name, NAME, block) \
    {#NAME, LB_ABQ_G, sizeof(block), 1, LB_TYPE_ABQ_ACT, to_float_##name, NULL, lb_vec_dot_##name##_ref},
    LB_ABQ_CODES_LIST(CODES_ENTRY)
#undef CODES_ENTRY
};

const lb_type_traits *lb_abq_codes_traits(int type) {
    return type >= LB_TYPE_ABQ_W1_C2 && type <= LB_TYPE_ABQ_W2S_C4 ? &codes_traits[type - LB_TYPE_ABQ_W1_C2] : NULL;
}
