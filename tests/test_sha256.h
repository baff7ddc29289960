/* SHA-256 for the interop fixtures (tests/data/README.md): digests that
 * compare with sha256sum's, and its manifests. */
#ifndef LB_TEST_SHA256_H
#define LB_TEST_SHA256_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

/* ---- SHA-256 (FIPS 180-4), enough to compare with sha256sum ---- */
static inline uint32_t lb_sha256_ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static inline void lb_sha256_block(uint32_t h[8], const uint8_t *p) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++)
        w[i] = w[i - 16] + (lb_sha256_ror(w[i - 15], 7) ^ lb_sha256_ror(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 7] +
               (lb_sha256_ror(w[i - 2], 17) ^ lb_sha256_ror(w[i - 2], 19) ^ (w[i - 2] >> 10));
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        const uint32_t t1 = v[7] + (lb_sha256_ror(v[4], 6) ^ lb_sha256_ror(v[4], 11) ^ lb_sha256_ror(v[4], 25)) + ((v[4] & v[5]) ^ (~v[4] & v[6])) + k[i] + w[i];
        const uint32_t t2 = (lb_sha256_ror(v[0], 2) ^ lb_sha256_ror(v[0], 13) ^ lb_sha256_ror(v[0], 22)) + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) h[i] += v[i];
}

/* Lower-case hex digest of n bytes into hex[65]. */
static inline void lb_sha256_hex(const void *data, size_t n, char hex[65]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) lb_sha256_block(h, p + i);
    uint8_t tail[128] = {0};
    const size_t r = n - i, len = r < 56 ? 64 : 128;
    memcpy(tail, p + i, r);
    tail[r] = 0x80;
    for (int b = 0; b < 8; b++) tail[len - 1 - b] = (uint8_t)(((uint64_t)n * 8) >> (8 * b));
    for (size_t j = 0; j < len; j += 64) lb_sha256_block(h, tail + j);
    for (int j = 0; j < 8; j++) snprintf(hex + 8 * j, 9, "%08x", h[j]);
}

/* The digest listed for `name` in the sha256sum-style manifest at path
 * (lines "<hex>  <name> ..."); 0 if absent. */
static inline int lb_test_manifest_sha(const char *path, const char *name, char hex[65]) {
    char *text = NULL;
    size_t len = 0;
    if (lb_read_file(path, &text, &len)) return 0;
    int found = 0;
    for (char *line = text; line && *line && !found;) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        char h[65], nm[256];
        if (sscanf(line, "%64s %255s", h, nm) == 2 && !strcmp(nm, name)) found = 1, memcpy(hex, h, 65);
        line = end ? end + 1 : NULL;
    }
    free(text);
    return found;
}

#endif
