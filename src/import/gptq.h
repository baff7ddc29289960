/* GPTQ checkpoints (AutoGPTQ, GPTQModel, transformers/optimum) inside Hugging
 * Face directories: each quantized linear layer PREFIX is stored as
 *
 *   PREFIX.qweight  I32 [K*b/32, N]  codes, packed along the input dimension K:
 *                                    column n is one little-endian bit stream,
 *                                    input k at bits b*k (3-bit: 96-bit runs)
 *   PREFIX.qzeros   I32 [G, N*b/32]  zero points, packed the same way along N
 *   PREFIX.scales   F16 [G, N]       (BF16 and F32 are read too)
 *   PREFIX.g_idx    I32 [K]          group of each input (optional)
 *
 * with G = ceil(K / group_size) (1 for group_size -1) and, per weight,
 * w[n][k] = scales[g][n] * (q[k][n] - z[g][n]), g = g_idx[k]. Checkpoint
 * format "gptq" (v1) stores z - 1 (so z = (stored + 1) mod 2^b), "gptq_v2"
 * stores z. Matrices whose codes fit a GQ{b}_G{g} type (formats/gq.h) are
 * written as one, bit for bit (codes, fp16 scales, zeros); group_size -1 as
 * GQ{b}_GC plus its side tensor NAME.gq_sz (formats/gqc.h), act-order or
 * not; the others can be dequantized exactly instead. docs/gptq-import.md has the details. */
#ifndef LB_IMPORT_GPTQ_H
#define LB_IMPORT_GPTQ_H

#include "import/convert.h"
#include "import/json.h"
#include "import/safetensors.h"

typedef struct {
    int bits;               /* 2, 3, 4 or 8 */
    int group;              /* group_size; -1: one group per column */
    int v1;                 /* checkpoint_format "gptq": stored zero = z - 1 */
    int desc_act, sym;      /* as the config says (sym is informational) */
    int dequantize;         /* matrices become floats of the plan's type instead of GQ */
    char where[48];         /* the file the config came from, for messages */
    char base_name[256];    /* quantize_config.json's model_file_base_name ("" if none) */
} gptq_config;

/* Looks for a GPTQ quantization config: config.json's "quantization_config"
 * (config is its root), else dir/quantize_config.json. *found = 0 (LB_OK)
 * when there is none. Errors: another quant_method, a checkpoint format other
 * than gptq / gptq_v2, bits or group_size that GPTQ does not produce, or
 * (without dequantize) ones that no GQ type holds, each saying why. */
lb_status gptq_read_config(const char *dir, const json_value *config, int dequantize, gptq_config *q,
                           int *found);

typedef struct {
    const st_file *file;
    const st_tensor *t;     /* NULL: absent */
} gptq_part;

typedef struct {
    const char *prefix;     /* e.g. "model.layers.0.self_attn.q_proj", for messages */
    gptq_part qweight, qzeros, scales, g_idx;
    int64_t n_out, n_in;    /* N and K as config.json implies */
    int permute_heads;      /* >0: output rows in HF rotate-half order within this many heads */
} gptq_matrix;

/* Checks one quantized matrix against the config and adds it to the plan as
 * gguf_name: as GQ{bits}_G{group} (group -1: GQ{bits}_GC and gguf_name.gq_sz,
 * two tensors) when its codes can be kept, else (with
 * q->dequantize) as floats converted to the plan's type. Malformed tensors
 * give LB_ERR_FORMAT, matrices no GQ type holds LB_ERR_UNSUPPORTED naming
 * the reason and the way out (dequantizing). */
lb_status gptq_add_matrix(imp_plan *p, const gptq_config *q, const gptq_matrix *m, const char *gguf_name);

/* Length of name's GPTQ suffix (".qweight", ".qzeros", ".scales", ".g_idx"), 0 if none. */
size_t gptq_suffix_len(const char *name);

#endif
