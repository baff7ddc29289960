#include "kernels/dispatch.h"

#include "formats/float.h"
#include "kernels/x86/kernels_x86.h"
#include "kernels/x86/fgemm_x86.h"
#include "kernels/x86/kquants_x86.h"
#include "formats/legacy.h"
#include "kernels/x86/legacy_x86.h"
#include "kernels/repack_kernels.h"
#include "kernels/x86/q4_0_repack_x86.h"
#include "kernels/x86/repack_avx512.h"
#include "kernels/x86/repack_amx.h"
#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/kx_arm.h"
#include "kernels/arm/mx_arm.h"
#include "formats/cb.h"
#include "formats/gq.h"
#include "formats/gc.h"
#include "formats/mx.h"
#include "kernels/x86/cb_x86.h"
#include "kernels/x86/kq_repack_avx512.h"
#include "kernels/x86/kq_q2k_avx2.h"
#include "kernels/kx_kernels.h"
#include "kernels/x86/kx_avx512.h"
#include "kernels/x86/kx_avx2.h"
#include "kernels/qigen.h"
#include "kernels/x86/qg_amx_bf16.h"
#include "kernels/x86/mx_x86.h"
#include "kernels/bcq_kernels.h"
#include "kernels/arm/bcq_arm.h"
#include "kernels/x86/bcq_x86.h"
#include "kernels/abq_kernels.h"
#include "kernels/x86/abq_x86.h"
#include "kernels/arm/abq_arm.h"

/* Entries name the first seven lb_kernel fields; the fields appended later
 * (gemv, act_rows, ...) default to zero for them. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* Every kernel, each at the lowest level it runs on. lb_kernel_get picks, for
 * a type, the entry with the highest level not above the level in force. */
static const lb_kernel lb_kernel_list[] = {
    {LB_TYPE_F32, LB_TYPE_F32, LB_ISA_SCALAR, "f32_f32_ref", lb_f32_from_float, lb_vec_dot_f32_ref, NULL},
    {LB_TYPE_F16, LB_TYPE_F32, LB_ISA_SCALAR, "f16_f32_ref", lb_f32_from_float, lb_vec_dot_f16_ref, NULL},
    {LB_TYPE_BF16, LB_TYPE_F32, LB_ISA_SCALAR, "bf16_f32_ref", lb_f32_from_float, lb_vec_dot_bf16_ref, NULL},
    {LB_TYPE_Q8_0, LB_TYPE_Q8_0, LB_ISA_SCALAR, "q8_0_q8_0_ref", lb_quantize_row_q8_0_ref, lb_vec_dot_q8_0_q8_0_ref, NULL},
    {LB_TYPE_Q4_0, LB_TYPE_Q8_0, LB_ISA_SCALAR, "q4_0_q8_0_ref", lb_quantize_row_q8_0_ref, lb_vec_dot_q4_0_q8_0_ref, NULL},
    /* legacy Q4_1 / Q5_0 / Q5_1 (formats/legacy.h) */
    {LB_TYPE_Q4_1, LB_TYPE_Q8_1, LB_ISA_SCALAR, "q4_1_q8_1_ref", lb_quantize_row_q8_1_ref, lb_vec_dot_q4_1_q8_1_ref, NULL},
    {LB_TYPE_Q5_0, LB_TYPE_Q8_0, LB_ISA_SCALAR, "q5_0_q8_0_ref", lb_quantize_row_q8_0_ref, lb_vec_dot_q5_0_q8_0_ref, NULL},
    {LB_TYPE_Q5_1, LB_TYPE_Q8_1, LB_ISA_SCALAR, "q5_1_q8_1_ref", lb_quantize_row_q8_1_ref, lb_vec_dot_q5_1_q8_1_ref, NULL},
    /* codebook formats (formats/cb.h) */
    {LB_TYPE_CB2, LB_TYPE_Q8_K, LB_ISA_SCALAR, "cb2_q8_K_ref", lb_quantize_row_q8_K_ref, lb_vec_dot_cb2_q8_K_ref, NULL},
    {LB_TYPE_CB3, LB_TYPE_Q8_K, LB_ISA_SCALAR, "cb3_q8_K_ref", lb_quantize_row_q8_K_ref, lb_vec_dot_cb3_q8_K_ref, NULL},
    /* GPTQ's group-wise uniform types (formats/gq.h): the scalar reference
     * only, gq4_g128_q8_0_ref ... gq2_g16_q8_0_ref */
#define GQ_REF_KERNEL(name, NAME, B, G) \
    {LB_TYPE_##NAME, LB_TYPE_Q8_0, LB_ISA_SCALAR, #name "_q8_0_ref", lb_quantize_row_q8_0_ref, lb_vec_dot_##name##_q8_0_ref, NULL},
    LB_GQ_LIST(GQ_REF_KERNEL)
#undef GQ_REF_KERNEL
    /* interleaved (repacked) types, kernels/repack_kernels.h */
    LB_REPACK_REF_KERNELS,
    LB_KQ_REPACK_REF_KERNELS, /* Q2_K / CB2 / CB3 16-row layouts, kernels/kq_repack_avx512.h */
    LB_KX_REF_KERNELS, /* Q3_K..Q6_K, IQ4_XS, Q4_1, Q5_0, Q5_1 16-row layouts, kernels/kx_kernels.h */
    LB_QG_REF_KERNELS /* the GQ*_QG layouts (kernels/qigen.h) */
    /* GQ{b}_GC, whole-column groups (formats/gqc.h): W an lb_gc_view, any
     * number of plain Q8_0 rows; where QIGen's kernels run, the load expands
     * GC matrices into GQ{b}_G128 and repacks them (model/repack.c) */
#define GQC_REF_KERNEL(name, NAME, B) \
    {LB_TYPE_##NAME, LB_TYPE_Q8_0, LB_ISA_SCALAR, #name "_q8_0_ref", lb_quantize_row_q8_0_ref, NULL, NULL, lb_gemv_gqc_q8_0_ref},
    LB_GQC_LIST(GQC_REF_KERNEL)
#undef GQC_REF_KERNEL
    /* BCQ{q}_GC, whole-row BCQ groups (formats/bcqc.h): W an lb_gc_view,
     * Q8_0_LUT4 rows; the load expands them into BCQ{q}_G128 and repacks
     * them where a table-lookup kernel runs */
#define BCQC_REF_KERNEL(name, NAME, Q) \
    {LB_TYPE_##NAME, LB_TYPE_Q8_0_LUT4, LB_ISA_SCALAR, #name "_q8_0_lut4_ref", lb_quantize_row_q8_0_lut4_ref, NULL, NULL, lb_gemv_bcqc_lut4_ref},
    LB_BCQC_LIST(BCQC_REF_KERNEL)
#undef BCQC_REF_KERNEL
    /* MX (formats/mx.h): W an lb_mx_view, any number of plain Q8_0 rows */
    {LB_TYPE_MX, LB_TYPE_Q8_0, LB_ISA_SCALAR, "mx_q8_0_ref", lb_quantize_row_q8_0_ref, NULL, NULL, lb_gemv_mx_q8_0_ref,
     0, NULL, 0, 0, 1},
    /* BCQ (formats/bcq.h): Q8_0_LUT4 activations; kernels/bcq_kernels.h */
    LB_BCQ_REF_KERNELS
    /* ABQ (formats/abq.h): ABQ_ACT activations, whole rows; kernels/abq_kernels.h */
    LB_ABQ_REF_KERNELS
#if LB_HAVE_ARM_KERNELS
    LB_ARM_KERNELS, /* kernels/arm_kernels.h: neon, dotprod, i8mm */
    LB_ARM_KQ_KERNELS, /* kernels/arm_kq.h: Q2_K, CB2, CB3 at neon, dotprod, i8mm */
    LB_KX_ARM_KERNELS, /* kernels/arm/kx_arm.h: Q3_K..Q6_K, IQ4_XS, Q4_1, Q5_0, Q5_1 16X4 at neon, dotprod, i8mm */
    LB_QG_ARM_KERNELS /* the GQ*_QG layouts: generated NEON GEMV (kernels/qigen.h) */
    LB_MX_ARM_KERNELS /* kernels/arm/mx_arm.h: MX at neon, dotprod, i8mm */
    LB_ABQ_ARM_KERNELS /* kernels/arm/abq_arm.h: ABQ's bit-plane dot (CNT) at neon */
    LB_BCQ_ARM_KERNELS /* BCQ _LUT layouts: the mu = 4 TBL GEMV, neon and up (kernels/arm/bcq_arm.h) */
#endif
#if LB_HAVE_X86_KERNELS
    LB_REPACK_X86_KERNELS, /* kernels/q4_0_repack_x86.h */
    LB_REPACK_AVXVNNI_KERNELS, /* the same with AVX-VNNI, kernels/q4_0_repack_x86.h */
    LB_REPACK_AVX512_KERNELS, /* kernels/repack_avx512.h */
    LB_REPACK_AMX_KERNELS, /* kernels/repack_amx.h */
    LB_KQ_REPACK_AVX512_KERNELS, /* kernels/kq_repack_avx512.h (need VBMI) */
    LB_KQ_Q2K_AVX2_KERNELS /* Q2_K_16X4 below AVX-512 VBMI: kernels/x86/kq_q2k_avx2.h */
    LB_KX_AVX512_KERNELS, /* kernels/x86/kx_avx512.h: Q3_K..Q6_K, IQ4_XS */
    LB_KX_AVX2_KERNELS, LB_KX_AVXVNNI_KERNELS, /* kernels/x86/kx_avx2.h: the 16-row layouts at AVX2 (+ AVX-VNNI) */
    LB_QG_X86_KERNELS /* the GQ*_QG layouts: generated AVX2 / AVX-512 GEMV (kernels/qigen.h) */
    LB_QG_AMXBF16_KERNELS /* their AMX-BF16 prefill GEMM (kernels/x86/qg_amx_bf16.h) */
    LB_MX_X86_KERNELS /* MX (kernels/x86/mx_x86.h) */
    LB_BCQ_X86_KERNELS /* BCQ _LUT layouts: the mu = 4 table-lookup GEMV (kernels/x86/bcq_x86.h) */
    LB_ABQ_X86_KERNELS /* ABQ: the bit-plane popcount dot (kernels/x86/abq_x86.h) */
    LB_FGEMM_X86_KERNELS /* F32 / F16 / BF16: vec_dot, and the packed fp32 GEMM (kernels/x86/fgemm_x86.h) */
    {LB_TYPE_Q8_0, LB_TYPE_Q8_0, LB_ISA_AVX2, "q8_0_q8_0_avx2", lb_quantize_row_q8_0_avx2, lb_vec_dot_q8_0_q8_0_avx2, NULL},
    {LB_TYPE_Q4_0, LB_TYPE_Q8_0, LB_ISA_AVX2, "q4_0_q8_0_avx2", lb_quantize_row_q8_0_avx2, lb_vec_dot_q4_0_q8_0_avx2, NULL},
    /* K-quants, IQ4_NL and MXFP4_NL (kernels/kquants_x86.c) */
    {LB_TYPE_Q2_K, LB_TYPE_Q8_K, LB_ISA_AVX2, "q2_K_q8_K_avx2", lb_quantize_row_q8_K_avx2, lb_vec_dot_q2_K_q8_K_avx2, NULL},
    {LB_TYPE_Q3_K, LB_TYPE_Q8_K, LB_ISA_AVX2, "q3_K_q8_K_avx2", lb_quantize_row_q8_K_avx2, lb_vec_dot_q3_K_q8_K_avx2, NULL},
    {LB_TYPE_Q4_K, LB_TYPE_Q8_K, LB_ISA_AVX2, "q4_K_q8_K_avx2", lb_quantize_row_q8_K_avx2, lb_vec_dot_q4_K_q8_K_avx2, NULL},
    {LB_TYPE_Q5_K, LB_TYPE_Q8_K, LB_ISA_AVX2, "q5_K_q8_K_avx2", lb_quantize_row_q8_K_avx2, lb_vec_dot_q5_K_q8_K_avx2, NULL},
    {LB_TYPE_Q6_K, LB_TYPE_Q8_K, LB_ISA_AVX2, "q6_K_q8_K_avx2", lb_quantize_row_q8_K_avx2, lb_vec_dot_q6_K_q8_K_avx2, NULL},
    {LB_TYPE_IQ4_NL, LB_TYPE_Q8_0, LB_ISA_AVX2, "iq4_nl_q8_0_avx2", lb_quantize_row_q8_0_avx2, lb_vec_dot_iq4_nl_q8_0_avx2, NULL},
    {LB_TYPE_MXFP4_NL, LB_TYPE_Q8_0, LB_ISA_AVX2, "mxfp4_nl_q8_0_avx2", lb_quantize_row_q8_0_avx2, lb_vec_dot_mxfp4_nl_q8_0_avx2, NULL},
    /* codebook formats (kernels/cb_x86.c) */
    {LB_TYPE_CB2, LB_TYPE_Q8_K, LB_ISA_AVX2, "cb2_q8_K_avx2", lb_quantize_row_q8_K_avx2, lb_vec_dot_cb2_q8_K_avx2, lb_gemm_cb2_q8_K_avx2},
    {LB_TYPE_CB3, LB_TYPE_Q8_K, LB_ISA_AVX2, "cb3_q8_K_avx2", lb_quantize_row_q8_K_avx2, lb_vec_dot_cb3_q8_K_avx2, lb_gemm_cb3_q8_K_avx2},
    /* legacy formats (kernels/legacy_x86.c); Q8_1 activations use the exact scalar quantizer */
    {LB_TYPE_Q4_1, LB_TYPE_Q8_1, LB_ISA_AVX2, "q4_1_q8_1_avx2", lb_quantize_row_q8_1_ref, lb_vec_dot_q4_1_q8_1_avx2, NULL},
    {LB_TYPE_Q5_0, LB_TYPE_Q8_0, LB_ISA_AVX2, "q5_0_q8_0_avx2", lb_quantize_row_q8_0_avx2, lb_vec_dot_q5_0_q8_0_avx2, NULL},
    {LB_TYPE_Q5_1, LB_TYPE_Q8_1, LB_ISA_AVX2, "q5_1_q8_1_avx2", lb_quantize_row_q8_1_ref, lb_vec_dot_q5_1_q8_1_avx2, NULL},
    {LB_TYPE_Q4_K, LB_TYPE_Q8_K, LB_ISA_AVX512, "q4_K_q8_K_avx512", lb_quantize_row_q8_K_avx2, lb_vec_dot_q4_K_q8_K_avx512, NULL},
    {LB_TYPE_Q5_K, LB_TYPE_Q8_K, LB_ISA_AVX512, "q5_K_q8_K_avx512", lb_quantize_row_q8_K_avx2, lb_vec_dot_q5_K_q8_K_avx512, NULL},
    {LB_TYPE_Q6_K, LB_TYPE_Q8_K, LB_ISA_AVX512, "q6_K_q8_K_avx512", lb_quantize_row_q8_K_avx2, lb_vec_dot_q6_K_q8_K_avx512, NULL},
    {LB_TYPE_IQ4_NL, LB_TYPE_Q8_0, LB_ISA_AVX512, "iq4_nl_q8_0_avx512", lb_quantize_row_q8_0_avx2, lb_vec_dot_iq4_nl_q8_0_avx512, NULL},
    {LB_TYPE_MXFP4_NL, LB_TYPE_Q8_0, LB_ISA_AVX512, "mxfp4_nl_q8_0_avx512", lb_quantize_row_q8_0_avx2, lb_vec_dot_mxfp4_nl_q8_0_avx512, NULL},
#endif
};

/* ABQ at 16 activation bits (formats/abq.h, LB_ABQ_ACT_F32): the same
 * weight types against fp32 rows, so a list of their own, which
 * lb_kernel_for consults for such a matrix. */
static const lb_kernel lb_kernel_a16_list[] = {
    LB_ABQ_F32_REF_KERNELS
#if LB_HAVE_X86_KERNELS
    LB_ABQ_F32_X86_KERNELS
#endif
};

/* The entry of list with the highest level not above level (see below). */
static const lb_kernel *pick(const lb_kernel *list, size_t n, int type, lb_isa level) {
    const lb_kernel *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const lb_kernel *k = &list[i];
        if (k->type != type) continue;
        if (k->cpu_needs & ~lb_cpu_extra_features()) continue;
        /* Arm and x86 levels are separate families; scalar serves both. */
        int fits = k->isa == LB_ISA_SCALAR || (k->isa <= level && lb_isa_is_x86(k->isa) == lb_isa_is_x86(level));
        /* at one level, an entry that needs extra features (and has them) wins */
        if (fits && (!best || k->isa > best->isa || (k->isa == best->isa && k->cpu_needs && !best->cpu_needs)))
            best = k;
    }
    return best;
}

const lb_kernel *lb_kernel_get_act(int type, int act_bits, lb_isa level) {
    if (act_bits == LB_ABQ_ACT_F32 && (lb_abq_bits(type) || lb_abq_plain_of_codes(type) >= 0))
        return pick(lb_kernel_a16_list, sizeof lb_kernel_a16_list / sizeof lb_kernel_a16_list[0], type, level);
    return lb_kernel_get_at(type, level);
}

const lb_kernel *lb_kernel_for(const lb_matrix *W) { return lb_kernel_get_act(W->type, W->act_bits, lb_cpu_level()); }

const lb_kernel *lb_kernel_get_at(int type, lb_isa level) {
    const lb_kernel *best = pick(lb_kernel_list, sizeof lb_kernel_list / sizeof lb_kernel_list[0], type, level);
    if (!best) {
        /* Types without a registered kernel (e.g. K-quants) use their reference dot. */
        const lb_type_traits *t = lb_traits(type);
        if (!t || !t->vec_dot) return NULL;
        static _Thread_local lb_kernel generic;
        generic = (lb_kernel){type, t->vec_dot_type, LB_ISA_SCALAR, "reference", lb_traits(t->vec_dot_type)->from_float, t->vec_dot, NULL};
        return &generic;
    }
    return best;
}

const lb_kernel *lb_kernel_get(int type) { return lb_kernel_get_at(type, lb_cpu_level()); }

uint64_t lb_matrix_bytes(const lb_matrix *W) {
    if (!W->data) return 0;
    if (W->type == LB_TYPE_MX) return ((const lb_mx_view *)W->data)->bytes;
    if (lb_gc_is(W->type)) return lb_gc_view_bytes(W->data);
    return (uint64_t)W->row_size * (uint64_t)W->N;
}
