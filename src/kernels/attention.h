/* Causal self-attention over the KV cache, with grouped-query heads and an
 * optional sliding window.
 *
 * Cache layout (one layer): K is stored transposed in blocks of
 * LB_ATTN_KB positions, [n_head_kv][n_ctx / KB][head_dim][KB], so a block
 * product Q x K^T reads contiguous rows of KB keys (vector loads, no
 * horizontal sums, no transposing per query); V is [n_head_kv][n_ctx][hd_pad],
 * rows zero-padded to a multiple of 32 floats so P x V needs no tail code.
 *
 * Work unit: one KV head and a block of query tokens; its rows are all the
 * query heads of the group for those tokens, so every K and V row loaded is
 * reused by (tokens x group) queries.
 *
 * Position p lives in slot p mod n_ctx (block (p mod n_ctx) / KB, column
 * p mod KB; V row p mod n_ctx). A cache of all positions never wraps; a
 * sliding-window layer's cache may be a ring of n_ctx >= n + window - 1
 * slots: the keys a batch of n tokens sees (window - 1 before its first,
 * and its own) are then in distinct slots, and a block of positions maps to
 * one ring block, whose slots holding other positions are masked as the
 * keys outside a row's range always are. Per block of KB keys: S = Q K^T, an
 * online softmax (running max and sum per row; the output is rescaled only
 * when a score passes the max by a slack), O += P V; the output is O / sum
 * at the end. Every ISA level computes the same bits (kernels/attention.c),
 * but the AMX level with AMX-BF16, whose products for units of 16 rows or
 * more run on the tile unit in split bf16 (kernels/x86/attention_amx_impl.h):
 * within a float bound of the others.
 *
 * Element types: K and V are each f32, fp16 (IEEE half, round to nearest
 * even when stored; llama.cpp's -ctk/-ctv f16), q8_0 (llama.cpp's Q8_0
 * rounding of each 32 values of a key or value vector along head_dim, the
 * vector zero-padded to hd_pad: 34 bytes per 32 values) or q4_0 (its Q4_0
 * rounding: 18 bytes per 32). A q8_0 K block keeps the transposed layout for
 * its int8 codes, [head_dim][KB], followed by the fp16 scales,
 * [hd_pad / 32][KB]; a q4_0 K block holds its 4-bit codes two dimensions to
 * a byte, [(head_dim + 1) / 2][KB] (dimension 2i in the low nibble, 2i + 1 in
 * the high: each position owns its bytes, so tokens are stored side by side
 * without sharing one), then the scales likewise. A q8_0 V row is
 * hd_pad / 32 block_q8_0, a q4_0 row hd_pad / 32 block_q4_0 (llama.cpp's
 * layout: values 0-15 in the low nibbles, 16-31 in the high).
 * The kernels widen entries to f32 as they load them, exactly (a q8_0 entry
 * is code * scale, a q4_0 entry (code - 8) * scale, products of at most 8 and
 * 11 significant bits), so the arithmetic and its order are the f32 cache's
 * for the values the cache holds. */
#ifndef LB_ATTENTION_H
#define LB_ATTENTION_H

#include <stddef.h>

#include "kernels/cpu.h"

#define LB_ATTN_KB 32 /* positions per transposed K block */
#define LB_ATTN_VPAD 32 /* V row padding */

enum { LB_KV_F32 = 0, LB_KV_F16 = 1, LB_KV_Q8_0 = 2, LB_KV_Q4_0 = 3, LB_KV_TYPES = 4 }; /* cache element types */

/* LB_TYPE_F16 -> LB_KV_F16, LB_TYPE_Q8_0 -> LB_KV_Q8_0, LB_TYPE_Q4_0 ->
 * LB_KV_Q4_0, else LB_KV_F32 */
int lb_attn_kv_type(int lb_type);

/* llama.cpp's name of a cache element type (-ctk / -ctv): "f32", "f16", "q8_0", "q4_0" */
const char *lb_attn_kv_type_name(int kv_type);

typedef struct {
    const float *q;     /* token t, head h: q + t * q_stride + h * head_dim */
    float *out;         /* token t, head h: out + t * o_stride + h * head_dim */
    const void *k, *v;  /* this layer's cache, layout above */
    int k_type, v_type; /* element types: LB_KV_F32, LB_KV_F16, LB_KV_Q8_0, LB_KV_Q4_0 */
    size_t q_stride, o_stride;
    int n_ctx;          /* cache slots, a multiple of LB_ATTN_KB: position p in slot p mod n_ctx (above) */
    int n, pos0;        /* query token t is at position pos0 + t and sees keys up to it */
    int n_head, n_head_kv, head_dim;
    int window;         /* > 0: position p sees only keys p - window + 1 .. p */
    float scale;        /* applied to q . k */
    float softcap;      /* > 0: each score s becomes softcap * tanh(s / softcap) before the mask (Gemma 2) */
    const float *sinks; /* per query head, or NULL: a logit that joins the softmax's sum but has no value
                         * (gpt-oss): out = sum_j exp(s_j) v_j / (sum_j exp(s_j) + exp(sink)) */
} lb_attn_args;

/* n_ctx rounded up for the K layout; head_dim rounded up for V rows. */
int lb_attn_ctx_pad(int n_ctx);
int lb_attn_hd_pad(int head_dim);

/* Floats of scratch one thread needs (64-byte aligned per thread; room
 * for a block of keys and values widened from fp16 included). */
size_t lb_attn_scratch_floats(int head_dim, int group);

/* Bytes of one KV head's K block (KB positions) and of one V row. */
size_t lb_attn_k_block_bytes(int head_dim, int type);
size_t lb_attn_v_row_bytes(int head_dim, int type);

/* Bytes of one layer's K and V caches for n_ctx (padded) positions. */
size_t lb_attn_k_bytes(int n_ctx, int n_head_kv, int head_dim, int type);
size_t lb_attn_v_bytes(int n_ctx, int n_head_kv, int head_dim, int type);

/* Writes n tokens' keys and values (rows of n_head_kv * head_dim floats, row
 * strides k_stride, v_stride) at positions pos0.. into the cache of a layer
 * of n_ctx slots (position p in slot p mod n_ctx), whose K and V hold the
 * element types k_type, v_type. */
void lb_attn_store_kv(void *kc, void *vc, int k_type, int v_type, int n_ctx, int n_head_kv, int head_dim,
                      const float *k, size_t k_stride, const float *v, size_t v_stride, int n, int pos0);

/* Copies slots 0..n-1 (n <= n_ctx) of a layer's cache (src) to another
 * (dst) of the same shape and types. K goes in whole blocks, so dst's slots
 * n .. the end of the last block take src's entries too (undefined for dst
 * until written). */
void lb_attn_copy_kv(void *kd, void *vd, const void *ks, const void *vs, int k_type, int v_type, int n_ctx,
                     int n_head_kv, int head_dim, int n);

/* Runs the attention of a->n tokens on up to n_threads threads (one OpenMP
 * region), with the kernel of the ISA level in force. scratch holds
 * n_threads * lb_attn_scratch_floats() floats. */
void lb_attention(const lb_attn_args *a, float *scratch, int n_threads);

/* One work unit: KV head kvh, query tokens [t0, t1). */
typedef void (*lb_attn_block_fn)(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch);
lb_attn_block_fn lb_attn_block_get_at(lb_isa level);

#endif
