/* Shared by the AMX GEMMs that keep fp32 partial sums in tile order
 * (amx_bf16_impl.h, repack_amx_q8_256.c): the write of a pass's finished
 * sums to Y. Included only by x86 kernel files. */
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

#endif
