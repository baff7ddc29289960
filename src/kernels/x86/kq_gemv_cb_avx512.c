/* AVX-512 VNNI + VBMI decode GEMVs for CB2_16X4 and CB3_16X4 against plain
 * Q8_K rows (kq_gemv_avx512_impl.h; the scheme is in kq_repack_avx512.c).
 * The books in force pick the instantiation: their index bits, and whether
 * they are narrow (|c| <= 15, formats/cb.h). */
#include "kernels/x86/kq_repack_avx512.h"

#if LB_HAVE_X86_KERNELS
#include "kernels/x86/kq_gemv_avx512_impl.h"

/* kind w's tables: bits of s - 1 (2, 3, or 4 wide books), narrow or not */
#define CB_TABLES(w, WT, KBITS)                                                                                \
    GEMV_TABLE_NG2(w##_2, WT, 2, 0, 0)                                                                        \
    GEMV_TABLE_NG2(w##_3, WT, 3, 0, 0)                                                                        \
    GEMV_TABLE_NG2(w##_2n, WT, 2, 0, 1)                                                                       \
    GEMV_TABLE_NG2(w##_3n, WT, 3, 0, 1)                                                                       \
    GEMV_TABLE_NG2(w##_4, WT, 4, KBITS + 4 > 6, 0)
#define CB_GEMV(w, WT, TYPE)                                                                                   \
    LB_VBMI void lb_gemv_##w##x16_q8_K_16x4_avx512vbmi(int64_t K, const void *W, size_t wrs, int n0, int n1,   \
                                                       const void *A, size_t ars, int M, float *Y, size_t ldy) { \
        const lb_cb_set *set = lb_cb_current(TYPE);                                                              \
        const gemv_fns *f = &w##_4;                                                                              \
        switch (set->cbits | set->narrow << 3) {                                                                 \
        case 2: f = &w##_2; break;                                                                               \
        case 3: f = &w##_3; break;                                                                               \
        case 8 | 2: f = &w##_2n; break;                                                                          \
        case 8 | 3: f = &w##_3n; break;                                                                          \
        }                                                                                                        \
        gemv(WT, 2, f, K, W, wrs, n0, n1, A, ars, M, Y, ldy);                                                   \
    }
CB_TABLES(cb2, WCB2, 2)
CB_TABLES(cb3, WCB3, 3)
CB_GEMV(cb2, WCB2, LB_TYPE_CB2)
CB_GEMV(cb3, WCB3, LB_TYPE_CB3)
#endif
