/* GPTQ checkpoints -> GQ tensors (or exact floats). Everything that can be
 * wrong with a matrix is checked when it is added to the plan, before the
 * output file exists; writing only reads the tensors again. */
#include "import/gptq.h"

#include <stdlib.h>

#include "core/fp16.h"
#include "formats/gq.h"
#include "formats/gc.h"
#include "formats/types.h"
#include "import/hf.h"

#define WAY_OUT "convert with --dequantize (lb_convert_hf_options.gptq_dequantize) to write these weights " \
                "dequantized instead: exactly with --type F32 (the default), rounded with F16"

/* ---- config ---- */

static lb_status opt_bool(const json_value *qc, const char *where, const char *key, int *out) {
    const json_value *v = json_get(qc, key);
    if (!v || v->type == JSON_NULL) return LB_OK;
    if (!json_get_bool(qc, key, out)) return lb_fail(LB_ERR_FORMAT, "%s: \"%s\" is not a boolean", where, key);
    return LB_OK;
}

static lb_status opt_str(const json_value *qc, const char *where, const char *key, const char **out) {
    const json_value *v = json_get(qc, key);
    if (!v || v->type == JSON_NULL) return LB_OK;
    if (v->type != JSON_STRING) return lb_fail(LB_ERR_FORMAT, "%s: \"%s\" is not a string", where, key);
    *out = v->str;
    return LB_OK;
}

static lb_status parse_fields(const json_value *qc, gptq_config *q) {
    const char *w = q->where;
    int64_t bits, group;
    if (!json_get_int(qc, "bits", &bits))
        return lb_fail(LB_ERR_FORMAT, "%s: \"bits\" is missing or not an integer", w);
    if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
        return lb_fail(LB_ERR_UNSUPPORTED, "%s: bits %lld is not supported (GPTQ checkpoints have 2, 3, 4 or 8 "
                       "bits per weight)", w, (long long)bits);
    if (!json_get_int(qc, "group_size", &group))
        return lb_fail(LB_ERR_FORMAT, "%s: \"group_size\" is missing or not an integer", w);
    if (group == 0 || group < -1 || group > (1 << 30))
        return lb_fail(LB_ERR_FORMAT, "%s: group_size %lld is invalid (a positive number of inputs per group, "
                       "or -1 for one group per column)", w, (long long)group);
    q->bits = (int)bits;
    q->group = (int)group;
    lb_status s;
    if ((s = opt_bool(qc, w, "desc_act", &q->desc_act)) != LB_OK || (s = opt_bool(qc, w, "sym", &q->sym)) != LB_OK)
        return s;
    int marlin = 0;
    if ((s = opt_bool(qc, w, "is_marlin_format", &marlin)) != LB_OK) return s;
    const char *fmt = NULL, *fmt_code = NULL, *pack = NULL;
    if ((s = opt_str(qc, w, "checkpoint_format", &fmt)) != LB_OK || (s = opt_str(qc, w, "format", &fmt_code)) != LB_OK ||
        (s = opt_str(qc, w, "pack_dtype", &pack)) != LB_OK)
        return s;
    if (!fmt) fmt = fmt_code;
    if (marlin) fmt = "marlin";
    if (!fmt || !strcmp(fmt, "gptq")) q->v1 = 1;
    else if (!strcmp(fmt, "gptq_v2")) q->v1 = 0;
    else
        return lb_fail(LB_ERR_UNSUPPORTED, "%s: checkpoint format \"%s\" is not supported (\"gptq\" and "
                       "\"gptq_v2\" are; kernel-specific repacked layouts are not)", w, fmt);
    if (pack && strcmp(pack, "int32") != 0)
        return lb_fail(LB_ERR_UNSUPPORTED, "%s: pack_dtype \"%s\" is not supported (int32 is)", w, pack);
    if (q->dequantize) return LB_OK;
    /* What no GQ type can hold, said once for the whole model. */
    if (q->bits == 8)
        return lb_fail(LB_ERR_UNSUPPORTED, "%s: bits 8 cannot be kept as a GQ type (GQ holds 2, 3 or 4 bits "
                       "per weight); " WAY_OUT, w);
    if (q->group != -1 && q->group != 16 && q->group != 32 && q->group != 64 && q->group != 128)
        return lb_fail(LB_ERR_UNSUPPORTED, "%s: group_size %d cannot be kept as a GQ type (groups of 16, 32, 64 "
                       "or 128 inputs, or -1: one per column); " WAY_OUT, w, q->group);
    return LB_OK;
}

lb_status gptq_read_config(const char *dir, const json_value *config, int dequantize, gptq_config *q,
                           int *found) {
    memset(q, 0, sizeof *q);
    *found = 0;
    q->dequantize = dequantize;
    q->sym = 1;
    json_doc *doc = NULL;
    lb_status s = hf_read_json(dir, "quantize_config.json", 1, &doc);
    if (s != LB_OK) return s;
    const json_value *side = doc ? json_root(doc) : NULL;
    if (side && side->type != JSON_OBJECT) {
        json_free(doc);
        return lb_fail(LB_ERR_FORMAT, "quantize_config.json is not a JSON object");
    }
    const json_value *qc = json_get(config, "quantization_config");
    if (qc && qc->type != JSON_NULL) {
        snprintf(q->where, sizeof q->where, "config.json quantization_config");
        const char *m = json_get_str(qc, "quant_method");
        if (qc->type != JSON_OBJECT) s = lb_fail(LB_ERR_FORMAT, "config.json: \"quantization_config\" is not an object");
        else if (!m) s = lb_fail(LB_ERR_FORMAT, "%s: \"quant_method\" is missing or not a string", q->where);
        else if (strcmp(m, "gptq") != 0)
            s = lb_fail(LB_ERR_UNSUPPORTED, "%s: quant_method \"%.40s\" is not supported (only GPTQ checkpoints "
                        "are imported; other checkpoints must hold F32, F16 or BF16 weights)", q->where, m);
    } else if (side) {
        qc = side;
        snprintf(q->where, sizeof q->where, "quantize_config.json");
        const json_value *m = json_get(qc, "quant_method"); /* older AutoGPTQ writes none */
        if (m && (m->type != JSON_STRING || strcmp(m->str, "gptq") != 0))
            s = lb_fail(LB_ERR_UNSUPPORTED, "quantize_config.json: quant_method %s%.40s%s is not supported (only "
                        "GPTQ checkpoints are imported)", m->type == JSON_STRING ? "\"" : "",
                        m->type == JSON_STRING ? m->str : json_type_name(m->type), m->type == JSON_STRING ? "\"" : "");
    } else {
        return LB_OK; /* not a quantized checkpoint */
    }
    if (s == LB_OK) s = parse_fields(qc, q);
    const char *base = side ? json_get_str(side, "model_file_base_name") : NULL;
    if (s == LB_OK && base) {
        if (strlen(base) + 1 > sizeof q->base_name - 12 || strchr(base, '/') || strchr(base, '\\') || base[0] == '.')
            s = lb_fail(LB_ERR_FORMAT, "quantize_config.json: model_file_base_name \"%.60s\" is not a plain file "
                        "name", base);
        else
            snprintf(q->base_name, sizeof q->base_name, "%s", base);
    }
    json_free(doc);
    if (s == LB_OK) *found = 1;
    return s;
}

size_t gptq_suffix_len(const char *name) {
    static const char *suffix[] = {".qweight", ".qzeros", ".scales", ".g_idx"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        size_t k = strlen(suffix[i]);
        if (n > k && !strcmp(name + n - k, suffix[i])) return k;
    }
    return 0;
}

/* ---- one matrix ---- */

/* What the writer needs to read a matrix again (owned by the plan). */
typedef struct {
    char prefix[128];
    int bits, group, v1, gq;      /* gq: write GQ blocks, else floats of the tensor's type */
    int gc_side;                  /* group -1 kept (GQ{b}_GC): 0 the codes, 1 the side tensor NAME.gq_sz */
    int64_t N, K, n_groups, qrows, zcols;
    int permute_heads;
    int qw_fd, qz_fd, sc_fd, gi_fd; /* gi_fd < 0: no g_idx */
    uint64_t qw_off, qz_off, sc_off, gi_off;
    st_dtype sc_dtype, gi_dtype;
} gptq_src;

/* Code idx of the little-endian bit stream whose 32-bit words are w[0],
 * w[stride], w[2*stride], ... (bits <= 8). */
static inline unsigned stream_code(const uint32_t *w, int64_t stride, int bits, int64_t idx) {
    uint64_t p = (uint64_t)bits * (uint64_t)idx;
    int64_t wi = (int64_t)(p >> 5);
    unsigned sh = (unsigned)(p & 31);
    uint64_t v = w[wi * stride] >> sh;
    if (sh + (unsigned)bits > 32) v |= (uint64_t)w[(wi + 1) * stride] << (32 - sh);
    return (unsigned)(v & ((1u << bits) - 1));
}

static float scale_at(const void *sc, st_dtype dt, int64_t i) {
    if (dt == ST_F16) return lb_fp16_to_f32(((const uint16_t *)sc)[i]);
    if (dt == ST_BF16) return lb_bf16_to_f32(((const uint16_t *)sc)[i]);
    float f;
    memcpy(&f, (const char *)sc + 4 * i, 4);
    return f;
}

static int64_t gidx_at(const void *gi, st_dtype dt, int64_t k) {
    if (dt == ST_I64) {
        int64_t v;
        memcpy(&v, (const char *)gi + 8 * k, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, (const char *)gi + 4 * k, 4);
    return v;
}

/* g_idx entries must name a group: -1 if they do, else the first bad index. */
static int64_t gidx_bad(const void *gi, st_dtype dt, int64_t K, int64_t n_groups) {
    for (int64_t k = 0; k < K; k++) {
        int64_t g = gidx_at(gi, dt, k);
        if (g < 0 || g >= n_groups) return k;
    }
    return -1;
}

static void shape_str(const st_tensor *t, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (int d = 0; d < t->n_dims && n + 24 < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
}

static int is_2d(const st_tensor *t, int64_t rows, int64_t cols) {
    return t->n_dims == 2 && t->shape[0] == rows && t->shape[1] == cols;
}

static lb_status load(int fd, uint64_t off, uint64_t nbytes, const char *what, void **out) {
    *out = malloc(nbytes ? (size_t)nbytes : 1);
    if (!*out) return lb_fail(LB_ERR_NOMEM, "out of memory reading %s (%llu bytes)", what, (unsigned long long)nbytes);
    lb_status s = imp_read_at(fd, *out, (size_t)nbytes, off, what);
    if (s != LB_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}

/* Writes the matrix: output row r is output channel n (undoing the q/k
 * head permutation), its K codes copied word by word into GQ blocks or
 * dequantized into floats. */
static lb_status fill(void *ctx, const imp_tensor *t, void *dst, uint64_t nbytes) {
    const gptq_src *g = ctx;
    const int bits = g->bits;
    const unsigned mask = (1u << bits) - 1;
    const int64_t N = g->N, K = g->K;
    size_t sc_esz = st_dtype_size(g->sc_dtype), gi_esz = st_dtype_size(g->gi_dtype);
    uint32_t *qw = NULL, *qz = NULL;
    void *sc = NULL, *gi = NULL;
    float *row = NULL, *s_row = NULL;
    int *z_row = NULL;
    char what[160];
    lb_status s;
    snprintf(what, sizeof what, "%s.qweight", g->prefix);
    if (!g->gc_side && /* a GC matrix's side tensor needs no codes */
        (s = load(g->qw_fd, g->qw_off, (uint64_t)g->qrows * (uint64_t)N * 4, what, (void **)&qw)) != LB_OK)
        goto done;
    snprintf(what, sizeof what, "%s.qzeros", g->prefix);
    if ((s = load(g->qz_fd, g->qz_off, (uint64_t)g->n_groups * (uint64_t)g->zcols * 4, what, (void **)&qz)) != LB_OK)
        goto done;
    snprintf(what, sizeof what, "%s.scales", g->prefix);
    if ((s = load(g->sc_fd, g->sc_off, (uint64_t)g->n_groups * (uint64_t)N * sc_esz, what, &sc)) != LB_OK) goto done;
    if (g->gi_fd >= 0) {
        snprintf(what, sizeof what, "%s.g_idx", g->prefix);
        if ((s = load(g->gi_fd, g->gi_off, (uint64_t)K * gi_esz, what, &gi)) != LB_OK) goto done;
        if (gidx_bad(gi, g->gi_dtype, K, g->n_groups) >= 0) { /* checked when added: the file changed */
            s = lb_fail(LB_ERR_FORMAT, "%s: g_idx changed while converting", g->prefix);
            goto done;
        }
    }
    const int64_t per_head = g->permute_heads > 0 ? N / g->permute_heads : 0;
    const int gc = g->gq && g->group == -1; /* GQ{b}_GC: codes, or (gc_side) F16 [2N] */
    const uint64_t out_row = gc && g->gc_side ? 4 : lb_row_size((int)t->out_type, K);
    if (out_row * (uint64_t)N != nbytes) {
        s = lb_fail(LB_ERR_ARG, "importer: size mismatch writing %s", g->prefix);
        goto done;
    }
    if (!g->gq) {
        row = malloc((size_t)K * sizeof *row);
        s_row = malloc((size_t)g->n_groups * sizeof *s_row);
        z_row = malloc((size_t)g->n_groups * sizeof *z_row);
        if (!row || !s_row || !z_row) {
            s = lb_fail(LB_ERR_NOMEM, "out of memory dequantizing %s", g->prefix);
            goto done;
        }
    }
    const int gs = g->group, n_sub = QK_GQ / (gs > 0 ? gs : QK_GQ), words = QK_GQ * bits / 32;
    const size_t bsz = LB_GQ_SIZE(bits, gs > 0 ? gs : QK_GQ);
    const int64_t group_len = gs > 0 ? gs : K;
    for (int64_t r = 0; r < N; r++) {
        if ((r & 255) == 0 && lb_cancel_requested()) {
            s = lb_fail(LB_ERR_INTERRUPTED, "conversion cancelled");
            goto done;
        }
        const int64_t n = per_head ? imp_permuted_src_row(r, per_head) : r;
        unsigned char *out = (unsigned char *)dst + (uint64_t)r * out_row;
        if (gc && g->gc_side) { /* the row's scale (fp16 bits) and zero point (as fp16) */
            uint16_t h[2];
            if (g->sc_dtype == ST_F16) memcpy(&h[0], (const char *)sc + 2 * n, 2);
            else h[0] = lb_f32_to_fp16(scale_at(sc, g->sc_dtype, n)); /* exact: checked */
            unsigned z = stream_code(qz, 1, bits, n);
            if (g->v1) z = (z + 1) & mask;
            h[1] = lb_gqc_zero_fp16((int)z);
            memcpy(out, h, 4);
            continue;
        }
        if (gc) { /* the codes: the column's stream, 4b words per 128 inputs */
            for (int64_t w = 0; w < K * bits / 32; w++) {
                uint32_t word = qw[w * N + n];
                memcpy(out + 4 * w, &word, 4);
            }
            continue;
        }
        if (g->gq) {
            for (int64_t b = 0; b < K / QK_GQ; b++) {
                unsigned char *blk = out + (size_t)b * bsz;
                memset(blk, 0, bsz);
                for (int w = 0; w < words; w++) { /* the column's stream, 4b words per 128 inputs */
                    uint32_t word = qw[(b * words + w) * N + n];
                    memcpy(blk + 4 * w, &word, 4);
                }
                for (int j = 0; j < n_sub; j++) {
                    int64_t grp = b * n_sub + j;
                    uint16_t h;
                    if (g->sc_dtype == ST_F16) memcpy(&h, (const char *)sc + 2 * (grp * N + n), 2);
                    else h = lb_f32_to_fp16(scale_at(sc, g->sc_dtype, grp * N + n)); /* exact: checked */
                    memcpy(blk + LB_GQ_S_OFF(bits) + 2 * j, &h, 2);
                    unsigned z = stream_code(qz + grp * g->zcols, 1, bits, n);
                    if (g->v1) z = (z + 1) & mask;
                    blk[LB_GQ_Z_OFF(bits, gs) + j] = (unsigned char)z;
                }
            }
            continue;
        }
        for (int64_t grp = 0; grp < g->n_groups; grp++) {
            unsigned z = stream_code(qz + grp * g->zcols, 1, bits, n);
            z_row[grp] = (int)(g->v1 ? (z + 1) & mask : z);
            s_row[grp] = scale_at(sc, g->sc_dtype, grp * N + n);
        }
        for (int64_t k = 0; k < K; k++) {
            int64_t grp = gi ? gidx_at(gi, g->gi_dtype, k) : k / group_len;
            int q = (int)stream_code(qw + n, N, bits, k);
            row[k] = s_row[grp] * (float)(q - z_row[grp]); /* exact in fp32 for fp16/bf16 scales */
        }
        lb_traits((int)t->out_type)->from_float(row, out, K);
    }
    s = LB_OK;
done:
    free(qw);
    free(qz);
    free(sc);
    free(gi);
    free(row);
    free(s_row);
    free(z_row);
    return s;
}

lb_status gptq_add_matrix(imp_plan *p, const gptq_config *q, const gptq_matrix *m, const char *gguf_name) {
    const char *pre = m->prefix;
    const int bits = q->bits;
    const int64_t N = m->n_out, K = m->n_in;
    const int64_t n_groups = q->group > 0 ? (K + q->group - 1) / q->group : 1;
    const st_tensor *qw = m->qweight.t, *qz = m->qzeros.t, *sc = m->scales.t, *gt = m->g_idx.t;
    char got[96];
    if (!qw) return lb_fail(LB_ERR_FORMAT, "missing tensor \"%s.qweight\"", pre);
    if (qw->dtype != ST_I32)
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s.qweight\" has dtype %s (GPTQ packs codes into I32 words)", pre,
                       st_dtype_name(qw->dtype));
    if ((K * bits) % 32 != 0)
        return lb_fail(LB_ERR_UNSUPPORTED, "%s: %lld inputs at %d bits do not fill whole 32-bit words", pre,
                       (long long)K, bits);
    const int64_t qrows = K * bits / 32;
    if (!is_2d(qw, qrows, N)) {
        shape_str(qw, got, sizeof got);
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s.qweight\" has shape [%s]; %lld inputs and %lld outputs at %d bits "
                       "need [%lld, %lld] (K*bits/32 rows, one column per output)", pre, got, (long long)K,
                       (long long)N, bits, (long long)qrows, (long long)N);
    }
    if (!sc) return lb_fail(LB_ERR_FORMAT, "missing tensor \"%s.scales\" (GPTQ matrix %s.qweight has none)", pre, pre);
    if (sc->dtype != ST_F16 && sc->dtype != ST_BF16 && sc->dtype != ST_F32)
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s.scales\" has dtype %s (F16, BF16 or F32 expected)", pre,
                       st_dtype_name(sc->dtype));
    if (!is_2d(sc, n_groups, N)) {
        shape_str(sc, got, sizeof got);
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s.scales\" has shape [%s]; %lld inputs in groups of %d and %lld "
                       "outputs need [%lld, %lld]", pre, got, (long long)K, q->group, (long long)N,
                       (long long)n_groups, (long long)N);
    }
    if (!qz) return lb_fail(LB_ERR_FORMAT, "missing tensor \"%s.qzeros\" (GPTQ matrix %s.qweight has none)", pre, pre);
    if (qz->dtype != ST_I32)
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s.qzeros\" has dtype %s (GPTQ packs zero points into I32 words)",
                       pre, st_dtype_name(qz->dtype));
    if ((N * bits) % 32 != 0)
        return lb_fail(LB_ERR_UNSUPPORTED, "%s: %lld outputs at %d bits do not fill whole 32-bit words of qzeros",
                       pre, (long long)N, bits);
    const int64_t zcols = N * bits / 32;
    if (!is_2d(qz, n_groups, zcols)) {
        shape_str(qz, got, sizeof got);
        return lb_fail(LB_ERR_FORMAT, "tensor \"%s.qzeros\" has shape [%s]; %lld groups and %lld outputs at %d bits "
                       "need [%lld, %lld]", pre, got, (long long)n_groups, (long long)N, bits, (long long)n_groups,
                       (long long)zcols);
    }
    if (m->permute_heads > 0 && N % (2 * m->permute_heads) != 0)
        return lb_fail(LB_ERR_SHAPE, "%s: %lld outputs cannot be split into %d heads of even size", pre, (long long)N,
                       m->permute_heads);

    /* g_idx: in range, and whether it is the plain k / group_size */
    int trivial = 1;
    int64_t first_off = -1, off_group = 0;
    if (gt) {
        if (gt->dtype != ST_I32 && gt->dtype != ST_I64)
            return lb_fail(LB_ERR_FORMAT, "tensor \"%s.g_idx\" has dtype %s (I32 expected)", pre,
                           st_dtype_name(gt->dtype));
        if (gt->n_dims != 1 || gt->shape[0] != K) {
            shape_str(gt, got, sizeof got);
            return lb_fail(LB_ERR_FORMAT, "tensor \"%s.g_idx\" has shape [%s]; %lld inputs need [%lld]", pre, got,
                           (long long)K, (long long)K);
        }
        void *gi;
        char what[160];
        snprintf(what, sizeof what, "%s.g_idx", pre);
        lb_status s = load(fileno(m->g_idx.file->f), gt->offset, gt->nbytes, what, &gi);
        if (s != LB_OK) return s;
        int64_t bad = gidx_bad(gi, gt->dtype, K, n_groups);
        if (bad >= 0) {
            long long v = (long long)gidx_at(gi, gt->dtype, bad);
            free(gi);
            return lb_fail(LB_ERR_FORMAT, "tensor \"%s.g_idx\": entry %lld is %lld, outside the %lld groups "
                           "(0..%lld)", pre, (long long)bad, v, (long long)n_groups, (long long)n_groups - 1);
        }
        const int64_t len = q->group > 0 ? q->group : K;
        for (int64_t k = 0; k < K && trivial; k++)
            if (gidx_at(gi, gt->dtype, k) != k / len) {
                trivial = 0;
                first_off = k;
                off_group = gidx_at(gi, gt->dtype, k);
            }
        free(gi);
    } else if (q->desc_act) {
        return lb_fail(LB_ERR_FORMAT, "%s: %s says desc_act (inputs in activation order) but \"%s.g_idx\" is "
                       "missing", pre, q->where, pre);
    }

    /* group_size -1: one group per column, GQ{b}_GC; g_idx is then all zeros
     * (checked above: one group), whatever order desc_act quantized in */
    const int gq_type = q->group == -1 ? lb_gqc_type(bits) : lb_gq_type(bits, q->group);
    if (!q->dequantize) {
        if (gq_type < 0) /* gptq_read_config refuses these */
            return lb_fail(LB_ERR_UNSUPPORTED, "%s: %d bits in groups of %d: no GQ type; " WAY_OUT, pre, bits,
                           q->group);
        if (!trivial)
            return lb_fail(LB_ERR_UNSUPPORTED, "%s: g_idx reorders the inputs (a desc_act / act-order checkpoint: "
                           "input %lld is in group %lld, not %lld), so its groups are not runs of %d consecutive "
                           "inputs as GQ blocks need; " WAY_OUT, pre, (long long)first_off, (long long)off_group,
                           (long long)(first_off / q->group), q->group);
        if (K % QK_GQ != 0)
            return lb_fail(LB_ERR_UNSUPPORTED, "%s: %lld inputs is not a multiple of 128 (a GQ block holds 128 "
                           "weights of a row); " WAY_OUT, pre, (long long)K);
        if (sc->dtype != ST_F16) { /* GQ keeps fp16 scales: other dtypes only if every value survives */
            void *sv;
            char what[160];
            snprintf(what, sizeof what, "%s.scales", pre);
            lb_status s = load(fileno(m->scales.file->f), sc->offset, sc->nbytes, what, &sv);
            if (s != LB_OK) return s;
            int64_t bad = -1;
            for (int64_t i = 0; i < n_groups * N && bad < 0; i++) {
                float f = scale_at(sv, sc->dtype, i), h = lb_fp16_to_f32(lb_f32_to_fp16(f));
                if (lb_f32_to_bits(f) != lb_f32_to_bits(h)) bad = i;
            }
            float bf = bad >= 0 ? scale_at(sv, sc->dtype, bad) : 0;
            free(sv);
            if (bad >= 0)
                return lb_fail(LB_ERR_UNSUPPORTED, "tensor \"%s.scales\" (%s): scale %lld (%g) is not exactly an "
                               "fp16 value, and GQ stores fp16 scales; " WAY_OUT, pre, st_dtype_name(sc->dtype),
                               (long long)bad, (double)bf);
        }
    }

    gptq_src *g = calloc(1, sizeof *g);
    if (!g) return lb_fail(LB_ERR_NOMEM, "out of memory");
    snprintf(g->prefix, sizeof g->prefix, "%s", pre);
    g->bits = bits;
    g->group = q->group;
    g->v1 = q->v1;
    g->gq = !q->dequantize;
    g->N = N;
    g->K = K;
    g->n_groups = n_groups;
    g->qrows = qrows;
    g->zcols = zcols;
    g->permute_heads = m->permute_heads;
    g->qw_fd = fileno(m->qweight.file->f);
    g->qw_off = qw->offset;
    g->qz_fd = fileno(m->qzeros.file->f);
    g->qz_off = qz->offset;
    g->sc_fd = fileno(m->scales.file->f);
    g->sc_off = sc->offset;
    g->sc_dtype = sc->dtype;
    g->gi_fd = gt ? fileno(m->g_idx.file->f) : -1;
    g->gi_off = gt ? gt->offset : 0;
    g->gi_dtype = gt ? gt->dtype : ST_I32;

    imp_tensor it;
    memset(&it, 0, sizeof it);
    snprintf(it.name, sizeof it.name, "%s", gguf_name);
    it.n_dims = 2;
    it.ne[0] = K;
    it.ne[1] = N;
    it.fill = fill;
    it.ctx = g;
    if (g->gq) {
        it.keep_type = 1;
        it.out_type = (uint32_t)gq_type;
    }
    gptq_src *side = g->gq && q->group == -1 ? malloc(sizeof *side) : NULL;
    if (side) *side = *g, side->gc_side = 1;
    else if (g->gq && q->group == -1) {
        free(g);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    lb_status s = imp_plan_add(p, &it);
    if (s != LB_OK || !side) {
        free(side);
        return s;
    }
    /* GQ{b}_GC: each row's scale and zero beside the codes (formats/gqc.h) */
    if (strlen(gguf_name) + sizeof LB_GQC_SFX > sizeof it.name) {
        free(side);
        return lb_fail(LB_ERR_ARG, "tensor name %s%s is too long", gguf_name, LB_GQC_SFX);
    }
    snprintf(it.name, sizeof it.name, "%s%s", gguf_name, LB_GQC_SFX);
    it.n_dims = 1;
    it.ne[0] = 2 * N;
    it.ne[1] = 1;
    it.ctx = side;
    it.out_type = LB_GQC_SIDE_TYPE;
    return imp_plan_add(p, &it);
}
