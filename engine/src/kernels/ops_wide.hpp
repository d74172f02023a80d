// Private: the element-wise kernels' AVX-512 bodies (ops_wide.cpp), 16 lanes doing per lane exactly
// what ops.cpp's 8-lane code does, so a value has the same bits on either path.
#pragma once

#include <cstdint>

#include "ordo/ops.hpp"
#include "simd.hpp"

namespace ordo::detail {

#if defined(ORDO_SIMD) && defined(__x86_64__)
// x[i] = act(x[i]) (· up[i] if up) for i in [0, n / 16 · 16); returns that count. Not GeluErf.
int64_t act_span_wide(Activation a, float* x, const float* up, int64_t n);

// x[i] = exp(x[i] − mx) for i in [0, n / 16 · 16), each vector's low then high half added to the
// 8-lane sum *vs (the 8-lane loop's order); returns that count.
int64_t softmax_exp_wide(float* x, int64_t n, float mx, __m256* vs);
#endif

// The kernels at a chosen width (16: AVX-512, which the CPU must have; 8: AVX2), for the tests.
void act_span_lanes(Activation a, float* x, const float* up, int64_t n, int lanes);
float softmax_unnormalized_lanes(float* x, int64_t n, int lanes);

}  // namespace ordo::detail
