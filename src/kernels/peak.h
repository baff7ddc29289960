/* Peak int8 multiply-add rate of this CPU's vector unit: the prefill
 * roofline. Prefill is compute-bound (each weight byte serves a whole batch),
 * so tokens/s can be at most this rate / multiply-adds per token; `lowbit
 * bench` reports how close pp runs come. */
#ifndef LB_PEAK_H
#define LB_PEAK_H

/* int8 GOPS (2 per multiply-add, 1e9/s) of independent dot-product
 * instructions from registers, on n_threads threads together, for the kernel
 * level in force: x86 amx (tdpbssd on resident tiles: 4 accumulators, 2 A
 * and 2 B sources), avx512 (zmm vpdpbusd), avx2 (ymm vpmaddubsw + vpmaddwd,
 * or vpdpbusd with AVX-VNNI), Arm dotprod / i8mm (sdot). 0 where not
 * measured: scalar and NEON without dotprod. Best of reps runs of about
 * 50 ms each (AMX: about 10 ms). */
double lb_int8_peak_gops(int n_threads, int reps);

/* What lb_int8_peak_gops measures at the level in force ("" if nothing). */
const char *lb_int8_peak_what(void);

#endif
