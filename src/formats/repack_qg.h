/* The interleaved layouts of the GQ{b}_G{g} types (formats/gq.h) that the
 * kernels QIGen generates read (kernels/qigen.h, tools/qigen/qigen.c):
 * GQ4_G128_QG ... GQ2_G16_QG, ids 1042-1053, repacked at load from the plain
 * types where a generated kernel runs (model/repack.c). After seed 001
 * (QIGen): the 32-bit words stay packed along K, a tile of 16 output rows
 * is interleaved so that one vector load gets the same word of VL rows (8
 * on AVX2, 16 on AVX-512, 4 on NEON), and the scales and zero points sit
 * next to the words they scale.
 *
 * Tensor of N rows x K weights (K % 128 == 0): groups of 16 consecutive
 * rows, then the last N % 16 rows plain, exactly as in the base type. A
 * group holds one x-block per 128 weights (the plain block's span), in K
 * order: 16 times the plain block's bytes, so bytes per weight, GGUF sizes
 * and bits per weight are the base type's. An x-block of b bits, group g:
 *   Q  [0, 256 b):       4b vectors of 64 bytes; vector c holds word c of
 *                         row r at bytes 4r .. 4r + 3 (one 32-bit lane per row);
 *   S  [256 b, + 32 G):  G = 128 / g vectors of 16 fp16: the scales of group
 *                         j of rows 0..15 at 32 j + 2 r;
 *   Z  [then, + 16 G):   the zero points of group j at 16 j + r;
 *   P  [then, end):      row r's padding bytes (the plain block's last
 *                         size - (16 b + 3 G) bytes) at pad * r, kept so that
 *                         unpacking restores the file's bytes exactly.
 * Inside a row's words the codes are re-encoded (within the same words:
 * each word still holds the codes of 32 / b consecutive weights, 3-bit
 * triples 32 weights in 3 words) so that byte e of a word, shifted and
 * masked, gives the codes of consecutive weights:
 *   4-bit: word c, byte e = q(8c + e) | q(8c + 4 + e) << 4
 *          (AutoGPTQ: q(8c + i) at bits 4i);
 *   2-bit: word c, byte e, bits 2s .. 2s + 1 = q(16c + 4s + e);
 *   3-bit: words 3t + i (i = 0, 1, 2), byte e: bits 0-2 q(32t + 8i + e),
 *          bits 3-5 q(32t + 8i + 4 + e); bits 6-7 of word 3t / 3t + 1 the
 *          low two bits of q(32t + 24 + e) / q(32t + 28 + e), bits 6 / 7 of
 *          word 3t + 2 their third bits.
 * Then (word >> shift) & mask (per 32-bit lane: 0x0F0F0F0F, 0x03030303,
 * 0x07070707) holds four consecutive weights as bytes, in the order of the
 * activations: an int8 dot product against one activation dword adds into
 * each row's lane; and a float unpack of weight i is one shift, one mask
 * and one convert, as in QIGen's Algorithm 2. */
#ifndef LB_REPACK_QG_H
#define LB_REPACK_QG_H

#include "formats/gq.h"
#include "formats/repack.h"

enum { LB_QG_ROWS = 16 };

/* x-block geometry of b bits, group g */
#define LB_QG_XBS(b, g) (16 * LB_GQ_SIZE(b, g))
#define LB_QG_S_OFF(b) (256 * (b))
#define LB_QG_Z_OFF(b, g) (256 * (b) + 32 * (QK_GQ / (g)))
#define LB_QG_P_OFF(b, g) (256 * (b) + 48 * (QK_GQ / (g)))

/* 1 for the GQ types (bases of these layouts). */
int lb_repack_is_qg(int base);
/* GQ type -> its _QG type and back; -1 for other types. */
int lb_qg_type_of(int gq_type);
int lb_gq_type_of_qg(int qg_type);
const lb_type_traits *lb_repack_qg_traits(int type);
void lb_repack_qg_tensor(const lb_repack_layout *L, const void *plain, void *packed, int64_t K, int64_t N);
void lb_unpack_qg_tensor(const lb_repack_layout *L, const void *packed, void *plain, int64_t K, int64_t N);

/* Code j (0..127) of row r (0..15) in an x-block of b bits, as re-encoded above. */
int lb_qg_get_code(const uint8_t *xb, int bits, int r, int j);

#endif
