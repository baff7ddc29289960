/* Shared by the AMX GEMMs that keep fp32 partial sums in tile order
 * (amx_bf16_impl.h, repack_amx_q8_256.c): the write of a pass's finished
 * sums to Y; and by the AMX-BF16 kernels (amx_bf16_impl.h,
 * attention_amx_impl.h): a bf16 B tile's pair row. Included only by x86
 * kernel files. */
#ifndef LB_AMX_TILES_IMPL_H
#define LB_AMX_TILES_IMPL_H

#include <immintrin.h>
#include <stddef.h>

#define INLINE_TILES __attribute__((target("avx512f"))) static inline __attribute__((always_inline))

/* Lanes of the 16 columns from n that lie below n1. */
INLINE_TILES __mmask16 lb_amx_col_mask(int n, int n1) {
    const int k = n1 - n;
    return k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << k) - 1);
}

/* Y rows [0, 16 * mtn) x columns [nb0, nbe) from cbuf: row tile i, column
 * tile j at (i * nbt + j) * 256 floats, each tile's 16 rows of 16 after one
 * another; written row after row of Y (its tiles' rows are contiguous there). */
INLINE_TILES void lb_amx_write_back(const float *cbuf, int nbt, int mtn, int ntn, int nb0, int nbe, float *Y,
                                    size_t ldy) {
    for (int i = 0; i < mtn; i++)
        for (int r = 0; r < 16; r++) {
            const float *c = cbuf + (size_t)i * nbt * 256 + 16 * r;
            float *y = Y + (size_t)(16 * i + r) * ldy + nb0;
            for (int j = 0; j < ntn; j++)
                _mm512_mask_storeu_ps(y + 16 * j, lb_amx_col_mask(nb0 + 16 * j, nbe), _mm512_load_ps(c + (size_t)j * 256));
        }
}

/* A pair row of a B tile from two float vectors: word 2n = bf16(f0[n]), word
 * 2n + 1 = bf16(f1[n]) (round to nearest even). cvtne2ps(f1, f0) gives words
 * 0-15 = f0, 16-31 = f1; one vpermw interleaves them. */
__attribute__((target("avx512f,avx512bw,avx512bf16"))) static inline __attribute__((always_inline)) __m512i
bf16_pair_row(__m512 f0, __m512 f1) {
    const __m512i pairs = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                           6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(pairs, (__m512i)_mm512_cvtne2ps_pbh(f1, f0));
}

#endif
