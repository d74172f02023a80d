// W8A8 / W4A8 kernels for Q8_0 / Q4_0 / Q4_K panels: activations quantized to int8 per 32-element
// block, int8 dot products per block (vpdpbusd on AVX-512 VNNI and AVX-VNNI, vpmaddubsw on AVX2,
// scalar).
//
// Panel layout (64 rows, PanelWeight::kPanel), per 32-column block b of the panel, at b · stride:
//   Q8_0: 8 groups g, each [64 rows][4 bytes]: row j's elements 4g..4g+3 of the block, plus 128 (u8:
//         vpdpbusd's unsigned operand), then the 64 rows' fp16 scales. 2048 + 128 bytes.
//   Q4_0: 4 groups h, each [64 rows][4 bytes]: row j's ggml bytes 4h..4h+3, whose low nibbles are
//         elements 4h+i and high nibbles elements 16+4h+i (both + 8), then the 64 fp16 scales.
//         1024 + 128 bytes: no larger than ggml's own blocks.
//   Q4_K: Q4_0's groups holding the codes of sub-block b % 8 of a super-block (0..15, no offset),
//         the 64 rows' 6-bit scales sc (a byte each), then their mins mn, then a share of the
//         super-block's fp16 d and dmin: block 8s + z holds rows 8z..8z+7's (8 d, then 8 dmin).
//         1024 + 128 + 32 bytes, 4.625 bits per weight (the file: 4.5). The kernels multiply d·sc and
//         dmin·mn out per block, exactly (an fp16 times a 6-bit integer fits fp32).
// One 32-bit lane of a 64-byte load is one row: a broadcast of 4 activation bytes meets 16 rows, and
// a block's sums land one row per lane, with no horizontal sums; each load serves every row of a tile.
//
// Arithmetic, the same on every path: per block the exact int32 sum Σ w·xq (unsigned codes corrected
// by 128·Σxq or 8·Σxq), then acc = fma(float(sum), d_w · d_x, acc) over blocks in order; Q4_K's sum
// is Σ code·xq, its scale d·sc, and its min leaves acc = fma(-dmin·mn, d_x · Σxq, acc) after that.
// Every path, tile and row count gives the same bits (tests/block_kernels_test.cpp). Q4_K runs the
// AVX2 kernels on the VNNI machines too (no machine here had VNNI to test its own path on).
#include <cpuid.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ordo/quant_blocks.hpp"
#include "panels.hpp"
#include "simd.hpp"

namespace ordo::detail {
namespace {

constexpr int64_t kP = PanelWeight::kPanel;
constexpr int64_t kB = kQuantBlock;
// Blocks of one panel read for every row tile before the next (Q8_0: 17 KB, held in L1), with up
// to kBatchRows rows (a decode step's batch): the next chunk is requested while this one is read.
constexpr int64_t kChunkBlocks = 8;
constexpr int64_t kBatchRows = 16;
// A prompt's chunks: every tile's arithmetic is long enough that a chunk from L2 keeps up, and fewer,
// longer tile calls spare a reload and store of every running sum per chunk (Q4_0 prefill of 512
// tokens ~5% faster than with 8 blocks).
constexpr int64_t kPromptChunkBlocks = 32;

// A panel's block format. Q4KF: a Q4_K chunk with its scales and mins multiplied out to fp32 (64
// of each after the codes), which the tiles of several rows read: multiplied once per chunk, not
// once per tile and block (a 512-token prompt took 1.7x as long).
enum class Fmt { Q8, Q4, Q4K, Q4KF };
constexpr bool nibbles(Fmt f) { return f != Fmt::Q8; }
constexpr bool has_min(Fmt f) { return f == Fmt::Q4K || f == Fmt::Q4KF; }
constexpr Fmt fmt_of(bool q4) { return q4 ? Fmt::Q4 : Fmt::Q8; }
Fmt fmt_of(DType t) { return t == DType::Q4_K ? Fmt::Q4K : t == DType::Q4_0 ? Fmt::Q4 : Fmt::Q8; }
constexpr int64_t codes_bytes(Fmt f) { return nibbles(f) ? 4 * kP * 4 : 8 * kP * 4; }
constexpr int64_t stride_of(Fmt f) {
  return codes_bytes(f) + (f == Fmt::Q4K ? 2 * kP + 32 : f == Fmt::Q4KF ? 8 * kP : 2 * kP);
}
// Q4_K: where a block's scales, its mins, and (in the block a super-block's d and dmin share) d.
constexpr int64_t kQ4KScales = codes_bytes(Fmt::Q4K), kQ4KMins = kQ4KScales + kP, kQ4KD = kQ4KMins + kP;

// Q4_K's scale d·sc and min dmin·mn of row j in block b of panel P.
inline float q4k_scale(const uint8_t* P, int64_t b, int64_t j, bool min) {
  const uint8_t* D = P + ((b & ~int64_t{7}) + j / 8) * stride_of(Fmt::Q4K) + kQ4KD + (min ? 16 : 0) + 2 * (j % 8);
  const float d = f16_to_f32(static_cast<uint16_t>(D[0] | D[1] << 8));
  return d * static_cast<float>(P[b * stride_of(Fmt::Q4K) + (min ? kQ4KMins : kQ4KScales) + j]);
}

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// ---- activations ----------------------------------------------------------------------------------

// A block's scale from its largest magnitude, as the codec's quantize_q8_0 (ggml's reference
// quantizer): *d gets amax / 127 as stored (through fp16); returns the multiplier to codes, 1 / d.
inline float block_scales(float amax, float* d) {
  const float dd = amax / 127.0f;
  float id = dd != 0.0f ? 1.0f / dd : 0.0f;
  if (!std::isfinite(id)) id = 0.0f;  // d below fp16's range rounds to 0: the block adds nothing
  *d = f16_to_f32(f32_to_f16(dd));
  return id;
}

// One block as the codec's quantize_q8_0 (d = max|x| / 127 rounded to fp16, q = round-half-away(x / d)),
// with Σq; a block with a non-finite value gets q = 0 and d = NaN, so its outputs are NaN.
void quantize_block(const float* x, int8_t* q, float* d, int32_t* s) {
  float amax = 0.0f;
  bool finite = true;
#ifdef ORDO_SIMD
  {  // the same max (exact in any order) and check, 8 lanes at a time: this runs for every block of every row
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
    __m256 m = _mm256_setzero_ps(), ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    for (int c = 0; c < 4; ++c) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + 8 * c), abs_mask);
      ok = _mm256_and_ps(ok, _mm256_cmp_ps(a, inf, _CMP_LT_OQ));  // false for inf and NaN
      m = _mm256_max_ps(m, a);
    }
    finite = _mm256_movemask_ps(ok) == 0xFF;
    amax = simd::hmax(m);
  }
#else
  for (int j = 0; j < kB; ++j) {
    amax = std::max(amax, std::fabs(x[j]));
    finite = finite && std::isfinite(x[j]);
  }
#endif
  if (!finite) {
    std::memset(q, 0, kB);
    *d = std::nanf("");
    *s = 0;
    return;
  }
  const float id = block_scales(amax, d);
  int32_t sum = 0;
#ifdef ORDO_SIMD
  const __m256 vid = _mm256_set1_ps(id), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256i qi[4];
  for (int c = 0; c < 4; ++c) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * c), vid);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    // Round half away from zero, exactly: v - t is exact, so |v - t| >= 0.5 says to step away.
    const __m256 away = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(v, t)), half, _CMP_GE_OQ);
    const __m256 step = _mm256_and_ps(away, _mm256_or_ps(one, _mm256_and_ps(sign, v)));
    qi[c] = _mm256_cvtps_epi32(_mm256_add_ps(t, step));
  }
  const __m256i all = _mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3]));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(all), _mm256_extracti128_si256(all, 1));
  s4 = _mm_hadd_epi32(s4, s4);
  s4 = _mm_hadd_epi32(s4, s4);
  sum = _mm_cvtsi128_si32(s4);
  // int32 -> int8 keeping the order (packs interleave 128-bit lanes; the permute undoes it).
  const __m256i p16a = _mm256_packs_epi32(qi[0], qi[1]), p16b = _mm256_packs_epi32(qi[2], qi[3]);
  const __m256i p8 =
      _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), p8);
#else
  for (int j = 0; j < kB; ++j) {
    q[j] = static_cast<int8_t>(std::round(x[j] * id));
    sum += q[j];
  }
#endif
  *s = sum;
}

// ---- scalar -----------------------------------------------------------------------------------------

// Rows [0, MX) of x (row stride K codes, nb blocks) × the panel's 64 rows over blocks [b0, b1).
void tile_scalar(Fmt f, const BlockInput& in, int64_t m0, int64_t MX, const uint8_t* P, int64_t b0, int64_t b1,
                 float* y, int64_t ldy, bool first) {
  const int64_t nb = in.K / kB, stride = stride_of(f);
  const bool q4 = nibbles(f);
  const int off = f == Fmt::Q4 ? 8 : 0;
  for (int64_t m = m0; m < m0 + MX; ++m)
    for (int64_t j = 0; j < kP; ++j) {
      float acc = first ? 0.0f : y[(m - m0) * ldy + j];
      for (int64_t b = b0; b < b1; ++b) {
        const uint8_t* B = P + b * stride;
        const int8_t* xq = in.q.data() + m * in.K + b * kB;
        int32_t isum = 0;
        for (int g = 0; g < (q4 ? 4 : 8); ++g)
          for (int i = 0; i < 4; ++i) {
            const int c = B[g * 4 * kP + j * 4 + i];
            if (q4)
              isum += ((c & 15) - off) * xq[4 * g + i] + ((c >> 4) - off) * xq[16 + 4 * g + i];
            else
              isum += (c - 128) * xq[4 * g + i];
          }
        const float dx = in.d[m * nb + b];
        if (f == Fmt::Q4K) {
          acc = std::fma(static_cast<float>(isum), q4k_scale(P, b, j, false) * dx, acc);
          acc = std::fma(-q4k_scale(P, b, j, true), dx * static_cast<float>(in.s[m * nb + b]), acc);
          continue;
        }
        uint16_t h;
        std::memcpy(&h, B + codes_bytes(f) + 2 * j, 2);
        acc = std::fma(static_cast<float>(isum), f16_to_f32(h) * dx, acc);
      }
      y[(m - m0) * ldy + j] = acc;
    }
}

#if defined(ORDO_SIMD) && defined(__x86_64__)
ORDO_AVX512_WARNINGS_OFF

// ---- AVX-512 VNNI -------------------------------------------------------------------------------------

#define ORDO_BLK512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

// A byte range the tiles request into L1 as they go, `lines` cache lines per block they read: their
// share of the chunk the next calls read (see panel_512).
struct Ahead {
  const char* begin = nullptr;
  const char* end = nullptr;
  int64_t lines = 0;
};

// MX rows (from m0) × NZ 16-row slices of the panel (from slice z0) over blocks [b0, b1); y points at
// row m0's output of slice z0.
template <bool Q4, int MX, int NZ>
ORDO_BLK512 void tile_512(const BlockInput& in, int64_t m0, const uint8_t* P, int64_t z0, int64_t b0, int64_t b1,
                          float* y, int64_t ldy, bool first, Ahead ahead = {}) {
  constexpr int64_t kCodes = codes_bytes(fmt_of(Q4)), kStride = stride_of(fmt_of(Q4));
  const int64_t nb = in.K / kB;
  __m512 acc[MX][NZ];
  ORDO_UNROLL
  for (int m = 0; m < MX; ++m) {
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z) acc[m][z] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(y + m * ldy + 16 * z);
  }
  const __m512i lo4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = b0; b < b1; ++b) {
    for (int64_t i = 0; i < ahead.lines && ahead.begin < ahead.end; ++i, ahead.begin += 64)
      _mm_prefetch(ahead.begin, _MM_HINT_T0);
    const uint8_t* B = P + b * kStride;
    const int8_t* xb = in.q.data() + m0 * in.K + b * kB;
    __m512i ia[MX][NZ];  // less c·Σxq at the end: the dot products of the unsigned codes give the signed sum
    ORDO_UNROLL
    for (int m = 0; m < MX; ++m) {
      ORDO_UNROLL
      for (int z = 0; z < NZ; ++z) ia[m][z] = _mm512_setzero_si512();
    }
    if constexpr (Q4) {
      ORDO_UNROLL
      for (int h = 0; h < 4; ++h) {
        __m512i wl[NZ], wh[NZ];
        ORDO_UNROLL
        for (int z = 0; z < NZ; ++z) {
          const __m512i v = _mm512_loadu_si512(B + h * 4 * kP + (z0 + z) * 64);
          wl[z] = _mm512_and_si512(v, lo4);
          wh[z] = _mm512_and_si512(_mm512_srli_epi16(v, 4), lo4);
        }
        ORDO_UNROLL
        for (int m = 0; m < MX; ++m) {
          const __m512i xl = _mm512_set1_epi32(load4(xb + m * in.K + 4 * h));
          const __m512i xh = _mm512_set1_epi32(load4(xb + m * in.K + 16 + 4 * h));
          ORDO_UNROLL
          for (int z = 0; z < NZ; ++z)
            ia[m][z] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(ia[m][z], wl[z], xl), wh[z], xh);
        }
      }
    } else {
      ORDO_UNROLL
      for (int g = 0; g < 8; ++g) {
        __m512i w[NZ];
        ORDO_UNROLL
        for (int z = 0; z < NZ; ++z) w[z] = _mm512_loadu_si512(B + g * 4 * kP + (z0 + z) * 64);
        ORDO_UNROLL
        for (int m = 0; m < MX; ++m) {
          const __m512i xv = _mm512_set1_epi32(load4(xb + m * in.K + 4 * g));
          ORDO_UNROLL
          for (int z = 0; z < NZ; ++z) ia[m][z] = _mm512_dpbusd_epi32(ia[m][z], w[z], xv);
        }
      }
    }
    __m512 dw[NZ];
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z)
      dw[z] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + kCodes + (z0 + z) * 32)));
    ORDO_UNROLL
    for (int m = 0; m < MX; ++m) {
      const int64_t mb = (m0 + m) * nb + b;
      const __m512i corr = _mm512_slli_epi32(_mm512_set1_epi32(in.s[mb]), Q4 ? 3 : 7);  // · 8 or · 128
      const __m512 dx = _mm512_set1_ps(in.d[mb]);
      ORDO_UNROLL
      for (int z = 0; z < NZ; ++z) {
        const __m512 s = _mm512_mul_ps(dw[z], dx);
        acc[m][z] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(ia[m][z], corr)), s, acc[m][z]);
      }
    }
  }
  ORDO_UNROLL
  for (int m = 0; m < MX; ++m) {
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z) _mm512_storeu_ps(y + m * ldy + 16 * z, acc[m][z]);
  }
}

// One row (decode) × NS whole panels P[s] read side by side (outputs y[s]) over blocks [b0, b1):
// several weight streams in flight keep more of the memory bandwidth busy than one.
template <bool Q4, int NS>
ORDO_BLK512 void decode_512(const BlockInput& in, const uint8_t* const* P, int64_t b0, int64_t b1, float* const* y,
                            bool first) {
  constexpr int64_t kCodes = codes_bytes(fmt_of(Q4)), kStride = stride_of(fmt_of(Q4));
  constexpr int32_t kCorr = Q4 ? 8 : 128;
  constexpr int NZ = 4 * NS;  // slice z: panel z / 4, its 16 rows (z % 4) · 16
  __m512 acc[NZ];
  ORDO_UNROLL
  for (int z = 0; z < NZ; ++z) acc[z] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(y[z / 4] + 16 * (z % 4));
  const __m512i lo4 = _mm512_set1_epi8(0x0F);
  // Q4_0 only: each of its lines carries twice the arithmetic of a Q8_0 line, and the hardware
  // prefetcher alone then falls behind the bandwidth (one-row 4096 x 768 Q4_0 linears read at
  // 62 GB/s where a plain read loop gets 90); asked for 4 blocks ahead they read at 69. Q8_0 reads
  // at 81-84 without it, and 2-3% slower with it.
  constexpr int64_t kAhead = Q4 ? 4 : 0;
  for (int64_t b = b0; b < b1; ++b) {
    if (kAhead > 0 && b + kAhead < b1)
      for (int s = 0; s < NS; ++s) {
        const char* ahead = reinterpret_cast<const char*>(P[s] + (b + kAhead) * kStride);
        for (int64_t l = 0; l < kStride; l += 64) _mm_prefetch(ahead + l, _MM_HINT_T0);
      }
    const int8_t* xb = in.q.data() + b * kB;
    __m512i ia[NZ];
    ORDO_UNROLL
    for (auto& v : ia) v = _mm512_set1_epi32(-kCorr * in.s[b]);
    if constexpr (Q4) {
      ORDO_UNROLL
      for (int h = 0; h < 4; ++h) {
        const __m512i xl = _mm512_set1_epi32(load4(xb + 4 * h)), xh = _mm512_set1_epi32(load4(xb + 16 + 4 * h));
        ORDO_UNROLL
        for (int z = 0; z < NZ; ++z) {
          const __m512i v = _mm512_loadu_si512(P[z / 4] + b * kStride + h * 4 * kP + (z % 4) * 64);
          ia[z] = _mm512_dpbusd_epi32(ia[z], _mm512_and_si512(v, lo4), xl);
          ia[z] = _mm512_dpbusd_epi32(ia[z], _mm512_and_si512(_mm512_srli_epi16(v, 4), lo4), xh);
        }
      }
    } else {
      ORDO_UNROLL
      for (int g = 0; g < 8; ++g) {
        const __m512i xv = _mm512_set1_epi32(load4(xb + 4 * g));
        ORDO_UNROLL
        for (int z = 0; z < NZ; ++z)
          ia[z] =
              _mm512_dpbusd_epi32(ia[z], _mm512_loadu_si512(P[z / 4] + b * kStride + g * 4 * kP + (z % 4) * 64), xv);
      }
    }
    const __m512 dx = _mm512_set1_ps(in.d[b]);
    ORDO_UNROLL
    for (int z = 0; z < NZ; ++z) {
      const __m512 dw = _mm512_cvtph_ps(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(P[z / 4] + b * kStride + kCodes + (z % 4) * 32)));
      acc[z] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[z]), _mm512_mul_ps(dw, dx), acc[z]);
    }
  }
  ORDO_UNROLL
  for (int z = 0; z < NZ; ++z) _mm512_storeu_ps(y[z / 4] + 16 * (z % 4), acc[z]);
}

// quantize_block in 16 lanes: the same operations on each element, so the same codes, scale and sum
// (a prompt's activations: ~10% of its linear time in 8 lanes).
ORDO_BLK512 void quantize_block_512(const float* x, int8_t* q, float* d, int32_t* s) {
  const __m512 inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  const __m512 a0 = _mm512_abs_ps(_mm512_loadu_ps(x)), a1 = _mm512_abs_ps(_mm512_loadu_ps(x + 16));
  if ((_mm512_cmp_ps_mask(a0, inf, _CMP_LT_OQ) & _mm512_cmp_ps_mask(a1, inf, _CMP_LT_OQ)) != 0xFFFF) {
    std::memset(q, 0, kB);
    *d = std::nanf("");
    *s = 0;
    return;
  }
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
  const float id = block_scales(amax, d);
  const __m512 vid = _mm512_set1_ps(id), half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  __m512i qi[2];
  for (int c = 0; c < 2; ++c) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * c), vid);
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 away = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), half, _CMP_GE_OQ);
    const __m512 step = _mm512_maskz_mov_ps(away, _mm512_or_ps(one, _mm512_and_ps(sign, v)));
    qi[c] = _mm512_cvtps_epi32(_mm512_add_ps(t, step));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * c), _mm512_cvtsepi32_epi8(qi[c]));
  }
  *s = _mm512_reduce_add_epi32(_mm512_add_epi32(qi[0], qi[1]));
}

struct Max512 {
  ORDO_BLK512 __m512 operator()(__m512 a, __m512 b) const { return _mm512_max_ps(a, b); }
};
struct AddInt512 {  // int32 lanes carried in __m512
  ORDO_BLK512 __m512 operator()(__m512 a, __m512 b) const {
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  }
};

// Lane j of the result: lanes 0..15 of v[j] reduced by Op (max or +, exact and so in any order),
// for 16 vectors at once: four rounds of shuffles that halve the vectors, 46 operations where 16
// separate reductions take ~130. Op(a, b) on __m512.
template <class Op>
ORDO_BLK512 __m512 reduce16(const __m512* v, Op op) {
  __m512 u[8], w[4], t[2];
  for (int i = 0; i < 8; ++i)  // 256-bit half h of u[i]: 8 partials of v[2i + h]
    u[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 4; ++i)  // 128-bit lane k of w[i]: 4 partials of v[4i + k]
    w[i] = op(_mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0x88), _mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; ++i)  // lane k of t[i]: 2 partials each of v[8i + k] and v[8i + 4 + k]
    t[i] = op(_mm512_shuffle_ps(w[2 * i], w[2 * i + 1], 0x44), _mm512_shuffle_ps(w[2 * i], w[2 * i + 1], 0xEE));
  // Element 4k + i of r: v[4i + k]; the permutation puts v[j] at j.
  const __m512 r = op(_mm512_shuffle_ps(t[0], t[1], 0x88), _mm512_shuffle_ps(t[0], t[1], 0xDD));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}

// quantize_block for 16 consecutive blocks at once, the same codes, scales and sums: each block's
// elements go through quantize_block_512's steps, and the per-block reductions and scales are done
// 16 blocks to a vector. False (nothing written) when a block holds a non-finite value.
ORDO_BLK512 bool quantize_16_blocks_512(const float* x, int8_t* q, float* d, int32_t* s) {
  const __m512 inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  __m512 amax[16];
  __mmask16 ok = 0xFFFF;
  for (int j = 0; j < 16; ++j) {
    const __m512 a0 = _mm512_abs_ps(_mm512_loadu_ps(x + 32 * j)), a1 = _mm512_abs_ps(_mm512_loadu_ps(x + 32 * j + 16));
    ok &= _mm512_cmp_ps_mask(a0, inf, _CMP_LT_OQ) & _mm512_cmp_ps_mask(a1, inf, _CMP_LT_OQ);
    amax[j] = _mm512_max_ps(a0, a1);
  }
  if (ok != 0xFFFF) return false;
  const __m512 am = reduce16(amax, Max512{});
  // block_scales, 16 at once: d = amax / 127 through fp16 (round to nearest even, as f32_to_f16),
  // and the multiplier 1 / d before rounding, 0 where d is 0 or its inverse is not finite.
  const __m512 dd = _mm512_div_ps(am, _mm512_set1_ps(127.0f));
  const __mmask16 nonzero = _mm512_cmp_ps_mask(dd, _mm512_setzero_ps(), _CMP_NEQ_OQ);
  __m512 id = _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(1.0f), dd);
  id = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(id), inf, _CMP_LT_OQ), id);
  _mm512_storeu_ps(d, _mm512_cvtph_ps(_mm512_cvtps_ph(dd, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
  alignas(64) float ids[16];
  _mm512_store_ps(ids, id);
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f), sign = _mm512_set1_ps(-0.0f);
  __m512 sums[16];
  for (int j = 0; j < 16; ++j) {
    const __m512 vid = _mm512_set1_ps(ids[j]);
    __m512i qi[2];
    for (int c = 0; c < 2; ++c) {
      const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + 32 * j + 16 * c), vid);
      const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __mmask16 away = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), half, _CMP_GE_OQ);
      const __m512 step = _mm512_maskz_mov_ps(away, _mm512_or_ps(one, _mm512_and_ps(sign, v)));
      qi[c] = _mm512_cvtps_epi32(_mm512_add_ps(t, step));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * j + 16 * c), _mm512_cvtsepi32_epi8(qi[c]));
    }
    sums[j] = _mm512_castsi512_ps(_mm512_add_epi32(qi[0], qi[1]));
  }
  const __m512 total = reduce16(sums, AddInt512{});
  _mm512_storeu_si512(s, _mm512_castps_si512(total));
  return true;
}

// A row of nb blocks: 16 at a time, the rest (and any group holding a non-finite value) one by one.
ORDO_BLK512 void quantize_row_512(const float* x, int64_t nb, int8_t* q, float* d, int32_t* s) {
  int64_t b = 0;
  for (; b + 16 <= nb; b += 16)
    if (!quantize_16_blocks_512(x + b * kB, q + b * kB, d + b, s + b))
      for (int64_t j = b; j < b + 16; ++j) quantize_block_512(x + j * kB, q + j * kB, d + j, s + j);
  for (; b < nb; ++b) quantize_block_512(x + b * kB, q + b * kB, d + b, s + b);
}

// ---- AVX2 and AVX-VNNI (256-bit) ----------------------------------------------------------------------

// t + a as links of a chain: the empty asm keeps GCC from reassociating a block's products into a
// tree, whose partial sums outnumber the 16 registers (a 2-row tile stored 24-26 per block).
__attribute__((target("avx2"))) inline __m256i ordo_chain16(__m256i t, __m256i a) {
  t = _mm256_add_epi16(t, a);
  asm("" : "+x"(t));
  return t;
}
__attribute__((target("avx2"))) inline __m256i ordo_chain32(__m256i t, __m256i a) {
  t = _mm256_add_epi32(t, a);
  asm("" : "+x"(t));
  return t;
}

// Σ over 4-byte groups of u8 codes × s8 activations into int32 lanes: AVX2 has no vpdpbusd, so
// vpmaddubsw (int16 pairs, no saturation: Q4 codes <= 15; Q8 as |w| × sign-moved x, <= 2·128·127)
// then vpmaddwd by ones. Q8's AVX2 sum is Σ w·x itself (correction 0), the others Σ code·x.
// A Q4 block goes in two steps: STEP adds a group's low and high codes' products into t, DONE adds
// t to the int32 sum. On AVX2 t is int16 lanes (a block's 8 vpmaddubsw pairs: |Σ| <= 8·2·15·128 =
// 30720) and DONE its one vpmaddwd: 9 multiplies per slice and block where there were 16.
#define ORDO_Q4_STEP_AVX2(t, wl, xl, wh, xh) \
  ordo_chain16(ordo_chain16(t, _mm256_maddubs_epi16(wl, xl)), _mm256_maddubs_epi16(wh, xh))
#define ORDO_Q4_DONE_AVX2(acc, t) _mm256_add_epi32(acc, _mm256_madd_epi16(t, ones))
#define ORDO_DOT_AVX2_Q8(acc, w, x)                                                                         \
  ordo_chain32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(_mm256_xor_si256(w, flip)),      \
                                                           _mm256_sign_epi8(x, _mm256_xor_si256(w, flip))), \
                                      ones))
#define ORDO_Q4_STEP_VNNI(t, wl, xl, wh, xh) _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(t, wl, xl), wh, xh)
#define ORDO_Q4_DONE_VNNI(acc, t) _mm256_add_epi32(acc, t)
#define ORDO_DOT_VNNI_Q8(acc, w, x) _mm256_dpbusd_avx_epi32(acc, w, x)

// Q4_K: rows 8z..8z+7's scales d·sc (min: mins dmin·mn) in block b of panel P, in 8 lanes.
__attribute__((target("avx2,fma,f16c"))) inline __m256 q4k_scales8(const uint8_t* P, int64_t b, int64_t z, bool min) {
  constexpr int64_t kS = stride_of(Fmt::Q4K);
  const uint8_t* D = P + ((b & ~int64_t{7}) + z) * kS + kQ4KD + (min ? 16 : 0);
  const uint8_t* c = P + b * kS + (min ? kQ4KMins : kQ4KScales) + 8 * z;
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(D)));
  return _mm256_mul_ps(d,
                       _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c)))));
}

// Block b's weight scales (min: mins) of the 8 rows of slice z: fp16 as stored (Q8_0, Q4_0; no
// mins), fp32 as expanded (Q4KF), or multiplied out (Q4_K).
template <Fmt F>
__attribute__((target("avx2,fma,f16c"))) inline __m256 scales8(const uint8_t* P, int64_t b, int64_t z, bool min) {
  const uint8_t* S = P + b * stride_of(F) + codes_bytes(F);
  if constexpr (F == Fmt::Q4K) return q4k_scales8(P, b, z, min);
  if constexpr (F == Fmt::Q4KF) return _mm256_loadu_ps(reinterpret_cast<const float*>(S + (min ? 4 * kP : 0) + 32 * z));
  return min ? _mm256_setzero_ps() : _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(S + 16 * z)));
}

// Blocks [b0, b1) of Q4_K panel P into Q4KF's layout at the same blocks of `fat`.
__attribute__((target("avx2,fma,f16c"))) void expand_q4k(const uint8_t* P, int64_t b0, int64_t b1, uint8_t* fat) {
  constexpr int64_t kS = stride_of(Fmt::Q4K), kF = stride_of(Fmt::Q4KF), kCodes = codes_bytes(Fmt::Q4KF);
  for (int64_t b = b0; b < b1; ++b) {
    uint8_t* out = fat + b * kF;
    std::memcpy(out, P + b * kS, kCodes);
    for (int64_t z = 0; z < kP / 8; ++z) {
      _mm256_storeu_ps(reinterpret_cast<float*>(out + kCodes + 32 * z), q4k_scales8(P, b, z, false));
      _mm256_storeu_ps(reinterpret_cast<float*>(out + kCodes + 4 * kP + 32 * z), q4k_scales8(P, b, z, true));
    }
  }
}

// tile_512's 256-bit twin (and Q4_K's tile): NZ 8-row slices from slice z0.
#define ORDO_TILE_256(NAME, ATTR, Q4_STEP, Q4_DONE, DOT_Q8, CORR_Q8)                                                \
  template <Fmt F, int MX, int NZ>                                                                                  \
  ATTR void NAME(const BlockInput& in, int64_t m0, const uint8_t* P, int64_t z0, int64_t b0, int64_t b1, float* y,  \
                 int64_t ldy, bool first) {                                                                         \
    constexpr int32_t kCorr = F == Fmt::Q4 ? 8 : has_min(F) ? 0 : CORR_Q8;                                          \
    const int64_t nb = in.K / kB;                                                                                   \
    [[maybe_unused]] const __m256i ones = _mm256_set1_epi16(1);                                                     \
    [[maybe_unused]] const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));                                \
    const __m256i lo4 = _mm256_set1_epi8(0x0F);                                                                     \
    __m256 acc[MX][NZ];                                                                                             \
    ORDO_UNROLL                                                                                                     \
    for (int m = 0; m < MX; ++m) {                                                                                  \
      ORDO_UNROLL                                                                                                   \
      for (int z = 0; z < NZ; ++z) acc[m][z] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + m * ldy + 8 * z);  \
    }                                                                                                               \
    for (int64_t b = b0; b < b1; ++b) {                                                                             \
      const uint8_t* B = P + b * stride_of(F);                                                                      \
      const int8_t* xb = in.q.data() + m0 * in.K + b * kB;                                                          \
      __m256i ia[MX][NZ];                                                                                           \
      ORDO_UNROLL                                                                                                   \
      for (int m = 0; m < MX; ++m) {                                                                                \
        ORDO_UNROLL                                                                                                 \
        for (int z = 0; z < NZ; ++z) ia[m][z] = _mm256_set1_epi32(-kCorr * in.s[(m0 + m) * nb + b]);                \
      }                                                                                                             \
      if constexpr (nibbles(F)) {                                                                                   \
        __m256i t[MX][NZ] = {};                                                                                     \
        ORDO_UNROLL                                                                                                 \
        for (int h = 0; h < 4; ++h) {                                                                               \
          __m256i wl[NZ], wh[NZ];                                                                                   \
          ORDO_UNROLL                                                                                               \
          for (int z = 0; z < NZ; ++z) {                                                                            \
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + h * 4 * kP + (z0 + z) * 32)); \
            wl[z] = _mm256_and_si256(v, lo4);                                                                       \
            wh[z] = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4);                                                 \
          }                                                                                                         \
          ORDO_UNROLL                                                                                               \
          for (int m = 0; m < MX; ++m) {                                                                            \
            const __m256i xl = _mm256_set1_epi32(load4(xb + m * in.K + 4 * h));                                     \
            const __m256i xh = _mm256_set1_epi32(load4(xb + m * in.K + 16 + 4 * h));                                \
            ORDO_UNROLL                                                                                             \
            for (int z = 0; z < NZ; ++z) t[m][z] = Q4_STEP(t[m][z], wl[z], xl, wh[z], xh);                          \
          }                                                                                                         \
        }                                                                                                           \
        ORDO_UNROLL                                                                                                 \
        for (int m = 0; m < MX; ++m) {                                                                              \
          ORDO_UNROLL                                                                                               \
          for (int z = 0; z < NZ; ++z) ia[m][z] = Q4_DONE(ia[m][z], t[m][z]);                                       \
        }                                                                                                           \
      } else {                                                                                                      \
        ORDO_UNROLL                                                                                                 \
        for (int g = 0; g < 8; ++g) {                                                                               \
          __m256i w[NZ];                                                                                            \
          ORDO_UNROLL                                                                                               \
          for (int z = 0; z < NZ; ++z)                                                                              \
            w[z] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + g * 4 * kP + (z0 + z) * 32));            \
          ORDO_UNROLL                                                                                               \
          for (int m = 0; m < MX; ++m) {                                                                            \
            const __m256i xv = _mm256_set1_epi32(load4(xb + m * in.K + 4 * g));                                     \
            ORDO_UNROLL                                                                                             \
            for (int z = 0; z < NZ; ++z) ia[m][z] = DOT_Q8(ia[m][z], w[z], xv);                                     \
          }                                                                                                         \
        }                                                                                                           \
      }                                                                                                             \
      ORDO_UNROLL                                                                                                   \
      for (int z = 0; z < NZ; ++z) {                                                                                \
        const __m256 dw = scales8<F>(P, b, z0 + z, false);                                                          \
        [[maybe_unused]] const __m256 mw = scales8<F>(P, b, z0 + z, true);                                          \
        ORDO_UNROLL                                                                                                 \
        for (int m = 0; m < MX; ++m) {                                                                              \
          const int64_t mb = (m0 + m) * nb + b;                                                                     \
          const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(in.d[mb]));                                             \
          acc[m][z] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[m][z]), s, acc[m][z]);                                  \
          if constexpr (has_min(F))                                                                                 \
            acc[m][z] = _mm256_fnmadd_ps(mw, _mm256_set1_ps(in.d[mb] * static_cast<float>(in.s[mb])), acc[m][z]);   \
        }                                                                                                           \
      }                                                                                                             \
    }                                                                                                               \
    ORDO_UNROLL                                                                                                     \
    for (int m = 0; m < MX; ++m) {                                                                                  \
      ORDO_UNROLL                                                                                                   \
      for (int z = 0; z < NZ; ++z) _mm256_storeu_ps(y + m * ldy + 8 * z, acc[m][z]);                                \
    }                                                                                                               \
  }

ORDO_TILE_256(tile_avx2, __attribute__((target("avx2,fma,f16c"))), ORDO_Q4_STEP_AVX2, ORDO_Q4_DONE_AVX2,
              ORDO_DOT_AVX2_Q8, 0)
ORDO_TILE_256(tile_avx_vnni, __attribute__((target("avx2,fma,f16c,avxvnni"))), ORDO_Q4_STEP_VNNI, ORDO_Q4_DONE_VNNI,
              ORDO_DOT_VNNI_Q8, 128)

// One row (decode) × one panel on AVX2: block after block, each read front to back (group by group,
// its 8-row slices side by side), while the lines of the block two on are requested. The slices'
// integer sums take 8 registers, so the 8 running float sums live in y (L1) and take a load and a
// store per slice and block. On a Zen 3, where a read loop gets ~25 GB/s, one-row linears through
// the tiles (two passes over each chunk, the hardware prefetcher alone) read Q8_0 at 6-12 GB/s and
// Q4_0 at 9-13; here Q8_0 at 10-17 (1 block ahead 11-16, 4 ahead 9-16, 8 ahead 9-14) and Q4_0 at
// 8-17 (one slice's lines after another: 6-15, slower in 17 of 24 interleaved measurements).
// Q4_0: a slice's 8 vpmaddubsw results are added in int16 before one vpmaddwd: each is a pair of
// code · x with code <= 15 and |x| <= 128, so their sum stays within 8 · 3840 = 30720.
template <Fmt F>
__attribute__((target("avx2,fma,f16c"))) void decode_avx2(const BlockInput& in, const uint8_t* P, int64_t nb,
                                                          float* y) {
  constexpr bool Q4 = nibbles(F);
  constexpr int64_t kCodes = codes_bytes(F), kStride = stride_of(F), kAhead = 2;
  const __m256i ones = _mm256_set1_epi16(1), lo4 = _mm256_set1_epi8(0x0F);
  [[maybe_unused]] const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  ORDO_UNROLL
  for (int z = 0; z < 8; ++z) _mm256_storeu_ps(y + 8 * z, _mm256_setzero_ps());
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* B = P + b * kStride;
    if (b + kAhead < nb)
      for (int64_t l = 0; l < kStride; l += 64)
        _mm_prefetch(reinterpret_cast<const char*>(B + kAhead * kStride + l), _MM_HINT_T0);
    const int8_t* xb = in.q.data() + b * kB;
    __m256i ia[8];
    if constexpr (Q4) {
      __m256i t[8];
      ORDO_UNROLL
      for (auto& v : t) v = _mm256_setzero_si256();
      ORDO_UNROLL
      for (int h = 0; h < 4; ++h) {
        const __m256i xl = _mm256_set1_epi32(load4(xb + 4 * h)), xh = _mm256_set1_epi32(load4(xb + 16 + 4 * h));
        ORDO_UNROLL
        for (int z = 0; z < 8; ++z) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + h * 4 * kP + z * 32));
          t[z] =
              ORDO_Q4_STEP_AVX2(t[z], _mm256_and_si256(v, lo4), xl, _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4), xh);
        }
      }
      const __m256i corr = _mm256_set1_epi32(F == Fmt::Q4 ? -8 * in.s[b] : 0);
      ORDO_UNROLL
      for (int z = 0; z < 8; ++z) ia[z] = _mm256_add_epi32(corr, _mm256_madd_epi16(t[z], ones));
    } else {
      ORDO_UNROLL
      for (auto& v : ia) v = _mm256_setzero_si256();
      ORDO_UNROLL
      for (int g = 0; g < 8; ++g) {
        const __m256i xv = _mm256_set1_epi32(load4(xb + 4 * g));
        ORDO_UNROLL
        for (int z = 0; z < 8; ++z)
          ia[z] = ORDO_DOT_AVX2_Q8(ia[z], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + g * 4 * kP + z * 32)),
                                   xv);
      }
    }
    const __m256 dx = _mm256_set1_ps(in.d[b]);
    if constexpr (F == Fmt::Q4K) {
      const __m256 c = _mm256_set1_ps(in.d[b] * static_cast<float>(in.s[b]));
      ORDO_UNROLL
      for (int z = 0; z < 8; ++z) {
        const __m256 dw = scales8<F>(P, b, z, false), mw = scales8<F>(P, b, z, true);
        const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[z]), _mm256_mul_ps(dw, dx), _mm256_loadu_ps(y + 8 * z));
        _mm256_storeu_ps(y + 8 * z, _mm256_fnmadd_ps(mw, c, t));
      }
      continue;
    }
    ORDO_UNROLL
    for (int z = 0; z < 8; ++z) {
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B + kCodes + z * 16)));
      _mm256_storeu_ps(y + 8 * z,
                       _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[z]), _mm256_mul_ps(dw, dx), _mm256_loadu_ps(y + 8 * z)));
    }
  }
}

ORDO_AVX512_WARNINGS_ON

// AVX-VNNI is CPUID leaf 7, subleaf 1, EAX bit 4; clang 14's __builtin_cpu_supports does not
// know the name, so it is read directly.
bool cpu_avx_vnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1u);
}

bool cpu_has(BlockIsa isa) {
  switch (isa) {
    case BlockIsa::Scalar: return true;
    case BlockIsa::Avx2: return true;  // the build's baseline
    case BlockIsa::AvxVnni: return cpu_avx_vnni();
    case BlockIsa::Avx512Vnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

// Row tiles of up to R rows: f(m0, rows).
template <class F>
void row_tiles(int64_t M, int64_t R, F&& f) {
  for (int64_t m0 = 0; m0 < M; m0 += R) f(m0, std::min(R, M - m0));
}

// Blocks [b0, b1) of a panel for M rows. Every tile re-reads the chunk from L1, so with a few rows
// its arithmetic is short and waits on memory unless the next chunk is on its way: [next, next +
// next_bytes) is requested by the tiles as they go, each its share (16 rows of Q8_0: ~25% faster
// from DRAM).
template <bool Q4>
void panel_512(const BlockInput& in, int64_t M, const uint8_t* P, int64_t b0, int64_t b1, float* y, int64_t ldo,
               bool first, const char* next, int64_t next_bytes) {
  if (M == 1) return tile_512<Q4, 1, 4>(in, 0, P, 0, b0, b1, y, ldo, first);
  const int64_t tiles = (M + 5) / 6 * 2, lines = (next_bytes + 63) / 64;
  int64_t t = 0;
  row_tiles(M, 6, [&](int64_t m0, int64_t rows) {
    for (int64_t z0 = 0; z0 < 4; z0 += 2, ++t) {
      float* ym = y + m0 * ldo + z0 * 16;
      const int64_t l0 = t * lines / tiles, l1 = (t + 1) * lines / tiles;
      const Ahead a{next + 64 * l0, next + 64 * l1, (l1 - l0 + (b1 - b0) - 1) / (b1 - b0)};
      switch (rows) {
        case 6: tile_512<Q4, 6, 2>(in, m0, P, z0, b0, b1, ym, ldo, first, a); break;
        case 5: tile_512<Q4, 5, 2>(in, m0, P, z0, b0, b1, ym, ldo, first, a); break;
        case 4: tile_512<Q4, 4, 2>(in, m0, P, z0, b0, b1, ym, ldo, first, a); break;
        case 3: tile_512<Q4, 3, 2>(in, m0, P, z0, b0, b1, ym, ldo, first, a); break;
        case 2: tile_512<Q4, 2, 2>(in, m0, P, z0, b0, b1, ym, ldo, first, a); break;
        default: tile_512<Q4, 1, 2>(in, m0, P, z0, b0, b1, ym, ldo, first, a);
      }
    }
  });
}

template <Fmt F, bool Vnni>
void panel_256(const BlockInput& in, int64_t M, const uint8_t* P, int64_t b0, int64_t b1, float* y, int64_t ldo,
               bool first) {
  auto tile = [&](auto mx, auto nz, int64_t m0, int64_t z0) {
    constexpr int MX = decltype(mx)::value, NZ = decltype(nz)::value;
    float* ym = y + m0 * ldo + z0 * 8;
    if constexpr (Vnni)
      tile_avx_vnni<F, MX, NZ>(in, m0, P, z0, b0, b1, ym, ldo, first);
    else
      tile_avx2<F, MX, NZ>(in, m0, P, z0, b0, b1, ym, ldo, first);
  };
  using std::integral_constant;
  if (M == 1) {
    for (int64_t z0 = 0; z0 < 8; z0 += 4) tile(integral_constant<int, 1>{}, integral_constant<int, 4>{}, 0, z0);
    return;
  }
  row_tiles(M, 2, [&](int64_t m0, int64_t rows) {
    for (int64_t z0 = 0; z0 < 8; z0 += 2) {
      if (rows == 2)
        tile(integral_constant<int, 2>{}, integral_constant<int, 2>{}, m0, z0);
      else
        tile(integral_constant<int, 1>{}, integral_constant<int, 2>{}, m0, z0);
    }
  });
}
#endif  // ORDO_SIMD && __x86_64__

}  // namespace

int64_t block_stride(DType t) { return stride_of(fmt_of(t)); }

namespace {

// Q4_K rows: each super-block's 8 sub-blocks into blocks 8·sb + s of the panel's row j.
void pack_q4k_panel(const Tensor& W, int64_t p, uint8_t* dst) {
  const int64_t N = W.dim(0), K = W.dim(1), nsb = K / kQ4KBlock;
  const size_t row_bytes = dtype_row_bytes(W.dtype, K);
  const int64_t stride = stride_of(Fmt::Q4K);
  for (int64_t j = 0; j < kP && p * kP + j < N; ++j) {
    const auto* row = static_cast<const uint8_t*>(W.data) + static_cast<size_t>(p * kP + j) * row_bytes;
    for (int64_t sb = 0; sb < nsb; ++sb) {
      const uint8_t* src = row + sb * static_cast<int64_t>(kQ4KBytes);
      uint8_t* D = dst + (8 * sb + j / 8) * stride + kQ4KD + 2 * (j % 8);
      std::memcpy(D, src, 2);           // d
      std::memcpy(D + 16, src + 2, 2);  // dmin
      for (int s = 0; s < 8; ++s) {
        uint8_t* B = dst + (8 * sb + s) * stride;
        const uint8_t* qs = src + 16 + 32 * (s / 2);
        auto code = [&](int l) { return s % 2 ? qs[l] >> 4 : qs[l] & 0x0F; };
        for (int h = 0; h < 4; ++h)
          for (int i = 0; i < 4; ++i)
            B[h * 4 * kP + j * 4 + i] = static_cast<uint8_t>(code(4 * h + i) | code(16 + 4 * h + i) << 4);
        int sc = 0, mn = 0;
        q4_k_scale_min(s, src + 4, &sc, &mn);
        B[kQ4KScales + j] = static_cast<uint8_t>(sc);
        B[kQ4KMins + j] = static_cast<uint8_t>(mn);
      }
    }
  }
}

}  // namespace

void pack_block_panel(const Tensor& W, int64_t p, uint8_t* dst) {
  if (W.dtype == DType::Q4_K) return pack_q4k_panel(W, p, dst);
  const bool q4 = W.dtype == DType::Q4_0;
  const int64_t N = W.dim(0), K = W.dim(1), nb = K / kB;
  const size_t row_bytes = dtype_row_bytes(W.dtype, K), blk = q4 ? 18 : 34;
  const int64_t stride = stride_of(fmt_of(q4)), codes = codes_bytes(fmt_of(q4));
  for (int64_t j = 0; j < kP && p * kP + j < N; ++j) {
    const auto* row = static_cast<const uint8_t*>(W.data) + static_cast<size_t>(p * kP + j) * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* src = row + b * blk;
      uint8_t* B = dst + b * stride;
      for (int g = 0; g < (q4 ? 4 : 8); ++g)
        for (int i = 0; i < 4; ++i)
          B[g * 4 * kP + j * 4 + i] = q4 ? src[2 + 4 * g + i] : static_cast<uint8_t>(src[2 + 4 * g + i] ^ 0x80);
      std::memcpy(B + codes + 2 * j, src, 2);
    }
  }
}

void BlockInput::resize(int64_t M, int64_t k) {
  K = k;
  q.resize(static_cast<size_t>(M * K));
  d.resize(static_cast<size_t>(M * (K / kB)));
  s.resize(static_cast<size_t>(M * (K / kB)));
}

void BlockInput::quantize_row(const float* x, int64_t m) {
  const int64_t nb = K / kB;
#if defined(ORDO_SIMD) && defined(__x86_64__)
  if (block_isa() == BlockIsa::Avx512Vnni)
    return quantize_row_512(x + m * K, nb, q.data() + m * K, d.data() + m * nb, s.data() + m * nb);
#endif
  for (int64_t b = 0; b < nb; ++b)
    quantize_block(x + m * K + b * kB, q.data() + m * K + b * kB, d.data() + m * nb + b, s.data() + m * nb + b);
}

void quantize_blocks(const float* x, int64_t M, int64_t K, BlockInput& in) {
  in.resize(M, K);
  for (int64_t m = 0; m < M; ++m) in.quantize_row(x, m);
}

const char* block_isa_name(BlockIsa isa) {
  switch (isa) {
    case BlockIsa::Scalar: return "scalar";
    case BlockIsa::Avx2: return "avx2";
    case BlockIsa::AvxVnni: return "avx-vnni";
    case BlockIsa::Avx512Vnni: return "avx512-vnni";
  }
  return "?";
}

bool block_isa_supported(BlockIsa isa) {
#if defined(ORDO_SIMD) && defined(__x86_64__)
  return cpu_has(isa);
#else
  return isa == BlockIsa::Scalar;
#endif
}

BlockIsa block_isa() {
#if defined(ORDO_SIMD) && defined(__x86_64__)
  static const BlockIsa isa = [] {
    const char* v = std::getenv("ORDO_MAX_ISA");
    const std::string cap = v ? v : "";
    // ORDO_MAX_ISA=avx2 or avx512 (AVX-512 without VNNI): no VNNI, so the AVX2 kernels.
    if (cap == "avx2" || cap == "avx512") return BlockIsa::Avx2;
    if (cap != "avx-vnni" && cpu_has(BlockIsa::Avx512Vnni)) return BlockIsa::Avx512Vnni;
    return cpu_has(BlockIsa::AvxVnni) ? BlockIsa::AvxVnni : BlockIsa::Avx2;
  }();
  return isa;
#else
  return BlockIsa::Scalar;
#endif
}

void block_panels(BlockIsa isa, const BlockInput& in, int64_t M, const PanelWeight& w, int64_t p0, int64_t p1,
                  float* out, int64_t ldo) {
  const Fmt f = fmt_of(w.dtype);
  const bool q4 = f == Fmt::Q4;
  const int64_t nb = w.K / kB;
  [[maybe_unused]] const int64_t stride = stride_of(f);
  int64_t p = p0;
#if defined(ORDO_SIMD) && defined(__x86_64__)
  if (f == Fmt::Q4K) {  // the AVX2 kernels on every SIMD machine (see the top of this file)
    for (; isa != BlockIsa::Scalar && M == 1 && p < p1; ++p)
      decode_avx2<Fmt::Q4K>(in, static_cast<const uint8_t*>(w.panel(p)), nb, out + (p - p0) * kP);
    if (isa != BlockIsa::Scalar && p < p1) {
      // A chunk of the panel as Q4KF, at its blocks' places (the tiles address blocks by number):
      // room for a whole panel, 48·K bytes per thread (688 KB at K = 14336), of which a chunk is used.
      thread_local std::vector<uint8_t> fat;
      fat.resize(static_cast<size_t>(nb * stride_of(Fmt::Q4KF)));
      for (; p < p1; ++p) {
        const auto* P = static_cast<const uint8_t*>(w.panel(p));
        const int64_t chunk = M > kBatchRows ? kPromptChunkBlocks : kChunkBlocks;
        for (int64_t b0 = 0; b0 < nb; b0 += chunk) {
          const int64_t b1 = std::min(nb, b0 + chunk);
          expand_q4k(P, b0, b1, fat.data());
          panel_256<Fmt::Q4KF, false>(in, M, fat.data(), b0, b1, out + (p - p0) * kP, ldo, b0 == 0);
        }
      }
    }
    if (isa != BlockIsa::Scalar) return;  // the loops below read Q8_0 and Q4_0 panels
  }
  if (isa == BlockIsa::Avx512Vnni && M == 1)  // decode: two panels' streams at once
    for (; p + 2 <= p1; p += 2) {
      const uint8_t* P[2] = {static_cast<const uint8_t*>(w.panel(p)), static_cast<const uint8_t*>(w.panel(p + 1))};
      float* y[2] = {out + (p - p0) * kP, out + (p + 1 - p0) * kP};
      (q4 ? decode_512<true, 2> : decode_512<false, 2>)(in, P, 0, nb, y, true);
    }
  if (isa == BlockIsa::Avx2 && M == 1)
    for (; p < p1; ++p)
      (q4 ? decode_avx2<Fmt::Q4> : decode_avx2<Fmt::Q8>)(in, static_cast<const uint8_t*>(w.panel(p)), nb,
                                                         out + (p - p0) * kP);
#endif
  for (; p < p1; ++p) {
    const auto* P = static_cast<const uint8_t*>(w.panel(p));
    float* y = out + (p - p0) * kP;
    const int64_t chunk = M > kBatchRows ? kPromptChunkBlocks : kChunkBlocks;
    for (int64_t b0 = 0; b0 < nb; b0 += chunk) {
      const int64_t b1 = std::min(nb, b0 + chunk);
      const bool first = b0 == 0;
      switch (isa) {
#if defined(ORDO_SIMD) && defined(__x86_64__)
        case BlockIsa::Avx512Vnni: {
          // The next chunk: this panel's, or past its last the next panel's first (contiguous).
          const char* next = reinterpret_cast<const char*>(P + b1 * stride);
          const int64_t next_bytes = (b1 < nb ? std::min(chunk, nb - b1) : std::min(chunk, nb)) * stride;
          (q4 ? panel_512<true> : panel_512<false>)(in, M, P, b0, b1, y, ldo, first, next, next_bytes);
          continue;
        }
        case BlockIsa::AvxVnni:
          (q4 ? panel_256<Fmt::Q4, true> : panel_256<Fmt::Q8, true>)(in, M, P, b0, b1, y, ldo, first);
          continue;
        case BlockIsa::Avx2:
          (q4 ? panel_256<Fmt::Q4, false> : panel_256<Fmt::Q8, false>)(in, M, P, b0, b1, y, ldo, first);
          continue;
#endif
        default: tile_scalar(f, in, 0, M, P, b0, b1, y, ldo, first);
      }
    }
  }
}

}  // namespace ordo::detail
