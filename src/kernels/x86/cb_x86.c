/* AVX2 dot products of CB2 / CB3 weights with Q8_K activations.
 *
 * The codebooks of the type in force (formats/cb.h) are tables of unsigned
 * bytes u = centroid + 64 (0..127) prepared when the books are installed.
 * Per 32 weights (two sub-groups, one per 128-bit lane):
 *   u     = the centroids of the two sub-groups' books, looked up by byte
 *           shuffle (vpshufb) with the 2- or 3-bit indices, in one of two ways:
 *           combined index (the paper's §6.5): index | book << log2(k), the
 *             book number spread over its lane by a shuffle, into a table of
 *             all books kept in registers: one vpshufb for up to 16 entries
 *             per lane, two or four vpshufb + vpblendvb on the higher index
 *             bits for 32 / 64 (vpermb, which would take 64 at once, is
 *             AVX-512 VBMI and not on this machine);
 *           pair tables: the 32-byte table of the two sub-groups' books
 *             (lb_cb_set.pair, L1-resident: 8 KiB for 16 books) is loaded
 *             and indexed with the centroid indices alone.
 *   sum  += maddubs(u, a) madd'ed with the lane's integer scale
 * and per block the offset is removed exactly: 64 * sum_j s_j * bsum_j, with
 * Q8_K's sums of 16 activations (one per sub-group). The block's integer is
 * exact and is scaled and summed in float as the scalar reference does.
 * Measured (bench/quant-quality --speed, one thread, 4096 x 4096): the two
 * ways tie for CB2 with 4 books; pair tables win everywhere else (by 1.2x
 * to 1.8x), so lb_vec_dot_cb*_q8_K_avx2 uses the combined index only there.
 * Overflow: maddubs pairs 2 * 127 * 128 < 32767; a block's integer sum
 * |.| <= 256 * 64 * 128 * 16 < 2^31. */
#include "kernels/x86/cb_x86.h"

#if LB_HAVE_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "formats/cb.h"

#define LB_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LB_INLINE static inline __attribute__((always_inline))
/* the 8 steps of a block unrolled: shift counts and shuffle masks become constants */
#define LB_UNROLL _Pragma("GCC unroll 8")

/* The 8 lanes of a block's sum, exactly: the lanes carry parts of the
 * +64 offset that cancel only in their total, so converting them to float
 * one by one would round away digits of a small result (narrow books). */
LB_AVX2 LB_INLINE int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* Table lookup of 16, 32 or 64 byte entries (index < 64, the same table in
 * both lanes). vpshufb reads index bits 0-3; bits 4 and 5 pick the table
 * through vpblendvb, which tests bit 7 of each byte: a 16-bit shift by 3
 * (or 2) moves bit 4 (or 5) of every byte there. */
LB_AVX2 LB_INLINE __m256i lookup(const __m256i *T, __m256i idx, int entries) {
    if (entries == 16) return _mm256_shuffle_epi8(T[0], idx);
    const __m256i bit4 = _mm256_slli_epi16(idx, 3);
    const __m256i lo = _mm256_blendv_epi8(_mm256_shuffle_epi8(T[0], idx), _mm256_shuffle_epi8(T[1], idx), bit4);
    if (entries == 32) return lo;
    const __m256i hi = _mm256_blendv_epi8(_mm256_shuffle_epi8(T[2], idx), _mm256_shuffle_epi8(T[3], idx), bit4);
    return _mm256_blendv_epi8(lo, hi, _mm256_slli_epi16(idx, 2));
}

/* Centroid indices of weights 128c + 32t .. +31: two bits from qs, and for
 * CB3 the third from qh (bit 4c + t of each byte) moved to bit 2. */
LB_AVX2 LB_INLINE __m256i indices(__m256i q2, __m256i qh, int cb3, int c, int t) {
    __m256i q = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * t), _mm256_set1_epi8(3));
    if (cb3) {
        const int bit = 4 * c + t;
        const __m256i h = bit >= 2 ? _mm256_srli_epi16(qh, bit - 2) : _mm256_slli_epi16(qh, 2 - bit);
        q = _mm256_or_si256(q, _mm256_and_si256(h, _mm256_set1_epi8(4)));
    }
    return q;
}

/* The 16 sub-group fields of a block (formats/cb.h) in one register: low
 * nibbles of bytes 0-7 are fields 0-7, high nibbles 8-15; dword k of the
 * broadcast bytes 8-11 shifted right by 2k holds the top bits of fields
 * 4k..4k+3 in its four bytes. No round trip through memory. */
LB_AVX2 LB_INLINE __m128i unpack_fields(const uint8_t *meta) {
    uint32_t hi;
    memcpy(&hi, meta + 8, 4);
    const __m128i lo = _mm_loadl_epi64((const __m128i *)meta);
    const __m128i nib = _mm_and_si128(_mm_unpacklo_epi64(lo, _mm_srli_epi16(lo, 4)), _mm_set1_epi8(0x0F));
    const __m128i top = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)hi), _mm_setr_epi32(0, 2, 4, 6)),
                                      _mm_set1_epi8(0x03));
    return _mm_or_si128(nib, _mm_slli_epi16(top, 4));
}

/* Per pair of sub-groups p (j = 2p in the low lane, 2p + 1 in the high one):
 * a byte shuffle mask that spreads byte j over the low lane and j + 1 over
 * the high one, and one that makes int16 words of them (high bytes zero).
 * Loaded from memory: built in registers they would cost more than the
 * shuffles themselves. */
static const uint8_t spread_mask[8][32] __attribute__((aligned(32))) = {
#define SPREAD(j) {j, j, j, j, j, j, j, j, j, j, j, j, j, j, j, j, \
                   j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1}
    SPREAD(0), SPREAD(2), SPREAD(4), SPREAD(6), SPREAD(8), SPREAD(10), SPREAD(12), SPREAD(14),
#undef SPREAD
};
static const uint8_t word_mask[8][32] __attribute__((aligned(32))) = {
#define WORDS(j) {j, 0x80, j, 0x80, j, 0x80, j, 0x80, j, 0x80, j, 0x80, j, 0x80, j, 0x80, \
                  j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80}
    WORDS(0), WORDS(2), WORDS(4), WORDS(6), WORDS(8), WORDS(10), WORDS(12), WORDS(14),
#undef WORDS
};

/* One call's loop. cb3, cbits, entries and pairs are constants at every
 * call site, so each instantiation is straight-line code. */
LB_AVX2 LB_INLINE float dot_blocks(int64_t n, const void *vw, const block_q8_K *a, const lb_cb_set *set, int cb3,
                                   int cbits, int entries, int pairs) {
    const size_t bs = cb3 ? sizeof(block_cb3) : sizeof(block_cb2);
    const int kbits = cb3 ? 3 : 2;
    __m256i T[4];
    for (int i = 0; i < 4; i++)
        T[i] = entries > 16 * i ? _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)(set->table + 16 * i)))
                                : _mm256_setzero_si256();
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / QK_CB; ib++, a++) {
        const uint8_t *blk = (const uint8_t *)vw + (size_t)ib * bs;
        const uint8_t *qs = blk + 12, *qhp = blk + 12 + 64;
        const lb_fp16 dh = cb3 ? ((const block_cb3 *)blk)->d : ((const block_cb2 *)blk)->d;
        const __m128i F = unpack_fields(blk);
        const __m128i cbv = _mm_and_si128(F, _mm_set1_epi8((char)((1 << cbits) - 1)));
        /* pair-table numbers a | b << cbits of the 8 sub-group pairs, one byte each */
        const __m128i pnum = _mm_or_si128(_mm_and_si128(cbv, _mm_set1_epi16(0x00FF)), _mm_srli_epi16(cbv, 8 - cbits));
        const uint64_t pair_ids = (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pnum, pnum));
        const __m128i sv = _mm_add_epi8(_mm_and_si128(_mm_srli_epi16(F, cbits), _mm_set1_epi8((char)(0x3F >> cbits))),
                                        _mm_set1_epi8(1));
        const __m256i CBX = _mm256_broadcastsi128_si256(_mm_slli_epi16(cbv, kbits));
        const __m256i SV = _mm256_broadcastsi128_si256(sv);
        /* the offset term: 64 * sum_j s_j * bsum_j */
        const __m256i s16 = _mm256_cvtepu8_epi16(sv);
        __m256i acc = _mm256_sub_epi32(
            _mm256_setzero_si256(),
            _mm256_slli_epi32(_mm256_madd_epi16(s16, _mm256_loadu_si256((const __m256i *)a->bsums)), 6));
        const __m256i qh = cb3 ? _mm256_loadu_si256((const __m256i *)qhp) : _mm256_setzero_si256();
        LB_UNROLL
        for (int c = 0; c < 2; c++) {
            const __m256i q2 = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            LB_UNROLL
            for (int t = 0; t < 4; t++) {
                const int j = 8 * c + 2 * t; /* sub-groups j (low lane) and j + 1 */
                __m256i idx = indices(q2, qh, cb3, c, t);
                __m256i u;
                if (pairs) {
                    const uint8_t *tab = set->pair[(pair_ids >> (4 * j)) & 0xFF];
                    u = _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)tab), idx);
                } else {
                    const __m256i spread = _mm256_load_si256((const __m256i *)spread_mask[j / 2]);
                    idx = _mm256_or_si256(idx, _mm256_shuffle_epi8(CBX, spread));
                    u = lookup(T, idx, entries);
                }
                const __m256i act = _mm256_loadu_si256((const __m256i *)(a->qs + 128 * c + 32 * t));
                /* s_j as int16 in the low lane, s_(j+1) in the high lane */
                const __m256i scale = _mm256_shuffle_epi8(SV, _mm256_load_si256((const __m256i *)word_mask[j / 2]));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, act), scale));
            }
        }
        /* as the reference: the same integer, the same float expression */
        sumf += (_cvtsh_ss(dh) * a->d) * (float)hsum_epi32(acc);
    }
    return sumf;
}

/* ---- many activation rows: decode a weight block once, use it M times ---- */

/* A weight block ready for maddubs: the centroids (+64) of each pair of
 * sub-groups, their int16 scales per lane, all 16 scales (offset term), d. */
typedef struct {
    __m256i u[8], sc[8], s16;
    float d;
} decoded;

LB_AVX2 LB_INLINE void decode_block(const uint8_t *blk, const lb_cb_set *set, int cb3, int cbits, decoded *o) {
    const __m128i F = unpack_fields(blk);
    const __m128i cbv = _mm_and_si128(F, _mm_set1_epi8((char)((1 << cbits) - 1)));
    const __m128i pnum = _mm_or_si128(_mm_and_si128(cbv, _mm_set1_epi16(0x00FF)), _mm_srli_epi16(cbv, 8 - cbits));
    const uint64_t pair_ids = (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pnum, pnum));
    const __m128i sv = _mm_add_epi8(_mm_and_si128(_mm_srli_epi16(F, cbits), _mm_set1_epi8((char)(0x3F >> cbits))),
                                    _mm_set1_epi8(1));
    const __m256i SV = _mm256_broadcastsi128_si256(sv);
    o->s16 = _mm256_cvtepu8_epi16(sv);
    const __m256i qh = cb3 ? _mm256_loadu_si256((const __m256i *)(blk + 12 + 64)) : _mm256_setzero_si256();
    LB_UNROLL
    for (int c = 0; c < 2; c++) {
        const __m256i q2 = _mm256_loadu_si256((const __m256i *)(blk + 12 + 32 * c));
        LB_UNROLL
        for (int t = 0; t < 4; t++) {
            const int j = 8 * c + 2 * t;
            const uint8_t *tab = set->pair[(pair_ids >> (4 * j)) & 0xFF];
            o->u[j / 2] = _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)tab), indices(q2, qh, cb3, c, t));
            o->sc[j / 2] = _mm256_shuffle_epi8(SV, _mm256_load_si256((const __m256i *)word_mask[j / 2]));
        }
    }
    o->d = _cvtsh_ss(cb3 ? ((const block_cb3 *)blk)->d : ((const block_cb2 *)blk)->d);
}

#define GEMM_M 64 /* activation rows per pass over a weight row */

/* lb_gemm_fn: Y[m * ldy + n] = dot(W row n, A row m). Per weight row, each
 * block is decoded once per GEMM_M activation rows; the per-row work is then
 * maddubs + madd + add per 32 weights. */
LB_AVX2 LB_INLINE void gemm_rows(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, size_t ars, int M,
                                 float *Y, size_t ldy, const lb_cb_set *set, int cb3, int cbits) {
    const size_t bs = cb3 ? sizeof(block_cb3) : sizeof(block_cb2);
    const int64_t nb = K / QK_CB;
    decoded dec;
    float acc[GEMM_M];
    for (int n = n0; n < n1; n++) {
        const uint8_t *wrow = (const uint8_t *)W + (size_t)n * wrs;
        for (int m0 = 0; m0 < M; m0 += GEMM_M) {
            const int mc = LB_MIN(GEMM_M, M - m0);
            for (int m = 0; m < mc; m++) acc[m] = 0.0f;
            for (int64_t ib = 0; ib < nb; ib++) {
                decode_block(wrow + (size_t)ib * bs, set, cb3, cbits, &dec);
                for (int m = 0; m < mc; m++) {
                    const block_q8_K *a = (const block_q8_K *)((const char *)A + (size_t)(m0 + m) * ars) + ib;
                    __m256i isum = _mm256_sub_epi32(
                        _mm256_setzero_si256(),
                        _mm256_slli_epi32(_mm256_madd_epi16(dec.s16, _mm256_loadu_si256((const __m256i *)a->bsums)), 6));
                    LB_UNROLL
                    for (int p = 0; p < 8; p++) {
                        const __m256i act = _mm256_loadu_si256((const __m256i *)(a->qs + 32 * p));
                        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(dec.u[p], act), dec.sc[p]));
                    }
                    acc[m] += (dec.d * a->d) * (float)hsum_epi32(isum);
                }
            }
            for (int m = 0; m < mc; m++) Y[(size_t)(m0 + m) * ldy + n] = acc[m];
        }
    }
}

#define CB_GEMM(name, cb3, vec_dot)                                                                                  \
    LB_AVX2 void name(int64_t K, const void *W, size_t wrs, int n0, int n1, const void *A, size_t ars, int M,        \
                      float *Y, size_t ldy) {                                                                        \
        if (M == 1) { /* one row: the fused dot is faster */                                                         \
            for (int n = n0; n < n1; n++) vec_dot(K, Y + n, (const char *)W + (size_t)n * wrs, A);                   \
            return;                                                                                                  \
        }                                                                                                            \
        const lb_cb_set *set = lb_cb_current(cb3 ? LB_TYPE_CB3 : LB_TYPE_CB2);                                       \
        switch (set->books.count) {                                                                                  \
        case 4: gemm_rows(K, W, wrs, n0, n1, A, ars, M, Y, ldy, set, cb3, 2); break;                                 \
        case 8: gemm_rows(K, W, wrs, n0, n1, A, ars, M, Y, ldy, set, cb3, 3); break;                                 \
        default: gemm_rows(K, W, wrs, n0, n1, A, ars, M, Y, ldy, set, cb3, 4); break;                                \
        }                                                                                                            \
    }

/* Instantiations by (type, C) and lookup: entries = C * k (at most 64 for
 * the combined index: CB3 with 16 books always uses pair tables). */
#define CB_VARIANT(name, cb3, pairs_if)                                                        \
    LB_AVX2 void name(int64_t n, float *s, const void *w, const void *a) {                     \
        const lb_cb_set *set = lb_cb_current(cb3 ? LB_TYPE_CB3 : LB_TYPE_CB2);                 \
        const int k = cb3 ? 8 : 4;                                                             \
        switch (set->books.count) {                                                            \
        case 4: *s = dot_blocks(n, w, a, set, cb3, 2, 4 * k, pairs_if(4 * k)); break;          \
        case 8: *s = dot_blocks(n, w, a, set, cb3, 3, 8 * k, pairs_if(8 * k)); break;          \
        default: *s = dot_blocks(n, w, a, set, cb3, 4, 16 * k > 64 ? 64 : 16 * k,              \
                                 16 * k > 64 || pairs_if(16 * k)); break;                      \
        }                                                                                      \
    }
#define BEST(entries) ((entries) > 16)
#define ALWAYS(entries) 1
#define NEVER(entries) 0

CB_VARIANT(lb_vec_dot_cb2_q8_K_avx2, 0, BEST)
CB_VARIANT(lb_vec_dot_cb3_q8_K_avx2, 1, BEST)
CB_VARIANT(lb_vec_dot_cb2_q8_K_avx2_combined, 0, NEVER)
CB_VARIANT(lb_vec_dot_cb3_q8_K_avx2_combined, 1, NEVER)
CB_VARIANT(lb_vec_dot_cb2_q8_K_avx2_pairs, 0, ALWAYS)
CB_VARIANT(lb_vec_dot_cb3_q8_K_avx2_pairs, 1, ALWAYS)
CB_GEMM(lb_gemm_cb2_q8_K_avx2, 0, lb_vec_dot_cb2_q8_K_avx2)
CB_GEMM(lb_gemm_cb3_q8_K_avx2, 1, lb_vec_dot_cb3_q8_K_avx2)

#endif
