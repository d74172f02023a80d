// linear() / gemm_nt() dispatch, the M == 1 matrix-vector kernel and weight dequantisation.
//
// Routing (see tools/bench_kernels for the measurements behind it):
//   * M == 1 (decode): hand-written OpenMP + AVX2/FMA matvec for every weight dtype, converting
//     F16 (F16C) and BF16 (shift) on the fly; I8 uses int16 activations and vpmaddwd. Threads
//     take 256 KB chunks of rows dynamically and read each as kStreams linear streams (see
//     matvec_rows).
//     Memory-bound; beats both libraries. linear_group() runs several weights on one input
//     (q/k/v, gate/up) as a single parallel loop (parallel_items: on the decode step's team, or
//     one OpenMP region).
//   * M > 1, F32 weights: the chosen backend (OpenBLAS cblas_sgemm or a cached oneDNN matmul).
//   * M > 1, F16/BF16/I8 weights: blocks of rows are dequantised into a per-thread F32 scratch
//     (about 4 MB) and each block goes through the chosen backend, writing its columns of y;
//     I8 scales and the bias are applied to y afterwards. The weight is never expanded whole.
//   * Threads: everything runs on the one OpenMP pool (see threads.cpp, gemm_openblas.cpp).
//     Called from inside an OpenMP parallel region, every path runs on the calling thread
//     (except a matvec on the caller's own team; see team.hpp).
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixed_point.hpp"
#include "gemm_backend.hpp"
#include "ordo/ops.hpp"
#include "team.hpp"

#include "simd.hpp"

namespace ordo {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::OpenBLAS: return "openblas";
    case Backend::OneDNN: return "onednn";
  }
  return "?";
}

Backend parse_backend(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "openblas") return Backend::OpenBLAS;
  if (s == "onednn") return Backend::OneDNN;
  throw Error("unknown GEMM backend '" + name + "' (valid: openblas, onednn)");
}

namespace detail {
namespace {

// ORDO_MAX_ISA=avx2 keeps the kernels to AVX2 on an AVX-512 machine, so that one machine can test
// both paths (with ONEDNN_MAX_CPU_ISA=AVX2 for oneDNN's).
[[maybe_unused]] bool avx2_only() {
  const char* v = std::getenv("ORDO_MAX_ISA");
  return v && std::string(v) == "avx2";
}

// Below this many weight elements a matvec/dequantisation runs on one thread.
constexpr int64_t kParallelMinElems = 1 << 15;
// Concurrent row streams per thread in matvec (see matvec_rows).
constexpr int kStreams = 8;
// F32 scratch per dequantised block of rows (elements).
constexpr int64_t kDequantBlockElems = 1 << 20;

// ---- element loaders: 8 lanes (SIMD) or 1 (scalar tail) -----------------------------------
struct LoadF32 {
  using T = float;
  static float one(const T* p) { return *p; }
#ifdef ORDO_SIMD
  static __m256 eight(const T* p) { return _mm256_loadu_ps(p); }
#endif
};
struct LoadF16 {
  using T = uint16_t;
  static float one(const T* p) { return f16_to_f32(*p); }
#ifdef ORDO_SIMD
  static __m256 eight(const T* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
#endif
};
struct LoadBF16 {
  using T = uint16_t;
  static float one(const T* p) { return bf16_to_f32(*p); }
#ifdef ORDO_SIMD
  static __m256 eight(const T* p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
#endif
};
struct LoadI8 {
  using T = int8_t;
  static float one(const T* p) { return static_cast<float>(*p); }
#ifdef ORDO_SIMD
  static __m256 eight(const T* p) {
    __m128i b;
    std::memcpy(&b, p, 8);  // movq; the upper half is ignored by cvtepi8_epi32
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  }
#endif
};

#ifdef ORDO_SIMD
using simd::hsum;
#endif

// Scalar tails use std::fma: left to the compiler, `v += w * x` is contracted in some loops and not
// in others, and a row must get the same bits from every kernel that computes it.
//
// y[r] = W[r, :] · x for r in [r0, r1), reading [r0, r1) as kStreams far-apart linear streams:
// the range is cut into kStreams equal parts and each step takes the next row of every part.
// Why: rows are short (K = 768 floats is 3 KB), and walking a few adjacent rows at a time
// restarts the hardware prefetcher every few KB, far below the memory's bandwidth; eight long
// streams per core keep enough misses in flight to reach it (docs/performance.md). Leftover rows
// go one at a time.
template <class L>
void matvec_rows(const float* x, int64_t K, const typename L::T* W, int64_t r0, int64_t r1, float* y) {
  using T = typename L::T;
  int64_t k_simd = 0;
#ifdef ORDO_SIMD
  const int64_t q = (r1 - r0) / kStreams;
  k_simd = K / 8 * 8;
  for (int64_t i = 0; i < q; ++i) {
    const T* w[kStreams];
    for (int s = 0; s < kStreams; ++s) w[s] = W + (r0 + s * q + i) * K;
    __m256 acc[kStreams];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t k = 0; k < k_simd; k += 8) {
      const __m256 xv = _mm256_loadu_ps(x + k);
      for (int s = 0; s < kStreams; ++s) acc[s] = _mm256_fmadd_ps(L::eight(w[s] + k), xv, acc[s]);
    }
    for (int s = 0; s < kStreams; ++s) {
      float v = hsum(acc[s]);
      for (int64_t k = k_simd; k < K; ++k) v = std::fma(L::one(w[s] + k), x[k], v);
      y[r0 + s * q + i] = v;
    }
  }
  const int64_t tail = r0 + kStreams * q;
#else
  const int64_t tail = r0;
#endif
  for (int64_t r = tail; r < r1; ++r) {
    const T* w = W + r * K;
    float v = 0.0f;
#ifdef ORDO_SIMD
    __m256 a = _mm256_setzero_ps();
    for (int64_t k = 0; k < k_simd; k += 8) a = _mm256_fmadd_ps(L::eight(w + k), _mm256_loadu_ps(x + k), a);
    v = hsum(a);
#endif
    for (int64_t k = k_simd; k < K; ++k) v = std::fma(L::one(w + k), x[k], v);
    y[r] = v;
  }
}

#ifdef ORDO_SIMD
// y[j, i] = W[row i] · x[j] for RW weight rows w[i] and MX input rows x + j·K: each (j, i) is one
// FMA chain over k in steps of 8, then hsum, then the scalar tail, exactly as matvec_rows computes
// a row, so a sequence's row of a batch gets the same bits as alone. The RW × MX accumulators stay
// in registers, each weight load serving MX rows and each input load RW rows.
template <class L, int RW, int MX>
void dot_block(const typename L::T* const* w, const float* x, int64_t K, float* y, int64_t ldy) {
  const int64_t k8 = K / 8 * 8;
  __m256 acc[RW][MX];
  for (auto& a : acc)
    for (auto& v : a) v = _mm256_setzero_ps();
  for (int64_t k = 0; k < k8; k += 8) {
    __m256 xv[MX];
    for (int j = 0; j < MX; ++j) xv[j] = _mm256_loadu_ps(x + j * K + k);
    for (int i = 0; i < RW; ++i) {
      const __m256 wv = L::eight(w[i] + k);
      for (int j = 0; j < MX; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < RW; ++i)
    for (int j = 0; j < MX; ++j) {
      float v = hsum(acc[i][j]);
      for (int64_t k = k8; k < K; ++k) v = std::fma(L::one(w[i] + k), x[j * K + k], v);
      y[j * ldy + i] = v;
    }
}
#endif

#if defined(ORDO_SIMD) && defined(__x86_64__)
#define ORDO_AVX512_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512dq,avx512vl")))
#pragma GCC diagnostic push
#ifndef __clang__  // GCC's warning only (the fuzz build uses clang)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12, inside its AVX-512 intrinsics
#endif
// dot_block for 2·RP weight rows with AVX-512: rows 2p and 2p + 1 share one 512-bit register,
// row 2p in the low 8 lanes and 2p + 1 in the high 8, each against the same 8 inputs, so every
// lane runs exactly the FMA chain of its AVX2 lane (and hsum of each half is the AVX2 hsum): the
// same bits with half the FMA instructions.
template <class L, int RP, int MX>
ORDO_AVX512_TARGET void dot_block_512(const typename L::T* const* w, const float* x, int64_t K, float* y,
                                      int64_t ldy, const typename L::T* const* next) {
  const int64_t k8 = K / 8 * 8;
  constexpr int64_t kLine = 64 / sizeof(typename L::T);  // elements per cache line
  __m512 acc[RP][MX];
  for (auto& a : acc)
    for (auto& v : a) v = _mm512_setzero_ps();
  for (int64_t k = 0; k < k8; k += 8) {
    // The next block's weights, one line per row as this block's reach it: the loop is too
    // compute-heavy for the hardware prefetcher to keep the streams ahead.
    if (next && k % kLine == 0)
      for (int r = 0; r < 2 * RP; ++r) _mm_prefetch(reinterpret_cast<const char*>(next[r] + k), _MM_HINT_T0);
    __m512 xv[MX];
    for (int j = 0; j < MX; ++j) xv[j] = _mm512_broadcast_f32x8(_mm256_loadu_ps(x + j * K + k));
    for (int p = 0; p < RP; ++p) {
      const __m512 wv = _mm512_insertf32x8(_mm512_castps256_ps512(L::eight(w[2 * p] + k)), L::eight(w[2 * p + 1] + k), 1);
      for (int j = 0; j < MX; ++j) acc[p][j] = _mm512_fmadd_ps(wv, xv[j], acc[p][j]);
    }
  }
  for (int p = 0; p < RP; ++p)
    for (int j = 0; j < MX; ++j)
      for (int h = 0; h < 2; ++h) {
        const typename L::T* wr = w[2 * p + h];
        float v = hsum(h ? _mm512_extractf32x8_ps(acc[p][j], 1) : _mm512_castps512_ps256(acc[p][j]));
        for (int64_t k = k8; k < K; ++k) v = std::fma(L::one(wr + k), x[j * K + k], v);
        y[j * ldy + 2 * p + h] = v;
      }
}
#pragma GCC diagnostic pop

bool has_avx512() {
  static const bool yes = !avx2_only() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl");
  return yes;
}
#endif

// Rows [r0, r1) of every row's output: y[m, r] = W[r, :] · x[m, :] for m < M (y's row stride
// ldy), weights read once for all M rows; bit for bit what matvec_rows gives each row alone. Four
// weight rows at a time, from four far-apart streams as in matvec_rows.
template <class L>
void matmul_rows(const float* x, int64_t M, int64_t K, const typename L::T* W, int64_t r0, int64_t r1, float* y,
                 int64_t ldy) {
  if (M == 1) return matvec_rows<L>(x, K, W, r0, r1, y);
#ifdef ORDO_SIMD
  using T = typename L::T;
  constexpr int kRows = 4;
  const bool wide = has_avx512();
  auto for_inputs = [&](auto rw, const T* const* w, int64_t r, int64_t stride, const T* const* next) {
    constexpr int RW = decltype(rw)::value;
    // Inputs in groups of 3 (AVX2: 12 accumulators of 16 registers) or 8 (AVX-512, 4 rows as 2
    // pairs: 16 accumulators of 32).
    const int64_t group = wide && RW == kRows ? 8 : 3;
    float tmp[8 * kRows];  // rows of one block land in y[m, r + i·stride]
    for (int64_t m = 0; m < M; m += group) {
      const float* xm = x + m * K;
      const int64_t n = std::min(group, M - m);
      const T* const* pf = m == 0 ? next : nullptr;  // prefetch during the first pass over the rows
      if constexpr (RW == kRows) {
        if (wide) {
          switch (n) {
            case 8: dot_block_512<L, 2, 8>(w, xm, K, tmp, kRows, pf); break;
            case 7: dot_block_512<L, 2, 7>(w, xm, K, tmp, kRows, pf); break;
            case 6: dot_block_512<L, 2, 6>(w, xm, K, tmp, kRows, pf); break;
            case 5: dot_block_512<L, 2, 5>(w, xm, K, tmp, kRows, pf); break;
            case 4: dot_block_512<L, 2, 4>(w, xm, K, tmp, kRows, pf); break;
            case 3: dot_block_512<L, 2, 3>(w, xm, K, tmp, kRows, pf); break;
            case 2: dot_block_512<L, 2, 2>(w, xm, K, tmp, kRows, pf); break;
            default: dot_block_512<L, 2, 1>(w, xm, K, tmp, kRows, pf);
          }
        }
      }
      if (!wide || RW != kRows) {
        switch (n) {
          case 3: dot_block<L, RW, 3>(w, xm, K, tmp, kRows); break;
          case 2: dot_block<L, RW, 2>(w, xm, K, tmp, kRows); break;
          default: dot_block<L, RW, 1>(w, xm, K, tmp, kRows);
        }
      }
      for (int64_t j = 0; j < n; ++j)
        for (int i = 0; i < RW; ++i) y[(m + j) * ldy + r + i * stride] = tmp[j * kRows + i];
    }
  };
  const int64_t q = (r1 - r0) / kRows;
  for (int64_t i = 0; i < q; ++i) {
    const T* w[kRows];
    const T* next[kRows];
    for (int s = 0; s < kRows; ++s) {
      w[s] = W + (r0 + s * q + i) * K;
      next[s] = w[s] + K;
    }
    for_inputs(std::integral_constant<int, kRows>{}, w, r0 + i, q, i + 1 < q ? next : nullptr);
  }
  for (int64_t r = r0 + kRows * q; r < r1; ++r) {
    const T* w[1] = {W + r * K};
    for_inputs(std::integral_constant<int, 1>{}, w, r, 0, nullptr);
  }
#else
  for (int64_t m = 0; m < M; ++m) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(r1));
    matvec_rows<L>(x + m * K, K, W, r0, r1, row.data());
    std::copy(row.begin() + r0, row.begin() + r1, y + m * ldy + r0);
  }
#endif
}

#ifdef ORDO_SIMD
// ---- I8 weights at decode: int16 activations, integer multiply-adds -------------------------
// Converting every int8 weight to float (vpmovsxbd + vcvtdq2ps + FMA: 3 uops per 8 weights) makes
// the I8 matvec compute-bound well below memory bandwidth. Instead x is quantised once per call to
// 16-bit fixed point (xq = round(x / sx), |xq| <= 16383, sx = max|x| / 16383: error <= 3.1e-5 of
// max|x|, ~100x below the int8 weights' own rounding) and each row is Σ w·xq in int32 with
// vpmaddwd (2 uops per 16 weights), flushed to float every kI8Block columns so it cannot overflow
// (2·127·16383 per lane and step, 256 steps < 2^31), then y = sum · sx · scale[row].
constexpr int64_t kI8Block = 4096;

inline __m256i load_w16(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Same far-apart streams as matvec_rows. Each stream keeps an int32 accumulator per kI8Block
// columns and a float total.
void matvec_i8_rows(const int16_t* xq, int64_t K, const int8_t* W, int64_t r0, int64_t r1, float* y) {
  const int64_t q = (r1 - r0) / kStreams, k16 = K / 16 * 16;
  for (int64_t i = 0; i < q; ++i) {
    const int8_t* w[kStreams];
    for (int s = 0; s < kStreams; ++s) w[s] = W + (r0 + s * q + i) * K;
    float total[kStreams] = {};
    for (int64_t kb = 0; kb < k16; kb += kI8Block) {
      const int64_t ke = std::min(k16, kb + kI8Block);
      __m256i acc[kStreams];
      for (auto& a : acc) a = _mm256_setzero_si256();
      for (int64_t k = kb; k < ke; k += 16) {
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + k));
        for (int s = 0; s < kStreams; ++s) acc[s] = _mm256_add_epi32(acc[s], _mm256_madd_epi16(load_w16(w[s] + k), xv));
      }
      for (int s = 0; s < kStreams; ++s) total[s] += hsum(_mm256_cvtepi32_ps(acc[s]));
    }
    for (int s = 0; s < kStreams; ++s) {
      int32_t t = 0;
      for (int64_t k = k16; k < K; ++k) t += w[s][k] * xq[k];
      y[r0 + s * q + i] = total[s] + static_cast<float>(t);
    }
  }
  for (int64_t r = r0 + kStreams * q; r < r1; ++r) {
    const int8_t* w = W + r * K;
    float total = 0.0f;
    for (int64_t kb = 0; kb < k16; kb += kI8Block) {
      const int64_t ke = std::min(k16, kb + kI8Block);
      __m256i a = _mm256_setzero_si256();
      for (int64_t k = kb; k < ke; k += 16)
        a = _mm256_add_epi32(a, _mm256_madd_epi16(load_w16(w + k),
                                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + k))));
      total += hsum(_mm256_cvtepi32_ps(a));
    }
    int32_t t = 0;
    for (int64_t k = k16; k < K; ++k) t += w[k] * xq[k];
    y[r] = total + static_cast<float>(t);
  }
}

// y[j, i] = the flushed block totals plus the columns past the last 16 (an exact int32 sum).
template <int RW, int MX>
void store_i8_block(const int8_t* const* w, const int16_t* xq, int64_t K, const float (&total)[RW][MX], float* y,
                    int64_t ldy) {
  for (int i = 0; i < RW; ++i)
    for (int j = 0; j < MX; ++j) {
      int32_t t = 0;
      for (int64_t k = K / 16 * 16; k < K; ++k) t += w[i][k] * xq[j * K + k];
      y[j * ldy + i] = total[i][j] + static_cast<float>(t);
    }
}

// matvec_i8_rows for RW weight rows and MX input rows xq + j·K at once: per (j, i) the same exact
// int32 lane sums per kI8Block (integer addition does not depend on order), the same float
// flushes and tail, so each row gets the bits it gets alone.
template <int RW, int MX>
void dot_block_i8(const int8_t* const* w, const int16_t* xq, int64_t K, float* y, int64_t ldy) {
  const int64_t k16 = K / 16 * 16;
  float total[RW][MX] = {};
  for (int64_t kb = 0; kb < k16; kb += kI8Block) {
    const int64_t ke = std::min(k16, kb + kI8Block);
    __m256i acc[RW][MX];
    for (auto& a : acc)
      for (auto& v : a) v = _mm256_setzero_si256();
    for (int64_t k = kb; k < ke; k += 16) {
      __m256i xv[MX];
      for (int j = 0; j < MX; ++j) xv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + j * K + k));
      for (int i = 0; i < RW; ++i) {
        const __m256i wv = load_w16(w[i] + k);
        for (int j = 0; j < MX; ++j) acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(wv, xv[j]));
      }
    }
    for (int i = 0; i < RW; ++i)
      for (int j = 0; j < MX; ++j) total[i][j] += hsum(_mm256_cvtepi32_ps(acc[i][j]));
  }
  store_i8_block<RW, MX>(w, xq, K, total, y, ldy);
}

#if defined(__x86_64__)
// dot_block_i8 with AVX-512 VNNI (run-time dispatch): vpdpwssd multiplies and adds 32 int16 pairs
// per instruction where AVX2 needs vpmaddwd + vpaddd for 16, the batched int8 kernel being
// compute-bound. Lane l of a 512-bit accumulator sums the columns c with c mod 32 in {2l, 2l+1};
// folding lanes l and l + 8 gives exactly the AVX2 lanes (c mod 16), and integer sums are exact,
// so the float flushes, and the results, are the same bits.
#define ORDO_VNNI_TARGET __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")))
// GCC 12 flags the undefined-value placeholders inside its own AVX-512 intrinsics.
#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <int RW, int MX>
ORDO_VNNI_TARGET void dot_block_i8_vnni(const int8_t* const* w, const int16_t* xq, int64_t K, float* y, int64_t ldy) {
  const int64_t k16 = K / 16 * 16;
  float total[RW][MX] = {};
  for (int64_t kb = 0; kb < k16; kb += kI8Block) {
    const int64_t ke = std::min(k16, kb + kI8Block);
    __m512i acc[RW][MX];
    for (auto& a : acc)
      for (auto& v : a) v = _mm512_setzero_si512();
    int64_t k = kb;
    for (; k + 32 <= ke; k += 32) {
      __m512i xv[MX];
      for (int j = 0; j < MX; ++j) xv[j] = _mm512_loadu_si512(xq + j * K + k);
      for (int i = 0; i < RW; ++i) {
        const __m512i wv = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i] + k)));
        for (int j = 0; j < MX; ++j) acc[i][j] = _mm512_dpwssd_epi32(acc[i][j], wv, xv[j]);
      }
    }
    for (int i = 0; i < RW; ++i)
      for (int j = 0; j < MX; ++j) {
        const __m512i hi = _mm512_shuffle_i64x2(acc[i][j], acc[i][j], _MM_SHUFFLE(3, 2, 3, 2));
        __m256i a8 = _mm256_add_epi32(_mm512_castsi512_si256(acc[i][j]), _mm512_castsi512_si256(hi));
        if (k < ke)  // one last group of 16 columns
          a8 = _mm256_dpwssd_epi32(a8, _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + k))),
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + j * K + k)));
        total[i][j] += hsum(_mm256_cvtepi32_ps(a8));
      }
  }
  store_i8_block<RW, MX>(w, xq, K, total, y, ldy);
}

#pragma GCC diagnostic pop

bool has_avx512_vnni() {
  static const bool yes = !avx2_only() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  return yes;
}
#else
bool has_avx512_vnni() { return false; }
template <int RW, int MX>
void dot_block_i8_vnni(const int8_t* const* w, const int16_t* xq, int64_t K, float* y, int64_t ldy) {
  dot_block_i8<RW, MX>(w, xq, K, y, ldy);
}
#endif

// matmul_rows for I8 weights and int16 inputs xq [M, K]: y[m, r] in units of each row's sx.
void matmul_i8_rows(const int16_t* xq, int64_t M, int64_t K, const int8_t* W, int64_t r0, int64_t r1, float* y,
                    int64_t ldy) {
  if (M == 1) return matvec_i8_rows(xq, K, W, r0, r1, y);
  constexpr int kRows = 4;
  const bool vnni = has_avx512_vnni();
  // Inputs in groups of 3 (AVX2: 12 accumulators of 16 registers) or 4 (AVX-512: 16 of 32).
  const int64_t group = vnni ? 4 : 3;
  auto for_inputs = [&](auto rw, const int8_t* const* w, int64_t r, int64_t stride) {
    constexpr int RW = decltype(rw)::value;
    float tmp[4 * kRows];
    for (int64_t m = 0; m < M; m += group) {
      const int16_t* xm = xq + m * K;
      const int64_t n = std::min(group, M - m);
      if (vnni) {
        switch (n) {
          case 4: dot_block_i8_vnni<RW, 4>(w, xm, K, tmp, kRows); break;
          case 3: dot_block_i8_vnni<RW, 3>(w, xm, K, tmp, kRows); break;
          case 2: dot_block_i8_vnni<RW, 2>(w, xm, K, tmp, kRows); break;
          default: dot_block_i8_vnni<RW, 1>(w, xm, K, tmp, kRows);
        }
      } else {
        switch (n) {
          case 3: dot_block_i8<RW, 3>(w, xm, K, tmp, kRows); break;
          case 2: dot_block_i8<RW, 2>(w, xm, K, tmp, kRows); break;
          default: dot_block_i8<RW, 1>(w, xm, K, tmp, kRows);
        }
      }
      for (int64_t j = 0; j < n; ++j)
        for (int i = 0; i < RW; ++i) y[(m + j) * ldy + r + i * stride] = tmp[j * kRows + i];
    }
  };
  const int64_t q = (r1 - r0) / kRows;
  for (int64_t i = 0; i < q; ++i) {
    const int8_t* w[kRows];
    for (int s = 0; s < kRows; ++s) w[s] = W + (r0 + s * q + i) * K;
    for_inputs(std::integral_constant<int, kRows>{}, w, r0 + i, q);
  }
  for (int64_t r = r0 + kRows * q; r < r1; ++r) {
    const int8_t* w[1] = {W + r * K};
    for_inputs(std::integral_constant<int, 1>{}, w, r, 0);
  }
}

#endif

template <class L>
void dequant_t(const void* Wv, int64_t K, int64_t r0, int64_t rows, float* dst) {
  const auto* W = static_cast<const typename L::T*>(Wv) + r0 * K;
  const int64_t n = rows * K;
  const bool par = n >= kParallelMinElems && !omp_in_parallel();
  const int nt = par ? ensure_threads() : 1;
  // Work in chunks of 4096 elements so every chunk but the last is SIMD-only.
  const int64_t chunk = 4096, chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t i = c * chunk;
    const int64_t end = std::min(n, i + chunk);
#ifdef ORDO_SIMD
    for (; i + 8 <= end; i += 8) _mm256_storeu_ps(dst + i, L::eight(W + i));
#endif
    for (; i < end; ++i) dst[i] = L::one(W + i);
  }
}

void backend_linear(Backend be, const float* x, int64_t ldx, int64_t M, int64_t K, const float* W, int64_t ldw,
                    int64_t N, const float* bias, float* y, int64_t ldy) {
  if (be == Backend::OneDNN)
    onednn_linear(x, ldx, M, K, W, ldw, N, bias, y, ldy);
  else
    openblas_linear(x, ldx, M, K, W, ldw, N, bias, y, ldy);
}

void check_blas_dims(const char* what, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (d > INT_MAX) throw Error(std::string(what) + ": dimension " + std::to_string(d) + " exceeds the BLAS int range");
}

}  // namespace

namespace {

// A group's x for its I8 weights: each row in 16-bit fixed point with its own scale sx[m],
// quantised once for the whole group; a row with a NaN or inf (int_row[m] == 0) takes the float
// path. The buffers are the calling thread's thread_locals: the other threads read these copies.
struct FixedRows {
  const int16_t* xq;
  const float* sx;
  const uint8_t* int_row;
  bool all_int;
};

FixedRows fixed_rows([[maybe_unused]] const float* x, int64_t M, [[maybe_unused]] int64_t K,
                     [[maybe_unused]] bool any_i8) {
  thread_local std::vector<int16_t> xq_buf;
  thread_local std::vector<float> sx_buf;
  thread_local std::vector<uint8_t> int_row;
  sx_buf.assign(static_cast<size_t>(M), 1.0f);
  int_row.assign(static_cast<size_t>(M), 0);
  bool all_int = false;
#ifdef ORDO_SIMD
  if (any_i8) {
    if (xq_buf.size() < static_cast<size_t>(M * K)) xq_buf.resize(static_cast<size_t>(M * K));
    all_int = true;
    for (int64_t m = 0; m < M; ++m) {
      int_row[m] = to_fixed16(x + m * K, K, xq_buf.data() + m * K, sx_buf[m]);
      if (!int_row[m]) sx_buf[m] = 1.0f;
      all_int = all_int && int_row[m];
    }
  }
#endif
  return FixedRows{xq_buf.data(), sx_buf.data(), int_row.data(), all_int};
}

// Rows [r0, r1) of one job for every row of x, then its scales and bias.
void matvec_job_rows(const MatvecJob& jb, int64_t r0, int64_t r1, const float* x, int64_t M, int64_t K,
                     [[maybe_unused]] const FixedRows& q) {
  float* y = jb.y;
  const int64_t N = jb.N;
  switch (jb.wt) {
    case DType::F32: matmul_rows<LoadF32>(x, M, K, static_cast<const float*>(jb.W), r0, r1, y, N); break;
    case DType::F16: matmul_rows<LoadF16>(x, M, K, static_cast<const uint16_t*>(jb.W), r0, r1, y, N); break;
    case DType::BF16: matmul_rows<LoadBF16>(x, M, K, static_cast<const uint16_t*>(jb.W), r0, r1, y, N); break;
    case DType::I8: {
      const auto* W = static_cast<const int8_t*>(jb.W);
#ifdef ORDO_SIMD
      if (q.all_int) {
        matmul_i8_rows(q.xq, M, K, W, r0, r1, y, N);
        break;
      }
      for (int64_t m = 0; m < M; ++m)
        if (q.int_row[m])
          matmul_i8_rows(q.xq + m * K, 1, K, W, r0, r1, y + m * N, N);
        else
          matmul_rows<LoadI8>(x + m * K, 1, K, W, r0, r1, y + m * N, N);
#else
      matmul_rows<LoadI8>(x, M, K, W, r0, r1, y, N);
#endif
      break;
    }
  }
  const bool i8 = jb.wt == DType::I8;
  for (int64_t m = 0; m < M; ++m) {
    const float unit = i8 ? q.sx[m] : 1.0f;  // the integer path's sums are in units of sx
    float* ym = y + m * N;
    for (int64_t r = r0; r < r1; ++r) {
      float v = ym[r] * unit;
      if (jb.scales) v *= jb.scales[r];
      if (jb.bias) v += jb.bias[r];
      ym[r] = v;
    }
  }
}

}  // namespace

void matvec_group(const float* x, int64_t M, int64_t K, const MatvecJob* jobs, size_t n_jobs) {
  int64_t elems = 0;
  bool any_i8 = false;
  for (size_t j = 0; j < n_jobs; ++j) {
    elems += jobs[j].N * K;
    any_i8 = any_i8 || jobs[j].wt == DType::I8;
  }
  const FixedRows q = fixed_rows(x, M, K, any_i8);
  auto run = [&](const MatvecJob& jb, int64_t r0, int64_t r1) { matvec_job_rows(jb, r0, r1, x, M, K, q); };
  if (elems < kParallelMinElems) {
    for (size_t j = 0; j < n_jobs; ++j) run(jobs[j], 0, jobs[j].N);
    return;
  }
  // The group's rows cut into chunks of ~kChunkBytes that threads take dynamically (in one OpenMP
  // region, or on the decode step's team). Why dynamic: a thread that was asleep joins late
  // (waking a core), and with a static split the first thread would then sit idle waiting for
  // its share; this way it keeps working until the others arrive. A chunk is still read as
  // kStreams streams.
  constexpr int64_t kChunkBytes = int64_t(256) << 10;
  int64_t chunk_rows[kMaxGroup], first_chunk[kMaxGroup + 1];
  first_chunk[0] = 0;
  for (size_t j = 0; j < n_jobs; ++j) {
    const int64_t row_bytes = K * static_cast<int64_t>(dtype_size(jobs[j].wt));
    const int64_t rows = std::max<int64_t>(kStreams, kChunkBytes / row_bytes / kStreams * kStreams);
    chunk_rows[j] = rows;
    first_chunk[j + 1] = first_chunk[j] + (jobs[j].N + rows - 1) / rows;
  }
  parallel_items(first_chunk[n_jobs], true, [&](int64_t c) {
    size_t j = 0;
    while (c >= first_chunk[j + 1]) ++j;
    const int64_t r0 = (c - first_chunk[j]) * chunk_rows[j];
    run(jobs[j], r0, std::min(jobs[j].N, r0 + chunk_rows[j]));
  });
}

void dequantize_rows(const void* W, DType wt, int64_t K, int64_t r0, int64_t rows, float* dst) {
  switch (wt) {
    case DType::F32: return dequant_t<LoadF32>(W, K, r0, rows, dst);
    case DType::F16: return dequant_t<LoadF16>(W, K, r0, rows, dst);
    case DType::BF16: return dequant_t<LoadBF16>(W, K, r0, rows, dst);
    case DType::I8: return dequant_t<LoadI8>(W, K, r0, rows, dst);
  }
}

}  // namespace detail

namespace {

void gemm_checked(Backend be, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const char* what = trans_b ? "gemm_nt" : "gemm_nn";
  if (M < 0 || N < 0 || K < 0) throw Error(std::string(what) + ": negative dimension");
  if (M == 0 || N == 0) return;
  if (lda < K || ldb < (trans_b ? K : N) || ldc < N)
    throw Error(std::string(what) + ": leading dimension too small (M=" + std::to_string(M) + " N=" +
                std::to_string(N) + " K=" + std::to_string(K) + " lda=" + std::to_string(lda) + " ldb=" +
                std::to_string(ldb) + " ldc=" + std::to_string(ldc) + ")");
  if (K == 0) {  // C = beta·C; beta == 0 overwrites (C may hold garbage), as in BLAS
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = beta == 0.0f ? 0.0f : beta * C[m * ldc + n];
    return;
  }
  detail::ensure_threads();
  if (be == Backend::OneDNN) {
    detail::onednn_gemm(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
    detail::check_blas_dims(what, {M, N, K, lda, ldb, ldc});
    detail::openblas_gemm(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

}  // namespace

void gemm_nt(Backend be, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_checked(be, true, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_nn(Backend be, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_checked(be, false, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

namespace {

// A Linear's shape and optional parts, validated against the input width K.
struct LinearView {
  int64_t N;
  const float* bias;
  const float* scales;  // I8 only
};

LinearView view_linear(const Linear& w, int64_t K) {
  const Tensor& W = w.weight;
  if (W.ndim() != 2) throw Error("linear: weight must be 2-D, got " + W.shape_str());
  const int64_t N = W.dim(0);
  if (W.dim(1) != K)
    throw Error("linear: input has " + std::to_string(K) + " features but the weight is " + W.shape_str() +
                " (expects " + std::to_string(W.dim(1)) + ")");
  LinearView v{N, nullptr, nullptr};
  if (!w.bias.empty()) {
    if (w.bias.dtype != DType::F32 || w.bias.numel() != N)
      throw Error("linear: bias must be F32 [" + std::to_string(N) + "], got " + dtype_name(w.bias.dtype) + " " +
                  w.bias.shape_str());
    v.bias = w.bias.f32();
  }
  if (W.dtype == DType::I8) {
    if (w.scales.empty() || w.scales.dtype != DType::F32 || w.scales.numel() != N)
      throw Error("linear: I8 weight " + W.shape_str() + " needs F32 scales [" + std::to_string(N) + "]");
    v.scales = w.scales.f32();
  }
  return v;
}

}  // namespace

namespace {

// The matvec kernels over any number of rows, kMaxMatvecRows at a time. Every row's result is the
// one it gets alone, whatever M.
void matvec_chunks(const float* x, int64_t M, int64_t K, const detail::MatvecJob* jobs, size_t n) {
  detail::ensure_threads();
  detail::MatvecJob chunk[detail::kMaxGroup];
  for (int64_t m0 = 0; m0 < M; m0 += detail::kMaxMatvecRows) {
    for (size_t j = 0; j < n; ++j) {
      chunk[j] = jobs[j];
      chunk[j].y = jobs[j].y + m0 * jobs[j].N;
    }
    detail::matvec_group(x + m0 * K, std::min(detail::kMaxMatvecRows, M - m0), K, chunk, n);
  }
}

// Rows that go through the matvec kernels rather than the backend's GEMM: up to kMaxMatvecRows
// (the weights are read once for all of them), and every row of an I8 weight, whose integer
// kernels keep a row's result independent of the batch and, with AVX-512 VNNI, outrun the
// dequantise-then-GEMM path.
bool use_matvec(int64_t M, DType wt) { return M <= detail::kMaxMatvecRows || wt == DType::I8; }

}  // namespace

void linear_group(Backend be, const float* x, int64_t M, int64_t K, std::initializer_list<LinearTarget> targets) {
  detail::linear_targets(be, x, M, K, targets.begin(), targets.size(), false);
}

void detail::linear_targets(Backend be, const float* x, int64_t M, int64_t K, const LinearTarget* targets, size_t n,
                            bool matvec) {
  if (n > kMaxGroup) throw Error("linear_group: at most 8 weights per group");
  if (M < 1 || K <= 0) {
    for (size_t i = 0; i < n; ++i) linear(be, x, M, K, *targets[i].w, targets[i].y);
    return;
  }
  bool all = true;  // every weight would take the matvec kernels at this M anyway
  for (size_t i = 0; i < n; ++i) all = all && use_matvec(M, targets[i].w->weight.dtype);
  if (!matvec && !all) {
    for (size_t i = 0; i < n; ++i) linear(be, x, M, K, *targets[i].w, targets[i].y);
    return;
  }
  MatvecJob jobs[kMaxGroup];
  for (size_t i = 0; i < n; ++i) {
    const LinearView v = view_linear(*targets[i].w, K);
    jobs[i] = MatvecJob{targets[i].w->weight.data, targets[i].w->weight.dtype, v.scales, v.bias, v.N, targets[i].y};
  }
  matvec_chunks(x, M, K, jobs, n);
}

std::string kernel_isa() {
#if defined(ORDO_SIMD) && defined(__x86_64__)
  return detail::has_avx512_vnni() ? "avx512-vnni" : detail::has_avx512() ? "avx512" : "avx2";
#elif defined(ORDO_SIMD)
  return "avx2";
#else
  return "scalar";
#endif
}

bool prepack_linear(Linear& w) {
  if (!w.present() || w.weight.dtype != DType::F32 || w.weight.ndim() != 2) return false;
  w.packed = detail::onednn_pack(w.weight.f32(), w.weight.dim(0), w.weight.dim(1));
  return w.packed != nullptr;
}

void linear(Backend be, const float* x, int64_t M, int64_t K, const Linear& w, float* y) {
  const Tensor& W = w.weight;
  const LinearView view = view_linear(w, K);
  const int64_t N = view.N;
  const float* bias = view.bias;
  const float* scales = view.scales;
  if (M < 0) throw Error("linear: negative M");
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[m * N + n] = bias ? bias[n] : 0.0f;
    return;
  }
  detail::ensure_threads();

  if (use_matvec(M, W.dtype)) {
    const detail::MatvecJob job{W.data, W.dtype, scales, bias, N, y};
    matvec_chunks(x, M, K, &job, 1);
    return;
  }
  if (be == Backend::OpenBLAS) detail::check_blas_dims("linear", {M, N, K});
  if (W.dtype == DType::F32) {
    if (be == Backend::OneDNN && w.packed && detail::onednn_linear_packed(x, K, M, *w.packed, bias, y, N)) return;
    detail::backend_linear(be, x, K, M, K, W.f32(), K, N, bias, y, N);
    return;
  }

  // Dequantise blocks of rows into a reused per-thread scratch and GEMM each block.
  const int64_t block =
      std::min(N, std::max<int64_t>(64, (detail::kDequantBlockElems / K + 15) / 16 * 16));
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(block * K)) scratch.resize(static_cast<size_t>(block * K));
  const bool i8 = W.dtype == DType::I8;
  for (int64_t n0 = 0; n0 < N; n0 += block) {
    const int64_t nb = std::min(block, N - n0);
    detail::dequantize_rows(W.data, W.dtype, K, n0, nb, scratch.data());
    detail::backend_linear(be, x, K, M, K, scratch.data(), K, nb, i8 || !bias ? nullptr : bias + n0, y + n0, N);
  }
  if (i8) {  // y = (x·qᵀ)·scale[n] + b[n]
    const bool par = M * N >= detail::kParallelMinElems && !omp_in_parallel();
    const int nt = par ? detail::ensure_threads() : 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
    for (int64_t m = 0; m < M; ++m) {
      float* yr = y + m * N;
      if (bias)
        for (int64_t n = 0; n < N; ++n) yr[n] = yr[n] * scales[n] + bias[n];
      else
        for (int64_t n = 0; n < N; ++n) yr[n] *= scales[n];
    }
  }
}

}  // namespace ordo
