/* The interleaved layouts (formats/repack.h) and their scalar references:
 *  - traits: names, 32-weight blocks with the base type's bytes, GGUF ids;
 *  - byte positions of the documented layout (chunk j of row r at
 *    qs[(j*R + r)*C], Q4_0 bytes XOR 0x88), checked by hand for each type;
 *  - repack -> unpack restores the bytes (with a plain tail when N % R != 0);
 *  - group to_float == the base dequantization;
 *  - the 4-row activation quantizer == lb_quantize_row_q8_0_ref per row
 *    (scale, quants, sums), for both chunk sizes;
 *  - reference GEMV and GEMM on repacked weights == the plain reference dot
 *    on the unpacked rows, bit for bit (same integer sums, same float order). */
#include "test_util.h"

#include "formats/repack.h"
#include "kernels/dispatch.h"

static const int kTypes[] = {LB_TYPE_Q4_0_4X4,   LB_TYPE_Q4_0_4X8,   LB_TYPE_Q4_0_8X8,
                             LB_TYPE_IQ4_NL_4X4, LB_TYPE_IQ4_NL_4X8, LB_TYPE_IQ4_NL_8X8,
                             LB_TYPE_Q8_0_4X4,   LB_TYPE_Q8_0_4X8,   LB_TYPE_Q8_0_8X8,
                             LB_TYPE_MXFP4_NL_4X4, LB_TYPE_MXFP4_NL_4X8, LB_TYPE_MXFP4_NL_8X8};
enum { N_TYPES = sizeof kTypes / sizeof kTypes[0] };

/* Random but valid plain rows: scales from real quantization of t5-ish data. */
static void *make_plain(int base, int64_t K, int64_t N, uint64_t *seed) {
    const lb_type_traits *t = lb_traits(base);
    const size_t rs = lb_row_size(base, K);
    uint8_t *w = malloc(rs * (size_t)N);
    float *row = malloc((size_t)K * sizeof *row);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t i = 0; i < K; i++) row[i] = lb_test_randf(seed) * (1.0f + (float)(n % 7));
        t->from_float(row, w + (size_t)n * rs, K);
    }
    free(row);
    return w;
}

static void test_traits(void) {
    const char *names[] = {"Q4_0_4X4",   "Q4_0_4X8",   "Q4_0_8X8", "IQ4_NL_4X4", "IQ4_NL_4X8",
                           "IQ4_NL_8X8", "Q8_0_4X4",   "Q8_0_4X8", "Q8_0_8X8", "MXFP4_NL_4X4",
                           "MXFP4_NL_4X8", "MXFP4_NL_8X8"};
    for (int i = 0; i < N_TYPES; i++) {
        const int T = kTypes[i];
        const lb_type_traits *t = lb_traits(T);
        const lb_repack_layout *L = lb_repack_layout_of(T);
        CHECK(t && L);
        if (!t || !L) continue;
        CHECK(T == (i < 9 ? 1000 + i : LB_TYPE_MXFP4_NL_4X4 + i - 9));
        CHECK(!strcmp(t->name, names[i]));
        CHECK(lb_type_from_name(names[i]) == T);
        CHECK(t->blck == 32 && t->type_size == lb_traits(L->base)->type_size);
        CHECK(t->to_float && !t->from_float && !t->vec_dot);
        CHECK(lb_type_base(T) == L->base && lb_type_rows(T) == L->rows);
        CHECK(lb_repack_find(L->base, L->rows, L->chunk) == T);
        CHECK(lb_row_size(T, 4096) == lb_row_size(L->base, 4096));
    }
    CHECK(lb_type_base(LB_TYPE_Q4_0) == LB_TYPE_Q4_0 && lb_type_rows(LB_TYPE_Q4_0) == 1);
    CHECK(lb_repack_find(LB_TYPE_Q4_0, 2, 8) == -1);
    CHECK(!lb_repack_layout_of(LB_TYPE_F32));
}

/* The layout, spelled out: byte i of row r of block b. */
static void test_positions(void) {
    uint64_t seed = 11;
    for (int i = 0; i < N_TYPES; i++) {
        const lb_repack_layout *L = lb_repack_layout_of(kTypes[i]);
        const int R = L->rows, C = L->chunk, Q = L->base == LB_TYPE_Q8_0 ? 32 : 16;
        const int64_t K = 96, N = R;
        const size_t bs = L->base == LB_TYPE_Q8_0 ? 34 : 18, rs = (size_t)(K / 32) * bs;
        uint8_t *plain = make_plain(L->base, K, N, &seed);
        uint8_t *packed = malloc(rs * N);
        lb_repack_tensor(L->type, plain, packed, K, N);
        int ok = 1;
        for (int b = 0; b < K / 32; b++) {
            const uint8_t *xb = packed + (size_t)b * R * bs;
            for (int r = 0; r < R; r++) {
                const uint8_t *blk = plain + (size_t)r * rs + (size_t)b * bs;
                ok &= !memcmp(xb + 2 * r, blk, 2); /* d[r] */
                for (int k = 0; k < Q; k++) {
                    const uint8_t want = blk[2 + k] ^ (L->base == LB_TYPE_Q4_0 ? 0x88 : 0);
                    ok &= xb[2 * R + (k / C * R + r) * C + k % C] == want;
                }
            }
        }
        CHECK_MSG(ok, "%s byte positions", lb_type_name(L->type));
        free(plain);
        free(packed);
    }
    /* the sign trick on one byte: q_lo = 3, q_hi = 12 -> -5*16 and 4*16 */
    const uint8_t byte = (uint8_t)((3 | (12 << 4)) ^ 0x88);
    const uint8_t lo = (uint8_t)(byte << 4), hi = (uint8_t)(byte & 0xF0);
    CHECK((int8_t)lo == -80 && (int8_t)hi == 64);
}

static void test_roundtrip(void) {
    uint64_t seed = 5;
    const int64_t Ks[] = {32, 96, 2080};
    const int64_t Ns[] = {8, 16, 13, 4, 3};
    for (int i = 0; i < N_TYPES; i++) {
        const lb_repack_layout *L = lb_repack_layout_of(kTypes[i]);
        for (size_t a = 0; a < 3; a++)
            for (size_t c = 0; c < 5; c++) {
                const int64_t K = Ks[a], N = Ns[c];
                const size_t rs = lb_row_size(L->base, K);
                uint8_t *plain = make_plain(L->base, K, N, &seed);
                uint8_t *packed = malloc(rs * N), *back = malloc(rs * N);
                lb_repack_tensor(L->type, plain, packed, K, N);
                lb_unpack_tensor(L->type, packed, back, K, N);
                CHECK_MSG(!memcmp(plain, back, rs * N), "%s K=%lld N=%lld", lb_type_name(L->type), (long long)K, (long long)N);
                /* tail rows stay plain at their usual offsets */
                const int64_t NR = N - N % L->rows;
                CHECK(!memcmp(plain + NR * rs, packed + NR * rs, (N - NR) * rs));
                /* group to_float == base dequantization of the R rows */
                if (NR > 0) {
                    float *f1 = malloc(sizeof(float) * K * L->rows), *f2 = malloc(sizeof(float) * K * L->rows);
                    lb_traits(L->type)->to_float(packed, f1, K * L->rows);
                    for (int r = 0; r < L->rows; r++) lb_traits(L->base)->to_float(plain + r * rs, f2 + r * K, K);
                    CHECK(!memcmp(f1, f2, sizeof(float) * K * L->rows));
                    /* not a whole group: zeros, and no reads past k/32 blocks */
                    lb_traits(L->type)->to_float(packed, f1, 32);
                    CHECK(L->rows > 1 && f1[0] == 0.0f && f1[31] == 0.0f);
                    free(f1);
                    free(f2);
                }
                free(plain);
                free(packed);
                free(back);
            }
    }
}

static void test_act_x4(void) {
    uint64_t seed = 3;
    const int64_t K = 2080;
    float *x = malloc(sizeof(float) * 4 * K);
    for (int64_t i = 0; i < 4 * K; i++) x[i] = lb_test_randf(&seed) * (i % 97 == 0 ? 30.0f : 1.0f);
    for (int i = 0; i < 32; i++) x[K + i] = 0.0f; /* an all-zero block */
    lb_block_q8_0x4a *y = malloc(sizeof *y * (K / 32));
    block_q8_0 *p = malloc(sizeof *p * (K / 32));
    for (int c = 4; c <= 8; c += 4) {
        (c == 4 ? lb_quantize_q8_0x4_c4_ref : lb_quantize_q8_0x4_c8_ref)(x, (size_t)K, y, K);
        int ok = 1;
        for (int m = 0; m < 4; m++) {
            lb_quantize_row_q8_0_ref(x + m * K, p, K);
            for (int64_t b = 0; b < K / 32; b++) {
                int32_t s = 0;
                for (int k = 0; k < 32; k++) {
                    ok &= y[b].qs[(k / c * 4 + m) * c + k % c] == p[b].qs[k];
                    s += p[b].qs[k];
                }
                ok &= y[b].d[m] == lb_fp16_to_f32(p[b].d) && y[b].s8[m] == 8 * s;
            }
        }
        CHECK_MSG(ok, "x4 activations, chunk %d", c);
    }
    free(x);
    free(y);
    free(p);
}

/* Reference GEMV / GEMM (through the scalar lb_kernel entries) against the
 * plain reference vec_dot on the same rows: bitwise. */
static void test_ref_kernels(void) {
    uint64_t seed = 9;
    const int64_t K = 320;
    const int N = 16, M = 8;
    float *x = malloc(sizeof(float) * M * K);
    for (int64_t i = 0; i < M * K; i++) x[i] = lb_test_randf(&seed);
    for (int i = 0; i < N_TYPES; i++) {
        const lb_repack_layout *L = lb_repack_layout_of(kTypes[i]);
        const lb_kernel *k = lb_kernel_get_at(L->type, LB_ISA_SCALAR);
        CHECK(k && k->gemv && k->gemm && k->act_rows == 4 && k->quantize_act_x4 && !k->vec_dot);
        CHECK(k && k->act_type == LB_TYPE_Q8_0 && k->act_x4_block <= LB_ACT_X4_MAX_BLOCK);
        if (!k) continue;
        const size_t rs = lb_row_size(L->base, K);
        uint8_t *plain = make_plain(L->base, K, N, &seed);
        uint8_t *packed = malloc(rs * N);
        lb_repack_tensor(L->type, plain, packed, K, N);
        block_q8_0 *a = malloc(sizeof *a * (K / 32) * M);
        for (int m = 0; m < M; m++) lb_quantize_row_q8_0_ref(x + m * K, a + m * (K / 32), K);
        lb_block_q8_0x4a *a4 = malloc(k->act_x4_block * (K / 32) * (M / 4));
        for (int g = 0; g < M / 4; g++) k->quantize_act_x4(x + g * 4 * K, (size_t)K, (char *)a4 + g * k->act_x4_block * (K / 32), K);
        float want[8][16], y1[8][16], y4[8][16];
        const lb_type_traits *bt = lb_traits(L->base);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) bt->vec_dot(K, &want[m][n], plain + n * rs, a + m * (K / 32));
        k->gemv(K, packed, rs, 0, N, a, sizeof *a * (K / 32), M, &y1[0][0], 16);
        k->gemm(K, packed, rs, 0, N, a4, k->act_x4_block * (K / 32), M, &y4[0][0], 16);
        CHECK_MSG(!memcmp(want, y1, sizeof want), "%s gemv ref", lb_type_name(L->type));
        CHECK_MSG(!memcmp(want, y4, sizeof want), "%s gemm ref", lb_type_name(L->type));
        /* a sub-range of groups writes only its rows */
        float y2[8][16];
        memset(y2, 0x7f, sizeof y2);
        k->gemv(K, packed, rs, L->rows, 2 * L->rows, a, sizeof *a * (K / 32), 1, &y2[0][0], 16);
        CHECK(y2[0][0] != y1[0][0] && y2[0][L->rows] == y1[0][L->rows] && y2[0][2 * L->rows - 1] == y1[0][2 * L->rows - 1]);
        CHECK(2 * L->rows >= N || y2[0][2 * L->rows] != y1[0][2 * L->rows]);
        free(plain);
        free(packed);
        free(a);
        free(a4);
    }
    free(x);
}

int main(void) {
    test_traits();
    test_positions();
    test_roundtrip();
    test_act_x4();
    test_ref_kernels();
    return lb_test_result("test_repack");
}
