/* x86 kernels of the ABQ types (formats/abq.h), AVX2, also those of every
 * higher x86 level (dispatch picks the highest level at or below the one in
 * force):
 *   abq_w{q}_abq_act_avx2   the bit-plane dot, one of two ways per (q, p):
 *       popcount (each weight plane ANDed with two activation planes at once,
 *       bytes counted by the vpshufb nibble table, vpsadbw, shifted by
 *       2^(s+t)) or int8 (the planes recombined into code bytes in
 *       registers, vpmaddubsw against the activation codes as bytes); the
 *       integer group dot and the double accumulation as the reference:
 *       bit-identical to it either way. The gemm (M > 1 activation rows,
 *       q <= 7) takes the int8 way and recombines each weight group once for
 *       all M rows: prefill pays the plane expansion once per weight.
 *   abq_w{q}_c{4,2}_abq_act_avx2   the code layouts (formats/abq.h), made
 *       at load: one or two loads and masks per group give the codes, then
 *       the int8 way (kernels/x86/abq_codes_avx2.c);
 *   abq_w{q}_c{4,2}_abq_act_avx512   the same layouts, prefill by
 *       vpdpbusd tiles (kernels/x86/abq_codes_avx512.c), decode with the
 *       group sums by vpdpbusd;
 *   abq_w{q}_c{4,2}x16_abq_act_avx512   the same codes 16 rows interleaved
 *       (made at load where this runs, not at the amx level): decode by zmm
 *       vpdpbusd with the rows in the lanes, prefill by the 16-row VNNI tile
 *       (kernels/x86/abq_x16_avx512.c).
 * The activations are quantized per token, whole rows, by
 * lb_abq_quantize_act_avx2, at the avx512 and amx levels by
 * lb_abq_quantize_act_avx512 (both the reference's bytes). */
#ifndef LB_ABQ_X86_H
#define LB_ABQ_X86_H

#include "formats/abq.h"
#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "core/fp16.h"
#include "formats/float.h"

/* A code layout row's parts (formats/abq.h: heads side by side, then the
 * codes), as the code kernels read them. */
typedef struct {
    const float *d;
    const int16_t *sw, *z;
    const uint8_t *qs;
} lb_abq_code_row;

static inline lb_abq_code_row lb_abq_code_row_of(const uint8_t *row, int64_t nb) {
    return (lb_abq_code_row){(const float *)row, (const int16_t *)(row + 4 * nb), (const int16_t *)(row + 6 * nb),
                             row + 8 * nb};
}

/* The 4 x 32 code bytes of a code layout's group (w = 4 or 2 bits), in the
 * order of the activation bytes: weights 32i .. 32i + 31 in c[i]. */
__attribute__((target("avx2"))) static inline void lb_abq_group_codes(const uint8_t *qs, int w, __m256i c[4]) {
    if (w == 4) {
        const __m256i m = _mm256_set1_epi8(0x0f), x0 = _mm256_loadu_si256((const __m256i *)qs),
                      x1 = _mm256_loadu_si256((const __m256i *)(qs + 32));
        c[0] = _mm256_and_si256(x0, m), c[1] = _mm256_and_si256(_mm256_srli_epi16(x0, 4), m);
        c[2] = _mm256_and_si256(x1, m), c[3] = _mm256_and_si256(_mm256_srli_epi16(x1, 4), m);
    } else {
        const __m256i m = _mm256_set1_epi8(0x03), x = _mm256_loadu_si256((const __m256i *)qs);
        c[0] = _mm256_and_si256(x, m), c[1] = _mm256_and_si256(_mm256_srli_epi16(x, 2), m);
        c[2] = _mm256_and_si256(_mm256_srli_epi16(x, 4), m), c[3] = _mm256_and_si256(_mm256_srli_epi16(x, 6), m);
    }
}

/* A plane group's weight d, z (zfixed >= 0: implied, W2S) and code sum
 * sum_s 2^s popcount(W_s), for the plane kernels (popcnt where they are
 * compiled with it). header: the bytes before the planes. */
static inline void lb_abq_group_head(const uint8_t *blk, int q, int header, int zfixed, double *dw, int *zw,
                                     int32_t *sw) {
    lb_fp16 dh;
    memcpy(&dh, blk, 2);
    *dw = (double)lb_fp16_to_f32(dh);
    *zw = zfixed;
    if (zfixed < 0) {
        int16_t z;
        memcpy(&z, blk + 2, 2);
        *zw = z;
    }
    *sw = 0;
    for (int s = 0; s < q; s++) {
        uint64_t w0, w1;
        memcpy(&w0, blk + header + LB_ABQ_PLANE * s, 8), memcpy(&w1, blk + header + LB_ABQ_PLANE * s + 8, 8);
        *sw += (__builtin_popcountll(w0) + __builtin_popcountll(w1)) << s;
    }
}

/* vec_dot's int8 way serves q <= 7 at p >= this (measured: docs/abq.md),
 * popcount the rest */
#define LB_ABQ_INT8_MIN_P 5
int lb_abq_avx2_int8_wins(int q, int p);
/* One row's dot by a chosen way (the tests and the bench): way 0 popcount,
 * 1 int8 (q <= 7; popcount for q = 8), -1 the one vec_dot takes. */
float lb_abq_dot_avx2(int type, int way, int64_t n, const void *w, const void *a);

/* The activation quantizer of the AVX2 kernels: lb_abq_quantize_act's
 * blocks byte for byte (kernels/x86/abq_act_avx2.c); the 8-bit one. */
void lb_abq_quantize_act_avx2(const float *x, void *y, int64_t k, int p);
void lb_abq_quantize_act8_avx2(const float *x, void *y, int64_t k);
/* The same bytes at the avx512 and amx levels (kernels/x86/abq_act_avx512.c):
 * 64 values a pass, the planes by vpmovb2m. */
void lb_abq_quantize_act_avx512(const float *x, void *y, int64_t k, int p);
void lb_abq_quantize_act8_avx512(const float *x, void *y, int64_t k);

#define LB_ABQ_AVX2_DECLARE(name, NAME, Q)                                                                    \
    void lb_vec_dot_##name##_avx2(int64_t n, float *s, const void *w, const void *a);                         \
    void lb_gemm_##name##_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,     \
                               size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_LIST(LB_ABQ_AVX2_DECLARE)
#define LB_ABQ_CODES_AVX2_DECLARE(name, NAME, W) LB_ABQ_AVX2_DECLARE(name, NAME, 0)
LB_ABQ_CODES_LIST(LB_ABQ_CODES_AVX2_DECLARE) /* kernels/x86/abq_codes_avx2.c */
#undef LB_ABQ_CODES_AVX2_DECLARE
/* The code layouts' GEMM (M > 1; abq_codes_avx2.c) for code width w (4 or
 * 2) and code type: blocks of 8 weight rows, their tile by vpmaddubsw
 * (vnni 0) or by AVX-512 VNNI's vpdpbusd (vnni 1: the avx512 and amx
 * levels); bit-identical to the reference either way. */
void lb_abq_codes_gemm(int w, int type, int vnni, int64_t K, const void *Wt, size_t w_row_size, int n0, int n1,
                       const void *A, size_t a_row_size, int M, float *Y, size_t ldy);
/* Decode (M = 1) of the code layouts with vpdpbusd in place of the
 * vpmaddubsw chains (abq_codes_avx2.c; CPUs with AVX-512 VNNI). */
void lb_abq_codes_gemv_vnni(int w, int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A,
                            float *Y);
/* The avx512 level's entry of the code layouts (kernels/x86/abq_codes_avx512.c):
 * M > 1 the GEMM above with vnni 1, decode lb_abq_codes_gemv_vnni. */
#define LB_ABQ_CODES_AVX512_DECLARE(name, NAME, W)                                                            \
    void lb_gemm_##name##_avx512(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A, \
                                 size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_CODES_LIST(LB_ABQ_CODES_AVX512_DECLARE)
#undef LB_ABQ_CODES_AVX512_DECLARE
#undef LB_ABQ_AVX2_DECLARE
/* The X16 layouts' kernel (kernels/x86/abq_x16_avx512.c): decode by zmm
 * vpdpbusd with the 16 rows in the lanes, prefill by the 16-row VNNI tile. */
#define LB_ABQ_X16_AVX512_DECLARE(name, NAME, W)                                                              \
    void lb_gemv_##name##_avx512(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A, \
                                 size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_X16_LIST(LB_ABQ_X16_AVX512_DECLARE)
#undef LB_ABQ_X16_AVX512_DECLARE
/* The AVX-512 VPOPCNTDQ kernel of the plane types (kernels/x86/abq_avx512.c):
 * four activation planes per popcount step. way: 1 the AVX2 int8 way
 * (q <= 7), 0 or -1 (what vec_dot takes) the popcount. */
float lb_abq_dot_avx512(int type, int way, int64_t n, const void *w, const void *a);
#define LB_ABQ_AVX512_DECLARE(name, NAME, Q)                                                                  \
    void lb_vec_dot_##name##_avx512(int64_t n, float *s, const void *w, const void *a);                       \
    void lb_gemm_##name##_avx512(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A, \
                                 size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_LIST(LB_ABQ_AVX512_DECLARE)
#undef LB_ABQ_AVX512_DECLARE

/* The AMX-INT8 GEMM of the code layouts (kernels/x86/abq_amx.c): 16-row
 * activation tiles by tdpbssd, the other rows (and decode) by the AVX2
 * kernel; bit-identical to the reference. */
#define LB_ABQ_CODES_AMX_DECLARE(name, NAME, W)                                                               \
    void lb_gemm_##name##_amx(int64_t K, const void *Wt, size_t w_row_size, int n0, int n1, const void *A,     \
                              size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_CODES_LIST(LB_ABQ_CODES_AMX_DECLARE)
#undef LB_ABQ_CODES_AMX_DECLARE

/* 16 activation bits (formats/abq.h, LB_ABQ_ACT_F32), every ABQ type
 * (kernels/x86/abq_f32_avx2.c): the weights decoded exactly to the
 * reference's d (c - z); prefill on the float-weight GEMM (kernels/fgemm.h,
 * whole_m), decode by FMA dots; sums in float, so within a tolerance of the
 * reference. */
#define LB_ABQ_F32_AVX2_DECLARE(name, NAME, Q)                                                                \
    void lb_vec_dot_##name##_f32_avx2(int64_t n, float *s, const void *w, const void *a);                     \
    void lb_gemm_##name##_f32_avx2(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A, \
                                   size_t a_row_size, int M, float *Y, size_t ldy);
LB_ABQ_LIST(LB_ABQ_F32_AVX2_DECLARE)
LB_ABQ_CODES_LIST(LB_ABQ_F32_AVX2_DECLARE)
#undef LB_ABQ_F32_AVX2_DECLARE
#define LB_ABQ_F32_AVX2_KERNEL(name, NAME, Q)                                                                 \
    {LB_TYPE_##NAME, LB_TYPE_F32, LB_ISA_AVX2, #name "_f32_avx2", lb_f32_from_float, lb_vec_dot_##name##_f32_avx2, \
     lb_gemm_##name##_f32_avx2, .whole_m = 2},
#define LB_ABQ_F32_X86_KERNELS LB_ABQ_LIST(LB_ABQ_F32_AVX2_KERNEL) LB_ABQ_CODES_LIST(LB_ABQ_F32_AVX2_KERNEL)

/* lb_kernel_list entries (kernels/dispatch.c; fields: kernels/dispatch.h):
 * whole activation rows (act_whole_row), the token's scale being per row */
#define LB_ABQ_AVX2_KERNEL(name, NAME, Q)                                                                     \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_AVX2, #name "_abq_act_avx2", lb_abq_quantize_act8_avx2,            \
     lb_vec_dot_##name##_avx2, lb_gemm_##name##_avx2, NULL, 0, NULL, 0, 0, 0, 1, lb_abq_quantize_act_avx2},
/* whole_m 2 for the code layouts: the AVX2 GEMM takes the thread's whole
 * range of weight rows and up to 1024 activation rows a call, so each
 * decoded block of 8 weight rows serves them all and the activation rows'
 * setup (their raw codes at p <= 7, their correction pairs) is done once
 * (kernels/x86/abq_codes_avx2.c). Handed 16 weight rows and 768 KiB of
 * activation rows a call, the activations were re-read from L3 for every
 * 16 weight rows on a 512 KiB L2 (Zen 3): 2048 x 5632 at M = 512 ran at
 * 0.6-0.7x its rate now. */
#define LB_ABQ_CODES_AVX2_KERNEL(name, NAME, W)                                                               \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_AVX2, #name "_abq_act_avx2", lb_abq_quantize_act8_avx2,            \
     lb_vec_dot_##name##_avx2, lb_gemm_##name##_avx2, NULL, 0, NULL, 0, 0, 2, 1, lb_abq_quantize_act_avx2},
/* AVX-512 (VNNI: part of the level): the GEMM with the vpdpbusd tiles,
 * decode by lb_abq_codes_gemv_vnni (vec_dot: the AVX2 one); whole_m 2 as
 * the AVX2 GEMM's */
#define LB_ABQ_CODES_AVX512_KERNEL(name, NAME, W)                                                              \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_AVX512, #name "_abq_act_avx512", lb_abq_quantize_act8_avx512,     \
     lb_vec_dot_##name##_avx2, lb_gemm_##name##_avx512, NULL, 0, NULL, 0, 0, 2, 1, lb_abq_quantize_act_avx512},
/* whole_m 2: the AMX GEMM decodes each weight group once per call for all
 * the activation rows the driver hands it (up to 1024: it blocks K and N
 * itself, so a K chunk of them stays in L2); the rows past a multiple of
 * 16, and decode, go to the AVX-512 level's kernel */
#define LB_ABQ_CODES_AMX_KERNEL(name, NAME, W)                                                                 \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_AMX, #name "_abq_act_amx", lb_abq_quantize_act8_avx512,           \
     lb_vec_dot_##name##_avx2, lb_gemm_##name##_amx, NULL, 0, NULL, 0, 0, 2, 1, lb_abq_quantize_act_avx512},
#define LB_ABQ_AVX512_KERNEL(name, NAME, Q)                                                                    \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_AVX512, #name "_abq_act_avx512", lb_abq_quantize_act8_avx512,     \
     lb_vec_dot_##name##_avx512, lb_gemm_##name##_avx512, NULL, 0, NULL, 0, LB_CPU_VPOPCNTDQ, 0, 1,             \
     lb_abq_quantize_act_avx512},
/* The X16 layouts at the avx512 level: a gemv of any M (whole blocks of 16
 * rows; the tail rows go to the row layout's kernel), whole_m 2 as the row
 * layout's GEMM. */
#define LB_ABQ_X16_AVX512_KERNEL(name, NAME, W)                                                                \
    {LB_TYPE_##NAME, LB_TYPE_ABQ_ACT, LB_ISA_AVX512, #name "_abq_act_avx512", lb_abq_quantize_act8_avx512,     \
     NULL, NULL, lb_gemv_##name##_avx512, 0, NULL, 0, 0, 2, 1, lb_abq_quantize_act_avx512},
/* the plane types (AVX2; AVX-512 with VPOPCNTDQ), then their code layouts
 * (made at load where these run) */
#define LB_ABQ_X86_KERNELS                                                                                     \
    LB_ABQ_LIST(LB_ABQ_AVX2_KERNEL) LB_ABQ_LIST(LB_ABQ_AVX512_KERNEL)                                          \
    LB_ABQ_CODES_LIST(LB_ABQ_CODES_AVX2_KERNEL) LB_ABQ_CODES_LIST(LB_ABQ_CODES_AVX512_KERNEL)                 \
    LB_ABQ_CODES_LIST(LB_ABQ_CODES_AMX_KERNEL) LB_ABQ_X16_LIST(LB_ABQ_X16_AVX512_KERNEL)
#endif

#endif
