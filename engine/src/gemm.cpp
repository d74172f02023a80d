// linear() / gemm_nt() dispatch, the M == 1 matrix-vector kernel and weight dequantisation.
//
// Routing (see tools/bench_kernels for the measurements behind it):
//   * M == 1 (decode): hand-written OpenMP + AVX2/FMA matvec for every weight dtype, converting
//     F16 (F16C) and BF16 (shift) on the fly; I8 uses int16 activations and vpmaddwd
//     (matvec_i8). Memory-bound; beats both libraries. 16-bit and 8-bit rows are short, so the
//     kernels prefetch the next row block themselves.
//   * M > 1, F32 weights: the chosen backend (OpenBLAS cblas_sgemm or a cached oneDNN matmul).
//   * M > 1, F16/BF16/I8 weights: blocks of rows are dequantised into a per-thread F32 scratch
//     (about 4 MB) and each block goes through the chosen backend, writing its columns of y;
//     I8 scales and the bias are applied to y afterwards. The weight is never expanded whole.
//   * Threads: everything runs on the one OpenMP pool (see threads.cpp, gemm_openblas.cpp).
//     Called from inside an OpenMP parallel region, every path runs on the calling thread.
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gemm_backend.hpp"
#include "ordo/ops.hpp"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define ORDO_GEMM_SIMD 1
#endif

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

// Below this many weight elements a matvec/dequantisation runs on one thread.
constexpr int64_t kParallelMinElems = 1 << 15;
// Rows per OpenMP work item in matvec (a multiple of the 4-row register block).
constexpr int64_t kMatvecRowsPerTask = 16;
// F32 scratch per dequantised block of rows (elements).
constexpr int64_t kDequantBlockElems = 1 << 20;

// ---- element loaders: 8 lanes (SIMD) or 1 (scalar tail) -----------------------------------
struct LoadF32 {
  using T = float;
  static float one(const T* p) { return *p; }
#ifdef ORDO_GEMM_SIMD
  static __m256 eight(const T* p) { return _mm256_loadu_ps(p); }
#endif
};
struct LoadF16 {
  using T = uint16_t;
  static float one(const T* p) { return f16_to_f32(*p); }
#ifdef ORDO_GEMM_SIMD
  static __m256 eight(const T* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
#endif
};
struct LoadBF16 {
  using T = uint16_t;
  static float one(const T* p) { return bf16_to_f32(*p); }
#ifdef ORDO_GEMM_SIMD
  static __m256 eight(const T* p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
#endif
};
struct LoadI8 {
  using T = int8_t;
  static float one(const T* p) { return static_cast<float>(*p); }
#ifdef ORDO_GEMM_SIMD
  static __m256 eight(const T* p) {
    __m128i b;
    std::memcpy(&b, p, 8);  // movq; the upper half is ignored by cvtepi8_epi32
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  }
#endif
};

#ifdef ORDO_GEMM_SIMD
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

// out[r - r0] = W[r, :] · x for r in [r0, r1).
template <class L>
void matvec_rows(const float* x, int64_t K, const typename L::T* W, int64_t r0, int64_t r1, float* out) {
  int64_t r = r0;
#ifdef ORDO_GEMM_SIMD
  for (; r + 4 <= r1; r += 4) {
    const typename L::T* w0 = W + r * K;
    const typename L::T* w1 = w0 + K;
    const typename L::T* w2 = w1 + K;
    const typename L::T* w3 = w2 + K;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      if constexpr (sizeof(typename L::T) == 2) {
        // Short 16-bit rows interleave badly for the hardware prefetcher (see matvec_i8_rows):
        // stream the next 4-row block in linearly, 128 bytes per step.
        const char* next = reinterpret_cast<const char*>(w0 + 4 * K + 4 * k);
        _mm_prefetch(next, _MM_HINT_T0);
        _mm_prefetch(next + 64, _MM_HINT_T0);
      }
      __m256 xa = _mm256_loadu_ps(x + k), xb = _mm256_loadu_ps(x + k + 8);
      a0 = _mm256_fmadd_ps(L::eight(w0 + k), xa, a0);
      a1 = _mm256_fmadd_ps(L::eight(w1 + k), xa, a1);
      a2 = _mm256_fmadd_ps(L::eight(w2 + k), xa, a2);
      a3 = _mm256_fmadd_ps(L::eight(w3 + k), xa, a3);
      b0 = _mm256_fmadd_ps(L::eight(w0 + k + 8), xb, b0);
      b1 = _mm256_fmadd_ps(L::eight(w1 + k + 8), xb, b1);
      b2 = _mm256_fmadd_ps(L::eight(w2 + k + 8), xb, b2);
      b3 = _mm256_fmadd_ps(L::eight(w3 + k + 8), xb, b3);
    }
    for (; k + 8 <= K; k += 8) {
      __m256 xa = _mm256_loadu_ps(x + k);
      a0 = _mm256_fmadd_ps(L::eight(w0 + k), xa, a0);
      a1 = _mm256_fmadd_ps(L::eight(w1 + k), xa, a1);
      a2 = _mm256_fmadd_ps(L::eight(w2 + k), xa, a2);
      a3 = _mm256_fmadd_ps(L::eight(w3 + k), xa, a3);
    }
    float s0 = hsum(_mm256_add_ps(a0, b0)), s1 = hsum(_mm256_add_ps(a1, b1));
    float s2 = hsum(_mm256_add_ps(a2, b2)), s3 = hsum(_mm256_add_ps(a3, b3));
    for (; k < K; ++k) {
      s0 += L::one(w0 + k) * x[k];
      s1 += L::one(w1 + k) * x[k];
      s2 += L::one(w2 + k) * x[k];
      s3 += L::one(w3 + k) * x[k];
    }
    out[r - r0] = s0;
    out[r - r0 + 1] = s1;
    out[r - r0 + 2] = s2;
    out[r - r0 + 3] = s3;
  }
#endif
  for (; r < r1; ++r) {
    const typename L::T* w = W + r * K;
    int64_t k = 0;
    float s = 0.0f;
#ifdef ORDO_GEMM_SIMD
    __m256 a = _mm256_setzero_ps(), b = a;
    for (; k + 16 <= K; k += 16) {
      a = _mm256_fmadd_ps(L::eight(w + k), _mm256_loadu_ps(x + k), a);
      b = _mm256_fmadd_ps(L::eight(w + k + 8), _mm256_loadu_ps(x + k + 8), b);
    }
    for (; k + 8 <= K; k += 8) a = _mm256_fmadd_ps(L::eight(w + k), _mm256_loadu_ps(x + k), a);
    s = hsum(_mm256_add_ps(a, b));
#endif
    for (; k < K; ++k) s += L::one(w + k) * x[k];
    out[r - r0] = s;
  }
}

template <class L>
void matvec_t(const float* x, int64_t K, const void* Wv, const float* scales, const float* bias, int64_t N,
              float* y) {
  const auto* W = static_cast<const typename L::T*>(Wv);
  const int64_t tasks = (N + kMatvecRowsPerTask - 1) / kMatvecRowsPerTask;
  const bool par = N * K >= kParallelMinElems && !omp_in_parallel();
  const int nt = par ? ensure_threads() : 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t r0 = t * kMatvecRowsPerTask, r1 = std::min(N, r0 + kMatvecRowsPerTask);
    matvec_rows<L>(x, K, W, r0, r1, y + r0);
    for (int64_t r = r0; r < r1; ++r) {
      float v = y[r];
      if (scales) v *= scales[r];
      if (bias) v += bias[r];
      y[r] = v;
    }
  }
}

#ifdef ORDO_GEMM_SIMD
// ---- I8 weights at decode: int16 activations, integer multiply-adds -------------------------
// Converting every int8 weight to float (vpmovsxbd + vcvtdq2ps + FMA: 3 uops per 8 weights) makes
// the I8 matvec compute-bound well below memory bandwidth. Instead x is quantised once per call to
// 16-bit fixed point (xq = round(x / sx), |xq| <= 16383, sx = max|x| / 16383: error <= 3.1e-5 of
// max|x|, ~100x below the int8 weights' own rounding) and each row is Σ w·xq in int32 with
// vpmaddwd (2 uops per 16 weights), flushed to float every kI8Block columns so it cannot overflow
// (2·127·16383 per lane and step, 256 steps < 2^31), then y = sum · sx · scale[row].
constexpr int64_t kI8Block = 4096;
constexpr float kXqMax = 16383.0f;

inline __m256i load_w16(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

void matvec_i8_rows(const int16_t* xq, int64_t K, const int8_t* W, int64_t r0, int64_t r1, float* out) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const int8_t* w0 = W + r * K;
    const int8_t* w1 = w0 + K;
    const int8_t* w2 = w1 + K;
    const int8_t* w3 = w2 + K;
    __m256 f0 = _mm256_setzero_ps(), f1 = f0, f2 = f0, f3 = f0;
    int32_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (int64_t kb = 0; kb < K; kb += kI8Block) {
      const int64_t ke = std::min(K, kb + kI8Block);
      __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
      int64_t k = kb;
      for (; k + 16 <= ke; k += 16) {
        // 4 short rows (K bytes each) interleave badly for the hardware prefetcher: stream the next
        // 4-row block (contiguous, 4·K bytes) in linearly, one cache line per 64 weights consumed.
        _mm_prefetch(reinterpret_cast<const char*>(w0 + 4 * K + 4 * k), _MM_HINT_T0);
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + k));
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(load_w16(w0 + k), xv));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(load_w16(w1 + k), xv));
        a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(load_w16(w2 + k), xv));
        a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(load_w16(w3 + k), xv));
      }
      for (; k < ke; ++k) {
        t0 += w0[k] * xq[k];
        t1 += w1[k] * xq[k];
        t2 += w2[k] * xq[k];
        t3 += w3[k] * xq[k];
      }
      f0 = _mm256_add_ps(f0, _mm256_cvtepi32_ps(a0));
      f1 = _mm256_add_ps(f1, _mm256_cvtepi32_ps(a1));
      f2 = _mm256_add_ps(f2, _mm256_cvtepi32_ps(a2));
      f3 = _mm256_add_ps(f3, _mm256_cvtepi32_ps(a3));
    }
    out[r - r0] = hsum(f0) + static_cast<float>(t0);
    out[r - r0 + 1] = hsum(f1) + static_cast<float>(t1);
    out[r - r0 + 2] = hsum(f2) + static_cast<float>(t2);
    out[r - r0 + 3] = hsum(f3) + static_cast<float>(t3);
  }
  for (; r < r1; ++r) {
    const int8_t* w = W + r * K;
    __m256 f = _mm256_setzero_ps();
    int32_t t = 0;
    for (int64_t kb = 0; kb < K; kb += kI8Block) {
      const int64_t ke = std::min(K, kb + kI8Block);
      __m256i a = _mm256_setzero_si256();
      int64_t k = kb;
      for (; k + 16 <= ke; k += 16)
        a = _mm256_add_epi32(a, _mm256_madd_epi16(load_w16(w + k),
                                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + k))));
      for (; k < ke; ++k) t += w[k] * xq[k];
      f = _mm256_add_ps(f, _mm256_cvtepi32_ps(a));
    }
    out[r - r0] = hsum(f) + static_cast<float>(t);
  }
}

// Returns false (caller uses the float path) when x has no finite maximum.
bool matvec_i8(const float* x, int64_t K, const void* Wv, const float* scales, const float* bias, int64_t N,
               float* y) {
  float mx = 0.0f;
  for (int64_t k = 0; k < K; ++k) mx = std::max(mx, std::fabs(x[k]));
  if (!std::isfinite(mx)) return false;
  thread_local std::vector<int16_t> xq_buf;
  if (xq_buf.size() < static_cast<size_t>(K)) xq_buf.resize(static_cast<size_t>(K));
  int16_t* xq = xq_buf.data();
  const float sx = mx / kXqMax, inv = mx > 0.0f ? kXqMax / mx : 0.0f;
  int64_t k = 0;
  const __m256 vinv = _mm256_set1_ps(inv);
  for (; k + 16 <= K; k += 16) {  // round to nearest, pack to int16 (|v| <= 16383: no saturation)
    __m256i lo = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + k), vinv));
    __m256i hi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8), vinv));
    __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + k), p);
  }
  for (; k < K; ++k) xq[k] = static_cast<int16_t>(std::nearbyint(x[k] * inv));
  const auto* W = static_cast<const int8_t*>(Wv);
  const int64_t tasks = (N + kMatvecRowsPerTask - 1) / kMatvecRowsPerTask;
  const bool par = N * K >= kParallelMinElems && !omp_in_parallel();
  const int nt = par ? ensure_threads() : 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t r0 = t * kMatvecRowsPerTask, r1 = std::min(N, r0 + kMatvecRowsPerTask);
    matvec_i8_rows(xq, K, W, r0, r1, y + r0);
    for (int64_t r = r0; r < r1; ++r) {
      float v = y[r] * sx * scales[r];
      if (bias) v += bias[r];
      y[r] = v;
    }
  }
  return true;
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
#ifdef ORDO_GEMM_SIMD
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

void matvec(const float* x, int64_t K, const void* W, DType wt, const float* scales, const float* bias, int64_t N,
            float* y) {
  switch (wt) {
    case DType::F32: return matvec_t<LoadF32>(x, K, W, nullptr, bias, N, y);
    case DType::F16: return matvec_t<LoadF16>(x, K, W, nullptr, bias, N, y);
    case DType::BF16: return matvec_t<LoadBF16>(x, K, W, nullptr, bias, N, y);
    case DType::I8:
#ifdef ORDO_GEMM_SIMD
      if (matvec_i8(x, K, W, scales, bias, N, y)) return;
#endif
      return matvec_t<LoadI8>(x, K, W, scales, bias, N, y);
  }
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

void gemm_nt(Backend be, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M < 0 || N < 0 || K < 0) throw Error("gemm_nt: negative dimension");
  if (M == 0 || N == 0) return;
  if (lda < K || ldb < K || ldc < N)
    throw Error("gemm_nt: leading dimension too small (M=" + std::to_string(M) + " N=" + std::to_string(N) +
                " K=" + std::to_string(K) + " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) +
                " ldc=" + std::to_string(ldc) + ")");
  if (K == 0) {  // C = beta·C; beta == 0 overwrites (C may hold garbage), as in BLAS
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = beta == 0.0f ? 0.0f : beta * C[m * ldc + n];
    return;
  }
  detail::ensure_threads();
  if (be == Backend::OneDNN) {
    detail::onednn_gemm_nt(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
    detail::check_blas_dims("gemm_nt", {M, N, K, lda, ldb, ldc});
    detail::openblas_gemm_nt(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

void linear(Backend be, const float* x, int64_t M, int64_t K, const Linear& w, float* y) {
  const Tensor& W = w.weight;
  if (W.ndim() != 2) throw Error("linear: weight must be 2-D, got " + W.shape_str());
  const int64_t N = W.dim(0);
  if (W.dim(1) != K)
    throw Error("linear: input has " + std::to_string(K) + " features but the weight is " + W.shape_str() +
                " (expects " + std::to_string(W.dim(1)) + ")");
  const float* bias = nullptr;
  if (!w.bias.empty()) {
    if (w.bias.dtype != DType::F32 || w.bias.numel() != N)
      throw Error("linear: bias must be F32 [" + std::to_string(N) + "], got " + dtype_name(w.bias.dtype) + " " +
                  w.bias.shape_str());
    bias = w.bias.f32();
  }
  const float* scales = nullptr;
  if (W.dtype == DType::I8) {
    if (w.scales.empty() || w.scales.dtype != DType::F32 || w.scales.numel() != N)
      throw Error("linear: I8 weight " + W.shape_str() + " needs F32 scales [" + std::to_string(N) + "]");
    scales = w.scales.f32();
  }
  if (M < 0) throw Error("linear: negative M");
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[m * N + n] = bias ? bias[n] : 0.0f;
    return;
  }
  detail::ensure_threads();

  if (M == 1) {
    detail::matvec(x, K, W.data, W.dtype, scales, bias, N, y);
    return;
  }
  if (be == Backend::OpenBLAS) detail::check_blas_dims("linear", {M, N, K});
  if (W.dtype == DType::F32) {
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
