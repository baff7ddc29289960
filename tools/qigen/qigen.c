/* QIGen for lowbit (seed 001): generates the Micro-GEMV kernels of the 12
 * GQ{b}_G{g} types (formats/gq.h) in their interleaved _QG layout
 * (formats/repack_qg.h) from the paper's performance model. A host program:
 * CMake builds it with the host compiler and runs it at build time; its
 * output goes to the build directory and is never committed.
 *
 * usage: qigen -o DIR [--isa NAME:ETA:L1KIB]...
 *   NAME avx2 | avx512 | neon | dotprod; ETA vector registers (eq. (4)'s
 *   eta); L1KIB the L1 data cache in KiB (gamma = 8192 * L1KIB bits, eq. (3)
 *   and (5)). Default: --isa avx2:16:32 --isa avx512:32:32 --isa neon:32:64
 *   --isa dotprod:32:64.
 *
 * Writes DIR/qigen_<isa>_b<bits>.c (kernels, guarded by the architecture
 * they compile for) and DIR/qigen_table.c (every ISA's table). Per ISA,
 * bits b, group g and variant it emits one kernel per candidate (m_u, t_u)
 * and per ISA and GQ type with g >= 32 one weight-tile converter for the
 * prefill GEMM. The model (docs/qigen.md):
 *
 *   Micro-GEMV (eq. (4)): m_u + m_u t_u + t_u <= eta. A kernel holds t_u
 *     output vectors y_mu (VL rows each: the rows of one vector register),
 *     m_u activation registers x_mu and m_u t_u decoded weight registers
 *     W_mu. Candidates: m_u in {1, 2, 4, 8} (i8: at most one segment, so
 *     m_u <= 4 for g = 16), t_u in {1, 2, 4, t_max(m_u)} with t_max the
 *     largest t_u eq. (4) allows; the runtime's default is
 *     the candidate that uses the most registers (largest left-hand side,
 *     ties to the larger t_u) among those whose tile is whole 16-row groups
 *     (t_u VL a multiple of 16); on AVX2 the one with the fewest registers
 *     among those whose tile is one 16-row group, on AVX-512 the one with
 *     the most among those of four groups (default_cand). `lowbit
 *     tune` measures them all.
 *   Mini-GEMV (eq. (5)): x_bits m_b + w_bits m_b t_b + 32 t_b <= gamma with
 *     t_b mod (t_u VL) = 0 and m_b mod m_u = 0; here also t_b mod 16 = 0
 *     (whole 16-row groups of the layout) and m_b mod 128 = 0 (whole
 *     x-blocks). x_bits = 32 (fp32 activations; the paper's 32 m_b) or 9
 *     (int8 activations with a 32-bit scale per 32); w_bits = the type's
 *     bits per weight, scales and zeros included (the paper's b). m_b, t_b
 *     maximise the left-hand side, found by
 *     enumerating t_b; near-ties (within gamma / 8) go to the larger m_b.
 *
 * Two variants per type:
 *   f32  the paper's: weights unpacked to float (shift, mask, convert,
 *        Algorithm 2), fp32 activations, eq. (2) per group:
 *        s (sum x q - z sum x).
 *   i8   activations quantized per 32 as Q8_0 (the format the GQ reference
 *        dot takes); 4 weights per 32-bit lane as bytes (one shift and one
 *        mask), dot products in int32 (AVX-512 VNNI vpdpbusd; AVX2
 *        vpmaddubsw into int16 + vpmaddwd; NEON smlal into int16 +
 *        pairwise adds; dotprod SDOT by lane, 16 activation bytes a
 *        register), exact per (Q8_0 block, group) segment as
 *        sum (q - z) a = sum q a - z sum a, then one float step
 *        y += (s d) * sum per segment, as the reference.
 *
 * Layout the kernels read (formats/repack_qg.h): groups of 16 rows; per 128
 * weights of the 16 rows an x-block of 16 * the plain block's bytes:
 * 4b word vectors of 64 bytes (vector c holds word c of rows 0..15, one
 * 32-bit lane per row), then 128/g vectors of 16 fp16 scales, 128/g x 16
 * zero bytes, the rows' padding. Inside a row's words the codes are
 * re-encoded so that 32-bit lane byte e holds consecutive weights:
 *   4-bit: word c, byte e = q(8c + e) | q(8c + 4 + e) << 4;
 *   2-bit: word c, byte e bits 2s..2s+1 = q(16c + 4s + e);
 *   3-bit: words 3t, 3t+1, 3t+2: byte e of word i (i = 0, 1, 2) holds
 *          q(32t + 8i + e) in bits 0-2 and q(32t + 8i + 4 + e) in bits 3-5;
 *          bits 6-7 of byte e of word 0 / word 1: the low 2 bits of
 *          q(32t + 24 + e) / q(32t + 28 + e); bits 6 / 7 of byte e of word
 *          2: their third bits.
 * so "part" p of a word (4 weights per lane: (W >> shift) & mask) pairs with
 * the activation dword of the same 4 weights, in natural order.
 *
 * Units of the loops below: the i8 kernels count 32-bit activation lanes
 * ("dwords", 4 weights), the f32 kernels single weights. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- output */

static FILE *out;
static int indent;

static void line(const char *fmt, ...) {
    va_list ap;
    for (int i = 0; i < indent; i++) fputs("    ", out);
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
}

/* A string built with printf, from a ring of buffers (expressions nest). */
static const char *fmt(const char *f, ...) {
    static char ring[64][512];
    static int next;
    char *b = ring[next++ % 64];
    va_list ap;
    va_start(ap, f);
    vsnprintf(b, sizeof ring[0], f, ap);
    va_end(ap);
    return b;
}

/* ---------------------------------------------------------------- targets */

/* DOTPROD: the NEON kernels with the i8 products by SDOT (Armv8.2 dotprod,
 * also the i8mm level's GEMV); everything else is NEON's. */
enum { AVX2, AVX512, NEON, DOTPROD, N_ISA };
static const char *const isa_names[N_ISA] = {"avx2", "avx512", "neon", "dotprod"};
static const char *const isa_enum[N_ISA] = {"LB_QG_AVX2", "LB_QG_AVX512", "LB_QG_NEON", "LB_QG_DOTPROD"};
static const int isa_vl[N_ISA] = {8, 16, 4, 4}; /* rows (32-bit lanes) per vector register */

typedef struct {
    int on, eta, l1_kib;
} target;
static target targets[N_ISA];

enum { I8, F32 };
static const char *const var_names[2] = {"i8", "f32"};

/* ---------------------------------------------------------------- types */

typedef struct {
    int b, g;
} gqt;
static const gqt gq_types[12] = {{4, 128}, {4, 64}, {4, 32}, {4, 16}, {3, 128}, {3, 64},
                                 {3, 32},  {3, 16}, {2, 128}, {2, 64}, {2, 32}, {2, 16}};

/* formats/gq.h: plain block bytes; x-block (16 rows) offsets */
static int gq_size(int b, int g) { return (16 * b + 3 * (128 / g) + 3) / 4 * 4; }
static int xbs(int b, int g) { return 16 * gq_size(b, g); }
static int s_off(int b) { return 256 * b; }
static int z_off(int b, int g) { return 256 * b + 32 * (128 / g); }

/* word periods: units per period and words per period (i8: dwords, f32: weights) */
static int period_units(int var, int b) {
    if (var == I8) return b == 4 ? 2 : b == 2 ? 4 : 8;
    return b == 4 ? 8 : b == 2 ? 16 : 32;
}
static int period_words(int b) { return b == 3 ? 3 : 1; }
/* units per x-block, per group, per segment (a run summed exactly before its float step) */
static int xb_units(int var) { return var == I8 ? 32 : 128; }
static int group_units(int var, int g) { return var == I8 ? g / 4 : g; }
static int seg_units(int var, int g) { return var == I8 ? (g < 32 ? g : 32) / 4 : g; }

static int imax(int a, int b) { return a > b ? a : b; }

/* ---------------------------------------------------------------- model */

typedef struct {
    int mu, tu, mb, tb;
    long lhs4, lhs5; /* left-hand sides of eq. (4) (registers) and eq. (5) (bits) */
} cand;

static int eq4(int mu, int tu) { return mu + mu * tu + tu; }

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* Mini-GEMV block for a candidate: maximise eq. (5)'s left-hand side over
 * t_b = multiples of lcm(16, t_u VL), m_b the largest multiple of 128 that
 * fits. The maximum is flat: blocks from 16 x 3328 to 448 x 128 all fill
 * the L1 to within a few %, and the exact maximiser tends to be the tall,
 * thin one (one x-block along K, 28 row groups), whose 28 interleaved runs
 * of one x-block each stream badly. So left-hand sides within one way of
 * the L1 (gamma / 8) of the maximum count as equal, and among them the
 * largest m_b wins: the longest run along K of each row group's stream.
 * Bits per weight in quarters (scales and zeros make them fractional). */
static void mini_block(int isa, int var, int b, int g, cand *c) {
    const long gamma = 8192L * targets[isa].l1_kib;
    const long xq = var == F32 ? 4 * 32 : 4 * 9; /* x bits, quarters */
    const long wq = 32L * gq_size(b, g) / 128;    /* weight bits, quarters (8 * size / 128 * 4) */
    const int step = 16 * (c->tu * isa_vl[isa]) / gcd(16, c->tu * isa_vl[isa]); /* lcm(16, t_u VL) */
    long best = -1;
    for (int pass = 0; pass < 2; pass++) { /* 0: the maximum; 1: the longest m_b near it */
        c->mb = 0;
        for (int tb = step; tb <= 4096; tb += step) {
            long mb = (4 * gamma - 4 * 32L * tb) / (xq + wq * tb);
            mb = mb / 128 * 128;
            if (mb > 16384) mb = 16384;
            if (mb < 128) break;
            const long lhs = (xq * mb + wq * mb * tb + 4 * 32L * tb) / 4;
            if (pass == 0) {
                if (lhs > best) best = lhs;
            } else if (lhs >= best - gamma / 8 && mb > c->mb) {
                c->lhs5 = lhs, c->mb = (int)mb, c->tb = tb;
            }
        }
        if (best < 0) break;
    }
    if (c->mb == 0) c->mb = 128, c->tb = step, c->lhs5 = (xq * 128 + wq * 128L * step + 4 * 32L * step) / 4;
}

static int candidates(int isa, int var, int b, int g, cand *cs) {
    static const int mus[4] = {1, 2, 4, 8};
    int n = 0;
    for (int i = 0; i < 4; i++) {
        const int mu = mus[i], tmax = (targets[isa].eta - mu) / (mu + 1); /* eq. (4) */
        if (mu > seg_units(var, g)) continue; /* x_mu within one exact segment (i8, g = 16: 4 dwords) */
        const int tus[4] = {1, 2, 4, tmax};
        for (int j = 0; j < 4; j++) {
            const int tu = tus[j];
            if (tu < 1 || tu > tmax) continue;
            int dup = 0;
            for (int k = 0; k < n; k++) dup |= cs[k].mu == mu && cs[k].tu == tu;
            if (dup) continue;
            cs[n] = (cand){mu, tu, 0, 0, eq4(mu, tu), 0};
            mini_block(isa, var, b, g, &cs[n]);
            n++;
        }
    }
    return n;
}

/* The model's choice: the most registers (eq. (4)'s left-hand side; ties to
 * the larger t_u) among the candidates whose tile is whole 16-row groups of
 * the layout (t_u VL a multiple of 16), any candidate if none is. A tile
 * that ends inside a group leaves the group's 64-byte lines to be fetched
 * again by the next tile: AVX2's former default (1, 7), 3.5 groups, streamed
 * 26.7 GB/s on Zen 3 where (2, 4) gave 31.7 (docs/qigen.md). */
static int default_cand(int isa_i, const cand *cs, int n) {
    int best = -1;
    if (isa_i == AVX2) {
        /* AVX2: one 16-row group per tile (t_u VL = 16: a single sequential
         * stream, which the spread prefetch keeps ahead), the fewest registers:
         * with the prefetch on, (1, 2) streamed as fast as (2, 2) and (4, 2) or
         * faster for 11 of the 12 types on Zen 3, and (2, 4), two streams and
         * a K split, 10-25 % slower (docs/qigen.md, "Prefetch"). Its int16
         * chains add at latency 1, so one activation dword per step is enough. */
        for (int i = 0; i < n; i++)
            if (cs[i].tu * isa_vl[isa_i] == 16 && (best < 0 || cs[i].lhs4 < cs[best].lhs4)) best = i;
        if (best >= 0) return best;
    }
    if (isa_i == AVX512) {
        /* AVX-512: four 16-row groups per tile (t_u VL = 64), the most
         * registers: (4, 4). With the prefetch on it streamed within 3 % of
         * the best candidate for every type on the Xeon (SPR); the register
         * maximum (2, 10), ten streams whose prefetches crowd the L1, was
         * level to 5 % behind for the 4-bit types and 3-13 % behind for the
         * 3- and 2-bit ones; one stream (t_u = 1) lost 15-25 % on GQ4_G128
         * (docs/qigen.md, "AVX-512 and AMX"). */
        for (int i = 0; i < n; i++)
            if (cs[i].tu * isa_vl[isa_i] == 64 && (best < 0 || cs[i].lhs4 > cs[best].lhs4)) best = i;
        if (best >= 0) return best;
    }
    for (int whole = 1; whole >= 0 && best < 0; whole--)
        for (int i = 0; i < n; i++) {
            if (whole && cs[i].tu * isa_vl[isa_i] % 16) continue;
            if (best < 0 || cs[i].lhs4 > cs[best].lhs4 || (cs[i].lhs4 == cs[best].lhs4 && cs[i].tu > cs[best].tu))
                best = i;
        }
    return best;
}

/* ---------------------------------------------------------------- ISA vocabulary */

static int isa; /* the ISA being emitted */
static int arm(void) { return isa == NEON || isa == DOTPROD; }

static const char *ivec(void) { return isa == AVX512 ? "__m512i" : isa == AVX2 ? "__m256i" : "uint8x16_t"; }
static const char *fvec(void) { return isa == AVX512 ? "__m512" : isa == AVX2 ? "__m256" : "float32x4_t"; }
static const char *pfx(void) { return isa == AVX512 ? "_mm512" : "_mm256"; }

/* the 4b words of the row vector of t, word index (expression) wi */
static const char *load_words(int t, const char *wi) {
    if (arm()) return fmt("vld1q_u8(q%d + 64 * (%s))", t, wi);
    if (isa == AVX512) return fmt("_mm512_loadu_si512((const void *)(q%d + 64 * (%s)))", t, wi);
    return fmt("_mm256_loadu_si256((const __m256i *)(q%d + 64 * (%s)))", t, wi);
}

/* dword-lane shifts and masks, x86 (words as integer vectors) */
static const char *x_srl(const char *v, int n) { return n ? fmt("%s_srli_epi32(%s, %d)", pfx(), v, n) : v; }
static const char *x_and(const char *a, const char *m) { return fmt("%s_and_si%d(%s, %s)", pfx(), isa == AVX512 ? 512 : 256, a, m); }
static const char *x_or(const char *a, const char *b) { return fmt("%s_or_si%d(%s, %s)", pfx(), isa == AVX512 ? 512 : 256, a, b); }

/* ---- i8: part p of a word period (4 weights per lane as bytes) ---- */

/* words of part p, relative to the period: the word(s) it reads */
static void part_words(int b, int p, int *w0, int *w1) {
    *w1 = -1;
    if (b != 3) {
        *w0 = 0;
        return;
    }
    if (p < 6) *w0 = p / 2;
    else *w0 = p - 6, *w1 = 2;
}

/* the expression of part p given the word variables W[] of this period */
static const char *i8_part(int b, int p, const char *const W[3]) {
    if (arm()) {
        /* byte lanes: per-byte shifts need no mask where the field ends at bit 7 */
        if (b == 4) return p == 0 ? fmt("vandq_u8(%s, vdupq_n_u8(0x0f))", W[0]) : fmt("vshrq_n_u8(%s, 4)", W[0]);
        if (b == 2)
            return p == 0 ? fmt("vandq_u8(%s, vdupq_n_u8(3))", W[0])
                   : p == 3 ? fmt("vshrq_n_u8(%s, 6)", W[0])
                            : fmt("vandq_u8(vshrq_n_u8(%s, %d), vdupq_n_u8(3))", W[0], 2 * p);
        if (p < 6) {
            const char *w = W[p / 2];
            return p % 2 ? fmt("vandq_u8(vshrq_n_u8(%s, 3), vdupq_n_u8(7))", w) : fmt("vandq_u8(%s, vdupq_n_u8(7))", w);
        }
        /* low 2 bits from bits 6-7 of word p - 6, the third from bit 6 / 7 of word 2 */
        if (p == 6) return fmt("vorrq_u8(vshrq_n_u8(%s, 6), vandq_u8(vshrq_n_u8(%s, 4), vdupq_n_u8(4)))", W[0], W[2]);
        return fmt("vsliq_n_u8(vshrq_n_u8(%s, 6), vshrq_n_u8(%s, 7), 2)", W[1], W[2]);
    }
    if (b == 4) return x_and(x_srl(W[0], 4 * p), "m4");
    if (b == 2) return x_and(x_srl(W[0], 2 * p), "m2");
    if (p < 6) return x_and(x_srl(W[p / 2], 3 * (p % 2)), "m7");
    const char *lo = x_srl(W[p - 6], 6), *hi = x_srl(W[2], 4 + (p - 6));
    if (isa == AVX512) /* (m3 ? lo : hi) & 7 */
        return fmt("_mm512_and_si512(_mm512_ternarylogic_epi32(m3, %s, %s, 0xca), m7)", lo, hi);
    return x_or(x_and(lo, "m3"), x_and(hi, "m4b"));
}

/* ---- f32: weight i of a word period as a float vector ---- */

static const char *f32_weight(int b, int i, const char *const W[3]) {
    int w, sh, mask, w2 = -1, sh2 = 0;
    if (b == 4) w = 0, sh = i < 4 ? 8 * i : 8 * (i - 4) + 4, mask = 15;
    else if (b == 2) w = 0, sh = 8 * (i % 4) + 2 * (i / 4), mask = 3;
    else if (i < 24) w = i / 8, sh = 8 * (i % 4) + 3 * ((i % 8) / 4), mask = 7;
    else w = (i - 24) / 4, sh = 8 * ((i - 24) % 4) + 6, mask = 3, w2 = 2, sh2 = 8 * ((i - 24) % 4) + 4 + (i - 24) / 4;
    const int bits = mask == 15 ? 4 : mask == 7 ? 3 : 2;
    if (arm()) {
        const char *v = fmt("vreinterpretq_u32_u8(%s)", W[w]);
        const char *s = sh ? fmt("vshrq_n_u32(%s, %d)", v, sh) : v;
        const char *q = sh + bits == 32 ? s : fmt("vandq_u32(%s, vdupq_n_u32(%d))", s, mask);
        if (w2 >= 0) {
            const char *v2 = fmt("vreinterpretq_u32_u8(%s)", W[w2]);
            q = fmt("vorrq_u32(%s, vandq_u32(vshrq_n_u32(%s, %d), vdupq_n_u32(4)))", q, v2, sh2);
        }
        return fmt("vcvtq_f32_u32(%s)", q);
    }
    const char *mname = mask == 15 ? "k15" : mask == 7 ? "k7" : "k3";
    const char *s = x_srl(W[w], sh);
    const char *q = sh + bits == 32 ? s : x_and(s, mname);
    if (w2 >= 0) {
        const char *hi = x_srl(W[w2], sh2);
        q = isa == AVX512 ? fmt("_mm512_and_si512(_mm512_ternarylogic_epi32(k3, %s, %s, 0xca), k7)", s, hi)
                          : x_or(q, x_and(hi, "k4"));
    }
    return fmt("%s_cvtepi32_ps(%s)", pfx(), q);
}

/* ---------------------------------------------------------------- kernel emission */

typedef struct {
    int var, b, g, mu, tu;
    int P;       /* row vectors per 16-row group: 16 / VL */
    int L;       /* units per loop body */
} kspec;

static const char *kname(int var, int b, int g, int mu, int tu) {
    return fmt("qg_%s_%s_gq%d_g%d_m%d_t%d", isa_names[isa], var_names[var], b, g, mu, tu);
}

/* s, z of the group whose index expression is j, for every row vector */
static void emit_group_params(const kspec *k, const char *j) {
    for (int t = 0; t < k->tu; t++) {
        const char *sp = fmt("sp%d + 32 * (%s)", t, j), *zp = fmt("zp%d + 16 * (%s)", t, j);
        if (isa == AVX512) {
            line("const __m512 s%d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(%s)));", t, sp);
            line("const __m512i z%d = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(%s)));", t, zp);
        } else if (isa == AVX2) {
            line("const __m256 s%d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(%s)));", t, sp);
            line("const __m256i z%d = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(%s)));", t, zp);
        } else {
            line("const float32x4_t s%d = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(%s)));", t, sp);
            line("const int32x4_t z%d = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(lb_qg_ld32u(%s))))));",
                 t, zp);
        }
        if (k->var == F32) {
            if (arm()) line("const float32x4_t zf%d = vcvtq_f32_s32(z%d);", t, t);
            else line("const %s zf%d = %s_cvtepi32_ps(z%d);", fvec(), t, pfx(), t);
        }
    }
}

/* Loads the words of period `per` (relative to the body) needed by parts /
 * weights [p0, p1) for row vector t, as variables W<t>_<w>, once each. */
static void emit_period_words(const kspec *k, int t, int per, int need[3], int *loaded) {
    const int WP = period_words(k->b);
    for (int w = 0; w < WP; w++) {
        if (!need[w] || loaded[w]) continue;
        loaded[w] = 1;
        line("const %s W%d_%d_%d = %s;", ivec(), t, per, w, load_words(t, fmt("wi + %d", WP * per + w)));
    }
}

/* One micro-step of the i8 kernel: units [k0, k0 + mu) of the body (k0
 * relative to u0, so parts are known here), activations at `a` (the
 * segment's first dword at ka). */
static void emit_i8_step(const kspec *k, int k0, int ka, int first_in_seg) {
    const int PU = period_units(I8, k->b);
    line("{ /* micro-step: x_mu = %d activation dwords, W_mu = %d x %d decoded weight vectors */", k->mu, k->mu, k->tu);
    indent++;
    for (int i = 0; i < k->mu; i++) {
        const int off = 4 * (k0 + i - ka);
        if (isa == DOTPROD) {
            /* 16 activation bytes a register, SDOT by lane: one load per 4 dwords */
            if (i == 0 || (k0 + i - ka) % 4 == 0) line("const int8x16_t xv%d = vld1q_s8((const int8_t *)(a + %d));", (k0 + i - ka) / 4, 16 * ((k0 + i - ka) / 4));
        } else if (isa == NEON) {
            line("const int8x16_t x%d = vreinterpretq_s8_u32(vdupq_n_u32(lb_qg_ld32u(a + %d)));", i, off);
        } else {
            line("const %s x%d = %s_set1_epi32(lb_qg_ld32(a + %d));", ivec(), i, pfx(), off);
        }
    }
    for (int t = 0; t < k->tu; t++) {
        int loaded[8][3];
        memset(loaded, 0, sizeof loaded);
        for (int i = 0; i < k->mu; i++) {
            const int u = k0 + i, per = u / PU, p = u % PU;
            int w0, w1, need[3] = {0, 0, 0};
            part_words(k->b, p, &w0, &w1);
            need[w0] = 1;
            if (w1 >= 0) need[w1] = 1;
            emit_period_words(k, t, per, need, loaded[per]);
            const char *W[3] = {fmt("W%d_%d_0", t, per), fmt("W%d_%d_1", t, per), fmt("W%d_%d_2", t, per)};
            const char *wv = i8_part(k->b, p, W);
            const int first = first_in_seg && i == 0;
            if (isa == AVX512) {
                /* t_u = 1: dwords alternate between two chains (one chain of 8
                 * dependent vpdpbusd per segment stalls decode's few rows) */
                const char *acc = k->tu == 1 && u % 2 ? fmt("i%db", t) : fmt("i%d", t);
                line("%s = _mm512_dpbusd_epi32(%s, %s, x%d);", acc, acc, wv, i);
            } else if (isa == DOTPROD) {
                /* codes < 128: the unsigned bytes are SDOT's signed operand as they are; two chains at t_u = 1 */
                const char *acc = k->tu == 1 && u % 2 ? fmt("i%db", t) : fmt("i%d", t);
                const int d = u - ka;
                line("%s = vdotq_laneq_s32(%s, vreinterpretq_s8_u8(%s), xv%d, %d);", acc, acc, wv, d / 4, d % 4);
            } else if (isa == AVX2) {
                if (first) line("h%d = _mm256_maddubs_epi16(%s, x%d);", t, wv, i);
                else line("h%d = _mm256_add_epi16(h%d, _mm256_maddubs_epi16(%s, x%d));", t, t, wv, i);
            } else {
                line("{ const int8x16_t w = vreinterpretq_s8_u8(%s);", wv);
                if (first) {
                    line("  l%d = vmull_s8(vget_low_s8(w), vget_low_s8(x%d)); h%d = vmull_high_s8(w, x%d); }", t, i, t, i);
                } else {
                    line("  l%d = vmlal_s8(l%d, vget_low_s8(w), vget_low_s8(x%d)); h%d = vmlal_high_s8(h%d, w, x%d); }", t, t,
                         i, t, t, i);
                }
            }
        }
    }
    indent--;
    line("}");
}

/* One i8 segment: units [ks, ks + SU) of the body (relative to u0). */
static void emit_i8_segment(const kspec *k, int ks) {
    const int SU = seg_units(I8, k->g);
    line("{ /* segment: dwords u0 + %d .. + %d (one Q8_0 block%s): sum (q - z) a exactly, then y += (s d) sum */", ks,
         ks + SU - 1, SU < 8 ? " half" : "");
    indent++;
    line("const uint8_t *a = ab + 34 * ((u0 + %d) >> 3) + 2 + 4 * ((u0 + %d) & 7);", ks, ks);
    line("const int32_t asum = ia[(u0 + %d) / %d];", ks, SU);
    line("const float d = fa[(u0 + %d) >> 3];", ks);
    for (int t = 0; t < k->tu; t++) {
        if (isa == AVX512) {
            line("__m512i i%d = _mm512_mullo_epi32(z%d, _mm512_set1_epi32(-asum));", t, t);
            if (k->tu == 1) line("__m512i i%db = _mm512_setzero_si512();", t);
        } else if (isa == DOTPROD) {
            line("int32x4_t i%d = vmulq_n_s32(z%d, -asum);", t, t);
            if (k->tu == 1) line("int32x4_t i%db = vdupq_n_s32(0);", t);
        }
        else if (isa == AVX2) line("__m256i h%d;", t);
        else line("int16x8_t l%d, h%d;", t, t);
    }
    for (int s = 0; s < SU; s += k->mu) emit_i8_step(k, ks + s, ks, s == 0);
    for (int t = 0; t < k->tu; t++) {
        if (isa == AVX512) {
            if (k->tu == 1) line("i%d = _mm512_add_epi32(i%d, i%db);", t, t, t);
            line("y%d = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i%d), _mm512_mul_ps(s%d, _mm512_set1_ps(d)), y%d);", t, t, t, t);
        } else if (isa == DOTPROD) {
            if (k->tu == 1) line("i%d = vaddq_s32(i%d, i%db);", t, t, t);
            line("y%d = vfmaq_f32(y%d, vcvtq_f32_s32(i%d), vmulq_n_f32(s%d, d));", t, t, t, t);
        } else if (isa == AVX2) {
            line("const __m256i i%d = _mm256_sub_epi32(_mm256_madd_epi16(h%d, ones16), _mm256_mullo_epi32(z%d, "
                 "_mm256_set1_epi32(asum)));",
                 t, t, t);
            line("y%d = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i%d), _mm256_mul_ps(s%d, _mm256_set1_ps(d)), y%d);", t, t, t, t);
        } else {
            line("const int32x4_t i%d = vmlsq_n_s32(vpaddq_s32(vpaddlq_s16(l%d), vpaddlq_s16(h%d)), z%d, asum);", t, t, t, t);
            line("y%d = vfmaq_f32(y%d, vcvtq_f32_s32(i%d), vmulq_n_f32(s%d, d));", t, t, t, t);
        }
    }
    indent--;
    line("}");
}

/* One f32 micro-step: weights [k0, k0 + mu) of the body. */
static void emit_f32_step(const kspec *k, int k0) {
    const int PU = period_units(F32, k->b);
    line("{ /* micro-step: x_mu = %d activations, W_mu = %d x %d unpacked weight vectors */", k->mu, k->mu, k->tu);
    indent++;
    if (arm()) {
        for (int i = 0; i < k->mu; i++)
            if (i == 0 || (k0 + i) % 4 == 0) line("const float32x4_t x%d = vld1q_f32(xp + u0 + %d);", (k0 + i) / 4 - k0 / 4, (k0 + i) & ~3);
    } else {
        for (int i = 0; i < k->mu; i++) line("const %s x%d = %s_set1_ps(xp[u0 + %d]);", fvec(), i, pfx(), k0 + i);
    }
    for (int t = 0; t < k->tu; t++) {
        int loaded[8][3];
        memset(loaded, 0, sizeof loaded);
        for (int i = 0; i < k->mu; i++) {
            const int u = k0 + i, per = u / PU, wi = u % PU;
            int need[3] = {0, 0, 0};
            if (k->b == 3) {
                if (wi < 24) need[wi / 8] = 1;
                else need[(wi - 24) / 4] = need[2] = 1;
            } else {
                need[0] = 1;
            }
            emit_period_words(k, t, per, need, loaded[per]);
            const char *W[3] = {fmt("W%d_%d_0", t, per), fmt("W%d_%d_1", t, per), fmt("W%d_%d_2", t, per)};
            const char *wf = f32_weight(k->b, wi, W);
            if (arm())
                line("g%d = vfmaq_laneq_f32(g%d, %s, x%d, %d);", t, t, wf, (k0 + i) / 4 - k0 / 4, (k0 + i) & 3);
            else line("g%d = %s_fmadd_ps(%s, x%d, g%d);", t, pfx(), wf, i, t);
        }
    }
    indent--;
    line("}");
}

/* f32: units [k0, k0 + n) of the body as micro-steps of mu (inside one group) */
static void emit_f32_units(const kspec *k, int k0, int n) {
    for (int s = 0; s < n; s += k->mu) emit_f32_step(k, k0 + s);
}

static void emit_f32_group_open(const kspec *k) {
    for (int t = 0; t < k->tu; t++) line("%s g%d = %s;", fvec(), t, arm() ? "vdupq_n_f32(0)" : fmt("%s_setzero_ps()", pfx()));
}

/* y += s (sum x q - z sum x), eq. (2), X the group's activation sum */
static void emit_f32_group_close(const kspec *k, const char *X) {
    line("{");
    indent++;
    line("const float X = %s;", X);
    for (int t = 0; t < k->tu; t++) {
        if (arm()) line("y%d = vfmaq_f32(y%d, s%d, vmlsq_n_f32(g%d, zf%d, X));", t, t, t, t, t);
        else line("y%d = %s_fmadd_ps(s%d, %s_fnmadd_ps(zf%d, %s_set1_ps(X), g%d), y%d);", t, pfx(), t, pfx(), t, pfx(), t, t);
    }
    indent--;
    line("}");
}

/* Software prefetch, pf bytes ahead, spread over the bodies: body `body` of
 * nbody per x-block asks for its share of the next lines of every 16-row
 * group the kernel streams (a vector whose lane offset r is not 0 shares its
 * group with the vector before it). One burst of a whole x-block per x-block
 * measured no gain on Zen 3; one share per body, as the hardware would
 * stream them, is what a sequential stream needs to go from ~75 % to ~95 %
 * of the read bandwidth there (docs/qigen.md, "Prefetch"). */
static void emit_prefetch(const cand *c, int b, int g, int nbody, const char *body) {
    const int P = 16 / isa_vl[isa], share = (xbs(b, g) / nbody + 63) / 64 * 64;
    line("if (pf) { /* software prefetch pf bytes ahead (kernels/qigen.h: lb_qg_prefetch_bytes), this body's share */");
    for (int t = 0; t < c->tu; t++) {
        if (P == 1) line("    lb_qg_prefetch(q%d + pf + %d * (%s), %d, pl2);", t, share, body, share);
        else if (t == 0) line("    lb_qg_prefetch(q0 - %d * r0 + pf + %d * (%s), %d, pl2);", 4 * isa_vl[isa], share, body, share);
        else line("    if (r%d == 0) lb_qg_prefetch(q%d + pf + %d * (%s), %d, pl2);", t, t, share, body, share);
    }
    line("}");
}

static void emit_kernel(int var, int b, int g, const cand *c) {
    const int VL = isa_vl[isa], P = 16 / VL;
    kspec k = {var, b, g, c->mu, c->tu, P, 0};
    const int PU = period_units(var, b), GU = group_units(var, g), SU = seg_units(var, g), XU = xb_units(var);
    k.L = imax(imax(PU, c->mu), var == I8 ? SU : 1);
    const int L = k.L, NG = 128 / g;
    const char *name = kname(var, b, g, c->mu, c->tu);

    line("/* GQ%d_G%d, %s, %s: Micro-GEMV of t_u = %d row vectors (%d rows) x m_u = %d %s.", b, g, isa_names[isa],
         var == I8 ? "int8 activations (Q8_0)" : "fp32 activations", c->tu, c->tu * VL, c->mu,
         var == I8 ? "activation dwords (4 weights each)" : "activations");
    line(" *   eq. (4): m_u + m_u t_u + t_u = %d + %d + %d = %ld <= eta = %d", c->mu, c->mu * c->tu, c->tu, c->lhs4,
         targets[isa].eta);
    line(" *   eq. (5): m_b = %d, t_b = %d: %s m_b + %.4g m_b t_b + 32 t_b = %ld <= gamma = %ld (L1 %d KiB)", c->mb,
         c->tb, var == F32 ? "32" : "9", 8.0 * gq_size(b, g) / 128, c->lhs5, 8192L * targets[isa].l1_kib,
         targets[isa].l1_kib);
    line(" *   loop body: %d %s (word period %d, %s %d) */", L, var == I8 ? "dwords" : "weights", PU,
         var == I8 ? "segment" : "group", var == I8 ? SU : GU);
    line("static LB_QG_T void %s(const uint8_t *w, size_t gs, int v0, int nxb, const void *act, const float *fa,", name);
    line("        const int32_t *ia, float *y, int first) {");
    indent++;
    if (var == F32) line("(void)ia;");
    /* row vector t: rows (v0 + t) VL .., in 16-row group (v0 + t) / P at lane offset r = (v0 + t) % P:
     * its words at 4 VL r in every 64-byte vector, scales at 2 VL r, zeros at VL r of their planes */
    for (int t = 0; t < c->tu; t++) {
        if (P == 1) {
            line("const uint8_t *gb%d = w + (size_t)(v0 + %d) * gs;", t, t);
            line("const uint8_t *q%d = gb%d, *sp%d = gb%d + %d, *zp%d = gb%d + %d;", t, t, t, t, s_off(b), t, t, z_off(b, g));
        } else {
            line("const uint8_t *gb%d = w + (size_t)((v0 + %d) / %d) * gs;", t, t, P);
            line("const int r%d = (v0 + %d) %% %d;", t, t, P);
            line("const uint8_t *q%d = gb%d + %d * r%d, *sp%d = gb%d + %d + %d * r%d, *zp%d = gb%d + %d + %d * r%d;", t, t, 4 * VL,
                 t, t, t, s_off(b), 2 * VL, t, t, t, z_off(b, g), VL, t);
        }
    }
    for (int t = 0; t < c->tu; t++) {
        if (arm()) line("float32x4_t y%d = first ? vdupq_n_f32(0) : vld1q_f32(y + %d);", t, VL * t);
        else line("%s y%d = first ? %s_setzero_ps() : %s_loadu_ps(y + %d);", fvec(), t, pfx(), pfx(), VL * t);
    }
    if (!arm()) {
        if (var == I8) {
            if (b == 4) line("const %s m4 = %s_set1_epi32(0x0f0f0f0f);", ivec(), pfx());
            if (b == 2) line("const %s m2 = %s_set1_epi32(0x03030303);", ivec(), pfx());
            if (b == 3) {
                line("const %s m7 = %s_set1_epi32(0x07070707), m3 = %s_set1_epi32(0x03030303);", ivec(), pfx(), pfx());
                if (isa == AVX2) line("const __m256i m4b = _mm256_set1_epi32(0x04040404);");
            }
            if (isa == AVX2) line("const __m256i ones16 = _mm256_set1_epi16(1);");
        } else {
            line("const %s k%d = %s_set1_epi32(%d);", ivec(), (1 << b) - 1, pfx(), (1 << b) - 1);
            if (b == 3) {
                line("const %s k3 = %s_set1_epi32(3);", ivec(), pfx());
                if (isa == AVX2) line("const __m256i k4 = _mm256_set1_epi32(4);");
            }
        }
    }
    line("const size_t pf = lb_qg_prefetch_bytes[%s];", isa_enum[isa]);
    line("const int pl2 = lb_qg_prefetch_l2;");
    if (var == I8) line("const uint8_t *ab = (const uint8_t *)act;");
    else line("const float *xp = (const float *)act;");
    line("for (int xb = 0; xb < nxb; xb++) {");
    indent++;
    if (L >= GU) {
        /* a body holds L / GU whole groups */
        line("#pragma GCC unroll 1");
        line("for (int it = 0; it < %d; it++) { /* %d bodies of %d units per x-block */", XU / L, XU / L, L);
        indent++;
        line("const int u0 = it * %d;", L);
        line("const int wi = %d * (u0 / %d); /* first word of the body */", period_words(b), PU);
        emit_prefetch(c, b, g, XU / L, "it");
        for (int jj = 0; jj < L / GU; jj++) {
            line("{ /* group %d of the body */", jj);
            indent++;
            emit_group_params(&k, fmt("it * %d + %d", L / GU, jj));
            if (var == I8) {
                for (int s = 0; s < GU; s += SU) emit_i8_segment(&k, jj * GU + s);
            } else {
                emit_f32_group_open(&k);
                emit_f32_units(&k, jj * GU, GU);
                emit_f32_group_close(&k, fmt("fa[(u0 + %d) / %d]", jj * GU, g));
            }
            indent--;
            line("}");
        }
        indent--;
        line("}");
    } else {
        line("for (int j = 0; j < %d; j++) { /* the %d group(s) of g = %d of an x-block */", NG, NG, g);
        indent++;
        emit_group_params(&k, "j");
        if (var == F32) emit_f32_group_open(&k);
        line("#pragma GCC unroll 1");
        line("for (int it = 0; it < %d; it++) { /* %d bodies of %d units per group */", GU / L, GU / L, L);
        indent++;
        line("const int u0 = j * %d + it * %d;", GU, L);
        line("const int wi = %d * (u0 / %d); /* first word of the body */", period_words(b), PU);
        emit_prefetch(c, b, g, NG * (GU / L), fmt("j * %d + it", GU / L));
        if (var == I8)
            for (int s = 0; s < L; s += SU) emit_i8_segment(&k, s);
        else emit_f32_units(&k, 0, L);
        indent--;
        line("}");
        if (var == F32) emit_f32_group_close(&k, "fa[j]");
        indent--;
        line("}");
    }
    /* next x-block: words, scales, zeros and activations move on together */
    for (int t = 0; t < c->tu; t++) line("q%d += %d; sp%d += %d; zp%d += %d;", t, xbs(b, g), t, xbs(b, g), t, xbs(b, g));
    if (var == I8) line("ab += 4 * 34; fa += 4; ia += %d;", 32 / SU);
    else line("xp += 128; fa += %d;", NG);
    indent--;
    line("}");
    for (int t = 0; t < c->tu; t++) {
        if (arm()) line("vst1q_f32(y + %d, y%d);", VL * t, t);
        else line("%s_storeu_ps(y + %d, y%d);", pfx(), VL * t, t);
    }
    indent--;
    line("}");
    line("");
}

/* ---- prefill: one 16-row group (nxb x-blocks) -> 16 rows of Q8_0_4X4 ----
 * (formats/repack.h: per 4 rows and 32 weights an x-block of 4 fp16 scales
 * and 128 bytes, chunk j of row r at 16 j + 4 r): w = s (q - z) is exactly
 * Q8_0 with d = s and quants q - z when a group covers whole blocks of 32. */
static void emit_converter(int b, int g) {
    const int VL = isa_vl[isa], P = 16 / VL, PU = period_units(I8, b), WP = period_words(b);
    line("/* GQ%d_G%d -> Q8_0_4X4, 16 rows: quants q - z (in [-%d, %d]), d = s. */", b, g, (1 << b) - 1, (1 << b) - 1);
    line("LB_QG_T void lb_qg_cvt_%s_gq%d_g%d(const uint8_t *xg, int nxb, uint8_t *dst) {", isa_names[isa], b, g);
    indent++;
    line("const size_t rstride = (size_t)nxb * 4 * 136; /* bytes per 4 rows of Q8_0_4X4 */");
    if (isa == AVX512) {
        if (b == 4) line("const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f);");
        if (b == 2) line("const __m512i m2 = _mm512_set1_epi32(0x03030303);");
        if (b == 3) line("const __m512i m7 = _mm512_set1_epi32(0x07070707), m3 = _mm512_set1_epi32(0x03030303);");
    } else if (isa == AVX2) {
        if (b == 4) line("const __m256i m4 = _mm256_set1_epi32(0x0f0f0f0f);");
        if (b == 2) line("const __m256i m2 = _mm256_set1_epi32(0x03030303);");
        if (b == 3)
            line("const __m256i m7 = _mm256_set1_epi32(0x07070707), m3 = _mm256_set1_epi32(0x03030303), m4b = "
                 "_mm256_set1_epi32(0x04040404);");
    }
    line("for (int xb = 0; xb < nxb; xb++) {");
    indent++;
    line("const uint8_t *x = xg + (size_t)xb * %d;", xbs(b, g));
    line("for (int c = 0; c < 4; c++) { /* Q8_0 block c of the x-block */");
    indent++;
    line("const int j = 32 * c / %d; /* its group */", g);
    line("const int wi = %d * (8 * c / %d);", WP, PU);
    line("for (int r4 = 0; r4 < 4; r4++) memcpy(dst + (size_t)r4 * rstride + (size_t)(4 * xb + c) * 136, x + %d + 32 * j + 8 * r4, 8);",
         s_off(b));
    line("for (int sub = 0; sub < %d; sub++) { /* row vectors of the group */", P);
    indent++;
    line("const uint8_t *q0 = x + %d * sub;", VL * 4);
    line("const uint8_t *zp = x + %d + 16 * j + %d * sub;", z_off(b, g), VL);
    if (isa == AVX512)
        line("const __m512i zr = _mm512_mullo_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)zp)), "
             "_mm512_set1_epi32(0x01010101));");
    else if (isa == AVX2)
        line("const __m256i zr = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)zp)), "
             "_mm256_set1_epi32(0x01010101));");
    else
        line("const uint8x16_t zr = vreinterpretq_u8_u32(vmulq_n_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(lb_qg_ld32u(zp))))), "
             "0x01010101u));");
    /* the 8 dwords of block c: word periods 8 c / PU .. (8 c + 7) / PU */
    for (int per = 0; per < (PU < 8 ? 8 / PU : 1); per++) {
        for (int w = 0; w < WP; w++) line("const %s W%d_%d = %s;", ivec(), per, w, load_words(0, fmt("wi + %d", WP * per + w)));
        const char *W[3] = {fmt("W%d_0", per), fmt("W%d_1", per), fmt("W%d_2", per)};
        for (int p = 0; p < (PU < 8 ? PU : 8); p++) {
            const int chunk = per * PU + p;
            const char *v = i8_part(b, p, W);
            if (isa == AVX512) {
                line("{ const __m512i v = _mm512_sub_epi8(%s, zr);", v);
                for (int r4 = 0; r4 < 4; r4++)
                    line("  _mm_storeu_si128((__m128i *)(dst + (size_t)%d * rstride + (size_t)(4 * xb + c) * 136 + 8 + %d), "
                         "_mm512_extracti32x4_epi32(v, %d));",
                         r4, 16 * chunk, r4);
                line("}");
            } else if (isa == AVX2) {
                line("{ const __m256i v = _mm256_sub_epi8(%s, zr);", v);
                line("  _mm_storeu_si128((__m128i *)(dst + (size_t)(2 * sub) * rstride + (size_t)(4 * xb + c) * 136 + 8 + %d), "
                     "_mm256_castsi256_si128(v));",
                     16 * chunk);
                line("  _mm_storeu_si128((__m128i *)(dst + (size_t)(2 * sub + 1) * rstride + (size_t)(4 * xb + c) * 136 + 8 + %d), "
                     "_mm256_extracti128_si256(v, 1));",
                     16 * chunk);
                line("}");
            } else {
                line("vst1q_u8(dst + (size_t)sub * rstride + (size_t)(4 * xb + c) * 136 + 8 + %d, vsubq_u8(%s, zr));", 16 * chunk,
                     v);
            }
        }
    }
    indent--;
    line("}");
    indent--;
    line("}");
    indent--;
    line("}");
    indent--;
    line("}");
    line("");
}

/* ---------------------------------------------------------------- files */

static const char *guard(int i) {
    return i == NEON || i == DOTPROD ? "defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))"
                     : "defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))";
}

static FILE *open_out(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "qigen: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

static void close_out(void) {
    if (ferror(out) || fclose(out)) {
        fprintf(stderr, "qigen: write error\n");
        exit(1);
    }
    out = NULL;
}

static void emit_prologue(void) {
    line("/* Generated by tools/qigen/qigen.c for %s (eta = %d vector registers, L1 = %d KiB): do not edit;", isa_names[isa],
         targets[isa].eta, targets[isa].l1_kib);
    line(" * a build output, never committed. The model and the layout: docs/qigen.md. */");
    line("#include \"kernels/qigen.h\"");
    line("");
    line("#if %s", guard(isa));
    if (isa == NEON) {
        line("#include <arm_neon.h>");
        line("#define LB_QG_T");
    } else if (isa == DOTPROD) {
        line("#include \"kernels/arm/arm_target.h\" /* arm_neon.h with SDOT declared (clang too), LB_ARM_DOTPROD */");
        line("#define LB_QG_T LB_ARM_DOTPROD");
    } else {
        line("#include <immintrin.h>");
        if (isa == AVX512) line("#define LB_QG_T __attribute__((target(\"avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c\")))");
        else line("#define LB_QG_T __attribute__((target(\"avx2,fma,f16c\")))");
    }
    line("");
}

static void emit_kernel_file(const char *dir, int b) {
    char name[64];
    snprintf(name, sizeof name, "qigen_%s_b%d.c", isa_names[isa], b);
    out = open_out(dir, name);
    emit_prologue();
    for (int ti = 0; ti < 12; ti++) {
        const int g = gq_types[ti].g;
        if (gq_types[ti].b != b) continue;
        for (int var = 0; var < 2; var++) {
            cand cs[32];
            const int n = candidates(isa, var, b, g, cs), def = default_cand(isa, cs, n);
            line("/* ================= GQ%d_G%d, %s, %s: %d candidates, the model's default (m_u, t_u) = (%d, %d) =================",
                 b, g, isa_names[isa], var_names[var], n, cs[def].mu, cs[def].tu);
            line(" * (%s) */", isa == AVX2 ? "one 16-row group per tile, the fewest registers" : "the most registers under eq. (4)");
            line("");
            for (int i = 0; i < n; i++) emit_kernel(var, b, g, &cs[i]);
            line("const lb_qg_cand lb_qg_cands_%s_%s_gq%d_g%d[%d] = {", isa_names[isa], var_names[var], b, g, n);
            for (int i = 0; i < n; i++)
                line("    {%d, %d, %d, %d, %s}, /* eq. (4): %ld regs; eq. (5): %ld bits */", cs[i].mu, cs[i].tu, cs[i].mb,
                     cs[i].tb, kname(var, b, g, cs[i].mu, cs[i].tu), cs[i].lhs4, cs[i].lhs5);
            line("};");
            line("");
        }
        /* DOTPROD's prefill converts tiles as NEON does: it shares NEON's converter */
        if (g >= 32 && isa != DOTPROD) emit_converter(b, g);
    }
    line("#endif");
    close_out();
}

static void emit_table(const char *dir) {
    out = open_out(dir, "qigen_table.c");
    line("/* Generated by tools/qigen/qigen.c: the table of the generated Micro-GEMV kernels (kernels/qigen.h),");
    line(" * per ISA, GQ type and variant: candidates (m_u, t_u) from eq. (4), their Mini-GEMV blocks (m_b, t_b)");
    line(" * from eq. (5), the model's default. Do not edit; a build output, never committed. */");
    line("#include \"kernels/qigen.h\"");
    line("");
    for (int i = 0; i < N_ISA; i++) {
        if (!targets[i].on) continue;
        isa = i;
        line("#if %s", guard(i));
        for (int ti = 0; ti < 12; ti++) {
            const int b = gq_types[ti].b, g = gq_types[ti].g;
            for (int var = 0; var < 2; var++) {
                cand cs[32];
                const int n = candidates(i, var, b, g, cs);
                line("extern const lb_qg_cand lb_qg_cands_%s_%s_gq%d_g%d[%d];", isa_names[i], var_names[var], b, g, n);
            }
            if (g >= 32 && i != DOTPROD) line("void lb_qg_cvt_%s_gq%d_g%d(const uint8_t *xg, int nxb, uint8_t *dst);", isa_names[i], b, g);
        }
        line("#endif");
    }
    line("");
    line("const lb_qg_set lb_qg_sets[] = {");
    int count = 0;
    for (int i = 0; i < N_ISA; i++) {
        if (!targets[i].on) continue;
        line("#if %s", guard(i));
        for (int ti = 0; ti < 12; ti++) {
            const int b = gq_types[ti].b, g = gq_types[ti].g;
            for (int var = 0; var < 2; var++) {
                cand cs[32];
                const int n = candidates(i, var, b, g, cs), def = default_cand(i, cs, n);
                line("    {LB_TYPE_GQ%d_G%d, %s, LB_QG_%s, %d, %d, %d, %d, %d, lb_qg_cands_%s_%s_gq%d_g%d, %s},", b, g,
                     isa_enum[i], var == I8 ? "I8" : "F32", isa_vl[i], targets[i].eta, targets[i].l1_kib, n, def,
                     isa_names[i], var_names[var], b, g,
                     var == I8 && g >= 32 && (i != DOTPROD || targets[NEON].on)
                         ? fmt("lb_qg_cvt_%s_gq%d_g%d", isa_names[i == DOTPROD ? NEON : i], b, g)
                         : "NULL");
                count++;
            }
        }
        line("#endif");
    }
    line("    {-1, 0, 0, 0, 0, 0, 0, 0, NULL, NULL}, /* end */");
    line("};");
    (void)count;
    close_out();
}

static void usage(void) {
    fprintf(stderr, "usage: qigen -o DIR [--isa avx2|avx512|neon|dotprod:ETA:L1KIB]...\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    int any = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
            char nm[32];
            int eta, l1;
            if (sscanf(argv[++i], "%31[a-z0-9]:%d:%d", nm, &eta, &l1) != 3 || eta < 3 || eta > 64 || l1 < 4 || l1 > 4096) usage();
            int k = -1;
            for (int j = 0; j < N_ISA; j++)
                if (!strcmp(nm, isa_names[j])) k = j;
            if (k < 0) usage();
            targets[k] = (target){1, eta, l1};
            any = 1;
        } else {
            usage();
        }
    }
    if (!dir) usage();
    if (!any) {
        targets[AVX2] = (target){1, 16, 32};
        targets[AVX512] = (target){1, 32, 32};
        targets[NEON] = (target){1, 32, 64};
        targets[DOTPROD] = (target){1, 32, 64};
    }
    for (int i = 0; i < N_ISA; i++) {
        if (!targets[i].on) continue;
        isa = i;
        for (int b = 2; b <= 4; b++) emit_kernel_file(dir, b);
    }
    emit_table(dir);
    return 0;
}
