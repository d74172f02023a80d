// Element-wise and row kernels (AVX2/FMA where it matters, scalar tails and fallback).
//
// Threading: norms, activations and add_inplace split large inputs (rows, or chunks) over threads
// through parallel_items (team.hpp): inside a step they run on its team, and they never start a
// parallel region from inside one. dot/axpy/softmax are always single-threaded: they are the inner
// loops of attention, which parallelises over heads.
#include <algorithm>
#include <cmath>
#include <limits>

#include "gemm_backend.hpp"
#include "ops_wide.hpp"
#include "ordo/ops.hpp"
#include "team.hpp"

#include "simd.hpp"

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

namespace {

constexpr int64_t kParallelMinElems = 1 << 15;
constexpr int64_t kChunk = 4096;  // element-wise work item (a multiple of 8)

// Whether the element-wise kernels run their AVX-512 bodies (ops_wide.cpp): the same bits, ~1.6x
// the speed of 8 lanes on SiLU and softmax.
bool wide_ops() {
#if defined(ORDO_SIMD) && defined(__x86_64__)
  return simd::cpu_avx512();
#else
  return false;
#endif
}

constexpr float kSqrt1_2 = 0.70710678118654752440f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;

#ifdef ORDO_SIMD
using simd::hmax;
using simd::hsum;

// exp(x) for 8 lanes, within ~2 ulp of expf over [-87.33, 88.72] (Cephes polynomial);
// below that 0 (no denormals), above +inf, NaN stays NaN.
inline __m256 exp8(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.33654475f), hi = _mm256_set1_ps(88.72283905f);
  const __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  const __m256 over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  x = _mm256_max_ps(lo, _mm256_min_ps(hi, x));  // operand order keeps NaN
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  // 2^n as 2^(n/2) · 2^(n − n/2) so n in [−126, 128] never leaves the normal exponent range.
  const __m256i n = _mm256_cvtps_epi32(fx);
  const __m256i n1 = _mm256_srai_epi32(n, 1), n2 = _mm256_sub_epi32(n, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  p = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  p = _mm256_andnot_ps(under, p);
  return _mm256_blendv_ps(p, _mm256_set1_ps(std::numeric_limits<float>::infinity()), over);
}

// act(x) for 8 lanes; GeluErf goes through the scalar erfc (no accurate vector erf here).
inline __m256 act8(Activation a, __m256 v) {
  const __m256 one = _mm256_set1_ps(1.0f);
  switch (a) {
    case Activation::SiLU:  // x · σ(x) = x / (1 + e^−x)
      return _mm256_div_ps(v, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), v))));
    case Activation::GeluTanh: {  // 0.5x(1 + tanh(u)) = x / (1 + e^−2u)
      const __m256 v3 = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
      const __m256 u = _mm256_mul_ps(_mm256_set1_ps(kSqrt2OverPi), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), v3, v));
      return _mm256_div_ps(v, _mm256_add_ps(one, exp8(_mm256_mul_ps(_mm256_set1_ps(-2.0f), u))));
    }
    case Activation::ReLU: return _mm256_max_ps(v, _mm256_setzero_ps());
    case Activation::GeluErf: break;
  }
  return v;
}
#endif

inline float act1(Activation a, float v) {
  switch (a) {
    case Activation::SiLU: return v / (1.0f + std::exp(-v));
    // 0.5x(1 + erf(x/√2)) written with erfc to avoid cancellation for negative x.
    case Activation::GeluErf: return 0.5f * v * std::erfc(-v * kSqrt1_2);
    case Activation::GeluTanh: {
      const float u = kSqrt2OverPi * (v + 0.044715f * v * v * v);
      return v / (1.0f + std::exp(-2.0f * u));
    }
    case Activation::ReLU: return v > 0.0f ? v : 0.0f;
  }
  return v;
}

// x[i] = act(x[i]) (· up[i] if up) over [0, n), single-threaded. The last n % 8 go through one
// masked vector, so an element's value never depends on where it falls in the span (a sequence's
// activations are the same bits alone and inside a batch).
void act_span(Activation a, float* x, const float* up, int64_t n, bool wide = wide_ops()) {
  int64_t i = 0;
#ifdef ORDO_SIMD
  if (a != Activation::GeluErf) {
#ifdef __x86_64__
    if (wide) i = detail::act_span_wide(a, x, up, n);
#endif
    for (; i + 8 <= n; i += 8) {
      __m256 v = act8(a, _mm256_loadu_ps(x + i));
      if (up) v = _mm256_mul_ps(v, _mm256_loadu_ps(up + i));
      _mm256_storeu_ps(x + i, v);
    }
    if (i < n) {
      const __m256i mask =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      __m256 v = act8(a, _mm256_maskload_ps(x + i, mask));
      if (up) v = _mm256_mul_ps(v, _mm256_maskload_ps(up + i, mask));
      _mm256_maskstore_ps(x + i, mask, v);
      return;
    }
  }
#endif
  if (up)
    for (; i < n; ++i) x[i] = act1(a, x[i]) * up[i];
  else
    for (; i < n; ++i) x[i] = act1(a, x[i]);
}

void act_any(Activation a, float* x, const float* up, int64_t n) {
  if (n <= 0) return;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const int64_t work = a == Activation::GeluErf ? n * 8 : n;  // erfc is ~8x dearer
  // Through parallel_items: a decode step's FFN activation runs on its team.
  detail::parallel_items(chunks, work >= kParallelMinElems, [&](int64_t c) {
    const int64_t b = c * kChunk;
    act_span(a, x + b, up ? up + b : nullptr, std::min(kChunk, n - b));
  });
}

float sum_sq(const float* x, int64_t n) {
  int64_t i = 0;
  double s = 0.0;  // scalar part (tail, or all of a non-AVX2 build) in double
#ifdef ORDO_SIMD
  __m256 a = _mm256_setzero_ps(), b = a;
  for (; i + 16 <= n; i += 16) {
    const __m256 u = _mm256_loadu_ps(x + i), v = _mm256_loadu_ps(x + i + 8);
    a = _mm256_fmadd_ps(u, u, a);
    b = _mm256_fmadd_ps(v, v, b);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 u = _mm256_loadu_ps(x + i);
    a = _mm256_fmadd_ps(u, u, a);
  }
  s = hsum(_mm256_add_ps(a, b));
#endif
  for (; i < n; ++i) s += double(x[i]) * x[i];
  return float(s);
}

float sum(const float* x, int64_t n) {
  int64_t i = 0;
  double s = 0.0;  // scalar part (tail, or all of a non-AVX2 build) in double
#ifdef ORDO_SIMD
  __m256 a = _mm256_setzero_ps(), b = a;
  for (; i + 16 <= n; i += 16) {
    a = _mm256_add_ps(a, _mm256_loadu_ps(x + i));
    b = _mm256_add_ps(b, _mm256_loadu_ps(x + i + 8));
  }
  for (; i + 8 <= n; i += 8) a = _mm256_add_ps(a, _mm256_loadu_ps(x + i));
  s = hsum(_mm256_add_ps(a, b));
#endif
  for (; i < n; ++i) s += x[i];
  return float(s);
}

// Σ (x − mean)²
float sum_sq_dev(const float* x, float mean, int64_t n) {
  int64_t i = 0;
  double s = 0.0;  // scalar part (tail, or all of a non-AVX2 build) in double
#ifdef ORDO_SIMD
  const __m256 m = _mm256_set1_ps(mean);
  __m256 a = _mm256_setzero_ps(), b = a;
  for (; i + 16 <= n; i += 16) {
    const __m256 u = _mm256_sub_ps(_mm256_loadu_ps(x + i), m), v = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), m);
    a = _mm256_fmadd_ps(u, u, a);
    b = _mm256_fmadd_ps(v, v, b);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 u = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
    a = _mm256_fmadd_ps(u, u, a);
  }
  s = hsum(_mm256_add_ps(a, b));
#endif
  for (; i < n; ++i) s += double(x[i] - mean) * (x[i] - mean);
  return float(s);
}

}  // namespace

void rmsnorm(const float* x, const float* w, float eps, int64_t M, int64_t D, float* y) {
  if (M <= 0 || D <= 0) return;
  const int64_t per = std::max<int64_t>(1, kChunk / D);  // rows per item
  detail::parallel_items((M + per - 1) / per, M > 1 && M * D >= kParallelMinElems, [&](int64_t item) {
    for (int64_t m = item * per; m < std::min(M, (item + 1) * per); ++m) {
      const float* xr = x + m * D;
      float* yr = y + m * D;
      // As in HF: x · rsqrt(mean(x²) + eps), then · w.
      const float inv = 1.0f / std::sqrt(sum_sq(xr, D) / static_cast<float>(D) + eps);
      int64_t i = 0;
#ifdef ORDO_SIMD
      const __m256 vi = _mm256_set1_ps(inv);
      for (; i + 8 <= D; i += 8)
        _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), vi), _mm256_loadu_ps(w + i)));
#endif
      for (; i < D; ++i) yr[i] = (xr[i] * inv) * w[i];
    }
  });
}

void layernorm(const float* x, const float* w, const float* b, float eps, int64_t M, int64_t D, float* y) {
  if (M <= 0 || D <= 0) return;
  const int64_t per = std::max<int64_t>(1, kChunk / D);  // rows per item
  detail::parallel_items((M + per - 1) / per, M > 1 && M * D >= kParallelMinElems, [&](int64_t item) {
    for (int64_t m = item * per; m < std::min(M, (item + 1) * per); ++m) {
      const float* xr = x + m * D;
      float* yr = y + m * D;
      const float mean = sum(xr, D) / static_cast<float>(D);
      const float var = sum_sq_dev(xr, mean, D) / static_cast<float>(D);  // biased, as torch
      const float inv = 1.0f / std::sqrt(var + eps);
      int64_t i = 0;
#ifdef ORDO_SIMD
      const __m256 vm = _mm256_set1_ps(mean), vi = _mm256_set1_ps(inv);
      for (; i + 8 <= D; i += 8) {
        __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + i), vm), vi);
        if (w) t = _mm256_mul_ps(t, _mm256_loadu_ps(w + i));
        if (b) t = _mm256_add_ps(t, _mm256_loadu_ps(b + i));
        _mm256_storeu_ps(yr + i, t);
      }
#endif
      for (; i < D; ++i) {
        float t = (xr[i] - mean) * inv;
        if (w) t *= w[i];
        if (b) t += b[i];
        yr[i] = t;
      }
    }
  });
}

void activate(Activation a, float* x, int64_t n) { act_any(a, x, nullptr, n); }

void gated_activate(Activation a, float* gate, const float* up, int64_t n) { act_any(a, gate, up, n); }

namespace detail {

void act_span_lanes(Activation a, float* x, const float* up, int64_t n, int lanes) {
  act_span(a, x, up, n, lanes == 16);
}

float softmax_unnormalized_lanes(float* x, int64_t n, int lanes) {
  if (n <= 0) return 0.0f;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  float mx = ninf;
#ifdef ORDO_SIMD
  // The last n % 8 entries go through one masked vector: causal prompt rows have every length,
  // and the scalar tail cost up to seven std::exp calls per row.
  const int64_t full = n / 8 * 8, rest = n - full;
  const __m256i tail =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256 vmx = _mm256_set1_ps(ninf);
  for (; i < full; i += 8) vmx = _mm256_max_ps(vmx, _mm256_loadu_ps(x + i));
  if (rest)
    vmx = _mm256_max_ps(vmx, _mm256_blendv_ps(vmx, _mm256_maskload_ps(x + full, tail), _mm256_castsi256_ps(tail)));
  mx = hmax(vmx);
#else
  for (; i < n; ++i) mx = std::max(mx, x[i]);
#endif
  if (mx == ninf) {  // every entry −inf (e.g. a fully masked row): no distribution; write zeros
    // ...unless the max skipped NaN entries (every comparison with NaN is false): a row of NaN
    // scores and −inf would otherwise pass for a masked one and its NaN vanish (short rows did).
    for (i = 0; i < n; ++i)
      if (std::isnan(x[i])) {
        std::fill(x, x + n, std::numeric_limits<float>::quiet_NaN());
        return std::numeric_limits<float>::quiet_NaN();
      }
    std::fill(x, x + n, 0.0f);
    return 0.0f;
  }
  float s = 0.0f;
#ifdef ORDO_SIMD
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 vs = _mm256_setzero_ps();
  i = 0;
#ifdef __x86_64__
  if (lanes == 16) i = softmax_exp_wide(x, full, mx, &vs);
#endif
  for (; i < full; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(x + i, e);
    vs = _mm256_add_ps(vs, e);
  }
  if (rest) {
    const __m256 e =
        _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_maskload_ps(x + full, tail), vm)), _mm256_castsi256_ps(tail));
    _mm256_maskstore_ps(x + full, tail, e);
    vs = _mm256_add_ps(vs, e);
  }
  s = hsum(vs);
#else
  for (i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    s += x[i];
  }
#endif
  return s;
}

}  // namespace detail

float softmax_unnormalized(float* x, int64_t n) {
  return detail::softmax_unnormalized_lanes(x, n, wide_ops() ? 16 : 8);
}

void softmax(float* x, int64_t n) {
  const float s = softmax_unnormalized(x, n);
  if (s == 0.0f) return;  // fully masked: already zeros
  const float inv = 1.0f / s;
  int64_t i = 0;
#ifdef ORDO_SIMD
  const __m256 vi = _mm256_set1_ps(inv);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vi));
#endif
  for (; i < n; ++i) x[i] *= inv;
}

void add_inplace(float* y, const float* x, int64_t n) {
  if (n <= 0) return;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  // Memory-bound: only very large adds are worth threads.
  detail::parallel_items(chunks, n * 4 >= kParallelMinElems, [&](int64_t c) {
    int64_t i = c * kChunk;
    const int64_t end = std::min(n, i + kChunk);
#ifdef ORDO_SIMD
    for (; i + 8 <= end; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
#endif
    for (; i < end; ++i) y[i] += x[i];
  });
}

float dot(const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  float s = 0.0f;
#ifdef ORDO_SIMD
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  s = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
#endif
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float a, const float* x, float* y, int64_t n) {
  int64_t i = 0;
#ifdef ORDO_SIMD
  const __m256 va = _mm256_set1_ps(a);
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    _mm256_storeu_ps(y + i + 8, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8)));
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
  for (; i < n; ++i) y[i] += a * x[i];
}

}  // namespace ordo
