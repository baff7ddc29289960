/* SmoothQuant's balance vectors folded into the norms (model/quantize_smooth.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/quantize_smooth.h"

/* Per group: the carrier that takes 1/s (a norm's weights, or ffn_up's
 * rows, whose outputs are ffn_down's inputs through a gated FFN: act(gate)
 * times up, so up's row j scales input j exactly), the members that take s
 * on their input columns, and a tensor that must exist for the fold to be
 * exact (the gate: without it the FFN's nonlinearity sits on up's output). */
enum { GROUP_ATTN, GROUP_FFN, GROUP_DOWN, N_GROUPS, MAX_MEMBERS = 3 };
static const char *const carrier_names[N_GROUPS] = {"attn_norm", "ffn_norm", "ffn_up"};
static const char *const member_names[N_GROUPS][MAX_MEMBERS] = {
    {"attn_q", "attn_k", "attn_v"}, {"ffn_gate", "ffn_up"}, {"ffn_down"}};
static const char *const required_names[N_GROUPS] = {NULL, NULL, "ffn_gate"};

typedef struct {
    int layer, group;
    float *s; /* K scales; NULL: the group does not apply */
} smooth_entry;

struct lb_smooth {
    const gguf_file *in;
    const lb_imatrix *im;
    float alpha;
    int n_threads;
    smooth_entry *e;
    int n, cap, applied;
};

lb_status lb_smooth_begin(const gguf_file *in, const lb_imatrix *im, float alpha, int n_threads, lb_smooth **out) {
    *out = NULL;
    if (!(alpha >= 0.0f && alpha <= 1.0f)) return lb_fail(LB_ERR_ARG, "smoothing alpha %g: expected 0..1", (double)alpha);
    if (!im) return lb_fail(LB_ERR_ARG, "smoothing needs the activations' mean squares: give --imatrix");
    lb_smooth *sm = calloc(1, sizeof *sm);
    if (!sm) return lb_fail(LB_ERR_NOMEM, "out of memory");
    *sm = (lb_smooth){in, im, alpha, n_threads, NULL, 0, 0, 0};
    *out = sm;
    return LB_OK;
}

int lb_smooth_groups(const lb_smooth *sm) { return sm ? sm->applied : 0; }

void lb_smooth_free(lb_smooth *sm) {
    if (!sm) return;
    for (int i = 0; i < sm->n; i++) free(sm->e[i].s);
    free(sm->e);
    free(sm);
}

/* "blk.L.NAME.weight": layer L and NAME (in name[]); 0 if t is named otherwise. */
static int parse(const gguf_tensor *t, int *layer, char name[64]) {
    char full[256];
    snprintf(full, sizeof full, "%.*s", (int)(t->name.len < 255 ? t->name.len : 255), t->name.ptr);
    int L = -1, off = 0;
    if (sscanf(full, "blk.%d.%n", &L, &off) != 1 || off == 0 || L < 0) return 0;
    const char *rest = full + off;
    const size_t n = strlen(rest);
    if (n < 8 || n - 7 >= 64 || strcmp(rest + n - 7, ".weight")) return 0;
    memcpy(name, rest, n - 7);
    name[n - 7] = 0;
    *layer = L;
    return 1;
}

/* The role of NAME in group g: -1 the carrier, 0.. a member, -2 none. */
static int role_in(const char *name, int g) {
    if (!strcmp(name, carrier_names[g])) return -1;
    for (int m = 0; m < MAX_MEMBERS; m++)
        if (member_names[g][m] && !strcmp(name, member_names[g][m])) return m;
    return -2;
}

static const gguf_tensor *find(const gguf_file *in, int layer, const char *what) {
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s.weight", layer, what);
    return gguf_find_tensor(in, name);
}

void lb_smooth_scales(const float *ms, float *s, int64_t K, float alpha) {
    /* log s_j = A log rms_j - (1 - A) log max|W_j|; columns without a finite
     * positive pair keep s = 1; the rest centred on geometric mean 1 and kept
     * within e^+-9 so fp16 scales and norms stay in range */
    double sum = 0.0;
    int64_t n = 0;
    for (int64_t j = 0; j < K; j++) {
        const double rms = sqrt((double)ms[j]), w = s[j];
        if (rms > 0.0 && w > 0.0 && isfinite(rms) && isfinite(w)) {
            s[j] = (float)(alpha * log(rms) - (1.0 - alpha) * log(w));
            sum += s[j], n++;
        } else {
            s[j] = NAN;
        }
    }
    const double mean = n ? sum / (double)n : 0.0;
    for (int64_t j = 0; j < K; j++) {
        const double l = s[j] == s[j] ? s[j] - mean : 0.0;
        s[j] = (float)exp(l < -9.0 ? -9.0 : l > 9.0 ? 9.0 : l);
    }
}

/* The group's s, or NULL (not applicable) with LB_OK. */
static lb_status compute(lb_smooth *sm, int layer, int g, float **out) {
    *out = NULL;
    const gguf_tensor *carrier = find(sm->in, layer, carrier_names[g]);
    if (!carrier || carrier->n_dims > 2 || (required_names[g] && !find(sm->in, layer, required_names[g]))) return LB_OK;
    const int64_t K = carrier->n_dims == 1 ? carrier->ne[0] : carrier->ne[1]; /* its channels */
    const gguf_tensor *mt[MAX_MEMBERS] = {0};
    int nm = 0;
    for (int m = 0; m < MAX_MEMBERS && member_names[g][m]; m++, nm++)
        if (!(mt[m] = find(sm->in, layer, member_names[g][m])) || mt[m]->ne[0] != K || mt[m]->n_dims != 2) return LB_OK;
    const float *ms = lb_imatrix_get(sm->im, mt[0]->name.ptr, mt[0]->name.len, K);
    if (!ms) return LB_OK;
    float *s = calloc((size_t)K, sizeof *s); /* max |W_j| first, then s */
    if (!s) return lb_fail(LB_ERR_NOMEM, "out of memory");
    for (int m = 0; m < nm; m++) {
        float *W = NULL;
        lb_status st = lb_quantize_tensor_floats(sm->in, mt[m], sm->n_threads, &W);
        if (st != LB_OK) {
            free(s);
            return st;
        }
        for (int64_t r = 0; r < mt[m]->ne[1]; r++)
            for (int64_t j = 0; j < K; j++) {
                const float a = fabsf(W[r * K + j]);
                if (a > s[j]) s[j] = a; /* NaN never wins */
            }
        free(W);
    }
    lb_smooth_scales(ms, s, K, sm->alpha);
    *out = s;
    return LB_OK;
}

static lb_status entry_of(lb_smooth *sm, int layer, int g, const float **s) {
    for (int i = 0; i < sm->n; i++)
        if (sm->e[i].layer == layer && sm->e[i].group == g) {
            *s = sm->e[i].s;
            return LB_OK;
        }
    if (sm->n == sm->cap) {
        const int cap = sm->cap ? 2 * sm->cap : 64;
        smooth_entry *e = realloc(sm->e, (size_t)cap * sizeof *e);
        if (!e) return lb_fail(LB_ERR_NOMEM, "out of memory");
        sm->e = e, sm->cap = cap;
    }
    float *v = NULL;
    lb_status st = compute(sm, layer, g, &v);
    if (st != LB_OK) return st;
    sm->e[sm->n++] = (smooth_entry){layer, g, v};
    sm->applied += v != NULL;
    *s = v;
    return LB_OK;
}

lb_status lb_smooth_tensor(lb_smooth *sm, const gguf_tensor *t, const float *imp, float **floats, float **imp_out) {
    *floats = NULL, *imp_out = NULL;
    int layer;
    char name[64];
    if (!sm || !parse(t, &layer, name)) return LB_OK;
    const int64_t K = t->ne[0], rows = t->n_dims == 1 ? 1 : t->ne[1];
    float *buf = NULL, *ip = NULL;
    for (int g = 0; g < N_GROUPS; g++) {
        const int role = role_in(name, g);
        const float *s = NULL;
        if (role == -2) continue;
        lb_status st = entry_of(sm, layer, g, &s);
        if (st == LB_OK && s && !buf) {
            /* the rows, then room for the importance */
            float *W = NULL;
            st = lb_quantize_tensor_floats(sm->in, t, sm->n_threads, &W);
            if (st == LB_OK && !(buf = realloc(W, sizeof *W * (size_t)K * (size_t)(rows + 1)))) {
                free(W);
                st = lb_fail(LB_ERR_NOMEM, "out of memory");
            }
        }
        if (st != LB_OK) {
            free(buf);
            return st;
        }
        if (!s) continue;
        if (role == -1) { /* the carrier: a norm's channels, or ffn_up's rows */
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < K; j++) buf[r * K + j] /= s[t->n_dims == 1 ? j : r];
        } else { /* a member: its input columns, and their importance */
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < K; j++) buf[r * K + j] *= s[j];
            if (imp) {
                ip = buf + rows * K;
                for (int64_t j = 0; j < K; j++) ip[j] = imp[j] / (s[j] * s[j]);
            }
        }
    }
    *floats = buf, *imp_out = ip;
    return LB_OK;
}
