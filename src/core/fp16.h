/* IEEE half and bfloat16 conversions, bit-exact with ggml's reference
 * (round to nearest even; NaN stays NaN). */
#ifndef LB_FP16_H
#define LB_FP16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t lb_fp16;
typedef uint16_t lb_bf16;

static inline float lb_bits_to_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t lb_f32_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline float lb_fp16_to_f32(lb_fp16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) return lb_bits_to_f32(sign | 0x7f800000u | (man << 13)); /* inf/nan */
    if (exp == 0) {
        if (man == 0) return lb_bits_to_f32(sign);
        /* subnormal: value = man * 2^-24 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return lb_bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline lb_fp16 lb_f32_to_fp16(float f) {
    uint32_t x = lb_f32_to_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (lb_fp16)(sign | 0x7e00 | ((ax >> 13) & 0x3ff)); /* nan */
    if (ax >= 0x477ff000u) return (lb_fp16)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) {
        /* result is subnormal or zero: round ax * 2^24 to nearest even integer */
        if (ax < 0x33000000u) return (lb_fp16)sign; /* < 2^-25: rounds to 0 */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* value = m * 2^(e-150); want m * 2^(e-150+24) */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (lb_fp16)(sign | r);
    }
    /* normal: rebias exponent, round mantissa 23 -> 10 bits to nearest even */
    uint32_t r = ((ax >> 13) - (112u << 10));
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (lb_fp16)(sign | r);
}

static inline float lb_bf16_to_f32(lb_bf16 h) { return lb_bits_to_f32((uint32_t)h << 16); }

static inline lb_bf16 lb_f32_to_bf16(float f) {
    uint32_t u = lb_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (lb_bf16)((u >> 16) | 64); /* quiet nan */
    return (lb_bf16)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

#endif
