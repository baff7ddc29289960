/* Between the C side of the CUDA backend (cuda_host.c: lb_matrix and
 * lb_mx_view, repacking on upload) and the CUDA side (*.cu: kernels,
 * cuBLAS): plain C types only, so the .cu files need none of the library's
 * C11 headers. Not installed, not for callers. */
#ifndef LB_CUDA_INTERNAL_H
#define LB_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The lb_type ids the backend knows (cuda_host.c checks them against lowbit.h). */
enum {
    LBCU_F32 = 0,
    LBCU_F16 = 1,
    LBCU_Q4_0 = 2,
    LBCU_Q8_0 = 8,
    LBCU_Q4_K = 12,
    LBCU_Q8_K = 15,
    LBCU_MX = 1062,
    LBCU_BCQ_FIRST = 1066, /* BCQ4_G128 .. BCQ1_G32, formats/bcq.h (q = 4 - (t - first) / 3, g = 128 >> (t - first) % 3) */
    LBCU_BCQ_LAST = 1077,
    LBCU_ABQ_ACT = 1100,   /* formats/abq.h: a token's p-bit activation planes */
    LBCU_ABQ_W1 = 1101,    /* ABQ_W1 .. ABQ_W8: q = t - 1100 planes */
    LBCU_ABQ_W8 = 1108,
    LBCU_ABQ_W2S = 1109,   /* the bit-balance grid {-2..2}: 3 planes, z = 2 */
    LBCU_ACT_F32 = 2000,   /* activation kind only: fp32 rows as they are (BCQ's table-lookup kernel) */
};

/* Block sizes the kernels rely on (the same as formats/types.h, kquants.h, mx.h). */
#define LBCU_QK 32        /* Q4_0, Q8_0 block; MX group and tile width */
#define LBCU_QK_K 256     /* Q4_K, Q8_K super-block */
#define LBCU_Q4_K_BYTES 144
#define LBCU_MX_ROWS 16
#define LBCU_MX2_QS 128   /* codes of a 2-bit tile (block_mx2.qs) */
#define LBCU_MX4_QS 256   /* codes of a 4-bit tile (block_mx4.qs) */
/* The scale parts of a tile on the device, padded to 16 bytes (the paper's
 * "zero padding" for aligned vector loads):
 *   2-bit: s1[16] (scale codes), z1[8], s2[4] (two fp16), z2, 3 bytes 0
 *   4-bit: s[16] (fp16, 32 bytes), z[8], 8 bytes 0 */
#define LBCU_MX2_META 32
#define LBCU_MX4_META 48
#define LBCU_ABQ_G 128    /* ABQ group; 16 bytes a bit plane */
#define LBCU_BCQ_TW 256   /* activations of one K-tile of the LUT-GEMV: 32 tables of mu = 8 */

/* The seed types' ranges, and ABQ's chunks of 4 groups in a row of K (the
 * device layouts below pad the groups to them). */
static inline int lbcu_is_bcq(int type) { return type >= LBCU_BCQ_FIRST && type <= LBCU_BCQ_LAST; }
static inline int lbcu_is_abq(int type) { return type >= LBCU_ABQ_W1 && type <= LBCU_ABQ_W2S; }
#define LBCU_ABQ_CHUNKS(K) (((K) / LBCU_ABQ_G + 3) / 4) /* a macro: device code uses it too */

/* A matrix on the device (every pointer from cudaMalloc, 256-byte aligned).
 *  Q8_0: q int8 codes, N rows of K; d fp16 bits, N rows of K/32
 *  Q4_0: q the blocks' nibble bytes, N rows of K/2 (16 bytes a block: low
 *        nibbles weights 0..15, high 16..31); d as Q8_0
 *  Q4_K: q the GGUF rows as they are (144-byte blocks, 16-byte aligned)
 *  MX:   per tile row t (N/16 of them) its n_lo 2-bit tiles, codes at
 *        lo_qs + (t n_lo + l) 128 and scales at lo_meta + (t n_lo + l) 32,
 *        the same for the n_hi 4-bit tiles (256 and 48 bytes); the group of
 *        each slot; CSR outliers (row_ptr N + 1 entries, words col | fp16 << 16)
 *  F16:  w16 only, N rows of K.
 *  F32:  w32 only, N rows of K (cuBLAS SGEMM; what the forward pass uploads
 *        for types without a kernel here).
 *  BCQ:  q the bit planes, N rows of `pstride` bytes (K q / 8 rounded up to
 *        16): per group its q planes of g/8 bytes, as in the block; d the
 *        heads, N rows of K/g groups of q + 1 fp16 (alpha_0..alpha_{q-1}, z)
 *  ABQ:  groups padded to G4 = ceil(K/128 / 4) chunks of 4 (zeros); q the
 *        planes, per (row, chunk, plane) 16 words, word w of group 4 c + u at
 *        4 w + u; d per group one word, fp16 d | z << 16 (W2S: z = 2 written
 *        at upload), N rows of 4 G4; row_e per row the exponent E of the
 *        smallest scale's unit (cuda_abq.cu: exact integer sums). */
struct lb_cuda_matrix {
    int type;
    int64_t N, K;
    uint64_t bytes; /* lb_matrix_bytes of the source */
    void *q, *d;
    int64_t n_lo, n_hi, n_cap;
    void *lo_qs, *lo_meta, *hi_qs, *hi_meta;
    uint16_t *lo_group, *hi_group;
    uint32_t *row_ptr, *outliers; /* NULL: no outliers */
    uint16_t *w16;                /* fp16 N x K: F16's weights, or the prefill path's cache (NULL until built) */
    float *w32;                   /* F32: the weights, N x K */
    int bits, group;              /* BCQ: q and g; ABQ: q (planes) and 128 */
    int act_bits;                 /* ABQ: the activations' p (lb_matrix.act_bits, 8 if unset) */
    int64_t pstride;              /* BCQ: bytes per row of planes */
    int32_t *row_e;               /* ABQ: per row the exponent E of its integer scales */
};

/* Records a message for lb_cuda_last_error (cuda_host.c). */
void lbcu_set_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* *dev = a new device copy of bytes of host (host NULL: zeros); 0 or -1. */
int lbcu_alloc_copy(void **dev, const void *host, size_t bytes);
/* cudaFree, ignoring NULL. */
void lbcu_free(void *dev);

/* Quantizes X_dev (M x K) into the workspace as act_type (LBCU_Q8_0 or
 * LBCU_Q8_K) and copies the workspace's codes (M x K), scales (Q8_0: M x K/32
 * fp16 bits in d0; Q8_K: M x K/256 floats in dk) and sums of 16 codes
 * (M x K/16) to host memory. Synchronous. */
int lbcu_quantize_to_host(int act_type, const float *X_dev, int M, int64_t K, int8_t *qs, uint16_t *d0, float *dk,
                          int16_t *s16);

/* Quantizes X_dev (M x K) into the workspace as ABQ activations of p bits
 * and copies them out as the kernels read them: planes (M x G4 chunks x 8
 * planes x 16 words, word w of group 4 c + u at 4 w + u), the code sum of
 * every group (M x 4 G4), the scale and zero of every row (M each). */
int lbcu_abq_act_to_host(const float *X_dev, int M, int64_t K, int p, uint8_t *planes, int32_t *sums, float *d,
                         int32_t *z);

#ifdef __cplusplus
}
#endif

#endif
