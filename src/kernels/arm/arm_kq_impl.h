/* The Q2_K / CB2 / CB3 vec_dot of one Arm level (kernels/arm_kq.h), included
 * by arm_kq_neon.c and arm_kq_dotprod.c, which define
 *   LB_KQ_FN(name)      name with the level's suffix
 *   LB_KQ_TARGET        the level's function attribute (or nothing)
 *   LB_KQ_DOT16(w, a)   int32x4 whose lanes add up to the dot of the 16
 *                       int8 w and a (SDOT into zero; or SMULL + SMLAL2
 *                       (int16: two products, |.| <= 2 * 64 * 128) + SADDLP)
 *
 * Per block and sub-group j: the weights (arm_kq_decode.h), p_j = DOT16 with
 * activations 16j..16j+15; as soon as four sub-groups are done a
 * pairwise-add tree (3 ADDP) puts their four sums in one vector, which is
 * multiplied by their four integer scales (MLA); ADDV gives the block's
 * integer sum, exact
 * (|sum| <= 16 * 16 * 64 * 128 * 16 < 2^31 for CB, far less for Q2_K).
 * The float steps per block are the reference's. */

#define LB_KQ_KERNEL LB_ARM_INLINE LB_KQ_TARGET

LB_KQ_KERNEL float LB_KQ_FN(kq_dot)(int kind, int cbits, int lanes, int64_t n, const void *vw, const block_q8_K *a,
                                    const lb_cb_set *set) {
    const int entries = kind == LB_KQ_Q2_K ? 0 : lb_kq_entries(kind, 1 << cbits);
    const size_t bs = kind == LB_KQ_Q2_K ? sizeof(block_q2_K) : kind == LB_KQ_CB2 ? sizeof(block_cb2)
                                                                                   : sizeof(block_cb3);
    lb_kq_books T;
    if (kind != LB_KQ_Q2_K && !lanes) lb_kq_load_books(set, entries, &T);
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / QK_K; ib++, a++) {
        const uint8_t *blk = (const uint8_t *)vw + (size_t)ib * bs;
        lb_kq_block b;
        lb_kq_block_load(kind, cbits, lanes, blk, &b);
        int32x4_t s[4];
        lb_kq_scales32(b.sc, s);
        int32x4_t acc = vdupq_n_s32(0), p[4];
        LB_ARM_UNROLL
        for (int c = 0; c < 2; c++)
            LB_ARM_UNROLL
            for (int t = 0; t < 4; t++) {
                LB_ARM_UNROLL
                for (int h = 0; h < 2; h++) {
                    const int j = 8 * c + 2 * t + h;
                    const int8x16_t w = lanes ? lb_kq_weights_lanes(kind, cbits, set, &b, c, t, h)
                                              : lb_kq_weights(kind, entries, &T, &b, c, t, h);
                    p[j % 4] = LB_KQ_DOT16(w, vld1q_s8(a->qs + 16 * j));
                }
                if (t % 2) { /* sub-groups j - 3 .. j done: reduce them now (fewer live registers) */
                    const int32x4_t sums = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
                    acc = vmlaq_s32(acc, sums, s[(8 * c + 2 * t) / 4]);
                }
            }
        const int32_t isum = vaddvq_s32(acc);
        if (kind == LB_KQ_Q2_K) {
            const block_q2_K *x = (const block_q2_K *)blk;
            const int32_t summs = vaddvq_s32(lb_kq_mins_dot(b.mn, a->bsums));
            const float dall = a->d * lb_kq_f16(&x->d);
            const float dmin = a->d * lb_kq_f16(&x->dmin);
            sumf += dall * (float)isum - dmin * (float)summs;
        } else {
            sumf += (lb_kq_f16(blk + bs - 2) * a->d) * (float)isum;
        }
    }
    return sumf;
}

LB_KQ_TARGET void LB_KQ_FN(lb_vec_dot_q2_K_q8_K)(int64_t n, float *s, const void *w, const void *a) {
    *s = LB_KQ_FN(kq_dot)(LB_KQ_Q2_K, 0, 0, n, w, a, NULL);
}

/* Instantiations per book count (cbits constant in each) and lookup. */
#define LB_KQ_CB_VEC_DOT(name, kind, type, lanes)                                      \
    LB_KQ_TARGET void LB_KQ_FN(name)(int64_t n, float *s, const void *w, const void *a) { \
        const lb_cb_set *set = lb_cb_current(type);                                   \
        switch (set->books.count) {                                                   \
        case 4: *s = LB_KQ_FN(kq_dot)(kind, 2, lanes, n, w, a, set); break;           \
        case 8: *s = LB_KQ_FN(kq_dot)(kind, 3, lanes, n, w, a, set); break;           \
        default: *s = LB_KQ_FN(kq_dot)(kind, 4, lanes, n, w, a, set); break;          \
        }                                                                             \
    }
LB_KQ_CB_VEC_DOT(lb_vec_dot_cb2_q8_K, LB_KQ_CB2, LB_TYPE_CB2, 0)
LB_KQ_CB_VEC_DOT(lb_vec_dot_cb3_q8_K, LB_KQ_CB3, LB_TYPE_CB3, 0)
LB_KQ_CB_VEC_DOT(lb_vec_dot_cb2_q8_K_lanes, LB_KQ_CB2, LB_TYPE_CB2, 1)
LB_KQ_CB_VEC_DOT(lb_vec_dot_cb3_q8_K_lanes, LB_KQ_CB3, LB_TYPE_CB3, 1)
#undef LB_KQ_CB_VEC_DOT
