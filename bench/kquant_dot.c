/* Micro-benchmark: one thread, matrix (4096 x 4096 weights) times one
 * activation row, for each K-quant / IQ4_NL type at each ISA level the CPU
 * has. Prints GB/s of weight bytes read and the speed-up over the scalar
 * reference measured in the same run.
 *
 * usage: kquant_dot [seconds per measurement, default 0.2]
 *
 * Weights are random bytes with sane fp16 scales (every bit pattern is a
 * valid block, and speed does not depend on the values), which keeps the
 * set-up far cheaper than running the reference quantizers on 16M floats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/kquants.h"
#include "kernels/dispatch.h"

#include "bench_util.h"

enum { ROWS = 4096, COLS = 4096 };

/* Byte offsets of a block's fp16 scale fields (-1: none). */
static void scale_fields(int type, int *d, int *dmin) {
    *d = *dmin = -1;
    switch (type) {
    case LB_TYPE_Q2_K: *d = (int)offsetof(block_q2_K, d), *dmin = (int)offsetof(block_q2_K, dmin); break;
    case LB_TYPE_Q3_K: *d = (int)offsetof(block_q3_K, d); break;
    case LB_TYPE_Q4_K: *d = (int)offsetof(block_q4_K, d), *dmin = (int)offsetof(block_q4_K, dmin); break;
    case LB_TYPE_Q5_K: *d = (int)offsetof(block_q5_K, d), *dmin = (int)offsetof(block_q5_K, dmin); break;
    case LB_TYPE_Q6_K: *d = (int)offsetof(block_q6_K, d); break;
    case LB_TYPE_IQ4_NL: *d = (int)offsetof(block_iq4_nl, d); break;
    }
}

static void fill_weights(int type, uint8_t *w, size_t bytes) {
    const lb_type_traits *t = lb_traits(type);
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)next_rand();
    int d_off, dmin_off;
    scale_fields(type, &d_off, &dmin_off);
    for (size_t b = 0; b < bytes / t->type_size; b++) {
        uint8_t *blk = w + b * t->type_size;
        const lb_fp16 d = lb_f32_to_fp16(0.001f * (float)(1 + next_rand() % 16));
        memcpy(blk + d_off, &d, sizeof d);
        if (dmin_off >= 0) memcpy(blk + dmin_off, &d, sizeof d);
    }
}

/* Best time of one matrix-vector product over about `budget` seconds. */
static double time_matvec(const lb_kernel *k, const uint8_t *w, size_t row_size, const void *act,
                          float *y, double budget) {
    double best = 1e30;
    const double start = now();
    int reps = 0;
    do {
        const double t0 = now();
        for (int r = 0; r < ROWS; r++) k->vec_dot(COLS, &y[r], w + (size_t)r * row_size, act);
        const double dt = now() - t0;
        if (dt < best) best = dt;
        reps++;
    } while (reps < 3 || now() - start < budget);
    return best;
}

int main(int argc, char **argv) {
    const double budget = argc > 1 ? atof(argv[1]) : 0.2;
    const int types[] = {LB_TYPE_Q2_K, LB_TYPE_Q3_K, LB_TYPE_Q4_K, LB_TYPE_Q5_K, LB_TYPE_Q6_K, LB_TYPE_IQ4_NL};
    const lb_isa levels[] = {LB_ISA_SCALAR, LB_ISA_AVX2, LB_ISA_AVX512};
    const lb_isa hw = lb_cpu_detected();
    printf("cpu: %s (%s); %dx%d weights, 1 thread, best of >= %.2fs each\n", lb_isa_name(hw),
           lb_cpu_features_string(), ROWS, COLS, budget);
    printf("%-8s %-20s %10s %8s %9s\n", "type", "kernel", "ms/matvec", "GB/s", "vs scalar");

    float *x = malloc(sizeof(float) * COLS), *y = malloc(sizeof(float) * ROWS);
    void *act = malloc(COLS * 2); /* Q8_K / Q8_0 rows are < 1.2 bytes per value */
    if (!x || !y || !act) return 1;
    for (int i = 0; i < COLS; i++) x[i] = (float)((int)(next_rand() % 2001) - 1000) / 1000.0f;
    double checksum = 0.0;

    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const int type = types[ti];
        const size_t row_size = lb_row_size(type, COLS), bytes = row_size * ROWS;
        uint8_t *w = malloc(bytes);
        if (!w) return 1;
        fill_weights(type, w, bytes);
        double scalar_s = 0.0;
        for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
            if (levels[li] != LB_ISA_SCALAR && (!lb_isa_is_x86(hw) || levels[li] > hw)) continue;
            const lb_kernel *k = lb_kernel_get_at(type, levels[li]);
            if (!k || (li > 0 && k->isa != levels[li])) continue; /* no kernel of its own at this level */
            k->quantize_act(x, act, COLS);
            const double s = time_matvec(k, w, row_size, act, y, budget);
            if (levels[li] == LB_ISA_SCALAR) scalar_s = s;
            for (int r = 0; r < ROWS; r++) checksum += y[r];
            printf("%-8s %-20s %10.3f %8.2f %8.2fx\n", lb_traits(type)->name, k->name, 1e3 * s,
                   (double)bytes / s / 1e9, scalar_s / s);
        }
        free(w);
    }
    printf("(checksum %g)\n", checksum);
    free(x);
    free(y);
    free(act);
    return 0;
}
