/* The layout study behind ABQ_W{3,2S}_C3X16 (docs/abq.md, "3-bit chunks"):
 * in the X16 layout ABQ_W{3,2S}_C4X16 the codes of W3 and W2S (0..7, 0..4)
 * sit in 4-bit fields, 4.5 bits a weight in memory against 3.25 / 3.125 in
 * the file. This measured, before the format was built, the X16 decode of
 * the 4-bit chunks (the library's loop, kernels/x86/abq_x16_avx512.c)
 * against a 3-bit chunk layout of the same 16-row groups, 3.5 bits a weight
 * (the one formats/abq.h now defines), in bare loops apart from the driver:
 *
 *   per group: d[16], swz[16] (128 bytes) as X16, then 4 triples of 64-byte
 *   chunks A, B, C; triple t holds columns c = 8t .. 8t + 7 (column c: row
 *   r's codes of weights 4c .. 4c + 3 in bytes 4r .. 4r + 3):
 *     A: bits 0-2 column 8t, 3-5 column 8t+1, 6-7 column 8t+2's low 2 bits
 *     B: bits 0-2 column 8t+3, 3-5 column 8t+4, 6-7 column 8t+5's low 2 bits
 *     C: bits 0-2 column 8t+6, 3-5 column 8t+7, bit 6 column 8t+2's bit 2,
 *        bit 7 column 8t+5's bit 2
 *
 * Each mask leaves a column in place (times 1, 8, 64; the high bits times
 * 64 or 128), one vpdpbusd per mask with the column's activation dword
 * broadcast, chains per shift, one exact shift per chain: 10 masks and 10
 * vpdpbusd per 512 codes of 16 rows against the 4-bit chunks' 8 and 8.
 * Both loops are first checked against a scalar dot of the same codes.
 *
 *   abq_c3 [-r ROUNDS] [-s SECONDS]     (x86-64 with AVX-512 VNNI)
 *
 * Prints Gweights/s and GB/s of each from L2 (64 rows) and from memory
 * (65536 rows x 5632: 207 MB at 4.5 bits, 161 MB at 3.5, past any L3) on 1 and 2 threads,
 * the rounds alternated, and the read bandwidth lowbit measures beside. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "kernels/cpu.h"
#include "kernels/membw.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))
#define DPB(acc, u, x) __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const int32_t *)(x)))

enum { G = 128, GB4 = 128 + 1024, GB3 = 128 + 768 };

/* the 16 rows' sum code * ca of one group: 4-bit chunks (the library's loop) */
T static inline __m512i group4(const uint8_t *g, const int8_t *ca) {
    const uint8_t *qs = g + 128;
    __m512i P0 = _mm512_madd_epi16(_mm512_loadu_si512(g + 64), _mm512_set1_epi32(0)), P1 = _mm512_setzero_si512();
    __m512i Q0 = _mm512_setzero_si512(), Q1 = _mm512_setzero_si512();
    const __m512i lo = _mm512_set1_epi8(0x0f), hi = _mm512_set1_epi8((char)0xf0);
#pragma GCC unroll 8
    for (int t = 0; t < 16; t += 2) {
        const __m512i v0 = _mm512_loadu_si512(qs + 64 * t), v1 = _mm512_loadu_si512(qs + 64 * t + 64);
        DPB(P0, _mm512_and_si512(v0, lo), ca + 8 * t);
        DPB(Q0, _mm512_and_si512(v0, hi), ca + 8 * t + 4);
        DPB(P1, _mm512_and_si512(v1, lo), ca + 8 * t + 8);
        DPB(Q1, _mm512_and_si512(v1, hi), ca + 8 * t + 12);
    }
    return _mm512_add_epi32(_mm512_add_epi32(P0, P1), _mm512_srai_epi32(_mm512_add_epi32(Q0, Q1), 4));
}

/* the same from 3-bit chunks */
T static inline __m512i group3(const uint8_t *g, const int8_t *ca) {
    const uint8_t *qs = g + 128;
    __m512i P0 = _mm512_madd_epi16(_mm512_loadu_si512(g + 64), _mm512_set1_epi32(0)), P0b = _mm512_setzero_si512();
    __m512i P3 = _mm512_setzero_si512(), P3b = _mm512_setzero_si512(), P6 = _mm512_setzero_si512();
    __m512i P6b = _mm512_setzero_si512(), P4 = _mm512_setzero_si512(), P5 = _mm512_setzero_si512();
    const __m512i m07 = _mm512_set1_epi8(0x07), m38 = _mm512_set1_epi8(0x38), mc0 = _mm512_set1_epi8((char)0xc0);
    const __m512i m40 = _mm512_set1_epi8(0x40), m80 = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        const uint8_t *q = qs + 192 * t;
        const int8_t *c = ca + 32 * t;
        const __m512i A = _mm512_loadu_si512(q), B = _mm512_loadu_si512(q + 64), C = _mm512_loadu_si512(q + 128);
        DPB(P0, _mm512_and_si512(A, m07), c);
        DPB(P3, _mm512_and_si512(A, m38), c + 4);
        DPB(P6, _mm512_and_si512(A, mc0), c + 8);
        DPB(P0b, _mm512_and_si512(B, m07), c + 12);
        DPB(P3b, _mm512_and_si512(B, m38), c + 16);
        DPB(P6b, _mm512_and_si512(B, mc0), c + 20);
        DPB(P0, _mm512_and_si512(C, m07), c + 24);
        DPB(P3, _mm512_and_si512(C, m38), c + 28);
        DPB(P4, _mm512_and_si512(C, m40), c + 8);
        DPB(P5, _mm512_and_si512(C, m80), c + 20);
    }
    __m512i r = _mm512_add_epi32(P0, P0b);
    r = _mm512_add_epi32(r, _mm512_srai_epi32(_mm512_add_epi32(P3, P3b), 3));
    r = _mm512_add_epi32(r, _mm512_srai_epi32(_mm512_add_epi32(P6, P6b), 6));
    r = _mm512_add_epi32(r, _mm512_srai_epi32(P4, 4));
    return _mm512_add_epi32(r, _mm512_srai_epi32(P5, 5));
}

/* blocks [b0, b1) of 16 rows against one activation row, d I summed in
 * double per row as the X16 kernel does */
#define RUN(name, group, GB)                                                                                 \
    T static void name(const uint8_t *W, long b0, long b1, long nb, const int8_t *ca, double *out) {          \
        for (long b = b0; b < b1; b++) {                                                                     \
            __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();                                      \
            for (long i = 0; i < nb; i++) {                                                                  \
                const uint8_t *g = W + ((size_t)b * nb + i) * GB;                                            \
                const __m512i I = group(g, ca + G * i);                                                      \
                const __m512 d = _mm512_loadu_ps(g);                                                         \
                a0 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(d)),                             \
                                     _mm512_cvtepi32_pd(_mm512_castsi512_si256(I)), a0);                     \
                a1 = _mm512_fmadd_pd(                                                                        \
                    _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_extracti64x4_epi64(_mm512_castps_si512(d), 1))), \
                    _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(I, 1)), a1);                                \
            }                                                                                                \
            _mm512_storeu_pd(out + 16 * b, a0);                                                              \
            _mm512_storeu_pd(out + 16 * b + 8, a1);                                                          \
        }                                                                                                    \
    }
RUN(run4, group4, GB4)
RUN(run3, group3, GB3)

/* codes[r][j] (0..7) of one 16-row group into both layouts; d = 1, swz = 0 */
static void place(const uint8_t codes[16][G], uint8_t *g4, uint8_t *g3) {
    const float one = 1.0f;
    memset(g4, 0, GB4), memset(g3, 0, GB3);
    for (int r = 0; r < 16; r++) memcpy(g4 + 4 * r, &one, 4), memcpy(g3 + 4 * r, &one, 4);
    for (int r = 0; r < 16; r++)
        for (int j = 0; j < G; j++) {
            const int c = j / 4, b = j % 4, v = codes[r][j], byte = 4 * r + b;
            g4[128 + 64 * (c / 2) + byte] |= (uint8_t)(v << (4 * (c % 2))); /* the X16 mapping, W = 4 */
            const int t = c / 8, k = c % 8;
            uint8_t *A = g3 + 128 + 192 * t, *B = A + 64, *C = A + 128;
            switch (k) {
            case 0: A[byte] |= (uint8_t)v; break;
            case 1: A[byte] |= (uint8_t)(v << 3); break;
            case 2: A[byte] |= (uint8_t)((v & 3) << 6), C[byte] |= (uint8_t)((v >> 2) << 6); break;
            case 3: B[byte] |= (uint8_t)v; break;
            case 4: B[byte] |= (uint8_t)(v << 3); break;
            case 5: B[byte] |= (uint8_t)((v & 3) << 6), C[byte] |= (uint8_t)((v >> 2) << 7); break;
            case 6: C[byte] |= (uint8_t)v; break;
            default: C[byte] |= (uint8_t)(v << 3); break;
            }
        }
}

/* both loops against the scalar dot on random codes and activations */
static int check(void) {
    enum { NB = 3 };
    static uint8_t codes[NB][16][G], W4[NB * GB4], W3[NB * GB3];
    static int8_t ca[NB * G];
    double o4[16], o3[16];
    for (int i = 0; i < NB; i++) {
        for (int r = 0; r < 16; r++)
            for (int j = 0; j < G; j++) codes[i][r][j] = (uint8_t)(next_rand() % 8);
        place(codes[i], W4 + (size_t)i * GB4, W3 + (size_t)i * GB3);
    }
    for (int j = 0; j < NB * G; j++) ca[j] = (int8_t)(next_rand() % 256 - 128);
    run4(W4, 0, 1, NB, ca, o4), run3(W3, 0, 1, NB, ca, o3);
    for (int r = 0; r < 16; r++) {
        double ref = 0;
        for (int i = 0; i < NB; i++)
            for (int j = 0; j < G; j++) ref += codes[i][r][j] * ca[i * G + j];
        if (o4[r] != ref || o3[r] != ref) {
            fprintf(stderr, "abq_c3: row %d: 4-bit %g, 3-bit %g, scalar %g\n", r, o4[r], o3[r], ref);
            return 0;
        }
    }
    return 1;
}

/* seconds per pass over rows [0, N) on nt threads */
static double time_pass(int three, const uint8_t *W, long N, long nb, const int8_t *ca, double *out, int nt,
                        double secs) {
    int reps = 0;
    const double t0 = now();
    do {
#pragma omp parallel num_threads(nt)
        {
            const long nblk = N / 16, per = (nblk + nt - 1) / nt, b0 = omp_get_thread_num() * per;
            const long b1 = b0 + per < nblk ? b0 + per : nblk;
            if (b0 < b1) (three ? run3 : run4)(W, b0, b1, nb, ca, out);
        }
        reps++;
    } while (now() - t0 < secs);
    return (now() - t0) / reps;
}

int main(int argc, char **argv) {
    int rounds = 3;
    double secs = 1.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) secs = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: abq_c3 [-r ROUNDS] [-s SECONDS]\n");
            return 2;
        }
    }
    if (!(lb_cpu_detected() >= LB_ISA_AVX512 && lb_isa_is_x86(lb_cpu_detected()))) {
        printf("abq_c3: needs AVX-512 VNNI (this CPU: %s); nothing measured\n", lb_isa_name(lb_cpu_detected()));
        return 0;
    }
    if (!check()) return 1;
    printf("abq_c3: both loops equal the scalar dot on random codes\n");
    const long K = 5632, nb = K / G, sizes[2] = {64, 65536};
    for (int s = 0; s < 2; s++) {
        const long N = sizes[s];
        uint8_t *W4 = aligned_alloc(64, (size_t)N / 16 * nb * GB4), *W3 = aligned_alloc(64, (size_t)N / 16 * nb * GB3);
        int8_t *ca = aligned_alloc(64, (size_t)K);
        double *out = malloc(sizeof(double) * (size_t)N);
        if (!W4 || !W3 || !ca || !out) return 1;
        for (size_t i = 0; i < (size_t)N / 16 * nb * GB4; i++) W4[i] = (uint8_t)next_rand();
        for (size_t i = 0; i < (size_t)N / 16 * nb * GB3; i++) W3[i] = (uint8_t)next_rand();
        for (long j = 0; j < K; j++) ca[j] = (int8_t)next_rand();
        for (long i = 0; i < N / 16 * nb; i++)
            for (int r = 0; r < 16; r++) {
                const float d = 0.01f;
                memcpy(W4 + (size_t)i * GB4 + 4 * r, &d, 4), memcpy(W3 + (size_t)i * GB3 + 4 * r, &d, 4);
            }
        const double w = (double)N * K, b4 = (double)N / 16 * nb * GB4, b3 = (double)N / 16 * nb * GB3;
        for (int nt = 1; nt <= (s ? 2 : 1); nt++)
            for (int r = 0; r < rounds; r++) {
                const double t4 = time_pass(0, W4, N, nb, ca, out, nt, secs);
                const double t3 = time_pass(1, W3, N, nb, ca, out, nt, secs);
                const double bw = s ? lb_read_bandwidth(256u << 20, nt, 3) : 0;
                printf("%-6s %d thread%s: 4-bit %6.1f Gw/s %5.1f GB/s | 3-bit %6.1f Gw/s %5.1f GB/s | 3-bit/4-bit "
                       "%.2fx",
                       s ? "memory" : "L2", nt, nt > 1 ? "s" : " ", w / t4 * 1e-9, b4 / t4 * 1e-9, w / t3 * 1e-9,
                       b3 / t3 * 1e-9, t4 / t3);
                if (s) printf(" | read bandwidth %.1f GB/s", bw);
                printf("\n");
            }
        free(W4), free(W3), free(ca), free(out);
    }
    return 0;
}
#else
int main(void) {
    printf("abq_c3: an x86-64 study (AVX-512 VNNI); nothing to measure here\n");
    return 0;
}
#endif
