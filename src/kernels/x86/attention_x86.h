/* AVX2 and AVX-512 attention work units (kernels/attention.h). */
#ifndef LB_ATTENTION_X86_H
#define LB_ATTENTION_X86_H

#include "kernels/attention.h"
#include "kernels/x86/kernels_x86.h" /* LB_HAVE_X86_KERNELS */

#if LB_HAVE_X86_KERNELS
void lb_attn_block_avx2(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch);
void lb_attn_block_avx512(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch);
#endif
#endif
