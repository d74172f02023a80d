// Private to engine/src: whether the SIMD kernels are compiled (AVX2 + FMA + F16C, the x86-64-v3
// baseline the build targets; wider instruction sets are chosen at run time inside the kernels),
// and the horizontal reductions they share.
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define ORDO_SIMD 1
#endif

namespace ordo::simd {

#ifdef ORDO_SIMD
// Lanes summed as ((0+4) + (2+6)) + ((1+5) + (3+7)): every kernel reduces in this one order, so a
// row gets the same bits from each of them.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

}  // namespace ordo::simd
