// Private: attention's per-(query row, head) inner loops over the KV cache. K and V rows of hd
// floats are contiguous ([kv_head, capacity, hd] cache) and each is read exactly once. The generic
// versions call dot()/axpy() per key; the AVX2 ones (hd = 32, 64, 128) keep the query (QK) or the
// output row (PV) in registers.
#pragma once

#include <cstdint>

#include "ordo/ops.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace ordo::detail {

#if defined(__AVX2__) && defined(__FMA__)
inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int NV>  // hd = 8·NV
inline void qk_scores_t(const float* q, const float* K, int64_t n, float scale, float* scores) {
  constexpr int64_t hd = 8 * NV;
  __m256 qv[NV];
  for (int i = 0; i < NV; ++i) qv[i] = _mm256_loadu_ps(q + 8 * i);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float* k = K + j * hd;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < NV; ++i) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(k + 8 * i), qv[i], a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(k + hd + 8 * i), qv[i], a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(k + 2 * hd + 8 * i), qv[i], a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(k + 3 * hd + 8 * i), qv[i], a3);
    }
    scores[j] = scale * hsum8(a0);
    scores[j + 1] = scale * hsum8(a1);
    scores[j + 2] = scale * hsum8(a2);
    scores[j + 3] = scale * hsum8(a3);
  }
  for (; j < n; ++j) {
    __m256 a = _mm256_setzero_ps();
    for (int i = 0; i < NV; ++i) a = _mm256_fmadd_ps(_mm256_loadu_ps(K + j * hd + 8 * i), qv[i], a);
    scores[j] = scale * hsum8(a);
  }
}

template <int NV>
inline void pv_accumulate_t(const float* p, const float* V, int64_t n, float* out) {
  constexpr int64_t hd = 8 * NV;
  __m256 acc[NV];
  for (int i = 0; i < NV; ++i) acc[i] = _mm256_loadu_ps(out + 8 * i);
  for (int64_t j = 0; j < n; ++j) {
    if (p[j] == 0.0f) continue;
    const __m256 pj = _mm256_set1_ps(p[j]);
    const float* v = V + j * hd;
    for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + 8 * i), acc[i]);
  }
  for (int i = 0; i < NV; ++i) _mm256_storeu_ps(out + 8 * i, acc[i]);
}
#endif

// scores[j] = scale · q·K[j] for j < n.
inline void qk_scores(const float* q, const float* K, int64_t n, int64_t hd, float scale, float* scores) {
#if defined(__AVX2__) && defined(__FMA__)
  switch (hd) {
    case 64: return qk_scores_t<8>(q, K, n, scale, scores);
    case 128: return qk_scores_t<16>(q, K, n, scale, scores);
    case 32: return qk_scores_t<4>(q, K, n, scale, scores);
    default: break;
  }
#endif
  for (int64_t j = 0; j < n; ++j) scores[j] = scale * dot(q, K + j * hd, hd);
}

// out[0, hd) += Σ_j p[j] · V[j] (zero weights skipped).
inline void pv_accumulate(const float* p, const float* V, int64_t n, int64_t hd, float* out) {
#if defined(__AVX2__) && defined(__FMA__)
  switch (hd) {
    case 64: return pv_accumulate_t<8>(p, V, n, out);
    case 128: return pv_accumulate_t<16>(p, V, n, out);
    case 32: return pv_accumulate_t<4>(p, V, n, out);
    default: break;
  }
#endif
  for (int64_t j = 0; j < n; ++j)
    if (p[j] != 0.0f) axpy(p[j], V + j * hd, out, hd);
}

}  // namespace ordo::detail
