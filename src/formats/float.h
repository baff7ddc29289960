#ifndef LB_FORMATS_FLOAT_H
#define LB_FORMATS_FLOAT_H
#include "formats/types.h"
void lb_f32_to_float(const void *src, float *dst, int64_t k);
void lb_f32_from_float(const float *src, void *dst, int64_t k);
void lb_vec_dot_f32_ref(int64_t n, float *s, const void *w, const void *a);
void lb_f16_to_float(const void *src, float *dst, int64_t k);
void lb_f16_from_float(const float *src, void *dst, int64_t k);
void lb_vec_dot_f16_ref(int64_t n, float *s, const void *w, const void *a);
void lb_bf16_to_float(const void *src, float *dst, int64_t k);
void lb_bf16_from_float(const float *src, void *dst, int64_t k);
void lb_vec_dot_bf16_ref(int64_t n, float *s, const void *w, const void *a);
#endif
