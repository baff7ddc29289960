/* The ABQ code layouts (formats/abq.h, ABQ_W{q}_C4 / _C2): made at load from
 * the plane types for the int8 kernels. Repack both ways, dequantization and
 * the reference dot, which give the plane types' floats bit for bit (the
 * same integer group dot, the same double accumulation). */
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "formats/abq.h"

/* plane type -> code layout, in the order of LB_TYPE_ABQ_W1_C2 .. W2S_C4 */
static const int pairs[][2] = {
    {LB_TYPE_ABQ_W1, LB_TYPE_ABQ_W1_C2}, {LB_TYPE_ABQ_W2, LB_TYPE_ABQ_W2_C2}, {LB_TYPE_ABQ_W3, LB_TYPE_ABQ_W3_C4},
    {LB_TYPE_ABQ_W4, LB_TYPE_ABQ_W4_C4}, {LB_TYPE_ABQ_W2S, LB_TYPE_ABQ_W2S_C4},
};
enum { N_PAIRS = sizeof pairs / sizeof pairs[0] };

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

int lb_abq_code_bits(int type) { return lb_abq_plain_of_codes(type) < 0 ? 0 : width(type); }

/* A row's parts (formats/abq.h): heads side by side, then the codes. */
typedef struct {
    uint8_t *d, *sw, *z, *qs; /* byte pointers: rows need no alignment */
    int qb;                   /* code bytes per group */
} row_parts;

static row_parts parts_of(int ct, const void *row, int64_t nb) {
    uint8_t *r = (uint8_t *)(uintptr_t)row;
    return (row_parts){r, r + 4 * nb, r + 6 * nb, r + 8 * nb, 16 * width(ct)};
}

static float get_d(const row_parts *p, int64_t i) {
    float d;
    memcpy(&d, p->d + 4 * i, 4);
    return d;
}
static int get_i16(const uint8_t *v, int64_t i) {
    int16_t x;
    memcpy(&x, v + 2 * i, 2);
    return x;
}

/* Where weight j's code lies: byte of the group's qs and bit shift. */
static void place(int w, int j, int *byte, int *shift) {
    if (w == 4) *byte = 32 * (j / 64) + j % 32, *shift = 4 * ((j / 32) % 2);
    else *byte = j % 32, *shift = 2 * (j / 32);
}

int lb_abq_codes_get(int w, const uint8_t *qs, int j) {
    int b, sh;
    place(w, j, &b, &sh);
    return (qs[b] >> sh) & ((1 << w) - 1);
}

void lb_abq_codes_unpack(int w, const uint8_t *qs, uint8_t c[LB_ABQ_G]) {
    for (int i = 0; i < 32; i++) /* place() byte by byte */
        if (w == 4) {
            c[i] = qs[i] & 15, c[32 + i] = qs[i] >> 4, c[64 + i] = qs[32 + i] & 15, c[96 + i] = qs[32 + i] >> 4;
        } else {
            c[i] = qs[i] & 3, c[32 + i] = (qs[i] >> 2) & 3, c[64 + i] = (qs[i] >> 4) & 3, c[96 + i] = qs[i] >> 6;
        }
}

void lb_abq_codes_pack(int w, const uint8_t c[LB_ABQ_G], uint8_t *qs) {
    for (int b = 0; b < 32; b++) /* place()'s bytes */
        if (w == 4) qs[b] = (uint8_t)(c[b] | c[32 + b] << 4), qs[32 + b] = (uint8_t)(c[64 + b] | c[96 + b] << 4);
        else qs[b] = (uint8_t)(c[b] | c[32 + b] << 2 | c[64 + b] << 4 | c[96 + b] << 6);
}

/* bit i of x -> byte i (0 or 1) of the result: each bit masked into its own
 * byte, then that byte's nonzero value carried into its top bit */
static inline uint64_t spread_bits(uint8_t x) {
    const uint64_t v = ((uint64_t)x * 0x0101010101010101ULL) & 0x8040201008040201ULL;
    return (((v + 0x7F7F7F7F7F7F7F7FULL) | v) & 0x8080808080808080ULL) >> 7;
}

static void row_to_codes(int plain, int ct, const uint8_t *src, uint8_t *dst, int64_t nb) {
    const row_parts p = parts_of(ct, dst, nb);
    const size_t ps = (size_t)lb_row_size(plain, LB_ABQ_G);
    memset(dst, 0, (size_t)nb * LB_ABQ_CODES_GROUP_BYTES(width(ct)));
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = src + (size_t)i * ps;
        const float d = lb_abq_block_d(plain, blk); /* exact: an fp16 value */
        const int16_t z = (int16_t)lb_abq_block_z(plain, blk);
        uint64_t c8[LB_ABQ_G / 8] = {0}; /* the codes, 8 bytes at a time */
        for (int s = 0; s < lb_abq_bits(plain); s++) { /* plane by plane, 8 bits at a time */
            const uint8_t *pl = lb_abq_block_plane(plain, blk, s);
            for (int k = 0; k < LB_ABQ_G / 8; k++) c8[k] |= spread_bits(pl[k]) << s;
        }
        uint8_t c[LB_ABQ_G];
        memcpy(c, c8, sizeof c); /* little-endian: byte j % 8 of c8[j / 8] is weight j */
        int16_t sw = 0; /* <= 128 * 15 */
        for (int j = 0; j < LB_ABQ_G; j++) sw = (int16_t)(sw + c[j]);
        lb_abq_codes_pack(width(ct), c, p.qs + (size_t)p.qb * (size_t)i);
        memcpy(p.d + 4 * i, &d, 4), memcpy(p.sw + 2 * i, &sw, 2), memcpy(p.z + 2 * i, &z, 2);
    }
}

static void row_from_codes(int plain, int ct, const uint8_t *src, uint8_t *dst, int64_t nb) {
    const row_parts p = parts_of(ct, src, nb);
    const int q = lb_abq_bits(plain), head = lb_abq_is_balanced(plain) ? 2 : 4;
    const size_t ps = (size_t)lb_row_size(plain, LB_ABQ_G);
    memset(dst, 0, ps * (size_t)nb);
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *blk = dst + (size_t)i * ps;
        const lb_fp16 h = lb_f32_to_fp16(get_d(&p, i)); /* exact: d came from an fp16 */
        const int16_t z = (int16_t)get_i16(p.z, i);
        memcpy(blk, &h, 2);
        if (head == 4) memcpy(blk + 2, &z, 2); /* where the type stores it */
        const uint8_t *qs = p.qs + (size_t)p.qb * (size_t)i;
        for (int j = 0; j < LB_ABQ_G; j++) {
            const int c = lb_abq_codes_get(width(ct), qs, j);
            for (int s = 0; s < q; s++) blk[head + LB_ABQ_PLANE * s + j / 8] |= (uint8_t)(((c >> s) & 1) << (j % 8));
        }
    }
}

static void convert(int plain, const void *src, void *dst, int64_t K, int64_t N, int to_codes) {
    const int ct = lb_abq_codes_of(plain);
    if (ct < 0 || K % LB_ABQ_G) return;
    const int64_t nb = K / LB_ABQ_G;
    const size_t prow = (size_t)lb_row_size(plain, K), crow = (size_t)lb_row_size(ct, K);
#pragma omp parallel for schedule(static) if (N * nb > 4096)
    for (int64_t r = 0; r < N; r++) {
        if (to_codes) row_to_codes(plain, ct, (const uint8_t *)src + (size_t)r * prow, (uint8_t *)dst + (size_t)r * crow, nb);
        else row_from_codes(plain, ct, (const uint8_t *)src + (size_t)r * crow, (uint8_t *)dst + (size_t)r * prow, nb);
    }
}

void lb_abq_to_codes(int plain, const void *src, void *dst, int64_t K, int64_t N) { convert(plain, src, dst, K, N, 1); }
void lb_abq_from_codes(int plain, const void *src, void *dst, int64_t K, int64_t N) { convert(plain, src, dst, K, N, 0); }

/* ---- dequantization and the reference dot: one whole row ---- */

static void to_float(int ct, const void *x, float *y, int64_t k) {
    const int64_t nb = k / LB_ABQ_G;
    const row_parts p = parts_of(ct, x, nb);
    for (int64_t i = 0; i < nb; i++) {
        const float d = get_d(&p, i);
        const int z = get_i16(p.z, i);
        const uint8_t *qs = p.qs + (size_t)p.qb * (size_t)i;
        /* the plane types' expression (formats/abq.c) */
        for (int j = 0; j < LB_ABQ_G; j++) y[i * LB_ABQ_G + j] = d * (float)(lb_abq_codes_get(width(ct), qs, j) - z);
    }
}

static float row_dot(int ct, int64_t n, const void *w, const void *va) {
    const block_abq_act *a = va;
    const int64_t nb = n / LB_ABQ_G;
    const row_parts p = parts_of(ct, w, nb);
    double acc = 0.0;
    for (int64_t i = 0; i < nb; i++) {
        const int z = get_i16(p.z, i), sw = get_i16(p.sw, i);
        const uint8_t *qs = p.qs + (size_t)p.qb * (size_t)i;
        int32_t P = 0;
        for (int j = 0; j < LB_ABQ_G; j++) P += lb_abq_codes_get(width(ct), qs, j) * (a[i].c[j] + 128);
        acc += (double)get_d(&p, i) * (double)(P - a[i].z * sw - z * a[i].sum + LB_ABQ_G * z * a[i].z);
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

void lb_abq_codes_group(int type, const void *row, int64_t nb, int64_t i, float *d, int *z, uint8_t c[LB_ABQ_G]) {
    const row_parts p = parts_of(type, row, nb);
    const uint8_t *qs = p.qs + (size_t)p.qb * (size_t)i;
    *d = get_d(&p, i), *z = get_i16(p.z, i);
    for (int j = 0; j < LB_ABQ_G; j++) c[j] = (uint8_t)lb_abq_codes_get(width(type), qs, j);
}

#define CODES_DEFINE(name, NAME, W)                                                                          \
    static void to_float_##name(const void *x, float *y, int64_t k) { to_float(LB_TYPE_##NAME, x, y, k); }     \
    void lb_vec_dot_##name##_ref(int64_t n, float *s, const void *w, const void *a) {                       \
        *s = row_dot(LB_TYPE_##NAME, n, w, a);                                                              \
    }                                                                                                       \
    void lb_vec_dot_##name##_f32_ref(int64_t n, float *s, const void *w, const void *a) {                   \
        *s = lb_abq_row_dot_f32(LB_TYPE_##NAME, n, w, a);                                                   \
    }
LB_ABQ_CODES_LIST(CODES_DEFINE)
#undef CODES_DEFINE

static const lb_type_traits codes_traits[] = {
#define CODES_ENTRY(name, NAME, W) \
    {#NAME, LB_ABQ_G, LB_ABQ_CODES_GROUP_BYTES(W), 1, LB_TYPE_ABQ_ACT, to_float_##name, NULL, lb_vec_dot_##name##_ref},
    LB_ABQ_CODES_LIST(CODES_ENTRY)
#undef CODES_ENTRY
};

const lb_type_traits *lb_abq_codes_traits(int type) {
    return type >= LB_TYPE_ABQ_W1_C2 && type <= LB_TYPE_ABQ_W2S_C4 ? &codes_traits[type - LB_TYPE_ABQ_W1_C2] : NULL;
}
