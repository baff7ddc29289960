/* Runtime CPU feature probe. The ISA level decides which kernels dispatch.c
 * installs; LOWBIT_ISA (or lb_cpu_force_level) forces a lower one so every
 * level can be tested on one machine. */
#ifndef LB_CPU_H
#define LB_CPU_H

#include <stddef.h>

typedef enum {
    LB_ISA_SCALAR = 0,
    LB_ISA_AVX2,    /* x86: AVX2 + FMA + F16C */
    LB_ISA_AVX512,  /* x86: AVX-512 F/BW/VL + VNNI */
    LB_ISA_AMX,     /* x86: + AMX-TILE/INT8, tile state granted by the OS */
    LB_ISA_NEON,    /* Arm: ASIMD */
    LB_ISA_DOTPROD, /* Arm: + SDOT */
    LB_ISA_I8MM,    /* Arm: + SMMLA */
} lb_isa;
#define LB_ISA_COUNT 7

/* The two families; scalar belongs to neither. A level includes the lower
 * levels of its family. */
static inline int lb_isa_is_x86(lb_isa l) { return l >= LB_ISA_AVX2 && l <= LB_ISA_AMX; }
static inline int lb_isa_is_arm(lb_isa l) { return l >= LB_ISA_NEON && l <= LB_ISA_I8MM; }

/* The level in force: detected, lowered by LOWBIT_ISA or lb_cpu_force_level. */
lb_isa lb_cpu_level(void);
/* What the hardware supports. */
lb_isa lb_cpu_detected(void);
/* Whether this CPU runs a level's kernels: scalar always, any other level
 * when the detected one is of its family and at least as high. */
int lb_cpu_runs(lb_isa level);
const char *lb_isa_name(lb_isa isa);
/* Parses "scalar|avx2|avx512|amx|neon|dotprod|i8mm"; -1 if unknown. */
int lb_isa_from_name(const char *name);
/* Forces a level (clamped to what the hardware has). Returns the level in force. */
lb_isa lb_cpu_force_level(lb_isa isa);
/* Features some kernels need beyond their ISA level (lb_kernel.cpu_needs). */
#define LB_CPU_VBMI 1u /* x86 AVX-512 VBMI (vpermb, vpermi2b) */
#define LB_CPU_GFNI 2u /* x86 GFNI (vgf2p8affineqb) */
#define LB_CPU_AMXBF16 4u /* x86 AMX-BF16 (tdpbf16ps) and AVX512-BF16, with the AMX level */
#define LB_CPU_AVXVNNI 8u /* x86 AVX-VNNI (VEX vpdpbusd on ymm), with the AVX2 level */
#define LB_CPU_VPOPCNTDQ 16u /* x86 AVX-512 VPOPCNTDQ (vpopcntq), with the AVX-512 level */
#define LB_CPU_AVX512BF16 32u /* x86 AVX512-BF16 (vdpbf16ps), with the AVX-512 level */
#define LB_CPU_AMXQ8 64u /* x86 AMX-INT8 GEMMs on int8 requantized in chunks of 256 (formats/q8_256.h):
                          * set with the AMX level; LOWBIT_CPU_OFF=amx-q8 turns them off */
/* The LB_CPU_* bits this CPU has, less any disabled below or named in
 * LOWBIT_CPU_OFF (comma-separated: vbmi, gfni, amx-bf16, avx-vnni,
 * vpopcntdq, avx512-bf16, amx-q8), which A/B runs use to compare kernels. */
unsigned lb_cpu_extra_features(void);
/* Tests: pretend the CPU lacks these LB_CPU_* bits (0 restores). */
void lb_cpu_disable_features(unsigned bits);
/* Bytes of one core's L2 cache (sysconf; 1 MiB where unknown). */
size_t lb_cpu_l2_bytes(void);
/* Overrides it (tests: small caches split prefill into activation tiles);
 * 0 probes again. */
void lb_cpu_set_l2_bytes(size_t bytes);
/* Where the streaming GEMVs' software prefetches put the weights: 1 = L2
 * (prefetcht1), 0 = L1 (prefetcht0). L2 on AMD: on Zen 4, prefetcht0 a few
 * KiB ahead of 2-4 weight streams held the Q2_K / CB2 decode GEMV to half the
 * read bandwidth (its misses queue for the L1's few fill buffers), prefetcht1
 * reached 80-90 % (docs/codebooks.md); L1 elsewhere, as measured on Intel.
 * LOWBIT_PREFETCH=l1|l2 overrides. */
int lb_cpu_prefetch_l2(void);
/* Tests and A/B runs: 0 or 1 forces the choice, -1 probes again. */
void lb_cpu_set_prefetch_l2(int l2);
/* 16-row groups the AVX-512 K-quant / IQ4_XS decode GEMV walks side by side
 * (kernels/x86/kx_gemv_avx512.c): 1 on AMD, 2 elsewhere. On Zen 4 fewer
 * concurrent weight streams per thread read faster (bench/overlap: 1 or 2
 * streams 94-101 % of the read bandwidth, 4 streams 41-98 %; a Q6_K group is
 * two streams, its ql and qh planes), and one group gave tg128 on llama.cpp's
 * Q4_K_M / Q6_K / IQ4_XS files 0.99-1.18x, median 1.07x (nine alternated
 * rounds, docs/kquant-mixes.md); on the Intel SPR-class VM one
 * stream per thread read a third slower than two (docs/codebooks.md), so
 * Intel keeps two. LOWBIT_GEMV_GROUPS=1|2 overrides. */
int lb_cpu_gemv_groups(void);
/* Tests and A/B runs: 1 or 2 forces the choice, 0 probes again. */
void lb_cpu_set_gemv_groups(int n);
/* Extra x86 bits reported by lb_cpu_features_string. */
const char *lb_cpu_features_string(void);

#endif
