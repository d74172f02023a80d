// Private: attention's per-(query row, head) inner loops over the KV cache. K and V rows of hd
// elements are contiguous ([kv_head, capacity, hd] cache) and each is read exactly once. The cache
// holds F32 (`float`) or F16 (`uint16_t`, widened on load); arithmetic is F32 either way. The
// generic versions work one element at a time; the AVX2 ones (hd = 32, 64, 128) keep the query
// (QK) or the output row (PV) in registers.
#pragma once

#include <cstdint>
#include <cstring>

#include "ordo/ops.hpp"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define ORDO_ATTN_SIMD 1
#endif

namespace ordo::detail {

inline float widen(float v) { return v; }
inline float widen(uint16_t h) { return f16_to_f32(h); }

#ifdef ORDO_ATTN_SIMD
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int NV, class E>  // hd = 8·NV
inline void qk_scores_t(const float* q, const E* K, int64_t n, float scale, float* scores) {
  constexpr int64_t hd = 8 * NV;
  __m256 qv[NV];
  for (int i = 0; i < NV; ++i) qv[i] = _mm256_loadu_ps(q + 8 * i);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const E* k = K + j * hd;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < NV; ++i) {
      a0 = _mm256_fmadd_ps(load8(k + 8 * i), qv[i], a0);
      a1 = _mm256_fmadd_ps(load8(k + hd + 8 * i), qv[i], a1);
      a2 = _mm256_fmadd_ps(load8(k + 2 * hd + 8 * i), qv[i], a2);
      a3 = _mm256_fmadd_ps(load8(k + 3 * hd + 8 * i), qv[i], a3);
    }
    scores[j] = scale * hsum8(a0);
    scores[j + 1] = scale * hsum8(a1);
    scores[j + 2] = scale * hsum8(a2);
    scores[j + 3] = scale * hsum8(a3);
  }
  for (; j < n; ++j) {
    __m256 a = _mm256_setzero_ps();
    for (int i = 0; i < NV; ++i) a = _mm256_fmadd_ps(load8(K + j * hd + 8 * i), qv[i], a);
    scores[j] = scale * hsum8(a);
  }
}

template <int NV, class E>
inline void pv_accumulate_t(const float* p, const E* V, int64_t n, float* out) {
  constexpr int64_t hd = 8 * NV;
  __m256 acc[NV];
  for (int i = 0; i < NV; ++i) acc[i] = _mm256_loadu_ps(out + 8 * i);
  for (int64_t j = 0; j < n; ++j) {
    if (p[j] == 0.0f) continue;
    const __m256 pj = _mm256_set1_ps(p[j]);
    const E* v = V + j * hd;
    for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(pj, load8(v + 8 * i), acc[i]);
  }
  for (int i = 0; i < NV; ++i) _mm256_storeu_ps(out + 8 * i, acc[i]);
}
#endif

// scores[j] = scale · q·K[j] for j < n.
template <class E>
inline void qk_scores(const float* q, const E* K, int64_t n, int64_t hd, float scale, float* scores) {
#ifdef ORDO_ATTN_SIMD
  switch (hd) {
    case 64: return qk_scores_t<8>(q, K, n, scale, scores);
    case 128: return qk_scores_t<16>(q, K, n, scale, scores);
    case 32: return qk_scores_t<4>(q, K, n, scale, scores);
    default: break;
  }
#endif
  for (int64_t j = 0; j < n; ++j) {
    if constexpr (sizeof(E) == sizeof(float)) {
      scores[j] = scale * dot(q, K + j * hd, hd);
    } else {
      float s = 0.0f;
      for (int64_t i = 0; i < hd; ++i) s += q[i] * widen(K[j * hd + i]);
      scores[j] = scale * s;
    }
  }
}

// out[0, hd) += Σ_j p[j] · V[j] (zero weights skipped).
template <class E>
inline void pv_accumulate(const float* p, const E* V, int64_t n, int64_t hd, float* out) {
#ifdef ORDO_ATTN_SIMD
  switch (hd) {
    case 64: return pv_accumulate_t<8>(p, V, n, out);
    case 128: return pv_accumulate_t<16>(p, V, n, out);
    case 32: return pv_accumulate_t<4>(p, V, n, out);
    default: break;
  }
#endif
  for (int64_t j = 0; j < n; ++j) {
    if (p[j] == 0.0f) continue;
    if constexpr (sizeof(E) == sizeof(float)) {
      axpy(p[j], V + j * hd, out, hd);
    } else {
      for (int64_t i = 0; i < hd; ++i) out[i] += p[j] * widen(V[j * hd + i]);
    }
  }
}

// dst[0, n) = src as F32 (F16 widened; F32 copied).
inline void to_f32(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
#ifdef ORDO_ATTN_SIMD
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(src + i));
#endif
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

// dst[0, n) = src rounded to F16 (to nearest even; beyond ±65504 becomes ±inf).
inline void to_f16(const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
#ifdef ORDO_ATTN_SIMD
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

}  // namespace ordo::detail
