/* Sampling: greedy is argmax; top-k / top-p / min-p cut the candidates they
 * should; the repetition penalty lowers recent tokens; a seed makes draws
 * reproducible and the draw follows the softmax at the given temperature. */
#include "lowbit.h"
#include "test_util.h"

enum { V = 8 };

static lb_sampler *make(lb_sampler_params p) {
    lb_sampler *s = NULL;
    CHECK_OK(lb_sampler_new(&p, V, &s));
    return s;
}

static lb_sampler_params plain(float temp) {
    lb_sampler_params p = lb_sampler_default_params();
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.seed = 42;
    return p;
}

/* frequency of each token over n draws */
static void histogram(lb_sampler *s, const float *logits, int n, int *h) {
    memset(h, 0, V * sizeof *h);
    for (int i = 0; i < n; i++) h[lb_sampler_sample(s, logits)]++;
}

int main(void) {
    const float logits[V] = {1.0f, 3.0f, 2.5f, -1.0f, 0.0f, 2.9f, -5.0f, 1.5f};
    int h[V];

    lb_sampler *s = make(plain(0.0f));
    CHECK(lb_sampler_sample(s, logits) == 1);
    lb_sampler_free(s);

    /* temperature: frequencies follow softmax(logits / T) */
    s = make(plain(1.0f));
    const int N = 200000;
    histogram(s, logits, N, h);
    double z = 0;
    for (int i = 0; i < V; i++) z += exp(logits[i]);
    for (int i = 0; i < V; i++) {
        double want = exp(logits[i]) / z, got = (double)h[i] / N;
        CHECK_MSG(fabs(got - want) < 0.006, "token %d: frequency %.4f, softmax %.4f", i, got, want);
    }
    lb_sampler_free(s);

    /* top-k = 2: only tokens 1 and 5 */
    lb_sampler_params p = plain(1.0f);
    p.top_k = 2;
    s = make(p);
    histogram(s, logits, 20000, h);
    CHECK(h[1] + h[5] == 20000 && h[1] > h[5] && h[5] > 0);
    lb_sampler_free(s);

    /* top-p = 0.5: the smallest prefix with half the mass: {1, 5} (0.32 + 0.29 > 0.5) */
    p = plain(1.0f);
    p.top_p = 0.5f;
    s = make(p);
    histogram(s, logits, 20000, h);
    CHECK_MSG(h[1] + h[5] == 20000 && h[5] > 0, "top-p kept %d of 20000 in {1,5}", h[1] + h[5]);
    lb_sampler_free(s);

    /* min-p = 0.5: keep tokens with p >= 0.5 * p(best): logits >= 3 - ln 2 = 2.307: {1, 5, 2} */
    p = plain(1.0f);
    p.min_p = 0.5f;
    s = make(p);
    histogram(s, logits, 20000, h);
    CHECK(h[1] + h[5] + h[2] == 20000 && h[2] > 0);
    lb_sampler_free(s);

    /* repetition penalty: after seeing token 1, greedy picks 5 (3/1.5 = 2 < 2.9) */
    p = plain(0.0f);
    p.repeat_penalty = 1.5f;
    p.repeat_last_n = 4;
    s = make(p);
    lb_sampler_accept(s, 1);
    lb_sampler_accept(s, 1); /* applied once per distinct token */
    CHECK(lb_sampler_sample(s, logits) == 5);
    for (int i = 0; i < 4; i++) lb_sampler_accept(s, 3); /* token 1 falls out of the window */
    CHECK(lb_sampler_sample(s, logits) == 1);
    lb_sampler_free(s);

    /* presence penalty: once per distinct recent token, whatever its count:
     * after 1 twice, 3 - 0.2 = 2.8 < 2.9 picks 5; after 5 too, 2.7 < 2.8 picks 1 */
    p = plain(0.0f);
    p.presence_penalty = 0.2f;
    p.repeat_last_n = 8;
    s = make(p);
    CHECK(lb_sampler_sample(s, logits) == 1); /* nothing seen yet */
    lb_sampler_accept(s, 1);
    lb_sampler_accept(s, 1);
    CHECK(lb_sampler_sample(s, logits) == 5);
    lb_sampler_accept(s, 5);
    CHECK(lb_sampler_sample(s, logits) == 1);
    lb_sampler_free(s);

    /* frequency penalty: count times: 1 seen twice at 0.3 -> 2.4 < 2.5 (token 2)
     * < 2.9 (token 5): picks 5; 5 seen once -> 2.6 > 2.5: still 5 */
    p = plain(0.0f);
    p.frequency_penalty = 0.3f;
    p.repeat_last_n = 8;
    s = make(p);
    lb_sampler_accept(s, 1);
    CHECK(lb_sampler_sample(s, logits) == 5); /* 1: 3 - 0.3 = 2.7 < 2.9 */
    lb_sampler_accept(s, 1);
    lb_sampler_accept(s, 5);
    CHECK(lb_sampler_sample(s, logits) == 5); /* 1: 2.4, 5: 2.6, 2: 2.5 */
    lb_sampler_accept(s, 5);
    CHECK(lb_sampler_sample(s, logits) == 2); /* 5: 2.3, 1: 2.4, 2: 2.5 */
    /* negative penalties favour seen tokens: 6 seen 8 times (the window) at
     * -1: -5 + 8 = 3 ties token 1, and a tie goes to the first index */
    lb_sampler_free(s);
    p.frequency_penalty = -1.0f;
    s = make(p);
    for (int i = 0; i < 9; i++) lb_sampler_accept(s, 6);
    CHECK(lb_sampler_sample(s, logits) == 1);
    lb_sampler_free(s);
    p.frequency_penalty = -1.1f;
    s = make(p);
    for (int i = 0; i < 8; i++) lb_sampler_accept(s, 6);
    CHECK(lb_sampler_sample(s, logits) == 6); /* -5 + 8.8 = 3.8 */
    lb_sampler_free(s);
    /* at a temperature the penalty changes the distribution: a huge presence
     * penalty removes token 1 from the draws */
    p = plain(1.0f);
    p.presence_penalty = 100.0f;
    p.repeat_last_n = 4;
    s = make(p);
    lb_sampler_accept(s, 1);
    histogram(s, logits, 5000, h);
    CHECK(h[1] == 0 && h[5] > 0);
    lb_sampler_free(s);

    /* same seed, same draws; another seed, other draws */
    int a[64], b[64], c[64];
    for (int run = 0; run < 3; run++) {
        p = plain(1.5f);
        p.seed = run == 2 ? 7 : 42;
        s = make(p);
        for (int i = 0; i < 64; i++) (run == 0 ? a : run == 1 ? b : c)[i] = lb_sampler_sample(s, logits);
        lb_sampler_free(s);
    }
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(memcmp(a, c, sizeof a) != 0);

    /* bad parameters are refused */
    p = plain(1.0f);
    p.repeat_penalty = 0.0f;
    lb_sampler *bad = NULL;
    CHECK(lb_sampler_new(&p, V, &bad) == LB_ERR_ARG && bad == NULL);
    CHECK(lb_sampler_new(&p, 0, &bad) == LB_ERR_ARG);
    return lb_test_result("test_sampler");
}
