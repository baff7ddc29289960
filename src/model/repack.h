/* Repacking a model's weights at load into the interleaved layouts
 * (formats/repack.h) that the fastest kernels of the running CPU read. */
#ifndef LB_MODEL_REPACK_H
#define LB_MODEL_REPACK_H

#include "model/model.h"

/* What the load does with Q4_0 / IQ4_NL / Q8_0 matrices (Q2_K / CB2 / CB3
 * have one interleaved layout, Q2_K_16X4 ..., used in every mode but off):
 *   "auto" (default): the preferred layout of this ISA level, for each base
 *                     type that has a non-scalar kernel for it;
 *   "off":            keep the file's layout;
 *   "4x4", "4x8", "8x8": that layout (where a non-scalar kernel exists).
 * LOWBIT_REPACK sets it from the environment; lb_repack_set_mode (the CLI's
 * --repack) overrides. Returns 0 for an unknown mode. */
int lb_repack_set_mode(const char *mode);
const char *lb_repack_mode(void);

/* The type a matrix of `type` is repacked to under the mode in force at
 * the current level, or `type` itself. */
int lb_repack_target(int type);
/* The same for one matrix of N rows whose activations are quantized to
 * act_bits (0 for non-ABQ types): lb_repack_target's layout, less what the
 * matrix rules out. ABQ at 16 activation bits keeps the row code layout,
 * which its fp32 kernels read; ABQ's 3-bit X16 layouts hold whole blocks of
 * 16 rows only, so a matrix of N % 16 != 0 takes the 4-bit X16 layout,
 * which keeps its last rows in the row layout. */
int lb_repack_target_matrix(int type, int64_t N, int act_bits);

/* Called by lb_model_finish: repacks every matrix the mode says to (into
 * owned memory: a mapped file is never written), unpacks a token embedding
 * stored interleaved (row lookups need plain rows) and logs what it did. */
lb_status lb_model_repack(lb_model *m);

#endif
