/* AMX-BF16 GEMM (prefill) on the QIGen layouts GQ{b}_G{g}_QG
 * (formats/repack_qg.h), every bits x group, against bf16 activation groups
 * (lb_block_bf16x16). Names: lb_gemm_<type>_qg_bf16x16_amxbf16. The entries
 * pair it with the generated AVX-512 GEMV for decode and for the rows past a
 * multiple of 16, and win at the amx level where the CPU has AMX-BF16. */
#ifndef LB_QG_AMX_BF16_H
#define LB_QG_AMX_BF16_H

#include "kernels/qigen.h"
#include "kernels/x86/repack_amx.h"

#if LB_HAVE_X86_KERNELS
#define LB_QG_AMXBF16_DECL(name, NAME, B, G) void lb_gemm_##name##_qg_bf16x16_amxbf16(LB_QG_ARGS);
LB_GQ_LIST(LB_QG_AMXBF16_DECL)
#undef LB_QG_AMXBF16_DECL

/* lb_kernel_list entries (field order: kernels/dispatch.h); whole_m 2 as the
 * other AMX-BF16 GEMMs (kernels/x86/amx_bf16_impl.h) */
#define LB_QG_AMXBF16_ENTRY(name, NAME, B, G)                                                                   \
    {LB_TYPE_##NAME##_QG, LB_TYPE_Q8_0, LB_ISA_AMX, #name "_qg_bf16x16_amxbf16", lb_quantize_row_q8_0_avx2, NULL, \
     lb_gemm_##name##_qg_bf16x16_amxbf16, lb_gemv_##name##_qg_avx512, 16, lb_pack_bf16x16_avx512,               \
     sizeof(lb_block_bf16x16), LB_CPU_AMXBF16, 2},
#define LB_QG_AMXBF16_KERNELS LB_GQ_LIST(LB_QG_AMXBF16_ENTRY)
#endif

#endif
