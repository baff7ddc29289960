/* One attention work unit for a vector width W (included by
 * kernels/attention_x86.c once per ISA, with the macros it defines): the
 * portable kernel's operations (kernels/attention.c) in the same order.
 * Tiles: NR rows x 2 vectors, for both S = Q K^T (2W keys) and O += P V (2W
 * values of head_dim), so each loaded K or V vector feeds NR FMAs and the
 * NR x 2 accumulators stay in registers. An fp16 or q8_0 cache's K or V
 * vectors are widened as they are loaded (VLOADH; VLOADB times the scales for
 * q8_0, VLOADQ4 (code - 8) times them for q4_0 (K_CODES, V_VALUES), exact products; the element
 * types are constants in each copy), or,
 * where two or more tiles of rows read a block, widened once into scratch. */

/* W floats from element i of an f32 or fp16 array */
#define KV_LOAD(p, i, f16) ((f16) ? VLOADH((const uint16_t *)(p) + (i)) : VLOAD((const float *)(p) + (i)))

/* The NR x 2 accumulators of a tile: set to zero or loaded from o (row
 * stride ldo); acc[r] += b[r * bs] * (k0, k1); stored to s (row stride ld). */
ATTR_INLINE void SFX(acc_zero)(VT acc[][2], const int nr) {
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) acc[r][0] = acc[r][1] = VZERO();
}
ATTR_INLINE void SFX(acc_load)(VT acc[][2], const float *o, int ldo, const int nr) {
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) {
        acc[r][0] = VLOAD(o + (size_t)r * ldo);
        acc[r][1] = VLOAD(o + (size_t)r * ldo + W);
    }
}
ATTR_INLINE void SFX(acc_fma)(VT acc[][2], const float *b, size_t bs, VT k0, VT k1, const int nr) {
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) {
        const VT x = VSET1(b[(size_t)r * bs]);
        acc[r][0] = VFMA(x, k0, acc[r][0]);
        acc[r][1] = VFMA(x, k1, acc[r][1]);
    }
}
ATTR_INLINE void SFX(acc_store)(VT acc[][2], float *s, int ld, const int nr) {
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) {
        VSTORE(s + (size_t)r * ld, acc[r][0]);
        VSTORE(s + (size_t)r * ld + W, acc[r][1]);
    }
}

/* S[r][0..2W) = sum_d qs[r][d] * kt[d][0..2W) for r < nr */
ATTR_INLINE void SFX(qk_tile)(const float *qs, int hd, const void *kt, float *s, const int nr, const int f16) {
    VT acc[NR][2];
    SFX(acc_zero)(acc, nr);
    for (int d = 0; d < hd; d++) {
        const VT k0 = KV_LOAD(kt, (size_t)d * LB_ATTN_KB, f16), k1 = KV_LOAD(kt, (size_t)d * LB_ATTN_KB + W, f16);
        SFX(acc_fma)(acc, qs + d, (size_t)hd, k0, k1, nr);
    }
    SFX(acc_store)(acc, s, LB_ATTN_KB, nr);
}

/* o[r][0..2W) += sum_j p[r][j] * v[j][0..2W) for r < nr, j < nj */
ATTR_INLINE void SFX(pv_tile)(const float *p, const void *v, int hdp, int nj, float *o, int ldo, const int nr,
                              const int f16) {
    VT acc[NR][2];
    SFX(acc_load)(acc, o, ldo, nr);
    for (int j = 0; j < nj; j++) {
        const VT v0 = KV_LOAD(v, (size_t)j * hdp, f16), v1 = KV_LOAD(v, (size_t)j * hdp + W, f16);
        SFX(acc_fma)(acc, p + j, LB_ATTN_KB, v0, v1, nr);
    }
    SFX(acc_store)(acc, o, ldo, nr);
}

/* W keys from element off of dimension d's codes in a quantized K block, as
 * codes (q8_0: int8, [hd][KB]) or code - 8 (q4_0: nibbles, [(hd + 1) / 2][KB],
 * dimension d in the low nibble for even d, the high for odd) */
#define K_CODES(codes, d, off, q4)                                                             \
    ((q4) ? VLOADQ4((codes) + (size_t)((d) / 2) * LB_ATTN_KB + (off), (d) & 1)                 \
          : VLOADB((const int8_t *)(codes) + (size_t)(d) * LB_ATTN_KB + (off)))

/* qk_tile for a q8_0 or (q4) q4_0 K block: the codes (K_CODES) and the scales
 * [hd_pad / 32][KB], both offset to the tile's first key */
ATTR_INLINE void SFX(qk_tile_q)(const float *qs, int hd, const uint8_t *codes, const uint16_t *scales, float *s,
                                const int nr, const int q4) {
    VT acc[NR][2];
    SFX(acc_zero)(acc, nr);
    for (int d0 = 0; d0 < hd; d0 += 32) {
        const uint16_t *sc = scales + (size_t)(d0 / 32) * LB_ATTN_KB;
        const VT s0 = VLOADH(sc), s1 = VLOADH(sc + W);
        const int d1 = d0 + 32 < hd ? d0 + 32 : hd;
        for (int d = d0; d < d1; d++) {
            const VT k0 = VMUL(K_CODES(codes, d, 0, q4), s0), k1 = VMUL(K_CODES(codes, d, W, q4), s1);
            SFX(acc_fma)(acc, qs + d, (size_t)hd, k0, k1, nr);
        }
    }
    SFX(acc_store)(acc, s, LB_ATTN_KB, nr);
}

/* A q8_0 V block, or (q4) a q4_0 one, at bp: its scale, its size, and its W
 * values i .. i + W - 1 (i a multiple of W) times the broadcast scale sc:
 * code * scale, or (code - 8) * scale (q4_0: values 0-15 in the low nibbles,
 * 16-31 in the high) */
#define V_SCALE(bp, q4) _cvtsh_ss((q4) ? ((const block_q4_0 *)(bp))->d : ((const block_q8_0 *)(bp))->d)
#define V_BLOCK_BYTES(q4) ((q4) ? sizeof(block_q4_0) : sizeof(block_q8_0))
#define V_VALUES(bp, i, sc, q4)                                                        \
    VMUL((q4) ? VLOADQ4(((const block_q4_0 *)(bp))->qs + (i) % 16, (i) / 16)           \
              : VLOADB(((const block_q8_0 *)(bp))->qs + (i)), sc)

/* pv_tile for q8_0 or (q4) q4_0 V rows (vrow bytes apart), values d .. d + 2W of each */
ATTR_INLINE void SFX(pv_tile_q)(const float *p, const char *v, size_t vrow, int d, int nj, float *o, int ldo,
                                const int nr, const int q4) {
    VT acc[NR][2];
    SFX(acc_load)(acc, o, ldo, nr);
    const char *vd = v + (size_t)(d / 32) * V_BLOCK_BYTES(q4);
    const int off = d % 32;
    for (int j = 0; j < nj; j++) {
        const char *b = vd + (size_t)j * vrow;
        const VT sc = VSET1(V_SCALE(b, q4));
        SFX(acc_fma)(acc, p + j, LB_ATTN_KB, V_VALUES(b, off, sc, q4), V_VALUES(b, off + W, sc, q4), nr);
    }
    SFX(acc_store)(acc, o, ldo, nr);
}

/* a K block (type kt) widened into kw, [hd][KB]: lb_attn_widen_k's floats */
ATTR_INLINE void SFX(widen_k)(const char *kb, int hd, float *kw, const int kt) {
    const size_t n = (size_t)hd * LB_ATTN_KB;
    if (kt == LB_KV_Q8_0 || kt == LB_KV_Q4_0) {
        const int q4 = kt == LB_KV_Q4_0;
        const uint8_t *codes = (const uint8_t *)kb;
        const uint16_t *scales = (const uint16_t *)(kb + (size_t)(q4 ? (hd + 1) / 2 : hd) * LB_ATTN_KB);
        for (int d = 0; d < hd; d++)
            for (int c = 0; c < LB_ATTN_KB; c += W)
                VSTORE(kw + (size_t)d * LB_ATTN_KB + c,
                       VMUL(K_CODES(codes, d, c, q4), VLOADH(scales + (size_t)(d / 32) * LB_ATTN_KB + c)));
    } else {
        for (size_t i = 0; i < n; i += W) VSTORE(kw + i, VLOADH((const uint16_t *)kb + i));
    }
}

/* nj V rows (type vt) widened into vw, [nj][hd_pad]: lb_attn_widen_v's floats */
ATTR_INLINE void SFX(widen_v)(const char *v, int hdp, size_t vrow, int nj, float *vw, const int vt) {
    if (vt == LB_KV_Q8_0 || vt == LB_KV_Q4_0) {
        const int q4 = vt == LB_KV_Q4_0;
        for (int j = 0; j < nj; j++)
            for (int b = 0; b < hdp / 32; b++) {
                const char *q = v + (size_t)j * vrow + (size_t)b * V_BLOCK_BYTES(q4);
                const VT sc = VSET1(V_SCALE(q, q4));
                for (int i = 0; i < 32; i += W) VSTORE(vw + (size_t)j * hdp + b * 32 + i, V_VALUES(q, i, sc, q4));
            }
    } else {
        for (size_t i = 0; i < (size_t)nj * hdp; i += W) VSTORE(vw + i, VLOADH((const uint16_t *)v + i));
    }
}

/* the row count as a constant, so the tiles' loops unroll (nr <= NR) */
#define ROWS_CASE(call, k) \
    case k: call((k) < NR ? (k) : NR); break;
#define DISPATCH_ROWS(call, nr)                                                                   \
    switch (nr) {                                                                                 \
        ROWS_CASE(call, 1) ROWS_CASE(call, 2) ROWS_CASE(call, 3) ROWS_CASE(call, 4)               \
        ROWS_CASE(call, 5) ROWS_CASE(call, 6) ROWS_CASE(call, 7) default: call(NR); break;        \
    }

/* One row of KB scores, scaled and soft-capped in place with
 * lb_softcap_canon's operations in its order (Gemma 2); apart from the
 * softmax loop, whose registers it would crowd (AVX2 has 16) */
__attribute__((noinline)) ATTR void SFX(cap_row)(float *sr, float scale, float cap) {
    const VT vs = VSET1(scale), vc = VSET1(cap), vtc = VSET1(2.0f / cap), one = VSET1(1.0f), two = VSET1(2.0f);
    for (int j = 0; j < LB_ATTN_KB; j += W) {
        const VT x = VMUL(VLOAD(sr + j), vs);
        VSTORE(sr + j, VMUL(vc, VSUB(one, VDIV(two, VADD(one, VEXP(VMUL(x, vtc)))))));
    }
}

ATTR_INLINE void SFX(attn_block)(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch, const int kt,
                                 const int vt) {
    const int g = a->n_head / a->n_head_kv, hd = a->head_dim, hdp = lb_attn_hd_pad(hd), M = (t1 - t0) * g;
    const int KB = LB_ATTN_KB, NV = KB / W;
#ifdef ATTN_AMX
    /* 16 rows or more: the products on the tile unit, rows padded to MS */
    const int amx = M >= 16, MS = amx ? (M + 15) / 16 * 16 : M;
#else
    const int amx = 0, MS = M;
#endif
    lb_attn_scr s = lb_attn_scr_of(scratch, MS, hd, hdp);
    /* gather the queries; zero O and the sums */
    const int capped = a->softcap > 0.0f;
    /* soft-capped scores are scaled and capped in place by cap_row; the
     * loop below then multiplies by 1 (exact) */
    const VT vscale = VSET1(capped ? 1.0f : a->scale);
    for (int t = t0; t < t1; t++) {
        const float *q = a->q + (size_t)t * a->q_stride + (size_t)kvh * g * hd;
        float *d = s.qs + (size_t)(t - t0) * g * hd;
        int i = 0;
        for (; i + W <= g * hd; i += W) VSTORE(d + i, VLOAD(q + i));
        for (; i < g * hd; i++) d[i] = q[i];
    }
    for (size_t i = 0; i < (size_t)MS * hdp; i += W) VSTORE(s.o + i, VZERO());
    for (int r = 0; r < M; r++) {
        s.m[r] = -INFINITY;
        for (int i = 0; i < 16; i += W) VSTORE(s.lv + (size_t)r * 16 + i, VZERO());
    }
#ifdef ATTN_AMX
    amx_bufs tiles = {0};
    if (amx) { /* the padding rows: zero queries and probabilities */
        memset(s.qs + (size_t)M * hd, 0, (size_t)(MS - M) * hd * sizeof(float));
        _tile_loadconfig(lb_amx_cfg_full());
        tiles = amx_bufs_of(s.x, MS, hd, hdp);
        for (int r = M; r < MS; r++) amx_p_row(&tiles, r, VZERO(), VZERO());
        amx_q_tiles(s.qs, MS, hd, tiles.q);
    }
#endif
    int kbeg, kend;
    lb_attn_unit_keys(a, t0, t1, &kbeg, &kend);
    const size_t kblk = lb_attn_k_block_bytes(hd, kt), vrow = lb_attn_v_row_bytes(hd, vt);
    const size_t kz = kt == LB_KV_F16 ? 2 : 4, vz = vt == LB_KV_F16 ? 2 : 4; /* f32 / f16 element sizes */
    const char *kbase = (const char *)a->k + (size_t)kvh * (a->n_ctx / KB) * kblk;
    const char *vbase = (const char *)a->v + (size_t)kvh * a->n_ctx * vrow;
    /* two or more tiles of rows read each key: widen the block once */
    const int k_widen = kt != LB_KV_F32 && M >= 2 * NR, v_widen = vt != LB_KV_F32 && M >= 2 * NR;
    for (int kb0 = kbeg / KB * KB; kb0 < kend; kb0 += KB) {
        const int slot0 = kb0 % a->n_ctx; /* a ring's wrap (kernels/attention.h) */
        const char *kb = kbase + (size_t)(slot0 / KB) * kblk;
        const int jlo = kbeg - kb0 > 0 ? kbeg - kb0 : 0, jhi = kend - kb0 < KB ? kend - kb0 : KB;
        /* S = Q K^T, 2W keys at a time (keys outside a row's range are masked below) */
#define QK_PASS                                                                                             \
    for (int c = jlo / (2 * W) * 2 * W; c < jhi; c += 2 * W)                                                \
        for (int r = 0; r < M; r += NR) {                                                                   \
            const int nr = M - r < NR ? M - r : NR;                                                         \
            DISPATCH_ROWS(QK, nr)                                                                           \
        }
#ifdef ATTN_AMX
        if (amx) {
            if (kt != LB_KV_F32) SFX(widen_k)(kb, hd, s.kw, kt);
            amx_qk(tiles.q, MS, hd, kt != LB_KV_F32 ? s.kw : (const float *)kb, tiles.k, s.s);
        } else
#endif
        if (k_widen) {
            SFX(widen_k)(kb, hd, s.kw, kt);
#define QK(n) SFX(qk_tile)(s.qs + (size_t)r * hd, hd, s.kw + c, s.s + (size_t)r * KB + c, n, 0)
            QK_PASS
#undef QK
        } else if (kt == LB_KV_Q8_0 || kt == LB_KV_Q4_0) {
            const int q4 = kt == LB_KV_Q4_0;
            const uint16_t *scales = (const uint16_t *)(kb + (size_t)(q4 ? (hd + 1) / 2 : hd) * KB);
#define QK(n) SFX(qk_tile_q)(s.qs + (size_t)r * hd, hd, (const uint8_t *)kb + c, scales + c, s.s + (size_t)r * KB + c, n, q4)
            QK_PASS
#undef QK
        } else {
#define QK(n) SFX(qk_tile)(s.qs + (size_t)r * hd, hd, kb + (size_t)c * kz, s.s + (size_t)r * KB + c, n, kt == LB_KV_F16)
            QK_PASS
#undef QK
        }
#undef QK_PASS
        const char *vb = vbase + (size_t)(slot0 + jlo) * vrow; /* the first value some row sees */
#ifdef ATTN_AMX
        if (amx) { /* the values' tiles now: P V of each row tile follows its softmax */
            if (vt != LB_KV_F32) SFX(widen_v)(vb, hdp, vrow, jhi - jlo, s.vw, vt);
            amx_v_tiles(hdp, vt != LB_KV_F32 ? s.vw : (const float *)vb, jlo, jhi, &tiles);
        }
#define AMX_ROW_DONE(r) \
    if (amx && ((r) % 16 == 15 || (r) == M - 1)) amx_pv_tile((r) / 16, hdp, &tiles, s.o)
#endif
        /* online softmax per row: P = exp(S - m) into S, sums by lane */
        for (int r = 0; r < M; r++) {
            float *sr = s.s + (size_t)r * KB;
            int lo, hi;
            lb_attn_row_keys(a, t0 + r / g, kb0, &lo, &hi);
            if (hi <= lo) {
#pragma GCC unroll 4
                for (int c = 0; c < NV; c++) VSTORE(sr + c * W, VZERO());
#ifdef ATTN_AMX
                if (amx) amx_p_row(&tiles, r, VZERO(), VZERO());
                AMX_ROW_DONE(r);
#endif
                continue;
            }
            VT x[KB / W];
            if (capped) SFX(cap_row)(sr, a->scale, a->softcap);
            const int masked = lo > 0 || hi < KB;
#pragma GCC unroll 4
            for (int c = 0; c < NV; c++) {
                x[c] = VMUL(VLOAD(sr + c * W), vscale);
                if (masked) x[c] = VMASK_SCORES(x[c], c * W, lo, hi);
            }
            float mr = s.m[r];
            VT mx = x[0];
#pragma GCC unroll 4
            for (int c = 1; c < NV; c++) mx = VMAX(mx, x[c]);
            if (VANY_GT(mx, mr + LB_ATTN_SLACK)) {
                const float mnew = VHMAX(mx);
                if (mr > -INFINITY) {
                    const VT va = VSET1(expf(mr - mnew));
                    float *o = s.o + (size_t)r * hdp;
                    for (int d = 0; d < hdp; d += W) VSTORE(o + d, VMUL(VLOAD(o + d), va));
                    for (int i = 0; i < 16; i += W) VSTORE(s.lv + (size_t)r * 16 + i, VMUL(VLOAD(s.lv + (size_t)r * 16 + i), va));
                }
                s.m[r] = mr = mnew;
            }
            const VT vm = VSET1(mr);
#pragma GCC unroll 4
            for (int c = 0; c < NV; c++) {
                x[c] = VEXP(VSUB(x[c], vm)); /* masked: exp(-inf) = 0 */
                if (!amx) VSTORE(sr + c * W, x[c]); /* the tile unit takes P from its own tiles (amx_p_row) */
            }
            VLANE_SUM(s.lv + (size_t)r * 16, x);
#ifdef ATTN_AMX
            if (amx) amx_p_row(&tiles, r, x[0], x[1]);
            AMX_ROW_DONE(r);
#endif
        }
        /* O += P V over the keys some row sees */
#define PV_PASS                                                                                             \
    for (int d = 0; d < hdp; d += 2 * W)                                                                    \
        for (int r = 0; r < M; r += NR) {                                                                   \
            const int nr = M - r < NR ? M - r : NR;                                                         \
            DISPATCH_ROWS(PV, nr)                                                                           \
        }
#ifdef ATTN_AMX
#undef AMX_ROW_DONE
        if (amx) { /* done row tile by row tile above */
        } else
#endif
        if (v_widen) {
            SFX(widen_v)(vb, hdp, vrow, jhi - jlo, s.vw, vt);
#define PV(n) SFX(pv_tile)(s.s + (size_t)r * KB + jlo, s.vw + d, hdp, jhi - jlo, s.o + (size_t)r * hdp + d, hdp, n, 0)
            PV_PASS
#undef PV
        } else if (vt == LB_KV_Q8_0 || vt == LB_KV_Q4_0) {
            const int q4 = vt == LB_KV_Q4_0;
#define PV(n) SFX(pv_tile_q)(s.s + (size_t)r * KB + jlo, vb, vrow, d, jhi - jlo, s.o + (size_t)r * hdp + d, hdp, n, q4)
            PV_PASS
#undef PV
        } else {
#define PV(n) \
    SFX(pv_tile)(s.s + (size_t)r * KB + jlo, vb + (size_t)d * vz, hdp, jhi - jlo, s.o + (size_t)r * hdp + d, hdp, n, vt == LB_KV_F16)
            PV_PASS
#undef PV
        }
#undef PV_PASS
    }
#ifdef ATTN_AMX
    if (amx) _tile_release();
#endif
    /* out = O / sum (a sink's exp joins the sum: lb_attn_end) */
    for (int r = 0; r < M; r++) {
        const int t = t0 + r / g, i = r % g;
        float sum = VHSUM16(s.lv + (size_t)r * 16);
        if (a->sinks) sum += expf(a->sinks[kvh * g + i] - s.m[r]);
        const float inv = 1.0f / sum;
        const VT vinv = VSET1(inv);
        const float *o = s.o + (size_t)r * hdp;
        float *d = a->out + (size_t)t * a->o_stride + (size_t)(kvh * g + i) * hd;
        int j = 0;
        for (; j + W <= hd; j += W) VSTORE(d + j, VMUL(VLOAD(o + j), vinv));
        for (; j < hd; j++) d[j] = o[j] * inv;
    }
}

/* one copy of the unit per pair of cache element types */
ATTR void SFX(lb_attn_block)(const lb_attn_args *a, int kvh, int t0, int t1, float *scratch) {
#define TYPES_CASE(k, v) \
    case (k) * LB_KV_TYPES + (v): SFX(attn_block)(a, kvh, t0, t1, scratch, k, v); break;
#define TYPES_ROW(k) TYPES_CASE(k, 0) TYPES_CASE(k, 1) TYPES_CASE(k, 2) TYPES_CASE(k, 3)
    switch (a->k_type * LB_KV_TYPES + a->v_type) { TYPES_ROW(0) TYPES_ROW(1) TYPES_ROW(2) TYPES_ROW(3) }
#undef TYPES_ROW
#undef TYPES_CASE
}
#undef DISPATCH_ROWS
#undef ROWS_CASE
#undef KV_LOAD
#undef V_SCALE
#undef V_BLOCK_BYTES
#undef V_VALUES
#undef K_CODES
