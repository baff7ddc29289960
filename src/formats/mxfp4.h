/* MXFP4 (OCP microscaling FP4, ggml's GGML_TYPE_MXFP4 = 39): gpt-oss's
 * released weights keep their experts in it. 32 weights per block share an
 * E8M0 scale byte e (a power of two, 2^(e - 127)); each weight is a 4-bit
 * E2M1 float: sign and one of 0, 0.5, 1, 1.5, 2, 3, 4, 6. As ggml, the codes
 * index a table of twice those values (lb_kvalues_mxfp4, integers -12..12)
 * and the scale is halved: value = kv[code] * 2^(e - 128). Low nibbles hold
 * weights 0..15, high nibbles 16..31 (as Q4_0). 4.25 bits per weight.
 *
 * The kernels run it as Q5_0 (lb_mxfp4_to_q5_0, done once at load): each
 * block's table values kv (-12..12) are Q5_0's q - 16 (q in 0..31) and
 * 2^(e - 128) its fp16 scale, which fp16 holds exactly for e in [104, 143],
 * so every product and sum is the one the MXFP4 reference dot product forms.
 * That costs 5.5 bits per weight of memory where the file has 4.25 (Q8_0,
 * the first choice, cost 8.5). */
#ifndef LB_MXFP4_H
#define LB_MXFP4_H

#include "formats/types.h"

#define QK_MXFP4 32
typedef struct {
    uint8_t e;                 /* E8M0 scale */
    uint8_t qs[QK_MXFP4 / 2]; /* low nibbles: weights 0..15, high nibbles: 16..31 */
} block_mxfp4;
static_assert(sizeof(block_mxfp4) == 17, "block_mxfp4 size");

extern const int8_t lb_kvalues_mxfp4[16];

/* 2^(e - 128) (ggml_e8m0_to_fp32_half), e = 0 and 1 as float subnormals */
float lb_e8m0_to_f32_half(uint8_t e);

/* ggml's quantize_row_mxfp4_ref: e = floor(log2(max |x|)) - 2 + 127, then
 * each weight the nearest table value (the first on a tie) */
void lb_quantize_row_mxfp4_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_mxfp4(const void *x, float *y, int64_t k);
/* ggml's vec_dot_mxfp4_q8_0: per block 2^(e-128) * d_a * sum kv[code] a_j */
void lb_vec_dot_mxfp4_q8_0_ref(int64_t n, float *s, const void *w, const void *a);

/* nb MXFP4 blocks as Q5_0 blocks (above). Returns how many blocks lost
 * exactness (a scale below 2^-24 rounded to fp16; such weights are below
 * 3e-7), or -1 if a scale is above 2^15 (no such weight fits fp16). */
int64_t lb_mxfp4_to_q5_0(const void *src, void *dst, int64_t nb);

const lb_type_traits *lb_mxfp4_traits(void);

#endif
