// Private to engine/src: whether the SIMD kernels are compiled (AVX2 + FMA + F16C, the x86-64-v3
// baseline the build targets; wider instruction sets are chosen at run time inside the kernels),
// whether this CPU runs AVX-512, and the horizontal reductions the kernels share.
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define ORDO_SIMD 1
#endif

#include <cstdlib>
#include <cstring>

// Around AVX-512 code: GCC 12 warns of uninitialized values inside its own AVX-512 intrinsics.
#ifdef __clang__
#define ORDO_AVX512_WARNINGS_OFF _Pragma("GCC diagnostic push")
#else
#define ORDO_AVX512_WARNINGS_OFF                                                             \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#endif
#define ORDO_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")

// Above each loop over a tile's registers (its rows, slices, panels, groups): unrolled before
// GCC 12's scalar replacement runs, an accumulator array those loops index lives in registers. Left
// to the late unroller it stayed an array, and every accumulator was stored to the stack on every
// column: a 6-row AVX2 F32 tile ran at half speed, the AVX-512 F16 tiles stored 24 registers per 24
// FMAs. Clang needs none of it.
#define ORDO_UNROLL _Pragma("GCC unroll 16")

namespace ordo::simd {

// ORDO_MAX_ISA=avx2, avx-vnni or avx512 (AVX-512 without VNNI) runs this CPU as a lesser one: how
// the tests reach every kernel from one machine.
inline bool max_isa_is(const char* isa) {
  const char* v = std::getenv("ORDO_MAX_ISA");
  return v && std::strcmp(v, isa) == 0;
}

#if defined(ORDO_SIMD) && defined(__x86_64__)
// AVX-512 F/BW/DQ/VL, unless ORDO_MAX_ISA caps the kernels at AVX2 or AVX-VNNI.
inline bool cpu_avx512() {
  static const bool yes = !max_isa_is("avx2") && !max_isa_is("avx-vnni") && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl");
  return yes;
}
#endif

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
