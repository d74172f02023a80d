// Element-wise and row kernels.
#include <cmath>
#include <limits>

#include "ordo/ops.hpp"

namespace ordo {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::SiLU: return "silu";
    case Activation::GeluErf: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::ReLU: return "relu";
  }
  return "?";
}

void rmsnorm(const float* x, const float* w, float eps, int64_t M, int64_t D, float* y) {
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * D;
    float* yr = y + m * D;
    double ss = 0;
    for (int64_t i = 0; i < D; ++i) ss += double(xr[i]) * xr[i];
    float inv = 1.0f / std::sqrt(float(ss / D) + eps);
    for (int64_t i = 0; i < D; ++i) yr[i] = xr[i] * inv * w[i];
  }
}

void layernorm(const float* x, const float* w, const float* b, float eps, int64_t M, int64_t D, float* y) {
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * D;
    float* yr = y + m * D;
    double s = 0;
    for (int64_t i = 0; i < D; ++i) s += xr[i];
    float mean = float(s / D);
    double v = 0;
    for (int64_t i = 0; i < D; ++i) v += double(xr[i] - mean) * (xr[i] - mean);
    float inv = 1.0f / std::sqrt(float(v / D) + eps);
    for (int64_t i = 0; i < D; ++i) {
      float t = (xr[i] - mean) * inv;
      if (w) t *= w[i];
      if (b) t += b[i];
      yr[i] = t;
    }
  }
}

static inline float act1(Activation a, float v) {
  switch (a) {
    case Activation::SiLU: return v / (1.0f + std::exp(-v));
    case Activation::GeluErf: return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    case Activation::GeluTanh:
      return 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case Activation::ReLU: return v > 0 ? v : 0.0f;
  }
  return v;
}

void activate(Activation a, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = act1(a, x[i]);
}

void gated_activate(Activation a, float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = act1(a, gate[i]) * up[i];
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  if (mx == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  float s = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    s += x[i];
  }
  float inv = 1.0f / s;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

float dot(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace ordo
