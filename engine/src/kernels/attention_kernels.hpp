// Private: attention's per-(query row, head) inner loops over the KV cache. K and V rows of hd
// elements are contiguous ([kv_head, capacity, hd] cache) and each is read exactly once. The cache
// holds F32 (`float`), F16 (`uint16_t`, widened on load) or I8 (`int8_t`, one F32 scale per row:
// row j is rs[j] · K[j]); arithmetic is F32 in every case. `rs` is null for F32 and F16. The
// generic versions work one element at a time; the AVX2 ones (hd = 32, 64, 128) keep the query
// (QK) or the output row (PV) in registers, and AVX-512 variants of them, chosen at run time, give
// the same bits. With I8 keys, the SIMD QK rounds q to 16-bit fixed point (qk_scores_i8).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
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

// How decode reads a head's keys and values from memory. QK reads the keys in order, kKeyRows
// adjacent rows a step, and requests the values' same rows as it goes (`V`, when given): two
// linear streams at once, which a core reads from DRAM ~1.5x as fast as one run after the other or
// as four far-apart streams (numbers in docs/performance.md). PV then finds its values in cache.
// The order of the rows changes no bits: each score is its own sum.
constexpr int64_t kKeyRows = 4;

// PV sums the values as kKvStreams far-apart streams: rows j, j + n/4, ... The bits of every
// output depend on that order, so it stays (it was chosen when the values came from memory).
constexpr int64_t kKvStreams = 4;

// Rows this far ahead in each value stream are requested while the current ones are read (when
// QK was not given the values, they come from memory).
constexpr int64_t kAhead = 8;

// Requests `rows` rows of hd elements at p into L1 (QK's companion stream of values).
template <class E>
inline void request_values(const E* p, int64_t rows, int64_t hd) {
  const char* b = reinterpret_cast<const char*>(p);
  const int64_t bytes = rows * hd * static_cast<int64_t>(sizeof(E));
  for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch(b + o, _MM_HINT_T0);
}

// Requests row r of each of the kKvStreams streams (stream stride `stride` elements).
template <class E, int64_t hd>
inline void prefetch_rows(const E* r, int64_t stride) {
  constexpr int64_t lines = (hd * static_cast<int64_t>(sizeof(E)) + 63) / 64;
  for (int s = 0; s < kKvStreams; ++s)
    for (int64_t l = 0; l < lines; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(r + s * stride) + 64 * l, _MM_HINT_T0);
}

template <int NV, class E>  // hd = 8·NV
inline void qk_scores_t(const float* q, const E* K, const float* rs, int64_t n, float scale, float* scores,
                        const E* V = nullptr) {
  constexpr int64_t hd = 8 * NV;
  __m256 qv[NV];
  for (int i = 0; i < NV; ++i) qv[i] = _mm256_loadu_ps(q + 8 * i);
  static_assert(kKeyRows == 4, "the loop below is written out for four rows");
  const int64_t m = n / kKeyRows * kKeyRows;
  for (int64_t j = 0; j < m; j += kKeyRows) {
    const E* k = K + j * hd;
    if (V) request_values(V + j * hd, kKeyRows, hd);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < NV; ++i) {
      a0 = _mm256_fmadd_ps(load8(k + 8 * i), qv[i], a0);
      a1 = _mm256_fmadd_ps(load8(k + hd + 8 * i), qv[i], a1);
      a2 = _mm256_fmadd_ps(load8(k + 2 * hd + 8 * i), qv[i], a2);
      a3 = _mm256_fmadd_ps(load8(k + 3 * hd + 8 * i), qv[i], a3);
    }
    scores[j] = scale * row_scale<E>(rs, j) * simd::hsum(a0);
    scores[j + 1] = scale * row_scale<E>(rs, j + 1) * simd::hsum(a1);
    scores[j + 2] = scale * row_scale<E>(rs, j + 2) * simd::hsum(a2);
    scores[j + 3] = scale * row_scale<E>(rs, j + 3) * simd::hsum(a3);
  }
  if (V) request_values(V + m * hd, n - m, hd);
  for (int64_t j = m; j < n; ++j) {
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
inline bool qk_scores_i8(const float* q, const int8_t* K, const float* rs, int64_t n, float scale, float* scores,
                         const int8_t* V) {
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
  const int64_t m = n / kKeyRows * kKeyRows;  // rows in order, as qk_scores_t
  for (int64_t j = 0; j < m; j += kKeyRows) {
    const int8_t* k = K + j * hd;
    if (V) request_values(V + j * hd, kKeyRows, hd);
    const __m256i a0 = dot(k), a1 = dot(k + hd), a2 = dot(k + 2 * hd), a3 = dot(k + 3 * hd);
    // One horizontal reduction for the four rows: lanes [row0, row1, row2, row3].
    const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(a0, a1), _mm256_hadd_epi32(a2, a3));
    const __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    _mm_storeu_ps(scores + j, _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(sum), vunit), _mm_loadu_ps(rs + j)));
  }
  if (V) request_values(V + m * hd, n - m, hd);
  for (int64_t j = m; j < n; ++j) {
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
  // kKvStreams streams, summed into one row of accumulators.
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

// ---- AVX-512 (chosen at run time) ----------------------------------------------------------------
// The same arithmetic as the AVX2 kernels above, element by element, in 16-lane registers: QK holds
// two rows' 8-lane accumulators in one register (rows j, j + 1 and j + 2, j + 3) and reduces each
// half in simd::hsum's order; PV's output row takes 16 elements per register. Every score and
// output element is the same sequence of roundings as on AVX2, so a sequence gets the same bits
// on either instruction set.
ORDO_AVX512_WARNINGS_OFF
#define ORDO_ATTN512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")))

// Whether the AVX-512 variants run: the CPU has AVX-512 (F, BW, DQ, VL) and ORDO_MAX_ISA does not
// keep the kernels to AVX2 ("avx2" or "avx-vnni": how the tests reach the AVX2 path here).
inline bool attention_avx512() { return simd::cpu_avx512(); }

// 8 elements of rows a and b as one register: a's in lanes 0-7, b's in lanes 8-15.
ORDO_ATTN512 inline __m512 load8x2(const float* a, const float* b) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(a)), _mm256_loadu_ps(b), 1);
}
ORDO_ATTN512 inline __m512 load8x2(const uint16_t* a, const uint16_t* b) {
  const __m256i h =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
  return _mm512_cvtph_ps(h);
}
ORDO_ATTN512 inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
ORDO_ATTN512 inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
ORDO_ATTN512 inline __m512 load16(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// The four rows' sums of x (rows 0, 1 in its halves) and y (rows 2, 3), each half reduced as
// simd::hsum reduces a register: ((0+4) + (2+6)) + ((1+5) + (3+7)).
ORDO_ATTN512 inline __m128 hsum4(__m512 x, __m512 y) {
  // 128-bit lanes [x0 x2 y0 y2] + [x1 x3 y1 y3]: row r's (0+4) (1+5) (2+6) (3+7) in lane r.
  const __m512 lo = _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0));
  const __m512 hi = _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1));
  const __m512 s = _mm512_add_ps(lo, hi);
  const __m512 u = _mm512_add_ps(s, _mm512_permute_ps(s, _MM_SHUFFLE(1, 0, 3, 2)));  // (0+2), (1+3)
  const __m512 w = _mm512_add_ps(u, _mm512_permute_ps(u, _MM_SHUFFLE(2, 3, 0, 1)));  // (0+2) + (1+3)
  return _mm512_castps512_ps128(
      _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), w));
}

template <int NV, class E>  // hd = 8·NV; F32 or F16 rows (no row scales)
ORDO_ATTN512 void qk_scores_512(const float* q, const E* K, int64_t n, float scale, float* scores, const E* V) {
  constexpr int64_t hd = 8 * NV;
  __m512 qv[NV];
  for (int i = 0; i < NV; ++i) qv[i] = load8x2(q + 8 * i, q + 8 * i);
  const int64_t m = n / kKeyRows * kKeyRows;  // rows in order, as qk_scores_t
  const __m128 vscale = _mm_set1_ps(scale);
  for (int64_t j = 0; j < m; j += kKeyRows) {
    const E* k = K + j * hd;
    if (V) request_values(V + j * hd, kKeyRows, hd);
    __m512 a01 = _mm512_setzero_ps(), a23 = a01;
    for (int i = 0; i < NV; ++i) {
      a01 = _mm512_fmadd_ps(load8x2(k + 8 * i, k + hd + 8 * i), qv[i], a01);
      a23 = _mm512_fmadd_ps(load8x2(k + 2 * hd + 8 * i, k + 3 * hd + 8 * i), qv[i], a23);
    }
    _mm_storeu_ps(scores + j, _mm_mul_ps(vscale, hsum4(a01, a23)));
  }
  if (V) request_values(V + m * hd, n - m, hd);
  for (int64_t j = m; j < n; ++j) {
    __m256 a = _mm256_setzero_ps();
    for (int i = 0; i < NV; ++i) a = _mm256_fmadd_ps(load8(K + j * hd + 8 * i), _mm512_castps512_ps256(qv[i]), a);
    scores[j] = scale * simd::hsum(a);
  }
}

// acc += w · row v (16 elements per register).
template <int NZ, class E>
ORDO_ATTN512 inline void pv_row_512(__m512* acc, float w, const E* v) {
  const __m512 pr = _mm512_set1_ps(w);
  for (int i = 0; i < NZ; ++i) acc[i] = _mm512_fmadd_ps(pr, load16(v + 16 * i), acc[i]);
}

template <int NV, class E>  // hd = 8·NV, NV even
ORDO_ATTN512 void pv_accumulate_512(const float* p, const E* V, const float* rs, int64_t n, float* out) {
  constexpr int64_t hd = 8 * NV;
  constexpr int NZ = NV / 2;
  __m512 acc[NZ];
  for (int i = 0; i < NZ; ++i) acc[i] = _mm512_loadu_ps(out + 16 * i);
  const int64_t m = n / kKvStreams;
  for (int64_t j = 0; j < m; ++j) {
    if (j + kAhead < m) prefetch_rows<E, hd>(V + (j + kAhead) * hd, m * hd);
    for (int s = 0; s < kKvStreams; ++s) {
      const int64_t r = j + s * m;
      if (p[r] != 0.0f) pv_row_512<NZ>(acc, p[r] * row_scale<E>(rs, r), V + r * hd);
    }
  }
  for (int64_t r = kKvStreams * m; r < n; ++r)
    if (p[r] != 0.0f) pv_row_512<NZ>(acc, p[r] * row_scale<E>(rs, r), V + r * hd);
  for (int i = 0; i < NZ; ++i) _mm512_storeu_ps(out + 16 * i, acc[i]);
}
ORDO_AVX512_WARNINGS_ON
#endif

// scores[j] = scale · q·K[j] for j < n (K[j] including its row scale).
template <class E>
inline void qk_scores(const float* q, const E* K, const float* rs, int64_t n, int64_t hd, float scale, float* scores,
                      const E* V = nullptr) {
  (void)V;  // the generic loop requests nothing
#ifdef ORDO_SIMD
  if constexpr (std::is_same_v<E, int8_t>) {
    const bool done = (hd == 64 && qk_scores_i8<4>(q, K, rs, n, scale, scores, V)) ||
                      (hd == 128 && qk_scores_i8<8>(q, K, rs, n, scale, scores, V)) ||
                      (hd == 32 && qk_scores_i8<2>(q, K, rs, n, scale, scores, V));
    if (done) return;
  }
  if constexpr (!std::is_same_v<E, int8_t>) {
    if (attention_avx512()) switch (hd) {
        case 64: return qk_scores_512<8>(q, K, n, scale, scores, V);
        case 128: return qk_scores_512<16>(q, K, n, scale, scores, V);
        case 32: return qk_scores_512<4>(q, K, n, scale, scores, V);
        default: break;
      }
  }
  switch (hd) {
    case 64: return qk_scores_t<8>(q, K, rs, n, scale, scores, V);
    case 128: return qk_scores_t<16>(q, K, rs, n, scale, scores, V);
    case 32: return qk_scores_t<4>(q, K, rs, n, scale, scores, V);
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
  if (attention_avx512()) switch (hd) {
      case 64: return pv_accumulate_512<8>(p, V, rs, n, out);
      case 128: return pv_accumulate_512<16>(p, V, rs, n, out);
      case 32: return pv_accumulate_512<4>(p, V, rs, n, out);
      default: break;
    }
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
