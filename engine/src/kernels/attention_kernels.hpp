// Private: attention's per-(query row, head) inner loops over the KV cache. K and V rows of hd
// elements are contiguous ([kv_head, capacity, hd] cache) and each is read exactly once. The cache
// holds F32 (`float`), F16 (`uint16_t`, widened on load) or I8 (`int8_t`, one F32 scale per row:
// row j is rs[j] · K[j]); arithmetic is F32 in every case. `rs` is null for F32 and F16. The
// generic versions work one element at a time; the AVX2 ones (hd = 32, 64, 128) keep the query
// (QK) or the output row (PV) in registers. With I8 keys, the AVX2 QK rounds q to 16-bit fixed
// point (qk_scores_i8).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "fixed_point.hpp"
#include "ordo/ops.hpp"

#include "simd.hpp"

namespace ordo::detail {

inline float widen(float v) { return v; }
inline float widen(uint16_t h) { return f16_to_f32(h); }
inline float widen(int8_t v) { return static_cast<float>(v); }

// Scale of cache row j: rs[j] for I8 rows, 1 otherwise.
template <class E>
inline float row_scale(const float* rs, int64_t j) {
  if constexpr (std::is_same_v<E, int8_t>) return rs[j];
  (void)rs, (void)j;
  return 1.0f;
}

#ifdef ORDO_SIMD
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 load8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Decode reads one head's keys (then values) as kKvStreams far-apart streams: rows j, j + n/4, ...
// A head's rows are one contiguous run, and a single stream per core leaves the hardware
// prefetcher too few misses in flight; four streams keep it busy (eight are no better; numbers
// in docs/performance.md).
constexpr int64_t kKvStreams = 4;

// Rows this far ahead in each stream are requested while the current ones are read: a stream is
// a few KB of one head's rows, too short for the hardware prefetcher to get far ahead by itself
// (measured on 16 sequences at context 128: qk and pv ~15% faster).
constexpr int64_t kAhead = 8;

// Requests row r of each of the kKvStreams streams (stream stride `stride` elements).
template <class E, int64_t hd>
inline void prefetch_rows(const E* r, int64_t stride) {
  constexpr int64_t lines = (hd * static_cast<int64_t>(sizeof(E)) + 63) / 64;
  for (int s = 0; s < kKvStreams; ++s)
    for (int64_t l = 0; l < lines; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(r + s * stride) + 64 * l, _MM_HINT_T0);
}

template <int NV, class E>  // hd = 8·NV
inline void qk_scores_t(const float* q, const E* K, const float* rs, int64_t n, float scale, float* scores) {
  constexpr int64_t hd = 8 * NV;
  __m256 qv[NV];
  for (int i = 0; i < NV; ++i) qv[i] = _mm256_loadu_ps(q + 8 * i);
  static_assert(kKvStreams == 4, "the loop below is written out for four streams");
  const int64_t m = n / kKvStreams;
  for (int64_t j = 0; j < m; ++j) {
    const E* k = K + j * hd;
    if (j + kAhead < m) prefetch_rows<E, hd>(k + kAhead * hd, m * hd);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < NV; ++i) {
      a0 = _mm256_fmadd_ps(load8(k + 8 * i), qv[i], a0);
      a1 = _mm256_fmadd_ps(load8(k + m * hd + 8 * i), qv[i], a1);
      a2 = _mm256_fmadd_ps(load8(k + 2 * m * hd + 8 * i), qv[i], a2);
      a3 = _mm256_fmadd_ps(load8(k + 3 * m * hd + 8 * i), qv[i], a3);
    }
    scores[j] = scale * row_scale<E>(rs, j) * simd::hsum(a0);
    scores[j + m] = scale * row_scale<E>(rs, j + m) * simd::hsum(a1);
    scores[j + 2 * m] = scale * row_scale<E>(rs, j + 2 * m) * simd::hsum(a2);
    scores[j + 3 * m] = scale * row_scale<E>(rs, j + 3 * m) * simd::hsum(a3);
  }
  for (int64_t j = kKvStreams * m; j < n; ++j) {
    __m256 a = _mm256_setzero_ps();
    for (int i = 0; i < NV; ++i) a = _mm256_fmadd_ps(load8(K + j * hd + 8 * i), qv[i], a);
    scores[j] = scale * row_scale<E>(rs, j) * simd::hsum(a);
  }
}

// I8 keys against q rounded to 16-bit fixed point (to_fixed16), through integer
// multiply-adds: widening 16 keys to int16 is one shuffle, against two for 8 floats. Exact integer
// sums (|Σ| ≤ 128 · 16383 · 127 < 2^31); the only rounding is q's, at most max|q| / 32766 each.
// Returns false, writing nothing, when q has a NaN or inf (the caller uses the float path).
template <int N16>  // hd = 16·N16
inline bool qk_scores_i8(const float* q, const int8_t* K, const float* rs, int64_t n, float scale, float* scores) {
  constexpr int64_t hd = 16 * N16;
  alignas(32) int16_t qq[hd];
  float step = 0.0f;
  if (!to_fixed16(q, hd, qq, step)) return false;
  __m256i qv[N16];
  for (int i = 0; i < N16; ++i) qv[i] = _mm256_load_si256(reinterpret_cast<const __m256i*>(qq + 16 * i));
  auto dot = [&](const int8_t* k) {
    __m256i a = _mm256_setzero_si256();
    for (int i = 0; i < N16; ++i)
      a = _mm256_add_epi32(
          a, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + 16 * i))),
                               qv[i]));
    return a;
  };
  const float unit = scale * step;
  const __m128 vunit = _mm_set1_ps(unit);
  const int64_t m = n / kKvStreams;  // the same four streams as qk_scores_t
  for (int64_t j = 0; j < m; ++j) {
    const int8_t* k = K + j * hd;
    if (j + kAhead < m) prefetch_rows<int8_t, hd>(k + kAhead * hd, m * hd);
    const __m256i a0 = dot(k), a1 = dot(k + m * hd), a2 = dot(k + 2 * m * hd), a3 = dot(k + 3 * m * hd);
    // One horizontal reduction for the four rows: lanes [row0, row1, row2, row3].
    const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(a0, a1), _mm256_hadd_epi32(a2, a3));
    const __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    const __m128 r =
        _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(sum), vunit), _mm_set_ps(rs[j + 3 * m], rs[j + 2 * m], rs[j + m], rs[j]));
    alignas(16) float out[4];
    _mm_store_ps(out, r);
    scores[j] = out[0];
    scores[j + m] = out[1];
    scores[j + 2 * m] = out[2];
    scores[j + 3 * m] = out[3];
  }
  for (int64_t j = kKvStreams * m; j < n; ++j) {
    const __m256i a = dot(K + j * hd);
    __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    sum = _mm_hadd_epi32(sum, sum);
    sum = _mm_hadd_epi32(sum, sum);
    scores[j] = static_cast<float>(_mm_cvtsi128_si32(sum)) * unit * rs[j];
  }
  return true;
}

template <int NV, class E>
inline void pv_accumulate_t(const float* p, const E* V, const float* rs, int64_t n, float* out) {
  constexpr int64_t hd = 8 * NV;
  __m256 acc[NV];
  for (int i = 0; i < NV; ++i) acc[i] = _mm256_loadu_ps(out + 8 * i);
  // The same kKvStreams streams as qk_scores_t, summed into one row of accumulators.
  const int64_t m = n / kKvStreams;
  for (int64_t j = 0; j < m; ++j) {
    if (j + kAhead < m) prefetch_rows<E, hd>(V + (j + kAhead) * hd, m * hd);
    for (int s = 0; s < kKvStreams; ++s) {
      const int64_t r = j + s * m;
      if (p[r] == 0.0f) continue;
      const __m256 pr = _mm256_set1_ps(p[r] * row_scale<E>(rs, r));
      const E* v = V + r * hd;
      for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(pr, load8(v + 8 * i), acc[i]);
    }
  }
  for (int64_t r = kKvStreams * m; r < n; ++r) {
    if (p[r] == 0.0f) continue;
    const __m256 pr = _mm256_set1_ps(p[r] * row_scale<E>(rs, r));
    const E* v = V + r * hd;
    for (int i = 0; i < NV; ++i) acc[i] = _mm256_fmadd_ps(pr, load8(v + 8 * i), acc[i]);
  }
  for (int i = 0; i < NV; ++i) _mm256_storeu_ps(out + 8 * i, acc[i]);
}
#endif

// scores[j] = scale · q·K[j] for j < n (K[j] including its row scale).
template <class E>
inline void qk_scores(const float* q, const E* K, const float* rs, int64_t n, int64_t hd, float scale, float* scores) {
#ifdef ORDO_SIMD
  if constexpr (std::is_same_v<E, int8_t>) {
    const bool done = (hd == 64 && qk_scores_i8<4>(q, K, rs, n, scale, scores)) ||
                      (hd == 128 && qk_scores_i8<8>(q, K, rs, n, scale, scores)) ||
                      (hd == 32 && qk_scores_i8<2>(q, K, rs, n, scale, scores));
    if (done) return;
  }
  switch (hd) {
    case 64: return qk_scores_t<8>(q, K, rs, n, scale, scores);
    case 128: return qk_scores_t<16>(q, K, rs, n, scale, scores);
    case 32: return qk_scores_t<4>(q, K, rs, n, scale, scores);
    default: break;
  }
#endif
  for (int64_t j = 0; j < n; ++j) {
    if constexpr (sizeof(E) == sizeof(float)) {
      scores[j] = scale * dot(q, K + j * hd, hd);
    } else {
      float s = 0.0f;
      for (int64_t i = 0; i < hd; ++i) s += q[i] * widen(K[j * hd + i]);
      scores[j] = scale * row_scale<E>(rs, j) * s;
    }
  }
}

// out[0, hd) += Σ_j p[j] · V[j] (V[j] including its row scale; zero weights skipped).
template <class E>
inline void pv_accumulate(const float* p, const E* V, const float* rs, int64_t n, int64_t hd, float* out) {
#ifdef ORDO_SIMD
  switch (hd) {
    case 64: return pv_accumulate_t<8>(p, V, rs, n, out);
    case 128: return pv_accumulate_t<16>(p, V, rs, n, out);
    case 32: return pv_accumulate_t<4>(p, V, rs, n, out);
    default: break;
  }
#endif
  for (int64_t j = 0; j < n; ++j) {
    if (p[j] == 0.0f) continue;
    if constexpr (sizeof(E) == sizeof(float)) {
      axpy(p[j], V + j * hd, out, hd);
    } else {
      const float pj = p[j] * row_scale<E>(rs, j);
      for (int64_t i = 0; i < hd; ++i) out[i] += pj * widen(V[j * hd + i]);
    }
  }
}

// dst[0, n) = src as F32 (F16 widened; F32 copied).
inline void to_f32(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
#ifdef ORDO_SIMD
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(src + i));
#endif
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

// dst[rows, hd] = rs[r] · src[r, :] as F32.
inline void to_f32(const int8_t* src, const float* rs, int64_t rows, int64_t hd, float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* s = src + r * hd;
    float* d = dst + r * hd;
    int64_t i = 0;
#ifdef ORDO_SIMD
    const __m256 f = _mm256_set1_ps(rs[r]);
    for (; i + 8 <= hd; i += 8) _mm256_storeu_ps(d + i, _mm256_mul_ps(load8(s + i), f));
#endif
    for (; i < hd; ++i) d[i] = rs[r] * static_cast<float>(s[i]);
  }
}

// dst[0, n) = round(src / scale), scale = max|src| / 127 (returned; 0 for an all-zero row). A
// row with a non-finite element gets scale NaN, so the attention that reads it is NaN rather than
// silently finite.
inline float to_i8(const float* src, int64_t n, int8_t* dst) {
  float mx;
  if (!finite_absmax(src, n, mx)) {
    std::memset(dst, 0, static_cast<size_t>(n));
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float inv = mx > 0.0f ? 127.0f / mx : 0.0f;
  int64_t i = 0;
#ifdef ORDO_SIMD
  // Round to nearest even like lrintf (|v| <= 127: the packs never saturate).
  const __m256 vinv = _mm256_set1_ps(inv);
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + i), vinv));
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i b = _mm_packs_epi16(w, w);
    std::memcpy(dst + i, &b, 8);
  }
#endif
  for (; i < n; ++i) dst[i] = static_cast<int8_t>(std::nearbyint(src[i] * inv));
  return mx / 127.0f;
}

// dst[0, n) = src rounded to F16 (to nearest even; beyond ±65504 becomes ±inf).
inline void to_f16(const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
#ifdef ORDO_SIMD
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

}  // namespace ordo::detail
