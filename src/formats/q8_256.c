/* Scalar references of the int8 256-value chunks (formats/q8_256.h). */
#include "formats/q8_256.h"

#include <math.h>
#include <string.h>

#include "core/common.h"
#include "core/fp16.h"
#include "formats/kquants.h"
#include "formats/mxfp4.h"
#include "formats/types.h"

/* x rounded to nearest even, as cvtps2dq does for finite values; NaN gives
 * -128 as the packs of cvtps2dq's 0x80000000 do. */
static int8_t code_of(float v) {
    const float r = nearbyintf(v);
    if (!(r >= -128.0f)) return -128;
    return (int8_t)(r > 127.0f ? 127.0f : r);
}

void lb_quantize_q8_256x16_ref(const float *x, size_t ldx, void *vy, int64_t k) {
    int8_t *tiles = vy;
    float *scales = (float *)((char *)vy + lb_q8_256x16_scales_at(k));
    const int64_t nb = k / 32, nsteps = (nb + 1) / 2;
    memset(tiles, 0, (size_t)nsteps * 1024);
    for (int64_t c0 = 0; c0 < k; c0 += 256) {
        const int64_t c1 = LB_MIN(c0 + 256, k);
        for (int m = 0; m < 16; m++) {
            const float *row = x + (size_t)m * ldx;
            float amax = 0.0f;
            for (int64_t i = c0; i < c1; i++) amax = fmaxf(amax, fabsf(row[i]));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            scales[(c0 / 256) * 16 + m] = amax / 127.0f;
            for (int64_t i = c0; i < c1; i++) tiles[(i / 64) * 1024 + m * 64 + i % 64] = code_of(row[i] * id);
        }
    }
}

int lb_q8_256_qmax(int base) {
    switch (base) {
    case LB_TYPE_Q4_0: return 8;
    case LB_TYPE_MXFP4_NL: return 12;
    default: return 127; /* IQ4_NL (its table runs -127 .. 113), Q8_0 */
    }
}

int lb_q8_256_shift(int base) { return base == LB_TYPE_Q8_0 || base == LB_TYPE_IQ4_NL ? 1 : 4; }

/* Block b's scale and its 32 codes as the base reference multiplies them. */
static float block_codes(int base, const void *row, int64_t b, int q[32]) {
    if (base == LB_TYPE_Q8_0) {
        const block_q8_0 *x = (const block_q8_0 *)row + b;
        for (int j = 0; j < 32; j++) q[j] = x->qs[j];
        return lb_fp16_to_f32(x->d);
    }
    /* Q4_0, IQ4_NL and MXFP4_NL: fp16 scale, then 16 bytes of two nibbles
     * (weight j low, weight j + 16 high) */
    const uint8_t *blk = (const uint8_t *)row + (size_t)b * sizeof(block_q4_0);
    lb_fp16 d;
    memcpy(&d, blk, sizeof d);
    for (int j = 0; j < 16; j++) {
        const int lo = blk[2 + j] & 0xF, hi = blk[2 + j] >> 4;
        if (base == LB_TYPE_Q4_0) q[j] = lo - 8, q[j + 16] = hi - 8;
        else {
            const int8_t *kv = base == LB_TYPE_MXFP4_NL ? lb_kvalues_mxfp4 : lb_kvalues_iq4nl;
            q[j] = kv[lo], q[j + 16] = kv[hi];
        }
    }
    return lb_fp16_to_f32(d);
}

void lb_requant_q8_256_ref(int base, const void *row, int64_t k, int8_t *out, float *s) {
    const int qmax = lb_q8_256_qmax(base), sh = lb_q8_256_shift(base);
    const int64_t nb = k / 32;
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const int64_t b1 = LB_MIN(b0 + 8, nb);
        int q[32];
        float D = 0.0f;
        for (int64_t b = b0; b < b1; b++) D = fmaxf(D, fabsf(block_codes(base, row, b, q)));
        const float sc = D * (float)qmax / 127.0f;
        s[b0 / 8] = sc;
        for (int64_t b = b0; b < b1; b++) {
            const float r = sc > 0.0f ? block_codes(base, row, b, q) / sc : 0.0f;
            const float f = nearbyintf(r * (float)(1 << (15 - sh)));
            const int32_t B = f >= -32768.0f && f <= 32767.0f ? (int32_t)f : 0; /* finite scales never leave it */
            for (int j = 0; j < 32; j++)
                out[b * 32 + j] = (int8_t)((q[j] * (1 << sh) * B + (1 << 14)) >> 15);
        }
    }
}
