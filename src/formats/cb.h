/* CB2 and CB3: group-wise fine-grained codebook formats (seed 000, §5.2-5.3).
 *
 * A super-block holds 256 weights in 16 sub-groups of 16. Every sub-group
 * picks one of C model-wide codebooks (C = 4, 8 or 16; each book holds 4
 * centroids for CB2, 8 for CB3) and a small integer scale; every weight is a
 * 2-bit (CB2) or 3-bit (CB3) index into the chosen book:
 *
 *     w = d * s_j * book[cb_j][q]        d: fp16 per super-block
 *
 * Sub-group fields. The book index needs log2(C) bits, the scale whatever is
 * left of a 6-bit field: 16 fields x 6 bits = 12 bytes per super-block, so
 *     CB2 = 12 + 64 + 2      = 78 bytes  = 2.4375 bits per weight (Q2_K: 2.625)
 *     CB3 = 12 + 64 + 32 + 2 = 110 bytes = 3.4375 bits per weight (Q3_K: 3.4375)
 * whatever C is. Field j = cb | (sc << log2 C) with the scale s = sc + 1 in
 * 1..2^(6 - log2 C): C = 4 leaves 4 scale bits, C = 8 three, C = 16 two (a
 * larger C buys more book shapes with coarser scales; bench/quant-quality
 * measures the trade). Packing: the low 4 bits of field j are nibble j/8 of
 * meta[j % 8], its top 2 bits are bits 2*(j/4)..+1 of meta[8 + j % 4]; a few
 * 32-bit shifts and masks unpack all 16 (lb_cb_unpack_meta).
 *
 * Centroids are int8 in [-64, 63] (one bit below int8's range): a kernel adds
 * 64 to make them unsigned 0..127 for an unsigned x signed byte multiply
 * (maddubs) without overflow and removes 64 * sum(activations) exactly with
 * Q8_K's per-16 sums, which line up with the sub-groups. Books are sorted
 * ascending (the quantizer's nearest-centroid search relies on it).
 *
 * Index layout: as Q2_K, byte l of each 32-byte chunk of qs holds the low
 * two bits of weights l, l+32, l+64, l+96 of its 128 (bits 0-1, 2-3, 4-5,
 * 6-7), so one 32-byte load and a shift give the indices of 32 consecutive
 * weights = two sub-groups. CB3's third bit of weight l + 32t is bit t of
 * qh[l] (as Q3_K's hmask).
 *
 * Where the books live: the traits functions (to_float, from_float, vec_dot)
 * take no context, so the codebooks in force are process-wide, one set per
 * type, installed before a model is loaded or quantized (lb_cb_acquire) and
 * released with it. Installing a different set while one is held fails with
 * a clear error instead of silently mixing books, so two models with
 * different books cannot be loaded in one process at once (the paper's books
 * are meant to be shared across models anyway, §6.5). Until anything is
 * installed a built-in set is in force, so a synthetic CB model works. */
#ifndef LB_CB_H
#define LB_CB_H

#include "formats/kquants.h"

#define QK_CB 256
#define CB_SUB 16                  /* weights per sub-group */
#define CB_NSUB (QK_CB / CB_SUB)   /* sub-groups per super-block */
#define CB_FIELD_BITS 6            /* book index + scale per sub-group */
#define CB_MAX_BOOKS 16
#define CB_MAX_K 8                 /* centroids per book (CB3) */
#define CB_VMIN (-64)              /* centroid range */
#define CB_VMAX 63

typedef struct {
    uint8_t meta[12];  /* 16 packed 6-bit sub-group fields */
    uint8_t qs[64];    /* 2-bit indices */
    lb_fp16 d;
} block_cb2;
static_assert(sizeof(block_cb2) == 78, "block_cb2 size");

typedef struct {
    uint8_t meta[12];
    uint8_t qs[64];    /* low 2 bits of the 3-bit indices */
    uint8_t qh[32];    /* third bit: weight l + 32t at bit t of qh[l] */
    lb_fp16 d;
} block_cb3;
static_assert(sizeof(block_cb3) == 110, "block_cb3 size");

/* One type's model-wide codebooks. */
typedef struct {
    int count;                         /* C: 4, 8 or 16 */
    int k;                             /* centroids per book: 4 (CB2) or 8 (CB3) */
    int8_t v[CB_MAX_BOOKS][CB_MAX_K];  /* ascending, in [CB_VMIN, CB_VMAX] */
} lb_cb_books;

/* Derived constants for a book set, prepared once when it is installed. */
typedef struct {
    lb_cb_books books;
    int cbits;           /* log2(count) */
    int smax;            /* largest scale: 2^(6 - cbits) */
    /* narrow books: every |s * centroid| <= 127 (centroids within +-7,
     * +-15, +-31 for C = 4, 8, 16), so the kernels may fold the sub-group
     * scales into integer sums: AMX multiplies s * c bytes, and for C <= 8
     * a sub-group's sum of 16 products fits int16 (16 * 15 * 128 < 2^15)
     * for vpdpwssd, as Q2_K's does */
    int narrow;
    /* kernel tables: entry (cb << log2 k) | q = book[cb][q] + 64, i.e. the
     * combined index of the paper's §6.5, 16 bytes per 128-bit table */
    uint8_t table[CB_MAX_BOOKS * CB_MAX_K] __attribute__((aligned(64)));
    /* each book's k entries (+64) repeated to fill 16 bytes */
    uint8_t lane[CB_MAX_BOOKS][16] __attribute__((aligned(64)));
    /* pair[a | b << cbits]: lane[a] then lane[b], the 32-byte table of two
     * neighbouring sub-groups with books a and b (8 KiB for 16 books) */
    uint8_t pair[CB_MAX_BOOKS * CB_MAX_BOOKS][32] __attribute__((aligned(64)));
    /* the Arm kernels' (kernels/arm_kq*.c: SDOT and SMMLA multiply signed by
     * signed, so no +64): table and lane as signed centroids */
    int8_t stable[CB_MAX_BOOKS * CB_MAX_K] __attribute__((aligned(64)));
    int8_t slane[CB_MAX_BOOKS][16] __attribute__((aligned(64)));
} lb_cb_set;

/* The largest |centroid| of narrow books of `count` books: 127 / smax
 * (7, 15, 31 for C = 4, 8, 16). */
int lb_cb_narrow_limit(int count);

/* k for a type (4 or 8), 0 if type is not CB2/CB3. */
int lb_cb_k(int type);

/* Checks counts, ranges and order; LB_ERR_FORMAT with a message if wrong. */
lb_status lb_cb_books_validate(const lb_cb_books *b);

/* The set in force for CB2 or CB3 (never NULL for those types). */
const lb_cb_set *lb_cb_current(int type);
/* Installs books for type (CB2/CB3) and takes a reference. Fails with
 * LB_ERR_UNSUPPORTED if a different set is held; the same set just adds a
 * reference. Every successful acquire needs one release; the last release
 * restores the built-in set. */
lb_status lb_cb_acquire(int type, const lb_cb_books *b);
void lb_cb_release(int type);
/* The built-in set (found by `lowbit codebooks` on Gemma 3 270M), C = 8. */
const lb_cb_books *lb_cb_builtin(int type);

/* Sub-group fields of a block: field j = cb | ((s - 1) << cbits). Inline:
 * every kernel unpacks them once per super-block. */
static inline void lb_cb_unpack_meta(const uint8_t meta[12], uint8_t field[CB_NSUB]) {
    uint64_t lo;
    uint32_t hi;
    memcpy(&lo, meta, 8);
    memcpy(&hi, meta + 8, 4);
    const uint64_t nib = 0x0F0F0F0F0F0F0F0FULL;
    const uint32_t two = 0x03030303u;
    /* the top bits of fields 4j..4j+3 are bit pair j of bytes 8..11 */
    const uint64_t top_lo = (uint64_t)((hi & two) << 4) | ((uint64_t)(((hi >> 2) & two) << 4) << 32);
    const uint64_t top_hi = (uint64_t)(((hi >> 4) & two) << 4) | ((uint64_t)(((hi >> 6) & two) << 4) << 32);
    const uint64_t f0 = (lo & nib) | top_lo, f1 = ((lo >> 4) & nib) | top_hi;
    memcpy(field, &f0, 8);
    memcpy(field + 8, &f1, 8);
}
void lb_cb_pack_meta(const uint8_t field[CB_NSUB], uint8_t meta[12]);

/* A super-block before packing. */
typedef struct {
    float d;
    uint8_t cb[CB_NSUB];
    uint8_t s[CB_NSUB];     /* 1..smax */
    uint8_t q[QK_CB];       /* 0..k-1 */
} lb_cb_unpacked;

/* Post-training quantization of one super-block (Algorithm 1, lines 11-15):
 * per sub-group the book, scale and indices with the lowest weighted squared
 * error given the super-block scale. imp: per-weight importance (NULL: 1).
 * smax and the books come from set. */
void lb_cb_quantize_block(const float *x, const float *imp, const lb_cb_set *set, lb_cb_unpacked *out);
void lb_cb_pack(int type, const lb_cb_set *set, const lb_cb_unpacked *u, void *block);

/* ---- reference routines (k a multiple of 256, the books in force) ---- */
void lb_quantize_row_cb2_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_cb2(const void *x, float *y, int64_t k);
void lb_vec_dot_cb2_q8_K_ref(int64_t n, float *s, const void *w, const void *a);
void lb_quantize_row_cb3_ref(const float *x, void *y, int64_t k);
void lb_dequantize_row_cb3(const void *x, float *y, int64_t k);
void lb_vec_dot_cb3_q8_K_ref(int64_t n, float *s, const void *w, const void *a);
/* With an importance vector of k entries (e.g. an imatrix row), NULL: none. */
void lb_quantize_row_cb_imp(int type, const float *x, void *y, int64_t k, const float *imp);

/* Importance-weighted quantizers (formats/kquants_imat.c): Q2_K and Q3_K as
 * llama.cpp's imatrix path (ordinary blocks), and the dispatcher the file
 * quantizer uses: quantizes k weights with importance imp[k] and returns 1
 * for CB2, CB3, Q2_K, Q3_K and IQ4_XS; returns 0 (and writes nothing) for others. */
void lb_quantize_row_q2_K_imat(const float *x, void *y, int64_t k, const float *imp);
void lb_quantize_row_q3_K_imat(const float *x, void *y, int64_t k, const float *imp);
int lb_quantize_row_weighted(int type, const float *x, void *y, int64_t k, const float *imp);

/* Traits of CB2/CB3, NULL for other types. */
const lb_type_traits *lb_cb_traits(int type);

/* ---- codebook discovery (Algorithm 1, lines 1-10; formats/cb_discover.c) ---- */
typedef struct {
    int count;          /* C: 4, 8 or 16 */
    int k;              /* 4 or 8 */
    uint64_t seed;
    int bins;           /* phase-1 histogram bins over the int8 range (0: 16) */
    int iters;          /* k-means iterations per phase (0: 30) */
    int refine;         /* extra quantize-and-recenter passes after phase 2 */
    int n_threads;
    lb_progress_fn progress;
    void *user;
} lb_cb_discover_params;

/* Groups scaled into int8 (max |w| -> 127), 16 values each. */
typedef struct {
    int8_t (*g)[CB_SUB];
    int64_t n, cap;
} lb_cb_groups;

/* Adds the sub-groups of n weights (n a multiple of 16) whose global index
 * g0 + i passes the seeded sampling test at rate `rate` (1: all). */
lb_status lb_cb_groups_add(lb_cb_groups *G, const float *x, int64_t n, int64_t g0, double rate,
                           uint64_t seed);
void lb_cb_groups_free(lb_cb_groups *G);

/* The largest |centroid| discovery gives C books of k centroids: narrow
 * books for CB2 (k = 4), +-63 for CB3. */
int lb_cb_discover_limit(int count, int k);

/* Phase 1: k-means over the groups' normalised histograms into C clusters;
 * phase 2: 1-D k-means over each cluster's values for k centroids; phase 3
 * (p->refine passes, 0: none): recentring on the quantizer's own choices. */
lb_status lb_cb_discover(const lb_cb_groups *G, const lb_cb_discover_params *p, lb_cb_books *out);

#endif
