/* F32, F16 and BF16: plain float storage. Activations stay F32 for these, so
 * the dot converts the weight on the fly and accumulates in float. */
#include "formats/float.h"

void lb_f32_to_float(const void *src, float *dst, int64_t k) { memcpy(dst, src, (size_t)k * 4); }
void lb_f32_from_float(const float *src, void *dst, int64_t k) { memcpy(dst, src, (size_t)k * 4); }
void lb_vec_dot_f32_ref(int64_t n, float *s, const void *w, const void *a) {
    const float *x = w, *y = a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += x[i] * y[i];
    *s = sum;
}

void lb_f16_to_float(const void *src, float *dst, int64_t k) {
    const lb_fp16 *x = src;
    for (int64_t i = 0; i < k; i++) dst[i] = lb_fp16_to_f32(x[i]);
}
void lb_f16_from_float(const float *src, void *dst, int64_t k) {
    lb_fp16 *y = dst;
    for (int64_t i = 0; i < k; i++) y[i] = lb_f32_to_fp16(src[i]);
}
void lb_vec_dot_f16_ref(int64_t n, float *s, const void *w, const void *a) {
    const lb_fp16 *x = w;
    const float *y = a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += lb_fp16_to_f32(x[i]) * y[i];
    *s = sum;
}

void lb_bf16_to_float(const void *src, float *dst, int64_t k) {
    const lb_bf16 *x = src;
    for (int64_t i = 0; i < k; i++) dst[i] = lb_bf16_to_f32(x[i]);
}
void lb_bf16_from_float(const float *src, void *dst, int64_t k) {
    lb_bf16 *y = dst;
    for (int64_t i = 0; i < k; i++) y[i] = lb_f32_to_bf16(src[i]);
}
void lb_vec_dot_bf16_ref(int64_t n, float *s, const void *w, const void *a) {
    const lb_bf16 *x = w;
    const float *y = a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += lb_bf16_to_f32(x[i]) * y[i];
    *s = sum;
}
