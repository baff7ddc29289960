/* Float arithmetic that rounds as written: no a*b + c fused into an FMA
 * (which rounds once where the written expression rounds twice).
 *
 * Included by the files whose float steps must match something bit for bit:
 * the reference quantizers that stay byte-identical to llama.cpp's (ggml's
 * reference does not fuse), and the kernels whose results must equal a
 * reference's (BCQ, ABQ, ...). gcc in ISO C mode (-std=c11, this build)
 * contracts nothing already; the pragma keeps it so under -std=gnu11 or
 * -ffp-contract=fast, and turns off clang's default contraction. It applies
 * to the rest of the including file: include it after the other headers, so
 * that their inline functions keep the options of every other file. */
#ifndef LB_FP_STRICT_H
#define LB_FP_STRICT_H

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#endif
