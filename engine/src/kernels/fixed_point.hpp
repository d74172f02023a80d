// Private: float vectors rounded to 16-bit fixed point, for integer multiply-adds (vpmaddwd)
// against int8: the I8 panel kernels' activations and decode attention's query against int8 keys.
// finite_absmax is also the int8 KV cache's row check (to_i8).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "simd.hpp"

namespace ordo::detail {

// Largest rounded magnitude: a vpmaddwd lane against int8 then sums at most 2 · 127 · 16383.
// Rounding error: at most max|x| / 32766 per element.
constexpr float kFixed16Max = 16383.0f;

// mx = max|x[0, n)|; returns false when x has a NaN or inf (std::max alone would pass a NaN over).
inline bool finite_absmax(const float* x, int64_t n, float& mx) {
  mx = 0.0f;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    mx = std::max(mx, std::fabs(x[i]));
  }
  return finite;
}

// dst[0, n) = round(x / step) to nearest, step = max|x| / kFixed16Max (0 for an all-zero x).
// Returns false, writing nothing, when x has a NaN or inf, or is so small (max|x| below ~5e-35)
// that 1 / step overflows: callers then take their float path.
inline bool to_fixed16(const float* x, int64_t n, int16_t* dst, float& step) {
  float mx;
  if (!finite_absmax(x, n, mx)) return false;
  const float inv = mx > 0.0f ? kFixed16Max / mx : 0.0f;
  if (!std::isfinite(inv)) return false;
  step = mx / kFixed16Max;
  int64_t vec_end = 0;  // the vector loop's end: a multiple of 16
#ifdef ORDO_SIMD
  vec_end = n - n % 16;
  const __m256 vinv = _mm256_set1_ps(inv);
  for (int64_t i = 0; i < vec_end; i += 16) {  // |v| <= 16383: the packs never saturate
    const __m256i lo = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    const __m256i hi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vinv));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8));
  }
#endif
  for (int64_t i = vec_end; i < n; ++i) dst[i] = static_cast<int16_t>(std::nearbyint(x[i] * inv));
  return true;
}

}  // namespace ordo::detail
