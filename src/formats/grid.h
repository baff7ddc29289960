/* GPTQ's view of a weight type (model/gptq.c): which columns share their
 * quantization parameters, and how one weight is rounded onto the grid those
 * parameters define.
 *
 * GPTQ quantizes a row-major N x K matrix one input column at a time and
 * pushes each column's rounding error onto the columns not yet quantized.
 * A type's parameters (scales, mins, codebook choices) cover `width`
 * consecutive columns of a row; GPTQ fixes them from the current (already
 * error-corrected) weights when it reaches the first of those columns, by
 * running the type's own quantizer on them (fix), then rounds each column
 * onto that fixed grid as it comes (round). The block bytes fix wrote and
 * round rewrote are the output: the file stays byte-compatible with the type
 * (llama.cpp's reader sees an ordinary block). */
#ifndef LB_GRID_H
#define LB_GRID_H

#include <stdint.h>

typedef struct {
    int width; /* columns whose parameters are fixed together; divides the type's block */
    /* Chooses the parameters of x[0..width), the columns col..col+width-1 of
     * block blk (col % width == 0), and quantizes them into blk with the
     * type's own quantizer; imp: importance per column (NULL: none). */
    void (*fix)(void *blk, int col, const float *x, const float *imp);
    /* Rounds x onto the grid at column col of blk (parameters already
     * fixed): stores its code in blk, returns the value it dequantizes to. */
    float (*round)(void *blk, int col, float x);
    /* Optional (NULL where a weight is not s * c with one scale s per
     * `width` columns and integer-valued c): the scale refit after GPTQ
     * (model/gptq_refit.h). codes() writes the c of columns col..col+width-1 of
     * blk and returns their s; set_scale() stores s as the type stores it
     * (fp16, which the refit assumes when it compares) and returns the
     * value stored. The GQ types, Q4_0, Q5_0, Q8_0 and IQ4_NL have them. */
    float (*codes)(const void *blk, int col, float *c);
    float (*set_scale)(void *blk, int col, float s);
} lb_grid;

/* NULL: the type has no GPTQ rounding (floats, interleaved layouts). */
const lb_grid *lb_grid_get(int type);
/* A grid whose fix() uses the symmetric variant of the type's quantizer
 * (the GQ types: z = 2^(b-1)); NULL for types that have none (llama.cpp's
 * types each have one fixed convention). */
const lb_grid *lb_grid_get_sym(int type);

#endif
