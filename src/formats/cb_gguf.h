/* CB2 / CB3 codebooks in GGUF metadata (formats/cb.h says how they are used):
 *   lowbit.codebooks.cb2.count  u32    C (4, 8 or 16)
 *   lowbit.codebooks.cb2        int8[] C books of 4 centroids, book after book
 *   lowbit.codebooks.cb3.count  u32    C
 *   lowbit.codebooks.cb3        int8[] C books of 8 centroids
 * A model file with CB tensors carries the books of their types; a codebook
 * file (`lowbit codebooks`) is a GGUF with only these keys. */
#ifndef LB_CB_GGUF_H
#define LB_CB_GGUF_H

#include "formats/cb.h"
#include "gguf/gguf.h"

/* Reads type's books. Absent keys: *found = 0 and LB_OK; present but
 * malformed: LB_ERR_FORMAT naming the problem. */
lb_status lb_cb_books_read(const gguf_file *g, int type, lb_cb_books *out, int *found);
lb_status lb_cb_books_write(gguf_writer *w, int type, const lb_cb_books *b);

/* For a model file: validates any codebook keys and acquires the books of
 * every CB type its tensors use (a CB tensor without books is an error).
 * *held receives what to give to lb_cb_release_held. */
lb_status lb_cb_acquire_for_file(const gguf_file *g, int *held);
void lb_cb_release_held(int held);

/* Collects weight groups from every quantizable matrix (2-D *.weight, not a
 * norm, rows a multiple of 256) of g, sampling about `sample` groups
 * (0: all), and runs lb_cb_discover. *n_total receives the number of groups
 * the file has, so callers can say what fraction was sampled. */
lb_status lb_cb_discover_file(const gguf_file *g, const lb_cb_discover_params *p, int64_t sample, lb_cb_books *out,
                              int64_t *n_total, int64_t *n_used);

#endif
