/* NEON kernels of the ABQ types (kernels/arm/abq_arm.h; layout and order of
 * operations in formats/abq.h). Per group and weight plane s: for every
 * activation plane t < p, CNT of (W_s AND A_t) gives 16 byte counts <= 8,
 * UADDLP pairs them into 8 lanes <= 16, MLA adds them times 2^t into the
 * plane's 16-bit accumulator (<= 16 * 255 = 4080), UADDLV sums it, shifted
 * by s. The zero-point corrections and the double accumulation are the
 * reference's, so every output is its float, bit for bit. */
#include "kernels/arm/abq_arm.h"

#if LB_HAVE_ARM_KERNELS
#include <arm_neon.h>
#include <string.h>

static inline int32_t planes_product(const uint8_t *wp, int q, const block_abq_act *a) {
    int32_t P = 0;
    for (int s = 0; s < q; s++) {
        const uint8x16_t w = vld1q_u8(wp + LB_ABQ_PLANE * s);
        uint16x8_t acc = vdupq_n_u16(0);
        for (int t = 0; t < a->p; t++)
            acc = vmlaq_n_u16(acc, vpaddlq_u8(vcntq_u8(vandq_u8(w, vld1q_u8(a->b[t])))), (uint16_t)(1u << t));
        P += (int32_t)vaddlvq_u16(acc) << s;
    }
    return P;
}

static inline int plane_count(const uint8_t *w) { return (int)vaddlvq_u8(vcntq_u8(vld1q_u8(w))); }

static inline float row_dot(int q, int header, int zfixed, int64_t n, const void *w, const void *va) {
    const block_abq_act *a = va;
    const size_t bs = (size_t)header + LB_ABQ_PLANE * (size_t)q;
    double acc = 0.0;
    for (int64_t i = 0; i < n / LB_ABQ_G; i++) {
        const uint8_t *blk = (const uint8_t *)w + i * bs, *wp = blk + header;
        lb_fp16 dh;
        memcpy(&dh, blk, 2);
        int zw = zfixed;
        if (zfixed < 0) {
            int16_t z;
            memcpy(&z, blk + 2, 2);
            zw = z;
        }
        int32_t sw = 0;
        for (int s = 0; s < q; s++) sw += plane_count(wp + LB_ABQ_PLANE * s) << s;
        const int32_t I = planes_product(wp, q, &a[i]) - a[i].z * sw - zw * a[i].sum + LB_ABQ_G * zw * a[i].z;
        acc += (double)lb_fp16_to_f32(dh) * (double)I;
    }
    return n >= LB_ABQ_G ? (float)(acc * (double)a[0].d) : 0.0f;
}

/* W2S: d alone (2 header bytes), z = 2; the others d and z (4 bytes) */
#define ABQ_NEON(name, NAME, Q)                                                                              \
    void lb_vec_dot_##name##_neon(int64_t n, float *s, const void *w, const void *a) {                       \
        const int balanced = LB_TYPE_##NAME == LB_TYPE_ABQ_W2S;                                              \
        *s = row_dot(Q, balanced ? 2 : 4, balanced ? 2 : -1, n, w, a);                                       \
    }
LB_ABQ_LIST(ABQ_NEON)
#undef ABQ_NEON

#endif
