/* The ABQ code layouts with 16 rows interleaved (formats/abq.h,
 * ABQ_W{q}_C{W}X16): made at load from the row layouts for the AVX-512
 * VNNI decode. Conversion both ways, one row back out, and the reference
 * gemv: the row layout's reference dot, read from the block. */
#include <stdlib.h>
#include <string.h>

#include "formats/abq.h"

/* row layout -> its X16 layout (the same field bits) and its 3-bit one */
static const int pairs[][3] = {
    {LB_TYPE_ABQ_W1_C2, LB_TYPE_ABQ_W1_C2X16, -1}, {LB_TYPE_ABQ_W2_C2, LB_TYPE_ABQ_W2_C2X16, -1},
    {LB_TYPE_ABQ_W3_C4, LB_TYPE_ABQ_W3_C4X16, LB_TYPE_ABQ_W3_C3X16}, {LB_TYPE_ABQ_W4_C4, LB_TYPE_ABQ_W4_C4X16, -1},
    {LB_TYPE_ABQ_W2S_C4, LB_TYPE_ABQ_W2S_C4X16, LB_TYPE_ABQ_W2S_C3X16},
};
enum { N_PAIRS = sizeof pairs / sizeof pairs[0], R = 16 };

/* the pairs row whose column col holds type, -1 */
static int pair_of(int col, int type) {
    for (int i = 0; i < N_PAIRS; i++)
        if (type >= 0 && pairs[i][col] == type) return i;
    return -1;
}

int lb_abq_x16_of(int codes_type) {
    const int i = pair_of(0, codes_type);
    return i < 0 ? -1 : pairs[i][1];
}

int lb_abq_x16_3_of(int codes_type) {
    const int i = pair_of(0, codes_type);
    return i < 0 ? -1 : pairs[i][2];
}

int lb_abq_codes_of_x16(int type) {
    int i = pair_of(1, type);
    if (i < 0) i = pair_of(2, type);
    return i < 0 ? -1 : pairs[i][0];
}

int lb_abq_x16_bits(int type) {
    if (pair_of(2, type) >= 0) return 3; /* the 3-bit column */
    const int i = pair_of(1, type);
    return i < 0 ? 0 : lb_abq_code_bits(pairs[i][0]);
}

/* One group of one row in the row layout (formats/abq.h): its d, sw, z and
 * code bytes sit at these offsets of a row of nb groups. */
typedef struct {
    size_t d, sw, z, qs;
} row_at;

static row_at row_group(int64_t nb, int64_t i, int w) {
    return (row_at){4 * (size_t)i, 4 * (size_t)nb + 2 * (size_t)i, 6 * (size_t)nb + 2 * (size_t)i,
                    8 * (size_t)nb + 16 * (size_t)w * (size_t)i};
}

/* A group's X16 chunks qs: chunk t, byte 4 r + b holds in its W-bit field f
 * row r's code of weight 4 c + b, c = (8 / w) t + f; for w = 3 the triples
 * of formats/abq.h. Row r's 128 codes in, and out (weight order). */
static void x16_scatter(int w, int r, const uint8_t c[LB_ABQ_G], uint8_t *qs) {
    if (w == 3) {
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 4; b++) {
                const uint8_t *v = c + 32 * t + b; /* v[4 k]: column 8 t + k */
                uint8_t *A = qs + 192 * t + 4 * r + b;
                A[0] = (uint8_t)(v[0] | v[4] << 3 | (v[8] & 3) << 6);
                A[64] = (uint8_t)(v[12] | v[16] << 3 | (v[20] & 3) << 6);
                A[128] = (uint8_t)(v[24] | v[28] << 3 | (v[8] >> 2) << 6 | (v[20] >> 2) << 7);
            }
        return;
    }
    for (int t = 0; t < 4 * w; t++)
        for (int b = 0; b < 4; b++) {
            unsigned v = 0;
            for (int f = 0; f < 8 / w; f++) v |= (unsigned)c[4 * ((8 / w) * t + f) + b] << (w * f);
            qs[64 * t + 4 * r + b] = (uint8_t)v;
        }
}

static void x16_gather(int w, int r, const uint8_t *qs, uint8_t c[LB_ABQ_G]) {
    if (w == 3) {
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 4; b++) {
                const uint8_t *A = qs + 192 * t + 4 * r + b, a = A[0], bb = A[64], cc = A[128];
                uint8_t *v = c + 32 * t + b;
                v[0] = a & 7, v[4] = (a >> 3) & 7, v[8] = (uint8_t)((a >> 6) | ((cc >> 6) & 1) << 2);
                v[12] = bb & 7, v[16] = (bb >> 3) & 7, v[20] = (uint8_t)((bb >> 6) | (cc >> 7) << 2);
                v[24] = cc & 7, v[28] = (cc >> 3) & 7;
            }
        return;
    }
    for (int t = 0; t < 4 * w; t++)
        for (int b = 0; b < 4; b++)
            for (int f = 0; f < 8 / w; f++)
                c[4 * ((8 / w) * t + f) + b] = (uint8_t)((qs[64 * t + 4 * r + b] >> (w * f)) & ((1 << w) - 1));
}

/* Rows rows[0..15] (row layout of code bits wr, nb groups) -> one 16-row
 * block of chunk field bits wx. */
static void block_of_rows(int wr, int wx, const uint8_t *const rows[R], uint8_t *blk, int64_t nb) {
    const size_t gb = LB_ABQ_X16_GROUP_BYTES(wx);
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *g = blk + gb * (size_t)i, *qs = g + 128;
        const row_at at = row_group(nb, i, wr);
        memset(qs, 0, gb - 128);
        for (int r = 0; r < R; r++) {
            memcpy(g + 4 * r, rows[r] + at.d, 4);
            memcpy(g + 64 + 4 * r, rows[r] + at.sw, 2), memcpy(g + 64 + 4 * r + 2, rows[r] + at.z, 2);
            uint8_t c[LB_ABQ_G];
            lb_abq_codes_unpack(wr, rows[r] + at.qs, c);
            x16_scatter(wx, r, c, qs);
        }
    }
}

/* xt's row layout's code bits, its own field bits; 0 when K or N do not fit it */
static int fits(int xt, int64_t K, int64_t N, int *wr, int *wx) {
    *wr = lb_abq_code_bits(lb_abq_codes_of_x16(xt)), *wx = lb_abq_x16_bits(xt);
    return *wr && K % LB_ABQ_G == 0 && (*wx != 3 || N % R == 0);
}

static void convert(int xt, const void *src, void *dst, int64_t K, int64_t N, int to_x16) {
    int wr, wx;
    if (!fits(xt, K, N, &wr, &wx)) return;
    const int64_t nb = K / LB_ABQ_G, blocks = N / R;
    const size_t row = (size_t)lb_row_size(lb_abq_codes_of_x16(xt), K), xrow = (size_t)lb_row_size(xt, K);
#pragma omp parallel for schedule(static) if (blocks * nb > 256)
    for (int64_t b = 0; b < blocks; b++) {
        if (to_x16) {
            const uint8_t *rows[R];
            for (int r = 0; r < R; r++) rows[r] = (const uint8_t *)src + row * (size_t)(R * b + r);
            block_of_rows(wr, wx, rows, (uint8_t *)dst + xrow * (size_t)(R * b), nb);
        } else {
            for (int r = 0; r < R; r++)
                lb_abq_x16_row(xt, (const uint8_t *)src + xrow * (size_t)(R * b), nb, r,
                               (uint8_t *)dst + row * (size_t)(R * b + r));
        }
    }
    /* the tail rows stay in the row layout (none for the 3-bit layouts) */
    if (N % R)
        memcpy((uint8_t *)dst + row * (size_t)(R * blocks), (const uint8_t *)src + row * (size_t)(R * blocks),
               row * (size_t)(N % R));
}

void lb_abq_codes_to_x16(int xt, const void *src, void *dst, int64_t K, int64_t N) { convert(xt, src, dst, K, N, 1); }

int lb_abq_planes_to_x16(int xt, const void *src, void *dst, int64_t K, int64_t N) {
    const int ct = lb_abq_codes_of_x16(xt), plain = lb_abq_plain_of_codes(ct);
    int wr, wx;
    if (!fits(xt, K, N, &wr, &wx)) return 0;
    const int64_t nb = K / LB_ABQ_G, blocks = N / R;
    const size_t prow = (size_t)lb_row_size(plain, K), row = (size_t)lb_row_size(ct, K), xrow = (size_t)lb_row_size(xt, K);
    int ok = 1;
#pragma omp parallel if (blocks * nb > 256)
    {
        uint8_t *codes = blocks ? malloc(row * R) : NULL; /* one block's rows in the row layout, per thread */
        if (blocks && !codes) {
#pragma omp atomic write
            ok = 0;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < blocks; b++) {
            if (!codes) continue;
            const uint8_t *rows[R];
            lb_abq_to_codes(plain, (const uint8_t *)src + prow * (size_t)(R * b), codes, K, R);
            for (int r = 0; r < R; r++) rows[r] = codes + row * (size_t)r;
            block_of_rows(wr, wx, rows, (uint8_t *)dst + xrow * (size_t)(R * b), nb);
        }
        free(codes);
    }
    if (N % R)
        lb_abq_to_codes(plain, (const uint8_t *)src + prow * (size_t)(R * blocks),
                        (uint8_t *)dst + row * (size_t)(R * blocks), K, N % R);
    return ok;
}
void lb_abq_x16_to_codes(int xt, const void *src, void *dst, int64_t K, int64_t N) { convert(xt, src, dst, K, N, 0); }

void lb_abq_x16_row(int xt, const void *blk, int64_t nb, int r, void *row) {
    const int wr = lb_abq_code_bits(lb_abq_codes_of_x16(xt)), wx = lb_abq_x16_bits(xt);
    const size_t gb = LB_ABQ_X16_GROUP_BYTES(wx);
    uint8_t *out = row;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *g = (const uint8_t *)blk + gb * (size_t)i, *qs = g + 128;
        const row_at at = row_group(nb, i, wr);
        memcpy(out + at.d, g + 4 * r, 4);
        memcpy(out + at.sw, g + 64 + 4 * r, 2), memcpy(out + at.z, g + 64 + 4 * r + 2, 2);
        uint8_t c[LB_ABQ_G];
        x16_gather(wx, r, qs, c);
        lb_abq_codes_pack(wr, c, out + at.qs);
    }
}

/* Row r of a 16-row block against one activation row: the row layout's
 * reference dot (formats/abq_codes.c), the same integers and double sums. */
static float block_row_dot(int w, int64_t nb, const uint8_t *blk, int r, const block_abq_act *a) {
    const size_t gb = LB_ABQ_X16_GROUP_BYTES(w);
    double acc = 0.0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *g = blk + gb * (size_t)i, *qs = g + 128;
        float d;
        int16_t sw, z;
        memcpy(&d, g + 4 * r, 4), memcpy(&sw, g + 64 + 4 * r, 2), memcpy(&z, g + 64 + 4 * r + 2, 2);
        uint8_t c[LB_ABQ_G];
        x16_gather(w, r, qs, c);
        int32_t P = 0;
        for (int j = 0; j < LB_ABQ_G; j++) P += c[j] * (a[i].c[j] + 128);
        acc += (double)d * (double)(P - a[i].z * sw - z * a[i].sum + LB_ABQ_G * z * a[i].z);
    }
    return nb ? (float)(acc * (double)a[0].d) : 0.0f;
}

void lb_abq_x16_gemv_ref(int type, int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                         size_t a_row_size, int M, float *Y, size_t ldy) {
    const int w = lb_abq_x16_bits(type);
    for (int n = n0 / R * R; n + R <= n1; n += R)
        for (int r = 0; r < R; r++)
            for (int m = 0; m < M; m++)
                Y[(size_t)m * ldy + (size_t)(n + r)] =
                    block_row_dot(w, K / LB_ABQ_G, (const uint8_t *)W + w_row_size * (size_t)n, r,
                                  (const block_abq_act *)((const uint8_t *)A + a_row_size * (size_t)m));
}

#define X16_GEMV(name, NAME, CW)                                                                              \
    void lb_gemv_##name##_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,    \
                              size_t a_row_size, int M, float *Y, size_t ldy) {                               \
        lb_abq_x16_gemv_ref(LB_TYPE_##NAME, K, W, w_row_size, n0, n1, A, a_row_size, M, Y, ldy);             \
    }
LB_ABQ_X16_LIST(X16_GEMV)
#undef X16_GEMV

static const lb_type_traits x16_traits[] = {
#define X16_ENTRY(name, NAME, W) {#NAME, LB_ABQ_G, LB_ABQ_CODES_GROUP_BYTES(W), 1, LB_TYPE_ABQ_ACT, NULL, NULL, NULL},
    LB_ABQ_X16_LIST(X16_ENTRY)
#undef X16_ENTRY
};

const lb_type_traits *lb_abq_x16_traits(int type) {
    return type >= LB_TYPE_ABQ_W1_C2X16 && type <= LB_TYPE_ABQ_W2S_C3X16 ? &x16_traits[type - LB_TYPE_ABQ_W1_C2X16]
                                                                         : NULL;
}
