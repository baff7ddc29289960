/* Importance matrices: the mean squared activation of every input column of
 * every weight matrix, gathered over calibration text (`lowbit imatrix`) and
 * used by the quantizers to weight reconstruction errors (a column that
 * carries larger activations matters more to the layer's output).
 *
 * File format: llama.cpp's GGUF imatrix (general.type = "imatrix"): for
 * each matrix NAME, F32 tensors NAME.in_sum2 [K] (sum of x^2 per column) and
 * NAME.counts [1] (activation rows summed), plus imatrix.chunk_count,
 * imatrix.chunk_size and imatrix.datasets. A MoE tensor's experts (3-D
 * NAME) have one row each: NAME.in_sum2 [K, n_expert], NAME.counts [1,
 * n_expert], as llama-imatrix writes them. Files written by llama-imatrix in
 * this format load too. */
#ifndef LB_IMATRIX_H
#define LB_IMATRIX_H

#include "model/model.h"

typedef struct lb_imatrix lb_imatrix;

lb_status lb_imatrix_load(const char *path, lb_imatrix **out);
void lb_imatrix_free(lb_imatrix *im);
/* Mean squared activations of matrix `name` (K entries), NULL if the file has
 * none of that width. */
const float *lb_imatrix_get(const lb_imatrix *im, const char *name, size_t name_len, int64_t K);
/* The same with per-expert rows: *n_mat rows of K (1 for a plain matrix);
 * an expert the text never reached has every column 1. */
const float *lb_imatrix_get_mats(const lb_imatrix *im, const char *name, size_t name_len, int64_t K, int *n_mat);
int lb_imatrix_count(const lb_imatrix *im);

/* Collecting: installs the context's matmul observer and sums x^2 per input
 * column of every weight matrix of the model. */
typedef struct lb_imatrix_collector lb_imatrix_collector;
lb_status lb_imatrix_collector_new(lb_context *ctx, lb_imatrix_collector **out);
/* Writes the file; chunks/chunk_size/dataset go to the metadata. */
lb_status lb_imatrix_collector_write(const lb_imatrix_collector *col, const char *path, int chunks, int chunk_size,
                                     const char *dataset);
/* Removes the observer and frees. */
void lb_imatrix_collector_free(lb_imatrix_collector *col);

#endif
