// Panel-layout weights and their outer-product kernels (contract and layout in panels.hpp).
//
// Why this shape: a batch of sequences multiplies every weight by several rows at once. Kernels
// that keep rows of W against x in vector lanes (dot products) end each output with a horizontal
// sum and reload x for every weight row; on 16 rows they reached ~35% of the FMA peak. Here each
// loaded weight vector serves every row of the tile and each output is a lane of one accumulator,
// so a 6-row tile runs at ~90% of peak from cache, and one row stays bound by memory bandwidth
// (docs/performance.md).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "big_alloc.hpp"
#include "fixed_point.hpp"
#include "gemm_backend.hpp"
#include "ordo/quant_blocks.hpp"
#include "panels.hpp"
#include "simd.hpp"
#include "team.hpp"

namespace ordo::detail {
namespace {

constexpr int64_t kP = PanelWeight::kPanel;
// Rows of x per tile (AVX-512: 6 rows × 4 vectors = 24 accumulators of 32 registers).
constexpr int64_t kTileRows = 6;
// I8 inputs are 16-bit fixed point stored as int16_t; the kernels read them in pairs (one int32
// per two columns), through a type allowed to alias them.
using Pair32 = int32_t __attribute__((may_alias));
// I8: int32 sums are flushed to the float total every this many column pairs (512 columns):
// |Σ| <= 256 · 2 · 127 · 16383 < 2^31.
constexpr int64_t kI8PairsPerBlock = 256;
// Float weight bytes per chunk when several tiles share a panel: the chunk being read
// and the one requested ahead fit in L1 beside the rows' slices (I8 chunks are its 32 KB blocks,
// the one ahead requested the same way; 16 and 32 KB measured alike for F32).
[[maybe_unused]] constexpr int64_t kChunkBytes = 16 << 10;
// Up to this many rows (a decode step's batch), reading the weights costs as much as the
// arithmetic, and the kernels overlap the two chunk by chunk; beyond it (prompts) every
// weight serves so many rows that whole panels at a time are better.
[[maybe_unused]] constexpr int64_t kChunkMaxRows = 64;

using simd::max_isa_is;
#if defined(ORDO_SIMD) && defined(__x86_64__)
using simd::cpu_avx512;
bool cpu_vnni() {
  static const bool yes = cpu_avx512() && !max_isa_is("avx512") && __builtin_cpu_supports("avx512vnni");
  return yes;
}
#endif

// Whether M rows of a t weight go through the chunked kernels (see float_panels): on AVX-512 7 to
// kChunkMaxRows rows of every dtype, on AVX2 2 to kChunkMaxRows rows of float weights.
[[maybe_unused]] bool chunked_rows(int64_t M, DType t) {
#if defined(ORDO_SIMD) && defined(__x86_64__)
  if (cpu_avx512()) return M > kTileRows && M <= kChunkMaxRows;
  return M >= 2 && M <= kChunkMaxRows && !is_block_dtype(t) && t != DType::I8;
#else
  (void)M, (void)t;
  return false;
#endif
}

// ---- packing ---------------------------------------------------------------------------------

template <class T>
void pack_rows(const T* W, int64_t N, int64_t K, int64_t Kp, bool pairs, T* dst, int64_t p) {
  T* P = dst + p * Kp * kP;
  for (int64_t j = 0; j < kP; ++j) {
    const int64_t n = p * kP + j;
    if (n >= N) break;
    const T* row = W + n * K;
    if (pairs)
      for (int64_t k = 0; k < K; ++k) P[(k / 2) * 2 * kP + j * 2 + (k % 2)] = row[k];
    else
      for (int64_t k = 0; k < K; ++k) P[k * kP + j] = row[k];
  }
}

// ---- element loaders ----------------------------------------------------------------------------

struct PF32 {
  using T = float;
  static float one(const T* p) { return *p; }
};
struct PF16 {
  using T = uint16_t;
  static float one(const T* p) { return f16_to_f32(*p); }
};
struct PBF16 {
  using T = uint16_t;
  static float one(const T* p) { return bf16_to_f32(*p); }
};

#ifdef ORDO_SIMD
template <class L>
inline __m256 load8(const typename L::T* p) {
  if constexpr (std::is_same_v<L, PF32>) {
    return _mm256_loadu_ps(p);
  } else if constexpr (std::is_same_v<L, PF16>) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
}

// ---- AVX2 tiles ---------------------------------------------------------------------------------

// y[m][c] (c in [0, 8·NZ)) = the FMA chain over k of P[k][c] · x[m][k], for MX rows, over the
// columns [k0, k1): the chains start from +0 at k0 = 0 and otherwise go on from y, so a chunk at a
// time gives the bits of one pass. P and y point at the tile's first column. [ahead, ahead_end) is
// requested into L1 as the tile goes, a line per k (see tile_512).
template <class L, int MX, int NZ>
void tile_avx2(const float* x, int64_t K, int64_t k0, int64_t k1, const typename L::T* P, float* y, int64_t ldy,
               const char* ahead = nullptr, const char* ahead_end = nullptr) {
  __m256 acc[MX][NZ];
  ORDO_UNROLL
  for (int m = 0; m < MX; ++m) {
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z) acc[m][z] = k0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(y + m * ldy + 8 * z);
  }
  for (int64_t k = k0; k < k1; ++k) {
    if (ahead < ahead_end) {
      _mm_prefetch(ahead, _MM_HINT_T0);
      ahead += 64;
    }
    __m256 w[NZ];
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z) w[z] = load8<L>(P + k * kP + 8 * z);
    ORDO_UNROLL
    for (int m = 0; m < MX; ++m) {
      const __m256 xv = _mm256_broadcast_ss(x + m * K + k);
      ORDO_UNROLL
      for (int z = 0; z < NZ; ++z) acc[m][z] = _mm256_fmadd_ps(w[z], xv, acc[m][z]);
    }
  }
  ORDO_UNROLL
  for (int m = 0; m < MX; ++m) {
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z) _mm256_storeu_ps(y + m * ldy + 8 * z, acc[m][z]);
  }
}

// I8 rows of one column block [c, c + 8·NZ): int32 lanes of vpmaddwd over the column pairs
// [q0, q1), added to y as floats (first: y starts at 0).
template <int MX, int NZ>
void block_i8_avx2(const Pair32* xq2, int64_t ldx2, int64_t q0, int64_t q1, const int8_t* P, float* y, int64_t ldy,
                   bool first) {
  __m256i acc[MX][NZ];
  ORDO_UNROLL
  for (auto& a : acc) {
    ORDO_UNROLL
    for (auto& v : a) v = _mm256_setzero_si256();
  }
  for (int64_t q = q0; q < q1; ++q) {
    __m256i w[NZ];
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z)
      w[z] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(P + q * 2 * kP + 16 * z)));
    ORDO_UNROLL
    for (int m = 0; m < MX; ++m) {
      const __m256i xv = _mm256_set1_epi32(xq2[m * ldx2 + q]);
      ORDO_UNROLL
      for (int z = 0; z < NZ; ++z) acc[m][z] = _mm256_add_epi32(acc[m][z], _mm256_madd_epi16(w[z], xv));
    }
  }
  ORDO_UNROLL
  for (int m = 0; m < MX; ++m) {
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z) {
      float* o = y + m * ldy + 8 * z;
      const __m256 prev = first ? _mm256_setzero_ps() : _mm256_loadu_ps(o);
      _mm256_storeu_ps(o, _mm256_add_ps(prev, _mm256_cvtepi32_ps(acc[m][z])));
    }
  }
}

template <int MX, int NZ>
void tile_i8_avx2(const Pair32* xq2, int64_t ldx2, int64_t pairs, const int8_t* P, float* y, int64_t ldy) {
  for (int64_t b0 = 0; b0 < pairs; b0 += kI8PairsPerBlock)
    block_i8_avx2<MX, NZ>(xq2, ldx2, b0, std::min(pairs, b0 + kI8PairsPerBlock), P, y, ldy, b0 == 0);
}
#endif

#if defined(ORDO_SIMD) && defined(__x86_64__)
#define ORDO_PANEL512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")))
#define ORDO_PANEL_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
ORDO_AVX512_WARNINGS_OFF

template <class L>
ORDO_PANEL512 inline __m512 load16(const typename L::T* p) {
  if constexpr (std::is_same_v<L, PF32>) {
    return _mm512_loadu_ps(p);
  } else if constexpr (std::is_same_v<L, PF16>) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
}

// MX rows × NS whole panels (P[s], outputs y[s]) over the columns [k0, k1): 4 vectors per panel
// and row. The chains start from +0 at k0 = 0 and otherwise go on from y, so a panel done a chunk
// of columns at a time gets the bits it gets in one pass. NS > 1 reads several panels as
// concurrent streams (one row alone is bound by memory bandwidth). [ahead, ahead_end) is requested
// into L1 as the tile goes, two lines per k: its share of the chunk the next calls read (a chunk
// has 4 lines per k at most, split between at least two tiles).
template <class L, int MX, int NS>
ORDO_PANEL512 void tile_512(const float* x, int64_t K, int64_t k0, int64_t k1, const typename L::T* const* P,
                            float* const* y, int64_t ldy, const char* ahead = nullptr,
                            const char* ahead_end = nullptr) {
  __m512 acc[MX][NS][4];
  ORDO_UNROLL
  for (int m = 0; m < MX; ++m) {
    ORDO_UNROLL
    for (int s = 0; s < NS; ++s) {
      ORDO_UNROLL
      for (int z = 0; z < 4; ++z)
        acc[m][s][z] = k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(y[s] + m * ldy + 16 * z);
    }
  }
  for (int64_t k = k0; k < k1; ++k) {
    if (ahead < ahead_end) {
      _mm_prefetch(ahead, _MM_HINT_T0);
      _mm_prefetch(ahead + 64, _MM_HINT_T0);
      ahead += 128;
    }
    ORDO_UNROLL
    for (int s = 0; s < NS; ++s) {
      __m512 w[4];
      ORDO_UNROLL
      for (int z = 0; z < 4; ++z) w[z] = load16<L>(P[s] + k * kP + 16 * z);
      ORDO_UNROLL
      for (int m = 0; m < MX; ++m) {
        const __m512 xv = _mm512_set1_ps(x[m * K + k]);
        ORDO_UNROLL
        for (int z = 0; z < 4; ++z) acc[m][s][z] = _mm512_fmadd_ps(w[z], xv, acc[m][s][z]);
      }
    }
  }
  ORDO_UNROLL
  for (int m = 0; m < MX; ++m) {
    ORDO_UNROLL
    for (int s = 0; s < NS; ++s) {
      ORDO_UNROLL
      for (int z = 0; z < 4; ++z) _mm512_storeu_ps(y[s] + m * ldy + 16 * z, acc[m][s][z]);
    }
  }
}

#define ORDO_I8_512_NAME block_i8_512_vnni
#define ORDO_I8_512_TARGET ORDO_PANEL_VNNI
#define ORDO_I8_512_VNNI true
#include "gemm_panels_i8_512.inc"
#undef ORDO_I8_512_NAME
#undef ORDO_I8_512_TARGET
#undef ORDO_I8_512_VNNI
#define ORDO_I8_512_NAME block_i8_512_plain
#define ORDO_I8_512_TARGET ORDO_PANEL512
#define ORDO_I8_512_VNNI false
#include "gemm_panels_i8_512.inc"
#undef ORDO_I8_512_NAME
#undef ORDO_I8_512_TARGET
#undef ORDO_I8_512_VNNI

template <bool VNNI, int MX, int NS>
void tile_i8_512(const Pair32* xq2, int64_t ldx2, int64_t pairs, const int8_t* const* P, float* const* y, int64_t ldy) {
  for (int64_t b0 = 0; b0 < pairs; b0 += kI8PairsPerBlock)
    if constexpr (VNNI)
      block_i8_512_vnni<MX, NS>(xq2, ldx2, b0, std::min(pairs, b0 + kI8PairsPerBlock), P, y, ldy, b0 == 0);
    else
      block_i8_512_plain<MX, NS>(xq2, ldx2, b0, std::min(pairs, b0 + kI8PairsPerBlock), P, y, ldy, b0 == 0);
}
ORDO_AVX512_WARNINGS_ON
#endif

// ---- scalar references (no SIMD build; the I8 rows holding a NaN or inf) --------------------

template <class L>
void tile_scalar(const float* x, int64_t K, int64_t rows, const typename L::T* P, float* y, int64_t ldy) {
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t j = 0; j < kP; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(L::one(P + k * kP + j), x[m * K + k], acc);
      y[m * ldy + j] = acc;
    }
}

void tile_i8_float(const float* x, int64_t K, const int8_t* P, float* y) {
  for (int64_t j = 0; j < kP; ++j) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      acc = std::fma(static_cast<float>(P[(k / 2) * 2 * kP + j * 2 + (k % 2)]), x[k], acc);
    y[j] = acc;
  }
}

[[maybe_unused]] void tile_i8_scalar(const Pair32* xq2, int64_t ldx2, int64_t pairs, int64_t rows, const int8_t* P,
                                     float* y, int64_t ldy) {
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t j = 0; j < kP; ++j) {
      float total = 0.0f;
      for (int64_t b0 = 0; b0 < pairs; b0 += kI8PairsPerBlock) {
        int32_t s = 0;
        for (int64_t q = b0; q < std::min(pairs, b0 + kI8PairsPerBlock); ++q) {
          int16_t xx[2];
          std::memcpy(xx, &xq2[m * ldx2 + q], sizeof xx);
          s += P[q * 2 * kP + 2 * j] * xx[0] + P[q * 2 * kP + 2 * j + 1] * xx[1];
        }
        total += static_cast<float>(s);
      }
      y[m * ldy + j] = total;
    }
}

// ---- one job's panels --------------------------------------------------------------------------

// A group's inputs for its I8 weights: each row in 16-bit fixed point (row stride Kp, a zero
// pad column when K is odd) with its own step sx[m]; a row with a NaN or inf (int_row 0) takes
// the float path. Computed once per call by the calling thread, read by all.
struct FixedInput {
  std::vector<int16_t> xq;
  std::vector<float> sx;
  std::vector<uint8_t> int_row;
  int64_t Kp = 0;
  bool all_int = true;
};

// Rows [m0, m0 + rows) of x in tiles of up to kTileRows, split evenly (16 → 6, 5, 5).
template <class F>
void for_row_tiles(int64_t M, F&& f) {
  const int64_t tiles = (M + kTileRows - 1) / kTileRows;
  int64_t m0 = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t rows = (M - m0) / (tiles - t);
    f(m0, rows);
    m0 += rows;
  }
}

// Tile t of `tiles`' share of the next chunk [ahead, ahead + bytes) in whole cache lines, for the
// chunked kernels to request as they go (null for none).
struct Share {
  const char* begin = nullptr;
  const char* end = nullptr;
};
[[maybe_unused]] Share share_of(const char* ahead, int64_t bytes, int64_t t, int64_t tiles) {
  if (!ahead) return {};
  return {ahead + t * bytes / tiles / 64 * 64, ahead + (t + 1) * bytes / tiles / 64 * 64};
}

// The chunk of `chunk` columns after column k1 of the float panel at P, which the chunked kernels
// request as they read [k0, k1): past the panel's end, the next panel's first (contiguous in memory).
struct NextChunk {
  const char* begin = nullptr;
  int64_t bytes = 0;
};
template <class T>
[[maybe_unused]] NextChunk next_chunk(const T* P, int64_t K, int64_t k1, int64_t chunk) {
  const int64_t cols = k1 < K ? std::min(chunk, K - k1) : chunk;
  return {reinterpret_cast<const char*>(P + k1 * kP), cols * kP * static_cast<int64_t>(sizeof(T))};
}

// f(std::integral_constant<int, rows>{}) for a tile's row count (1..kTileRows): the kernels take
// it as a template argument, so their accumulators stay in registers.
template <class F>
[[maybe_unused]] void with_tile_rows(int64_t rows, F&& f) {
  using std::integral_constant;
  switch (rows) {
    case 6: f(integral_constant<int, 6>{}); break;
    case 5: f(integral_constant<int, 5>{}); break;
    case 4: f(integral_constant<int, 4>{}); break;
    case 3: f(integral_constant<int, 3>{}); break;
    case 2: f(integral_constant<int, 2>{}); break;
    default: f(integral_constant<int, 1>{});
  }
}

[[maybe_unused]] void prefetch_l2(const void* p, int64_t bytes) {
#ifdef ORDO_SIMD
  for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(static_cast<const char*>(p) + b, _MM_HINT_T1);
#else
  (void)p, (void)bytes;
#endif
}

#ifdef ORDO_SIMD
// float_panels on AVX2 for a decode step's batch: a chunk of columns at a time, every tile and 16-output slice
// over it, each requesting its share of the next chunk, as float_panels does on AVX-512. The whole panel
// requested into L2 first, then read a slice at a time, kept the reads and the arithmetic apart
// (and a 3072-deep F32 panel, 768 KB, does not fit a Zen 3's 512 KB L2): on that CPU, weights
// streamed from DRAM, 2 rows went 9-11 → 15-19 GB/s, 4 rows 6-7 → 15-19, 16 rows 3.3-4.1 →
// 5.7-6.3 (8 KB chunks: about the same, a little slower at 12-16 rows).
template <class L>
void float_panels_chunked_avx2(const float* x, int64_t M, int64_t K, const PanelWeight& w, int64_t p0, int64_t p1,
                               float* out, int64_t ldo) {
  using T = typename L::T;
  auto P = [&](int64_t p) { return static_cast<const T*>(w.panel(p)); };
  const int64_t chunk = std::min(K, kChunkBytes / (kP * static_cast<int64_t>(sizeof(T))));
  const int64_t tiles = (M + kTileRows - 1) / kTileRows * (kP / 16);
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t k0 = 0; k0 < K; k0 += chunk) {
      const int64_t k1 = std::min(K, k0 + chunk);
      const NextChunk next = next_chunk(P(p), K, k1, chunk);
      int64_t t = 0;
      for_row_tiles(M, [&](int64_t m0, int64_t rows) {
        for (int64_t c = 0; c < kP; c += 16) {
          const Share a = share_of(next.begin, next.bytes, t++, tiles);
          float* ym = out + m0 * ldo + (p - p0) * kP + c;
          with_tile_rows(rows, [&](auto mx) {
            tile_avx2<L, decltype(mx)::value, 2>(x + m0 * K, K, k0, k1, P(p) + c, ym, ldo, a.begin, a.end);
          });
        }
      });
    }
}
#endif

// Outputs of panels [p0, p1) for every row of x into out (row stride ldo, column 0 = panel p0's
// first output): raw sums, before scales and bias.
template <class L>
void float_panels(const float* x, int64_t M, int64_t K, const PanelWeight& w, int64_t p0, int64_t p1, float* out,
                  int64_t ldo) {
  using T = typename L::T;
  auto P = [&](int64_t p) { return static_cast<const T*>(w.panel(p)); };
#if defined(ORDO_SIMD) && defined(__x86_64__)
  if (cpu_avx512()) {
    int64_t p = p0;
    if (M <= 2) {  // several panels as concurrent streams: 4 for one row (then 2), 2 for two rows
      for (int64_t ns = M == 1 ? 4 : 2; ns >= 2; ns -= 2)
        for (; p + ns <= p1; p += ns) {
          const T* ps[4];
          float* ys[4];
          for (int64_t s = 0; s < ns; ++s) ps[s] = P(p + s), ys[s] = out + (p + s - p0) * kP;
          if (M == 2)
            tile_512<L, 2, 2>(x, K, 0, K, ps, ys, ldo);
          else if (ns == 4)
            tile_512<L, 1, 4>(x, K, 0, K, ps, ys, ldo);
          else
            tile_512<L, 1, 2>(x, K, 0, K, ps, ys, ldo);
        }
    }
    // More rows than one tile: a chunk of columns at a time, every tile over it, each requesting
    // its share of the next chunk as it goes, so the weight stream overlaps the arithmetic instead
    // of preceding it (one tile over the whole panel waits on memory, the others then run from
    // cache; the next chunk requested in one burst by the first tile measured no better).
    const bool chunked = chunked_rows(M, w.dtype);
    const int64_t chunk = chunked ? std::min(K, kChunkBytes / (kP * static_cast<int64_t>(sizeof(T)))) : K;
    const int64_t tiles = (M + kTileRows - 1) / kTileRows;
    for (; p < p1; ++p) {
      const T* ps[1] = {P(p)};
      for (int64_t k0 = 0; k0 < K; k0 += chunk) {
        const int64_t k1 = std::min(K, k0 + chunk);
        const NextChunk next = chunked ? next_chunk(P(p), K, k1, chunk) : NextChunk{};
        int64_t t = 0;
        for_row_tiles(M, [&](int64_t m0, int64_t rows) {
          float* ys[1] = {out + m0 * ldo + (p - p0) * kP};
          const float* xm = x + m0 * K;
          const Share a = share_of(next.begin, next.bytes, t++, tiles);
          with_tile_rows(
              rows, [&](auto mx) { tile_512<L, decltype(mx)::value, 1>(xm, K, k0, k1, ps, ys, ldo, a.begin, a.end); });
        });
      }
    }
    return;
  }
#endif
#ifdef ORDO_SIMD
  if (chunked_rows(M, w.dtype)) return float_panels_chunked_avx2<L>(x, M, K, w, p0, p1, out, ldo);
#endif
  for (int64_t p = p0; p < p1; ++p) {
    float* yp = out + (p - p0) * kP;
#ifdef ORDO_SIMD
    if (M == 1) {
      tile_avx2<L, 1, 8>(x, K, 0, K, P(p), yp, ldo);
      continue;
    }
    // A prompt's rows (more than chunked_rows). 16 registers: up to 6 rows × 16 outputs (12
    // accumulators), four column slices per panel. A slice reads one line in four of the panel,
    // which the hardware prefetcher does not stream: the whole panel is requested in order first
    // (measured when 16 rows came this way: half their time).
    prefetch_l2(P(p), w.panel_elems() * static_cast<int64_t>(sizeof(T)));
    for_row_tiles(M, [&](int64_t m0, int64_t rows) {
      for (int64_t c = 0; c < kP; c += 16) {
        const float* xm = x + m0 * K;
        float* ym = yp + m0 * ldo + c;
        with_tile_rows(rows, [&](auto mx) { tile_avx2<L, decltype(mx)::value, 2>(xm, K, 0, K, P(p) + c, ym, ldo); });
      }
    });
#else
    tile_scalar<L>(x, K, M, P(p), yp, ldo);
#endif
  }
}

#if defined(ORDO_SIMD) && defined(__x86_64__)
// i8_panels_int's AVX-512 path for row counts taken a K-block at a time: panels [p, p1), each
// block's tiles sharing the prefetch of the next block.
static void i8_panels_int_512_blocks(const Pair32* xq2, int64_t ldx2, int64_t M, const PanelWeight& w, int64_t p,
                                     int64_t p0, int64_t p1, float* out, int64_t ldo, bool vnni) {
  const int64_t pairs = w.Kp / 2;
  auto P = [&](int64_t q) { return static_cast<const int8_t*>(w.panel(q)); };
  const int64_t tiles = (M + kTileRows - 1) / kTileRows;
  for (; p < p1; ++p) {
    const int8_t* ps[1] = {P(p)};
    for (int64_t b0 = 0; b0 < pairs; b0 += kI8PairsPerBlock) {
      const int64_t b1 = std::min(pairs, b0 + kI8PairsPerBlock);
      // The next block (past the last, the next panel's first).
      const char* ahead = reinterpret_cast<const char*>(P(p) + b1 * 2 * kP);
      const int64_t next_bytes = std::min(kI8PairsPerBlock, b1 < pairs ? pairs - b1 : pairs) * 2 * kP;
      int64_t t = 0;
      for_row_tiles(M, [&](int64_t m0, int64_t rows) {
        float* ys[1] = {out + m0 * ldo + (p - p0) * kP};
        const Pair32* xm = xq2 + m0 * ldx2;
        const Share a = share_of(ahead, next_bytes, t++, tiles);
        with_tile_rows(rows, [&](auto mx) {
          constexpr int MX = decltype(mx)::value;
          if (vnni)
            block_i8_512_vnni<MX, 1>(xm, ldx2, b0, b1, ps, ys, ldo, b0 == 0, a.begin, a.end);
          else
            block_i8_512_plain<MX, 1>(xm, ldx2, b0, b1, ps, ys, ldo, b0 == 0, a.begin, a.end);
        });
      });
    }
  }
}
#endif

void i8_panels_int(const Pair32* xq2, int64_t ldx2, int64_t M, const PanelWeight& w, int64_t p0, int64_t p1, float* out,
                   int64_t ldo) {
  const int64_t pairs = w.Kp / 2;
  auto P = [&](int64_t p) { return static_cast<const int8_t*>(w.panel(p)); };
#if defined(ORDO_SIMD) && defined(__x86_64__)
  if (cpu_avx512()) {
    const bool vnni = cpu_vnni();
    auto tile = [&](auto mx, auto ns, const Pair32* xm, const int8_t* const* ps, float* const* ys) {
      constexpr int MX = decltype(mx)::value, NS = decltype(ns)::value;
      if (vnni)
        tile_i8_512<true, MX, NS>(xm, ldx2, pairs, ps, ys, ldo);
      else
        tile_i8_512<false, MX, NS>(xm, ldx2, pairs, ps, ys, ldo);
    };
    using std::integral_constant;
    int64_t p = p0;
    if (M <= 2) {
      const int64_t ns = M == 1 ? 4 : 2;
      for (; p + ns <= p1; p += ns) {
        const int8_t* ps[4];
        float* ys[4];
        for (int64_t s = 0; s < ns; ++s) ps[s] = P(p + s), ys[s] = out + (p + s - p0) * kP;
        if (M == 1)
          tile(integral_constant<int, 1>{}, integral_constant<int, 4>{}, xq2, ps, ys);
        else
          tile(integral_constant<int, 2>{}, integral_constant<int, 2>{}, xq2, ps, ys);
      }
    }
    if (chunked_rows(M, w.dtype)) {  // a block at a time, requesting the next (see float_panels)
      i8_panels_int_512_blocks(xq2, ldx2, M, w, p, p0, p1, out, ldo, vnni);
      return;
    }
    for (; p < p1; ++p) {
      const int8_t* ps[1] = {P(p)};
      for_row_tiles(M, [&](int64_t m0, int64_t rows) {
        float* ys[1] = {out + m0 * ldo + (p - p0) * kP};
        const Pair32* xm = xq2 + m0 * ldx2;
        with_tile_rows(rows, [&](auto mx) { tile(mx, integral_constant<int, 1>{}, xm, ps, ys); });
      });
    }
    return;
  }
#endif
  for (int64_t p = p0; p < p1; ++p) {
    float* yp = out + (p - p0) * kP;
#ifdef ORDO_SIMD
    if (M == 1) {
      tile_i8_avx2<1, 8>(xq2, ldx2, pairs, P(p), yp, ldo);
      continue;
    }
    prefetch_l2(P(p), w.panel_elems());
    for_row_tiles(M, [&](int64_t m0, int64_t rows) {
      for (int64_t c = 0; c < kP; c += 16) {
        const Pair32* xm = xq2 + m0 * ldx2;
        const int8_t* pc = P(p) + 2 * c;
        float* ym = yp + m0 * ldo + c;
        with_tile_rows(rows, [&](auto mx) { tile_i8_avx2<decltype(mx)::value, 2>(xm, ldx2, pairs, pc, ym, ldo); });
      }
    });
#else
    tile_i8_scalar(xq2, ldx2, pairs, M, P(p), yp, ldo);
#endif
  }
}

// Panels [p0, p1) of one job for every row: raw sums into a per-thread buffer, then scales, the
// I8 step, bias, and the columns that exist copied to y.
void job_panels(const PanelJob& jb, int64_t p0, int64_t p1, const float* x, int64_t M, int64_t K, const FixedInput& fx,
                const BlockInput& bx) {
  const PanelWeight& w = *jb.w;
  const int64_t cols = (p1 - p0) * kP;
  thread_local std::vector<float> buf;
  if (buf.size() < static_cast<size_t>(M * cols)) buf.resize(static_cast<size_t>(M * cols));
  float* out = buf.data();
  switch (w.dtype) {
    case DType::F32: float_panels<PF32>(x, M, K, w, p0, p1, out, cols); break;
    case DType::F16: float_panels<PF16>(x, M, K, w, p0, p1, out, cols); break;
    case DType::BF16: float_panels<PBF16>(x, M, K, w, p0, p1, out, cols); break;
    case DType::I8: {
      const auto* xq2 = reinterpret_cast<const Pair32*>(fx.xq.data());
      const int64_t ldx2 = fx.Kp / 2;
      if (fx.all_int) {
        i8_panels_int(xq2, ldx2, M, w, p0, p1, out, cols);
        break;
      }
      for (int64_t m = 0; m < M; ++m) {
        if (fx.int_row[m]) {
          i8_panels_int(xq2 + m * ldx2, ldx2, 1, w, p0, p1, out + m * cols, cols);
          continue;
        }
        for (int64_t p = p0; p < p1; ++p)
          tile_i8_float(x + m * K, K, static_cast<const int8_t*>(w.panel(p)), out + m * cols + (p - p0) * kP);
      }
      break;
    }
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K: block_panels(block_isa(), bx, M, w, p0, p1, out, cols); break;
  }
  const bool i8 = w.dtype == DType::I8;
  const int64_t n0 = p0 * kP, n1 = std::min(w.N, p1 * kP);
  for (int64_t m = 0; m < M; ++m) {
    const float unit = i8 && fx.int_row[m] ? fx.sx[m] : 1.0f;  // integer sums are in units of sx
    const float* src = out + m * cols;
    float* dst = jb.y + m * w.N;
    // Spelled out with std::fma: left to the compiler, v · scale + bias is contracted or not.
    for (int64_t n = n0; n < n1; ++n) {
      const float v = src[n - n0] * unit;
      const float b = jb.bias ? jb.bias[n] : 0.0f;
      dst[n] = jb.scales ? std::fma(v, jb.scales[n], b) : v + b;
    }
  }
}

void fix_input(const float* x, int64_t M, int64_t K, FixedInput& fx) {
  fx.Kp = (K + 1) / 2 * 2;
  fx.xq.assign(static_cast<size_t>(M * fx.Kp), 0);
  fx.sx.assign(static_cast<size_t>(M), 1.0f);
  fx.int_row.assign(static_cast<size_t>(M), 0);
  fx.all_int = true;
  for (int64_t m = 0; m < M; ++m) {
    fx.int_row[m] = to_fixed16(x + m * K, K, fx.xq.data() + m * fx.Kp, fx.sx[m]);
    if (!fx.int_row[m]) fx.sx[m] = 1.0f;
    fx.all_int = fx.all_int && fx.int_row[m];
  }
}

}  // namespace

const char* panel_isa() {
#if defined(ORDO_SIMD) && defined(__x86_64__)
  return cpu_vnni() ? "avx512-vnni" : cpu_avx512() ? "avx512" : "avx2";
#elif defined(ORDO_SIMD)
  return "avx2";
#else
  return "scalar";
#endif
}

std::shared_ptr<const PanelWeight> make_panels(const Tensor& W) {
  if (W.ndim() != 2) throw Error("panels: weight must be 2-D, got " + W.shape_str());
  auto pw = std::make_shared<PanelWeight>();
  pw->dtype = W.dtype;
  pw->N = W.dim(0);
  pw->K = W.dim(1);
  pw->Kp = W.dtype == DType::I8 ? (pw->K + 1) / 2 * 2 : pw->K;
  pw->panels = (pw->N + kP - 1) / kP;
  const bool blocks = is_block_dtype(W.dtype);
  const int64_t block = W.dtype == DType::Q4_K ? kQ4KBlock : kQuantBlock;
  if (blocks && pw->K % block != 0)
    throw Error(std::string("panels: a ") + dtype_name(W.dtype) + " weight needs a multiple of " +
                std::to_string(block) + " columns, got " + W.shape_str());
  pw->panel_bytes = blocks ? pw->K / kQuantBlock * block_stride(W.dtype)
                           : pw->panel_elems() * static_cast<int64_t>(dtype_size(W.dtype));
  const size_t bytes = static_cast<size_t>(pw->panels * pw->panel_bytes);
  pw->data = alloc_weight(bytes, "a " + W.shape_str() + " weight's panels");
  void* mem = pw->data.get();
  std::memset(mem, 0, bytes);
  const int64_t N = pw->N, K = pw->K, Kp = pw->Kp;
  const bool par = N * K >= (1 << 16) && !omp_in_parallel();
#pragma omp parallel for schedule(static) num_threads(par ? ensure_threads() : 1) if (par)
  for (int64_t p = 0; p < pw->panels; ++p) {
    switch (W.dtype) {
      case DType::F32:
        pack_rows(static_cast<const float*>(W.data), N, K, Kp, false, static_cast<float*>(mem), p);
        break;
      case DType::F16:
      case DType::BF16:
        pack_rows(static_cast<const uint16_t*>(W.data), N, K, Kp, false, static_cast<uint16_t*>(mem), p);
        break;
      case DType::I8:
        pack_rows(static_cast<const int8_t*>(W.data), N, K, Kp, true, static_cast<int8_t*>(mem), p);
        break;
      case DType::Q8_0:
      case DType::Q4_0:
      case DType::Q4_K: pack_block_panel(W, p, static_cast<uint8_t*>(mem) + p * pw->panel_bytes); break;
    }
  }
  return pw;
}

namespace {

// Panels per item for one or two rows: whole runs of `run` panels (the kernels stream 2 at once, or
// 4 for one float row), at most `want` (or one run), split as evenly as the threads
// allow, since a larger last item leaves the other threads waiting longer: the
// largest size within 2% of the least work any thread is left with (a 12-panel Q4_0 weight was 8 + 4
// panels, one thread idle for a third of it; now 6 + 6).
int64_t stream_item_panels(int64_t panels, int64_t run, int64_t want, int64_t threads) {
  const int64_t most = std::max(run, want / run * run);
  auto busiest = [&](int64_t per) {  // panels of the thread with the most items
    const int64_t items = (panels + per - 1) / per;
    return (items + threads - 1) / threads * per;
  };
  int64_t least = busiest(run);
  for (int64_t per = run; per <= most; per += run) least = std::min(least, busiest(per));
  int64_t best = run;
  for (int64_t per = run; per <= most; per += run)
    if (busiest(per) * 50 <= least * 51) best = per;
  return best;
}

}  // namespace

void panel_group(const float* x, int64_t M, int64_t K, const PanelJob* jobs, size_t n_jobs) {
  bool any_i8 = false, any_blocks = false;
  int64_t elems = 0;
  for (size_t j = 0; j < n_jobs; ++j) {  // shapes checked by linear()'s view_linear
    any_i8 = any_i8 || jobs[j].w->dtype == DType::I8;
    any_blocks = any_blocks || is_block_dtype(jobs[j].w->dtype);
    elems += jobs[j].w->N * K;
  }
  // The caller's copy, read by every thread through this pointer (a thread_local named inside the
  // lambda would be each thread's own).
  thread_local FixedInput fixed;
  thread_local BlockInput block_input;
  if (any_i8) fix_input(x, M, K, fixed);
  if (any_blocks) {  // a prompt's rows over the threads (each row's blocks as quantize_blocks would)
    block_input.resize(M, K);
    BlockInput* bi = &block_input;
    parallel_items(M, M > 1 && M * K >= (int64_t(1) << 16), [&](int64_t m) { bi->quantize_row(x, m); });
  }
  const FixedInput* fx = &fixed;
  const BlockInput* bx = &block_input;
  // Items of a few panels (~256 KB of weights, at least the 4 panels one row reads at once),
  // taken dynamically by the threads (one woken late still finds work).
  const int64_t threads = ensure_threads();
  int64_t per_item[kMaxGroup], first_item[kMaxGroup + 1];
  first_item[0] = 0;
  for (size_t j = 0; j < n_jobs; ++j) {
    const PanelWeight& w = *jobs[j].w;
    const int64_t want = std::max<int64_t>(1, (int64_t(256) << 10) / std::max<int64_t>(1, w.panel_bytes));
    // Chunked rows (see float_panels) request the next chunk across panel ends: runs of panels
    // as long as two items per thread allow.
    // Prompts (more rows than chunked): every panel is long arithmetic, so items small enough that
    // the threads finish together (a 768-row weight's 12 Q4_0 panels were 2 items, 9 and 3).
    const bool chunked = chunked_rows(M, w.dtype);
    // One float row streams 4 panels at once, but a 12-panel weight split in runs of 4 left one
    // thread 8 panels and the other 4 (the o and down projections of a 768-wide model, a third
    // of its weight bytes): runs of 2 and items of up to 8 panels let it split 6 + 6.
    const bool float_row = M == 1 && !is_block_dtype(w.dtype);
    per_item[j] = M <= 2    ? stream_item_panels(w.panels, 2, float_row ? std::max<int64_t>(want, 8) : want, threads)
                  : chunked ? std::max<int64_t>(want, (w.panels + 2 * threads - 1) / (2 * threads))
                  : M > kChunkMaxRows ? std::min(want, std::max<int64_t>(1, w.panels / (4 * threads)))
                                      : want;
    first_item[j + 1] = first_item[j] + (w.panels + per_item[j] - 1) / per_item[j];
  }
  const bool par = M * elems >= (int64_t(1) << 15) && first_item[n_jobs] > 1;
  parallel_items(first_item[n_jobs], par, [&](int64_t it) {
    size_t j = 0;
    while (it >= first_item[j + 1]) ++j;
    const int64_t p0 = (it - first_item[j]) * per_item[j];
    job_panels(jobs[j], p0, std::min(jobs[j].w->panels, p0 + per_item[j]), x, M, K, *fx, *bx);
  });
}

}  // namespace ordo::detail
