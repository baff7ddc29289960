/* An MX matrix as the kernels read it (formats/mx.h, lb_mx_view): the
 * checks a file's pieces must pass, and the scalar reference every MX
 * kernel is tested against. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "formats/mx.h"

void lb_mx_map_bytes(const lb_mx_matrix *m, uint8_t *dst) {
    for (int64_t g = 0; g < m->K / LB_MX_M; g++) dst[g] = (uint8_t)lb_mx_is_hi(m, g);
}

void lb_mx_outlier_words(const lb_mx_matrix *m, uint32_t *dst) {
    for (int64_t o = 0; o < m->n_out; o++) dst[o] = (uint32_t)m->out_col[o] | (uint32_t)m->out_val[o] << 16;
}

int lb_mx_side_piece(const char *name, size_t len) {
    static const char *const sfx[] = {LB_MX_SFX_HI, LB_MX_SFX_MAP, LB_MX_SFX_ROWS, LB_MX_SFX_OUT};
    for (int i = 0; i < 4; i++) {
        const size_t n = strlen(sfx[i]);
        if (len > n && !memcmp(name + len - n, sfx[i], n)) return i + 1;
    }
    return 0;
}

static uint64_t parts_bytes(const lb_mx_parts *p) {
    return p->lo_bytes + p->hi_bytes + (uint64_t)(p->K / LB_MX_M) +
           (p->row_ptr ? 4u * ((uint64_t)p->n_row_ptr + (uint64_t)p->n_cap) : 0u);
}

/* The outliers: CSR from 0, within the capacity, each column inside the
 * row, in a 2-bit group, increasing along the row, its value finite. */
static lb_status check_outliers(const lb_mx_parts *p) {
    if (!p->row_ptr) {
        if (p->n_cap || p->n_row_ptr)
            return lb_fail(LB_ERR_FORMAT, "MX: %lld outlier words but no row pointers", (long long)p->n_cap);
        return LB_OK;
    }
    if (p->n_row_ptr != p->N + 1)
        return lb_fail(LB_ERR_FORMAT, "MX: %lld outlier row pointers for %lld rows (want rows + 1)",
                       (long long)p->n_row_ptr, (long long)p->N);
    if (p->row_ptr[0] != 0) return lb_fail(LB_ERR_FORMAT, "MX: the first outlier row pointer is %u, not 0", p->row_ptr[0]);
    for (int64_t r = 0; r < p->N; r++) {
        const uint32_t a = p->row_ptr[r], b = p->row_ptr[r + 1];
        if (b < a || (int64_t)b > p->n_cap)
            return lb_fail(LB_ERR_FORMAT, "MX: outlier row pointer %lld (%u) is out of order or past the %lld words",
                           (long long)r + 1, b, (long long)p->n_cap);
        for (uint32_t o = a; o < b; o++) {
            const uint32_t w = p->outliers[o], col = w & 0xffffu;
            if ((int64_t)col >= p->K)
                return lb_fail(LB_ERR_FORMAT, "MX: outlier %u of row %lld has column %u, past the row's %lld",
                               o, (long long)r, col, (long long)p->K);
            if (p->map[col / LB_MX_M])
                return lb_fail(LB_ERR_FORMAT, "MX: outlier %u of row %lld (column %u) lies in a 4-bit group", o,
                               (long long)r, col);
            if (o > a && col <= (p->outliers[o - 1] & 0xffffu))
                return lb_fail(LB_ERR_FORMAT, "MX: the outliers of row %lld are not in increasing column order",
                               (long long)r);
            if (!isfinite(lb_fp16_to_f32((lb_fp16)(w >> 16))))
                return lb_fail(LB_ERR_FORMAT, "MX: outlier %u of row %lld is not a finite number", o, (long long)r);
        }
    }
    return LB_OK;
}

/* Checks p and fills v, its group lists in groups (K/32 entries). */
static lb_status build(const lb_mx_parts *p, lb_mx_view *v, uint16_t *groups) {
    if (p->N <= 0 || p->K <= 0 || p->N % LB_MX_ROWS || p->K % LB_MX_M || p->K > 65536)
        return lb_fail(LB_ERR_FORMAT, "MX: %lld x %lld is not whole tiles of 16 rows x 32 columns (at most 65536)",
                       (long long)p->N, (long long)p->K);
    const int64_t G = p->K / LB_MX_M, T = p->N / LB_MX_ROWS;
    int64_t n_hi = 0;
    for (int64_t g = 0; g < G; g++) {
        if (p->map[g] > 1) return lb_fail(LB_ERR_FORMAT, "MX: group map entry %lld is %u (0 or 1)", (long long)g, p->map[g]);
        n_hi += p->map[g];
    }
    const int64_t n_lo = G - n_hi;
    if (n_lo < 1) return lb_fail(LB_ERR_FORMAT, "MX: the group map has no 2-bit group");
    if (p->lo_bytes != (uint64_t)(T * n_lo) * sizeof(block_mx2) || !p->lo)
        return lb_fail(LB_ERR_FORMAT, "MX: %llu bytes of 2-bit tiles, %lld x %lld tiles want %llu",
                       (unsigned long long)p->lo_bytes, (long long)T, (long long)n_lo,
                       (unsigned long long)(T * n_lo) * sizeof(block_mx2));
    if (p->hi_bytes != (uint64_t)(T * n_hi) * sizeof(block_mx4) || (n_hi && !p->hi))
        return lb_fail(LB_ERR_FORMAT, "MX: %llu bytes of 4-bit tiles, %lld x %lld tiles want %llu",
                       (unsigned long long)p->hi_bytes, (long long)T, (long long)n_hi,
                       (unsigned long long)(T * n_hi) * sizeof(block_mx4));
    lb_status s = check_outliers(p);
    if (s) return s;
    for (int64_t g = 0, l = 0, h = n_lo; g < G; g++) groups[p->map[g] ? h++ : l++] = (uint16_t)g;
    *v = (lb_mx_view){p->N, p->K, n_lo, n_hi, p->lo, n_hi ? p->hi : NULL, groups, groups + n_lo,
                      p->row_ptr, p->row_ptr ? p->outliers : NULL, p->row_ptr ? p->n_cap : 0, parts_bytes(p)};
    return LB_OK;
}

lb_status lb_mx_view_make(const lb_mx_parts *p, lb_mx_view **out) {
    *out = NULL;
    const int64_t G = p->K > 0 && p->K <= 65536 ? p->K / LB_MX_M : 0;
    lb_mx_view *v = lb_malloc_aligned(sizeof *v + (size_t)G * sizeof(uint16_t));
    if (!v) return lb_fail(LB_ERR_NOMEM, "out of memory (MX view)");
    lb_status s = build(p, v, (uint16_t *)(v + 1));
    if (s) lb_free_aligned(v);
    else *out = v;
    return s;
}

lb_status lb_mx_view_of_matrix(const lb_mx_matrix *m, lb_mx_view **out) {
    *out = NULL;
    if (m->s1) return lb_fail(LB_ERR_ARG, "MX: fp16 first-order scales (an ablation) have no kernel");
    if (m->N <= 0 || m->K <= 0 || m->K % LB_MX_M || m->K > 65536) return lb_fail(LB_ERR_SHAPE, "MX: bad matrix shape");
    const int64_t G = m->K / LB_MX_M, T = m->N / LB_MX_ROWS;
    /* one block: the view, its group lists, the map bytes, the outlier words */
    const size_t at_map = sizeof(lb_mx_view) + (size_t)G * sizeof(uint16_t);
    const size_t at_words = (at_map + (size_t)G + 3u) & ~(size_t)3u;
    lb_mx_view *v = lb_malloc_aligned(at_words + (size_t)m->n_out * 4u);
    if (!v) return lb_fail(LB_ERR_NOMEM, "out of memory (MX view)");
    uint8_t *map = (uint8_t *)v + at_map;
    uint32_t *words = (uint32_t *)((uint8_t *)v + at_words);
    lb_mx_map_bytes(m, map);
    lb_mx_outlier_words(m, words);
    const lb_mx_parts p = {m->N, m->K, map, m->lo, m->hi, (uint64_t)(T * (G - m->n_hi)) * sizeof(block_mx2),
                           (uint64_t)(T * m->n_hi) * sizeof(block_mx4), m->n_out ? m->row_ptr : NULL,
                           m->n_out ? m->N + 1 : 0, words, m->n_out};
    lb_status s = build(&p, v, (uint16_t *)(v + 1));
    if (s) lb_free_aligned(v);
    else *out = v;
    return s;
}

/* ---- random pieces ---- */

typedef struct {
    int64_t n_hi, n_out;
    size_t lo_b, hi_b, off_map, off_rows, off_words, total;
} random_geom;

static random_geom geom(int64_t N, int64_t K, const lb_mx_params *p) {
    random_geom g;
    const int64_t G = K / LB_MX_M, T = N / LB_MX_ROWS;
    g.n_hi = LB_MIN((int64_t)lrint((double)p->hi_frac * (double)G), G - 1);
    g.n_out = (int64_t)((double)p->outlier_frac * (double)N * (double)K);
    g.lo_b = (size_t)(T * (G - g.n_hi)) * sizeof(block_mx2);
    g.hi_b = (size_t)(T * g.n_hi) * sizeof(block_mx4);
    g.off_map = (g.lo_b + g.hi_b + 63) & ~(size_t)63;
    g.off_rows = (g.off_map + (size_t)G + 63) & ~(size_t)63;
    g.off_words = g.off_rows + (size_t)(N + 1) * 4u;
    g.total = g.off_words + (size_t)g.n_out * 4u;
    return g;
}

size_t lb_mx_random_size(int64_t N, int64_t K, const lb_mx_params *p) { return geom(N, K, p).total; }

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void lb_mx_random_pieces(int64_t N, int64_t K, const lb_mx_params *p, uint64_t seed, void *buf, lb_mx_parts *parts) {
    const random_geom gm = geom(N, K, p);
    const int64_t G = K / LB_MX_M, T = N / LB_MX_ROWS, n_hi = gm.n_hi, n_lo = G - n_hi;
    uint8_t *b = buf;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < gm.lo_b + gm.hi_b; i += 8) {
        const uint64_t r = splitmix(&s);
        memcpy(b + i, &r, LB_MIN((size_t)8, gm.lo_b + gm.hi_b - i));
    }
    block_mx2 *lo = (block_mx2 *)b;
    block_mx4 *hi = (block_mx4 *)(b + gm.lo_b);
    /* codes average ~15 (c + z2) x 1.25 (|q - z|): s2 0.0015 gives |w| ~0.03 */
    const lb_fp16 s2 = lb_f32_to_fp16(0.0015f), s4 = lb_f32_to_fp16(0.005f);
    for (int64_t i = 0; i < T * n_lo; i++) memcpy(lo[i].s2, &s2, 2), memcpy(lo[i].s2 + 2, &s2, 2);
    for (int64_t i = 0; i < T * n_hi; i++)
        for (int r = 0; r < 16; r++) hi[i].s[r] = s4;
    uint8_t *map = b + gm.off_map;
    for (int64_t g = 0; g < G; g++) map[g] = (g + 1) * n_hi / G > g * n_hi / G; /* n_hi groups, evenly spread */
    /* outliers: spread over the rows and along each, in 2-bit groups, increasing per row */
    uint32_t *rows = (uint32_t *)(b + gm.off_rows), *words = (uint32_t *)(b + gm.off_words);
    int64_t o = 0;
    for (int64_t r = 0; r < N; r++) {
        rows[r] = (uint32_t)o;
        const int64_t want = gm.n_out * (r + 1) / N - gm.n_out * r / N;
        for (int64_t i = 0; i < want; i++) {
            int64_t c = (int64_t)((double)K * ((double)i + 0.5) / (double)want);
            while (map[c / LB_MX_M]) c = (c + LB_MX_M) % K; /* the next 2-bit group */
            if (o > rows[r] && c <= (int64_t)(words[o - 1] & 0xffffu)) continue;
            words[o++] = (uint32_t)c | (uint32_t)lb_f32_to_fp16((splitmix(&s) & 1) ? 0.05f : -0.05f) << 16;
        }
    }
    rows[N] = (uint32_t)o;
    *parts = (lb_mx_parts){N, K, map, lo, n_hi ? hi : NULL, gm.lo_b, gm.hi_b, gm.n_out ? rows : NULL,
                           gm.n_out ? N + 1 : 0, words, gm.n_out};
}

void lb_mx_view_dequantize(const lb_mx_view *v, float *W) {
    float tile[16 * 32];
    for (int64_t t = 0; t < v->N / LB_MX_ROWS; t++) {
        for (int64_t l = 0; l < v->n_lo + v->n_hi; l++) {
            const int64_t g = l < v->n_lo ? v->lo_group[l] : v->hi_group[l - v->n_lo];
            if (l < v->n_lo) lb_mx2_dequantize_tile(&v->lo[t * v->n_lo + l], tile, 32);
            else lb_mx4_dequantize_tile(&v->hi[t * v->n_hi + l - v->n_lo], tile, 32);
            for (int r = 0; r < 16; r++)
                memcpy(W + (size_t)(16 * t + r) * (size_t)v->K + (size_t)(g * LB_MX_M), tile + r * 32, 32 * sizeof *tile);
        }
    }
    for (int64_t r = 0; r < v->N && v->row_ptr; r++)
        for (uint32_t o = v->row_ptr[r]; o < v->row_ptr[r + 1]; o++)
            W[(size_t)r * (size_t)v->K + (v->outliers[o] & 0xffffu)] += lb_fp16_to_f32((lb_fp16)(v->outliers[o] >> 16));
}

double lb_mx_view_bpw_eq10(const lb_mx_view *v) {
    const double alpha = (double)v->n_lo / (double)(v->n_lo + v->n_hi);
    const double n_out = v->row_ptr ? (double)v->row_ptr[v->N] : 0.0;
    return lb_mx_bpw_eq10(alpha, LB_MX_G1, LB_MX_ROWS, 4) + 32.0 * n_out / ((double)v->N * (double)v->K);
}

void lb_gemv_mx_q8_0_ref(int64_t K, const void *W, size_t w_row_size, int n0, int n1, const void *A,
                         size_t a_row_size, int M, float *Y, size_t ldy) {
    (void)K, (void)w_row_size;
    const lb_mx_view *v = W;
    for (int m = 0; m < M; m++) {
        const block_q8_0 *a = (const block_q8_0 *)((const char *)A + (size_t)m * a_row_size);
        for (int64_t t = n0 / LB_MX_ROWS; t < n1 / LB_MX_ROWS; t++) {
            float y[LB_MX_ROWS] = {0};
            for (int64_t l = 0; l < v->n_lo; l++) lb_mx2_dot_tile_ref(&v->lo[t * v->n_lo + l], &a[v->lo_group[l]], y);
            for (int64_t h = 0; h < v->n_hi; h++) lb_mx4_dot_tile_ref(&v->hi[t * v->n_hi + h], &a[v->hi_group[h]], y);
            for (int r = 0; r < LB_MX_ROWS && v->row_ptr; r++)
                for (uint32_t o = v->row_ptr[16 * t + r]; o < v->row_ptr[16 * t + r + 1]; o++) {
                    const uint32_t w = v->outliers[o], c = w & 0xffffu;
                    const block_q8_0 *b = &a[c / 32];
                    y[r] += lb_fp16_to_f32((lb_fp16)(w >> 16)) * (lb_fp16_to_f32(b->d) * (float)b->qs[c % 32]);
                }
            for (int r = 0; r < LB_MX_ROWS; r++) Y[(size_t)m * ldy + (size_t)(16 * t + r)] = y[r];
        }
    }
}
