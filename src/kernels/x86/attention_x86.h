/* AVX2 and AVX-512 attention work units (kernels/attention.h). */
#ifndef LB_ATTENTION_X86_H
#define LB_ATTENTION_X86_H

#include <stdint.h>

#include "kernels/attention.h"
#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */

#if LB_HAVE_X86_KERNELS
void lb_attn_block_avx2(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch);
void lb_attn_block_avx512(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch);
/* AMX-BF16 (needs LB_CPU_AMXBF16): units of 16 rows or more on the tile unit
 * (kernels/x86/attention_amx_impl.h), within a float bound of the others */
void lb_attn_block_amx(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch);
/* d[i] = fp16(s[i]), round to nearest even (F16C; lb_f32_to_fp16's bits) */
void lb_attn_to_fp16_f16c(const float *s, uint16_t *d, int n);
#endif
#endif
