/* MXFP4 (OCP microscaling FP4, ggml's GGML_TYPE_MXFP4 = 39): gpt-oss's
 * released weights keep their experts in it. 32 weights per block share an
 * E8M0 scale byte e (a power of two, 2^(e - 127)); each weight is a 4-bit
 * E2M1 float: sign and one of 0, 0.5, 1, 1.5, 2, 3, 4, 6. As ggml, the codes
 * index a table of twice those values (lb_kvalues_mxfp4, integers -12..12)
 * and the scale is halved: value = kv[code] * 2^(e - 128). Low nibbles hold
 * weights 0..15, high nibbles 16..31 (as Q4_0). 4.25 bits per weight.
 *
 * The kernels run it as MXFP4_NL (lb_mxfp4_to_nl, done once at load): the
 * same codes in IQ4_NL's block, 2^(e - 128) as its fp16 scale, which fp16
 * holds exactly for e in [104, 143]; IQ4_NL's kernels with this table in
 * place of IQ4_NL's run it, so every product and sum is the one the MXFP4
 * reference dot product forms, at 4.5 bits per weight of memory where the
 * file has 4.25 (Q5_0, the conversion before, cost 5.5; Q8_0 8.5). */
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

/* MXFP4_NL: the codes of an MXFP4 block as they are, its scale as fp16 */
typedef struct {
    lb_fp16 d;                 /* 2^(e - 128) */
    uint8_t qs[QK_MXFP4 / 2]; /* MXFP4's codes, as in block_mxfp4 */
} block_mxfp4_nl;
static_assert(sizeof(block_mxfp4_nl) == 18, "block_mxfp4_nl size");

/* nb MXFP4 blocks as MXFP4_NL blocks. Returns how many blocks lost
 * exactness (a scale below 2^-24 rounded to fp16; such weights are below
 * 3e-7), or -1 if a scale is above 2^15 (no such weight fits fp16). */
int64_t lb_mxfp4_to_nl(const void *src, void *dst, int64_t nb);
void lb_dequantize_row_mxfp4_nl(const void *x, float *y, int64_t k);
/* d_w * d_a * sum kv[code] a_j per block, IQ4_NL's reference order */
void lb_vec_dot_mxfp4_nl_q8_0_ref(int64_t n, float *s, const void *w, const void *a);

/* LB_TYPE_MXFP4 and LB_TYPE_MXFP4_NL */
const lb_type_traits *lb_mxfp4_traits(int type);

#endif
