/* AMX-BF16 GEMM (prefill) on the QIGen layouts GQ{b}_G{g}_QG. The tile
 * work, blocking and scratch are the shared core (amx_bf16_impl.h; why bf16
 * and not int8 tiles: repack_amx_bf16.c); this file only turns one weight
 * tile (16 rows, 32 weights of an x-block) into bf16: w = s * (q - z) as
 * formats/gq.c dequantizes it, exact in fp32 (an fp16 scale times a code
 * difference of at most 4 bits), then rounded to nearest even.
 *
 * Unlike the int8 GEMM it replaces at this level (each tile converted to
 * Q8_0_4X4, kernels/qigen.c), the scale is folded into the weights, so the
 * groups of 16 (two scales per 32 weights, no Q8_0 form) run here too. */
#include "kernels/x86/qg_amx_bf16.h"

#if LB_HAVE_X86_KERNELS
#include "formats/repack_qg.h"
#include "kernels/x86/amx_bf16_impl.h"

/* The codes of weights 32t .. 32t + 31 of an x-block (b bits): u[kk] holds
 * those of 4kk .. 4kk + 3 as the bytes of each row's dword (the layout's
 * re-encoding, formats/repack_qg.h, makes each a shift and a mask). */
INLINE_BF void qg_codes(const uint8_t *xp, int bits, int t, __m512i u[8]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x03), m7 = _mm512_set1_epi8(0x07);
    const __m512i m1 = _mm512_set1_epi8(0x01);
    if (bits == 4) {
        for (int i = 0; i < 4; i++) {
            const __m512i v = _mm512_loadu_si512(xp + 64 * (4 * t + i));
            u[2 * i] = _mm512_and_si512(v, m4);
            u[2 * i + 1] = _mm512_and_si512(_mm512_srli_epi32(v, 4), m4);
        }
    } else if (bits == 2) {
        for (int i = 0; i < 2; i++) {
            const __m512i v = _mm512_loadu_si512(xp + 64 * (2 * t + i));
            for (int s = 0; s < 4; s++) u[4 * i + s] = _mm512_and_si512(_mm512_srli_epi32(v, (unsigned)(2 * s)), m3);
        }
    } else {
        __m512i v[3];
        for (int i = 0; i < 3; i++) {
            v[i] = _mm512_loadu_si512(xp + 64 * (3 * t + i));
            u[2 * i] = _mm512_and_si512(v[i], m7);
            u[2 * i + 1] = _mm512_and_si512(_mm512_srli_epi32(v[i], 3), m7);
        }
        const __m512i hi6 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(v[2], 6), m1), 2);
        const __m512i hi7 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(v[2], 7), m1), 2);
        u[6] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(v[0], 6), m3), hi6);
        u[7] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(v[1], 6), m3), hi7);
    }
}

/* Byte e of every dword, as float. */
INLINE_BF __m512 qg_byte_ps(__m512i v, int e) {
    const __m512i s = e == 0 ? v : _mm512_srli_epi32(v, (unsigned)(8 * e));
    return _mm512_cvtepi32_ps(e == 3 ? s : _mm512_and_si512(s, _mm512_set1_epi32(0xFF)));
}

/* Weights 32b .. 32b + 31 of the 16 rows from n. s * q and s * z are exact
 * in fp32, so s * q - s * z (one rounding, of an exact difference that fp32
 * holds) is s * (q - z) exactly. */
INLINE_BF void qg_tile_at(const bf16_groups *c, int n, int64_t b, __m512i out[16], int bits, int group) {
    const uint8_t *xp = bf16_xblock(c, n, b / 4, LB_QG_XBS(bits, group));
    const int t = (int)(b % 4);
    __m512i u[8];
    qg_codes(xp, bits, t, u);
    __m512 s = _mm512_setzero_ps(), sz = s;
#pragma GCC unroll 8
    for (int kk = 0; kk < 8; kk++) {
        if (kk == 0 || (group == 16 && kk == 4)) {
            const int j = (32 * t + 4 * kk) / group;
            s = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(xp + LB_QG_S_OFF(bits) + 32 * j)));
            const __m512 z = _mm512_cvtepi32_ps(
                _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(xp + LB_QG_Z_OFF(bits, group) + 16 * j))));
            sz = _mm512_mul_ps(s, z);
        }
        __m512 f[4];
#pragma GCC unroll 4
        for (int e = 0; e < 4; e++) f[e] = _mm512_fmsub_ps(s, qg_byte_ps(u[kk], e), sz);
        out[2 * kk] = bf16_pair_row(f[0], f[1]);
        out[2 * kk + 1] = bf16_pair_row(f[2], f[3]);
    }
}

#define QG_BF16_KERNEL(name, NAME, B, G)                                                                     \
    INLINE_BF void qg_tile_##name(const void *c, int n, int64_t b, __m512i out[16]) {                        \
        qg_tile_at(c, n, b, out, B, G);                                                                      \
    }                                                                                                        \
    LB_AMXBF16 void lb_gemm_##name##_qg_bf16x16_amxbf16(LB_QG_ARGS) {                                        \
        const bf16_groups c = {W, 16 * w_row_size, 0};                                                       \
        lb_amx_bf16_gemm(qg_tile_##name, &c, K, n0, n1, A, a_row_size, M, Y, ldy);                           \
    }
LB_GQ_LIST(QG_BF16_KERNEL)
#endif
