/* CB2 / CB3 (formats/cb.h): the process-wide codebook sets, sub-group field
 * packing, and the scalar reference dequantize and dot with Q8_K. */
#include <stdatomic.h>
#include <stdlib.h>

#include "formats/cb.h"

/* ---- the books in force ---- */

/* Built-in books: `lowbit codebooks --count 8` (seed 1, --bits 2 and 3) on
 * the 256-aligned matrices of Gemma 3 270M, so a synthetic CB model or a
 * quick experiment works without a codebook file; files always carry their
 * own. In force whenever no model or quantizer holds a set. */
static const lb_cb_books builtin_cb2 = {8, 4, {
    {-12, -4, 3, 9},
    {-9, -1, 4, 12},
    {-13, -4, 1, 9},
    {-7, 0, 6, 15},
    {-15, -6, 0, 7},
    {-11, -2, 4, 10},
    {-9, -3, 4, 12},
    {-10, -4, 2, 11},
}};
static const lb_cb_books builtin_cb3 = {8, 8, {
    {-53, -37, -21, -7, 6, 20, 36, 52},
    {-59, -33, -19, -7, 4, 16, 30, 56},
    {-55, -27, -14, -4, 7, 19, 34, 63},
    {-50, -35, -18, -3, 12, 26, 41, 58},
    {-59, -42, -26, -11, 2, 17, 34, 49},
    {-62, -40, -24, -11, 1, 13, 28, 53},
    {-48, -31, -15, -3, 8, 21, 39, 60},
    {-57, -32, -17, -3, 9, 20, 33, 53},
}};

static lb_cb_set sets[2];
static int refs[2];
static atomic_int ready;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static void take_lock(void) { while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {} }
static void drop_lock(void) { atomic_flag_clear_explicit(&lock, memory_order_release); }

int lb_cb_k(int type) { return type == LB_TYPE_CB2 ? 4 : type == LB_TYPE_CB3 ? 8 : 0; }
static int slot(int type) { return type == LB_TYPE_CB3; }

const lb_cb_books *lb_cb_builtin(int type) { return type == LB_TYPE_CB3 ? &builtin_cb3 : &builtin_cb2; }

lb_status lb_cb_books_validate(const lb_cb_books *b) {
    if (b->k != 4 && b->k != 8) return lb_fail(LB_ERR_FORMAT, "codebooks: %d centroids per book (expected 4 or 8)", b->k);
    if (b->count != 4 && b->count != 8 && b->count != 16)
        return lb_fail(LB_ERR_FORMAT, "codebooks: %d books (expected 4, 8 or 16)", b->count);
    for (int c = 0; c < b->count; c++)
        for (int i = 0; i < b->k; i++) {
            const int v = b->v[c][i];
            if (v < CB_VMIN || v > CB_VMAX)
                return lb_fail(LB_ERR_FORMAT, "codebooks: book %d entry %d = %d is outside [%d, %d]", c, i, v,
                               CB_VMIN, CB_VMAX);
            if (i && v < b->v[c][i - 1])
                return lb_fail(LB_ERR_FORMAT, "codebooks: book %d is not in ascending order", c);
        }
    return LB_OK;
}

static int cbits_of(int count) { return count == 4 ? 2 : count == 8 ? 3 : 4; }

int lb_cb_narrow_limit(int count) { return 127 >> (CB_FIELD_BITS - cbits_of(count)); }

static void prepare(lb_cb_set *s, const lb_cb_books *b) {
    memset(s, 0, sizeof *s);
    s->books = *b;
    s->cbits = cbits_of(b->count);
    s->smax = 1 << (CB_FIELD_BITS - s->cbits);
    s->narrow = 1;
    for (int c = 0; c < b->count; c++)
        for (int i = 0; i < b->k; i++) {
            const uint8_t u = (uint8_t)(b->v[c][i] + 64);
            s->table[c * b->k + i] = u;
            s->stable[c * b->k + i] = b->v[c][i];
            if (abs(b->v[c][i]) > lb_cb_narrow_limit(b->count)) s->narrow = 0;
            for (int r = i; r < 16; r += b->k) s->lane[c][r] = u, s->slane[c][r] = b->v[c][i];
        }
    for (int a = 0; a < b->count; a++)
        for (int c = 0; c < b->count; c++) {
            memcpy(s->pair[a | c << s->cbits], s->lane[a], 16);
            memcpy(s->pair[a | c << s->cbits] + 16, s->lane[c], 16);
        }
}

static void ensure_ready(void) {
    if (atomic_load_explicit(&ready, memory_order_acquire)) return;
    take_lock();
    if (!atomic_load_explicit(&ready, memory_order_relaxed)) {
        prepare(&sets[0], &builtin_cb2);
        prepare(&sets[1], &builtin_cb3);
        atomic_store_explicit(&ready, 1, memory_order_release);
    }
    drop_lock();
}

const lb_cb_set *lb_cb_current(int type) {
    ensure_ready();
    return &sets[slot(type)];
}

static int same_books(const lb_cb_books *a, const lb_cb_books *b) {
    if (a->count != b->count || a->k != b->k) return 0;
    for (int c = 0; c < a->count; c++)
        if (memcmp(a->v[c], b->v[c], (size_t)a->k)) return 0;
    return 1;
}

lb_status lb_cb_acquire(int type, const lb_cb_books *b) {
    if (!lb_cb_k(type)) return lb_fail(LB_ERR_ARG, "type id %d has no codebooks", type);
    if (b->k != lb_cb_k(type))
        return lb_fail(LB_ERR_FORMAT, "%s codebooks need %d centroids per book, got %d", lb_type_name(type),
                       lb_cb_k(type), b->k);
    lb_status s = lb_cb_books_validate(b);
    if (s) return s;
    ensure_ready();
    take_lock();
    lb_cb_set *cur = &sets[slot(type)];
    if (refs[slot(type)] > 0 && !same_books(&cur->books, b)) {
        drop_lock();
        return lb_fail(LB_ERR_UNSUPPORTED,
                       "different %s codebooks are already in use by another model in this process "
                       "(free it first)", lb_type_name(type));
    }
    /* Rewriting the same books while kernels read them would be a race even
     * if harmless; only an unheld set is replaced. */
    if (refs[slot(type)] == 0) prepare(cur, b);
    refs[slot(type)]++;
    drop_lock();
    return LB_OK;
}

void lb_cb_release(int type) {
    if (!lb_cb_k(type)) return;
    take_lock();
    /* the last holder gone: back to the built-in set, so what is in force
     * never depends on what some earlier, finished user installed */
    if (refs[slot(type)] > 0 && --refs[slot(type)] == 0) prepare(&sets[slot(type)], lb_cb_builtin(type));
    drop_lock();
}

/* ---- sub-group fields ---- */

void lb_cb_pack_meta(const uint8_t field[CB_NSUB], uint8_t meta[12]) {
    memset(meta, 0, 12);
    for (int j = 0; j < CB_NSUB; j++) {
        meta[j % 8] |= (uint8_t)((field[j] & 0xF) << (4 * (j / 8)));
        meta[8 + j % 4] |= (uint8_t)(((field[j] >> 4) & 3) << (2 * (j / 4)));
    }
}

/* ---- reference dequantize and dot ---- */

/* Index of weight 128c + 32t + l (t = 0..3) of a block. */
static inline int q2_index(const uint8_t *qs, int c, int t, int l) { return (qs[32 * c + l] >> (2 * t)) & 3; }

static inline int cb_index(int type, const void *blk, int w) {
    const int c = w / 128, t = (w % 128) / 32, l = w % 32;
    if (type == LB_TYPE_CB2) return q2_index(((const block_cb2 *)blk)->qs, c, t, l);
    const block_cb3 *b = blk;
    return q2_index(b->qs, c, t, l) | (((b->qh[l] >> (4 * c + t)) & 1) << 2);
}

static void dequantize_row(int type, const void *vx, float *y, int64_t k) {
    const lb_cb_set *set = lb_cb_current(type);
    const size_t bs = type == LB_TYPE_CB2 ? sizeof(block_cb2) : sizeof(block_cb3);
    const int mask = set->books.count - 1;
    for (int64_t i = 0; i < k / QK_CB; i++) {
        const void *blk = (const char *)vx + (size_t)i * bs;
        /* meta and d sit at the same offsets in both blocks except d */
        const uint8_t *meta = blk;
        const lb_fp16 dh = type == LB_TYPE_CB2 ? ((const block_cb2 *)blk)->d : ((const block_cb3 *)blk)->d;
        const float d = lb_fp16_to_f32(dh);
        uint8_t f[CB_NSUB];
        lb_cb_unpack_meta(meta, f);
        for (int w = 0; w < QK_CB; w++) {
            const int j = w / CB_SUB;
            const float scale = d * (float)((f[j] >> set->cbits) + 1);
            *y++ = scale * (float)set->books.v[f[j] & mask][cb_index(type, blk, w)];
        }
    }
}

static void vec_dot(int type, int64_t n, float *s, const void *vw, const void *va) {
    const lb_cb_set *set = lb_cb_current(type);
    const size_t bs = type == LB_TYPE_CB2 ? sizeof(block_cb2) : sizeof(block_cb3);
    const block_q8_K *a = va;
    const int mask = set->books.count - 1;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_CB; i++) {
        const void *blk = (const char *)vw + (size_t)i * bs;
        const lb_fp16 dh = type == LB_TYPE_CB2 ? ((const block_cb2 *)blk)->d : ((const block_cb3 *)blk)->d;
        uint8_t f[CB_NSUB];
        lb_cb_unpack_meta(blk, f);
        int32_t isum = 0;
        for (int j = 0; j < CB_NSUB; j++) {
            const int8_t *book = set->books.v[f[j] & mask];
            int32_t sub = 0;
            for (int w = CB_SUB * j; w < CB_SUB * (j + 1); w++) sub += book[cb_index(type, blk, w)] * a[i].qs[w];
            isum += ((f[j] >> set->cbits) + 1) * sub;
        }
        /* the AVX2 kernel forms the same integer and the same float product */
        sumf += (lb_fp16_to_f32(dh) * a[i].d) * (float)isum;
    }
    *s = sumf;
}

void lb_dequantize_row_cb2(const void *x, float *y, int64_t k) { dequantize_row(LB_TYPE_CB2, x, y, k); }
void lb_dequantize_row_cb3(const void *x, float *y, int64_t k) { dequantize_row(LB_TYPE_CB3, x, y, k); }
void lb_vec_dot_cb2_q8_K_ref(int64_t n, float *s, const void *w, const void *a) { vec_dot(LB_TYPE_CB2, n, s, w, a); }
void lb_vec_dot_cb3_q8_K_ref(int64_t n, float *s, const void *w, const void *a) { vec_dot(LB_TYPE_CB3, n, s, w, a); }

static const lb_type_traits traits_cb2 = {"CB2", QK_CB, sizeof(block_cb2), 1, LB_TYPE_Q8_K,
    lb_dequantize_row_cb2, lb_quantize_row_cb2_ref, lb_vec_dot_cb2_q8_K_ref};
static const lb_type_traits traits_cb3 = {"CB3", QK_CB, sizeof(block_cb3), 1, LB_TYPE_Q8_K,
    lb_dequantize_row_cb3, lb_quantize_row_cb3_ref, lb_vec_dot_cb3_q8_K_ref};

const lb_type_traits *lb_cb_traits(int type) {
    return type == LB_TYPE_CB2 ? &traits_cb2 : type == LB_TYPE_CB3 ? &traits_cb3 : NULL;
}
