/* Decoders shared by the Arm Q2_K / CB2 / CB3 kernels (kernels/arm_kq.h):
 * plain ASIMD, always inlined, so every level's functions (neon, dotprod,
 * i8mm) get them. Each call site passes constants for the format, the book
 * count and the sub-group, so after unrolling every switch below folds to
 * one instruction (the lane and shift operands of the intrinsics must be
 * immediates; the switches keep that true for clang, which checks it before
 * inlining, as well as gcc).
 *
 * Block layouts (formats/kquants.h, formats/cb.h): weight w = 128c + 32t + l
 * of a block (c = 0..1, t = 0..3, l = 0..31) has its low 2 index bits at
 * bits 2t..2t+1 of qs[32c + l]; it belongs to sub-group j = 8c + 2t + h with
 * h = l / 16, and multiplies activation qs[16j + l % 16]. So the 16 bytes
 * Q = qs[32c + 16h ..] hold the indices of the four sub-groups 8c + 2t + h,
 * t = 0..3, one 16-lane vector each after a shift. CB3's third index bit of
 * that weight is bit 4c + t of qh[l] (H = qh[16h ..]).
 *
 * CB table index (the combined index of seed 000 §6.5): (cb << kbits) | q,
 * kbits = 2 (CB2) or 3 (CB3), into the books in force as signed centroids
 * (lb_cb_set.stable), 16 / 32 / 64 / 128 bytes in 1, 2, 4, 8 registers.
 * With the book number b = DUP(cb, j) of the sub-group:
 *   CB2  t = 0     BIT(b << 2, Q, mask 3)             (b << 2) | (Q & 3)
 *        t = 1, 2  SLI(Q >> 2t, b, 2)
 *        t = 3     SRI(b << 2, Q, 6)
 *        (b << 2: DUP from a vector shifted once per block; all three write
 *        into a fresh register, so Q is never copied)
 *   CB3  x = SLI(H shifted so bit 4c + t lands on bit 2, b, 3), then the two
 *        low bits from Q as above: BSL with mask 3 (t = 0..2, after Q >> 2t)
 *        or SRI(x, Q, 6) (t = 3).
 * i.e. one or two instructions where Q2_K needs its AND / shift anyway, plus
 * the DUP; then one TBL. */
#ifndef LB_ARM_KQ_DECODE_H
#define LB_ARM_KQ_DECODE_H

#include "kernels/arm/arm_common.h"
#include "formats/cb.h"

enum { LB_KQ_Q2_K, LB_KQ_CB2, LB_KQ_CB3 };

/* ---- immediates through switches (n, j constant at every call site) ---- */

LB_ARM_INLINE uint8x16_t lb_kq_shr(uint8x16_t v, int n) { /* v >> n, n = 0..7 */
    switch (n) {
    case 0: return v;
    case 1: return vshrq_n_u8(v, 1);
    case 2: return vshrq_n_u8(v, 2);
    case 3: return vshrq_n_u8(v, 3);
    case 4: return vshrq_n_u8(v, 4);
    case 5: return vshrq_n_u8(v, 5);
    case 6: return vshrq_n_u8(v, 6);
    default: return vshrq_n_u8(v, 7);
    }
}

/* v shifted right by n (n = -2..5; negative: left) */
LB_ARM_INLINE uint8x16_t lb_kq_shift(uint8x16_t v, int n) {
    if (n == -2) return vshlq_n_u8(v, 2);
    if (n == -1) return vshlq_n_u8(v, 1);
    return lb_kq_shr(v, n);
}

/* byte j of v in all 16 lanes */
LB_ARM_INLINE uint8x16_t lb_kq_dup(uint8x16_t v, int j) {
    switch (j) {
    case 0: return vdupq_laneq_u8(v, 0);
    case 1: return vdupq_laneq_u8(v, 1);
    case 2: return vdupq_laneq_u8(v, 2);
    case 3: return vdupq_laneq_u8(v, 3);
    case 4: return vdupq_laneq_u8(v, 4);
    case 5: return vdupq_laneq_u8(v, 5);
    case 6: return vdupq_laneq_u8(v, 6);
    case 7: return vdupq_laneq_u8(v, 7);
    case 8: return vdupq_laneq_u8(v, 8);
    case 9: return vdupq_laneq_u8(v, 9);
    case 10: return vdupq_laneq_u8(v, 10);
    case 11: return vdupq_laneq_u8(v, 11);
    case 12: return vdupq_laneq_u8(v, 12);
    case 13: return vdupq_laneq_u8(v, 13);
    case 14: return vdupq_laneq_u8(v, 14);
    default: return vdupq_laneq_u8(v, 15);
    }
}

/* fp16 -> fp32 (exact, FCVT) */
LB_ARM_INLINE float lb_kq_f16(const void *p) {
    __fp16 h;
    memcpy(&h, p, 2);
    return (float)h;
}

/* ---- per call: the books ---- */

/* Table entries for C books of k centroids. */
static inline int lb_kq_entries(int kind, int count) { return count * (kind == LB_KQ_CB3 ? 8 : 4); }

/* The books in force as signed centroids, entry (cb << kbits) | q, in the
 * register tuple the table instruction reads (a tuple built at each lookup
 * would be copied into place every time). */
typedef struct {
    int8x16_t t1;
    int8x16x2_t t2;
    int8x16x4_t t4, t4h; /* entries 0..63, 64..127 */
} lb_kq_books;

LB_ARM_INLINE int8x16_t lb_kq_book_reg(const lb_cb_set *set, int i) { return vld1q_s8(set->stable + 16 * i); }

LB_ARM_INLINE void lb_kq_load_books(const lb_cb_set *set, int entries, lb_kq_books *T) {
    memset(T, 0, sizeof *T);
    if (entries == 16) T->t1 = lb_kq_book_reg(set, 0);
    if (entries == 32) T->t2 = (int8x16x2_t){{lb_kq_book_reg(set, 0), lb_kq_book_reg(set, 1)}};
    if (entries >= 64)
        T->t4 = (int8x16x4_t){{lb_kq_book_reg(set, 0), lb_kq_book_reg(set, 1), lb_kq_book_reg(set, 2),
                               lb_kq_book_reg(set, 3)}};
    if (entries == 128)
        T->t4h = (int8x16x4_t){{lb_kq_book_reg(set, 4), lb_kq_book_reg(set, 5), lb_kq_book_reg(set, 6),
                                lb_kq_book_reg(set, 7)}};
}

/* 16 centroids for 16 table indices (< entries). */
LB_ARM_INLINE int8x16_t lb_kq_lookup(const lb_kq_books *T, uint8x16_t idx, int entries) {
    if (entries == 16) return vqtbl1q_s8(T->t1, idx);
    if (entries == 32) return vqtbl2q_s8(T->t2, idx);
    if (entries == 64) return vqtbl4q_s8(T->t4, idx);
    /* 128: indices 64..127 from the upper four registers; XOR 64 sends the
     * lower half out of TBX's range, which then keeps TBL's result */
    return vqtbx4q_s8(vqtbl4q_s8(T->t4, idx), T->t4h, veorq_u8(idx, vdupq_n_u8(64)));
}

/* ---- per block ---- */

/* The 16 six-bit CB sub-group fields (formats/cb.h), field j in byte j:
 * low nibbles from meta[0..7] (fields 0-7 low, 8-15 high nibbles), top bit
 * pairs from bytes 8..11, dword k shifted right by 2k holding fields 4k..4k+3. */
LB_ARM_INLINE uint8x16_t lb_kq_cb_fields(const uint8_t *meta) {
    const uint8x16_t m = vld1q_u8(meta); /* meta[12] + 4 bytes of qs: inside the block */
    const uint8x8_t lo = vget_low_u8(m);
    const uint8x16_t nib = vcombine_u8(vand_u8(lo, vdup_n_u8(0x0F)), vshr_n_u8(lo, 4));
    static const int32_t sh[4] = {0, -2, -4, -6};
    const uint32x4_t top = vshlq_u32(vdupq_laneq_u32(vreinterpretq_u32_u8(m), 2), vld1q_s32(sh));
    return vsliq_n_u8(nib, vandq_u8(vreinterpretq_u8_u32(top), vdupq_n_u8(3)), 4);
}

/* The same fields in two general registers (fields 0-7, 8-15, one byte
 * each), as lb_cb_unpack_meta: the lane-table decode reads each sub-group's
 * book number from there. */
LB_ARM_INLINE void lb_kq_cb_fields_gpr(const uint8_t *meta, uint64_t f[2]) {
    uint64_t lo;
    uint32_t hi;
    memcpy(&lo, meta, 8);
    memcpy(&hi, meta + 8, 4);
    const uint64_t nib = 0x0F0F0F0F0F0F0F0FULL;
    const uint32_t two = 0x03030303u;
    f[0] = (lo & nib) | (uint64_t)((hi & two) << 4) | ((uint64_t)(((hi >> 2) & two) << 4) << 32);
    f[1] = ((lo >> 4) & nib) | (uint64_t)(((hi >> 4) & two) << 4) | ((uint64_t)(((hi >> 6) & two) << 4) << 32);
}

/* What a block's decode needs besides its index bytes. */
typedef struct {
    uint64_t f[2];   /* CB with lane tables: the fields in general registers */
    uint8x16_t cb;   /* CB: book of sub-group j in byte j */
    uint8x16_t cb2;  /* CB2: the same << 2 (the t = 3 SRI) */
    uint8x16_t sc;   /* integer scale of sub-group j: CB 1..2^(6 - cbits), Q2_K 0..15 */
    uint8x16_t mn;   /* Q2_K: 4-bit min of sub-group j */
    uint8x16_t q[2][2]; /* [c][h]: qs[32c + 16h ..] */
    uint8x16_t qh[2];   /* CB3: qh[16h ..] */
} lb_kq_block;

/* kind, cbits, lanes constant. lanes: CB decode through lane tables
 * (lb_kq_weights_lanes) instead of the combined index. */
LB_ARM_INLINE void lb_kq_block_load(int kind, int cbits, int lanes, const uint8_t *blk, lb_kq_block *o) {
    const uint8_t *qs;
    o->f[0] = o->f[1] = 0;
    if (kind != LB_KQ_Q2_K && lanes) {
        lb_kq_cb_fields_gpr(blk, o->f);
        const uint8x16_t f = vcombine_u8(vcreate_u8(o->f[0]), vcreate_u8(o->f[1]));
        switch (cbits) {
        case 2: o->sc = vshrq_n_u8(f, 2); break;
        case 3: o->sc = vshrq_n_u8(f, 3); break;
        default: o->sc = vshrq_n_u8(f, 4); break;
        }
        o->sc = vaddq_u8(o->sc, vdupq_n_u8(1));
        o->cb = o->cb2 = o->mn = vdupq_n_u8(0);
        qs = blk + 12;
    } else if (kind == LB_KQ_Q2_K) {
        const uint8x16_t raw = vld1q_u8(((const block_q2_K *)blk)->scales);
        o->sc = vandq_u8(raw, vdupq_n_u8(0x0F));
        o->mn = vshrq_n_u8(raw, 4);
        o->cb = o->cb2 = vdupq_n_u8(0);
        qs = ((const block_q2_K *)blk)->qs;
    } else {
        const uint8x16_t f = lb_kq_cb_fields(blk);
        o->cb = vandq_u8(f, vdupq_n_u8((uint8_t)((1 << cbits) - 1)));
        o->cb2 = kind == LB_KQ_CB2 ? vshlq_n_u8(o->cb, 2) : o->cb;
        /* fields are 6 bits: the shift leaves the scale - 1 */
        switch (cbits) {
        case 2: o->sc = vshrq_n_u8(f, 2); break;
        case 3: o->sc = vshrq_n_u8(f, 3); break;
        default: o->sc = vshrq_n_u8(f, 4); break;
        }
        o->sc = vaddq_u8(o->sc, vdupq_n_u8(1));
        o->mn = vdupq_n_u8(0);
        qs = blk + 12;
    }
    o->q[0][0] = vld1q_u8(qs);
    o->q[0][1] = vld1q_u8(qs + 16);
    o->q[1][0] = vld1q_u8(qs + 32);
    o->q[1][1] = vld1q_u8(qs + 48);
    if (kind == LB_KQ_CB3) {
        o->qh[0] = vld1q_u8(blk + 76);
        o->qh[1] = vld1q_u8(blk + 92);
    } else {
        o->qh[0] = o->qh[1] = vdupq_n_u8(0);
    }
}

/* The 16 int8 weights of sub-group j = 8c + 2t + h (before the sub-group
 * scale): Q2_K's 2-bit quants, CB's centroids. All arguments but the
 * vectors are constants. */
LB_ARM_INLINE int8x16_t lb_kq_weights(int kind, int entries, const lb_kq_books *T, const lb_kq_block *b, int c,
                                      int t, int h) {
    const int j = 8 * c + 2 * t + h;
    const uint8x16_t Q = b->q[c][h];
    if (kind == LB_KQ_Q2_K) {
        const uint8x16_t q = lb_kq_shr(Q, 2 * t);
        return vreinterpretq_s8_u8(t == 3 ? q : vandq_u8(q, vdupq_n_u8(3)));
    }
    uint8x16_t idx;
    if (kind == LB_KQ_CB2) {
        /* into the fresh DUP result: no copy of Q */
        if (t == 0) idx = vbslq_u8(vdupq_n_u8(3), Q, lb_kq_dup(b->cb2, j));
        else if (t == 3) idx = vsriq_n_u8(lb_kq_dup(b->cb2, j), Q, 6);
        else idx = vsliq_n_u8(lb_kq_shr(Q, 2 * t), lb_kq_dup(b->cb, j), 2);
    } else {
        const uint8x16_t x = vsliq_n_u8(lb_kq_shift(b->qh[h], 4 * c + t - 2), lb_kq_dup(b->cb, j), 3);
        if (t == 3) idx = vsriq_n_u8(x, Q, 6);
        else idx = vbslq_u8(vdupq_n_u8(3), lb_kq_shr(Q, 2 * t), x);
    }
    return lb_kq_lookup(T, idx, entries);
}

/* The same through lane tables (the alternative to the combined index, as
 * cb_x86.c's pair tables): the sub-group's book as one 16-byte vector from
 * lb_cb_set.slane (L1-resident, 256 bytes for 16 books), addressed with its
 * book number from a general register, and one single-register TBL with the
 * bare 2- or 3-bit indices whatever C is. Per sub-group this trades the
 * DUP (and for 32+ entries the multi-register TBL) for a vector load and a
 * bit-field extract. cbits constant. */
LB_ARM_INLINE int8x16_t lb_kq_weights_lanes(int kind, int cbits, const lb_cb_set *set, const lb_kq_block *b, int c,
                                            int t, int h) {
    const int j = 8 * c + 2 * t + h;
    const uint8x16_t Q = b->q[c][h];
    const int8x16_t lane = vld1q_s8(set->slane[(b->f[j / 8] >> (8 * (j % 8))) & ((1u << cbits) - 1)]);
    uint8x16_t idx;
    if (kind == LB_KQ_CB2) {
        idx = lb_kq_shr(Q, 2 * t);
        if (t < 3) idx = vandq_u8(idx, vdupq_n_u8(3));
    } else {
        const uint8x16_t hx = vandq_u8(lb_kq_shift(b->qh[h], 4 * c + t - 2), vdupq_n_u8(4));
        if (t == 3) idx = vsriq_n_u8(hx, Q, 6);
        else idx = vbslq_u8(vdupq_n_u8(3), lb_kq_shr(Q, 2 * t), hx);
    }
    return vqtbl1q_s8(lane, idx);
}

/* The 16 scales as four int32x4 (sub-groups 4i .. 4i + 3 in vector i). */
LB_ARM_INLINE void lb_kq_scales32(uint8x16_t sc, int32x4_t s[4]) {
    const uint16x8_t lo = vmovl_u8(vget_low_u8(sc)), hi = vmovl_high_u8(sc);
    s[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
    s[1] = vreinterpretq_s32_u32(vmovl_high_u16(lo));
    s[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
    s[3] = vreinterpretq_s32_u32(vmovl_high_u16(hi));
}

/* Q2_K's min term, 4 partial sums: mins (u8, <= 15) . bsums (|.| <= 2048). */
LB_ARM_INLINE int32x4_t lb_kq_mins_dot(uint8x16_t mn, const int16_t *bsums) {
    const int16x8_t m0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mn)));
    const int16x8_t m1 = vreinterpretq_s16_u16(vmovl_high_u8(mn));
    const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8);
    int32x4_t p = vmull_s16(vget_low_s16(m0), vget_low_s16(b0));
    p = vmlal_high_s16(p, m0, b0);
    p = vmlal_s16(p, vget_low_s16(m1), vget_low_s16(b1));
    return vmlal_high_s16(p, m1, b1);
}

#endif
