// linear() / gemm_nt() dispatch, the row-major matrix-vector kernels and weight dequantisation.
//
// Routing (see tools/bench_kernels for the measurements behind it):
//   * A Linear with panels (pack_panels; Transformer packs every linear of its spec): the panel
//     kernels of gemm_panels.cpp for every M and dtype — decode steps, batches and prompts alike.
//   * A Linear without panels (built by hand and passed to linear()):
//     - M == 1 and every I8 row: hand-written OpenMP + AVX2/FMA matvec over the row-major
//       weight, converting F16 (F16C) and BF16 (shift) on the fly; I8 uses int16 activations and
//       vpmaddwd. Threads take 256 KB chunks of rows dynamically and read each as kStreams
//       linear streams (see matvec_rows). Several rows run one after another.
//     - M > 1, F32: the chosen backend (OpenBLAS cblas_sgemm or a cached oneDNN matmul).
//     - M > 1, F16/BF16: blocks of rows are dequantised into a per-thread F32 scratch (about
//       4 MB) and each block goes through the chosen backend, writing its columns of y.
//   * Threads: everything runs on the one OpenMP pool (see threads.cpp, gemm_openblas.cpp).
//     Called from inside an OpenMP parallel region, every path runs on the calling thread
//     (except parallel_items on the caller's own team; see team.hpp).
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
#include "panels.hpp"
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

// Rows [r0, r1) of every row's output: y[m, r] = W[r, :] · x[m, :] for m < M (y's row stride
// ldy), one row at a time: a Linear without panels (pack_panels) re-reads the weight per row, and
// each row gets what M = 1 gives it.
template <class L>
void matmul_rows(const float* x, int64_t M, int64_t K, const typename L::T* W, int64_t r0, int64_t r1, float* y,
                 int64_t ldy) {
  for (int64_t m = 0; m < M; ++m) matvec_rows<L>(x + m * K, K, W, r0, r1, y + m * ldy);
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

// matvec_i8_rows for M rows of int16 inputs xq [M, K], one row at a time: y[m, r] in units of each
// row's sx.
void matmul_i8_rows(const int16_t* xq, int64_t M, int64_t K, const int8_t* W, int64_t r0, int64_t r1, float* y,
                    int64_t ldy) {
  for (int64_t m = 0; m < M; ++m) matvec_i8_rows(xq + m * K, K, W, r0, r1, y + m * ldy);
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
  // Panels are a copy: a weight replaced after pack_panels would leave them describing another
  // matrix (and the kernels write rows spaced by the panels' N into a y sized by this one's).
  if (w.panels && (w.panels->N != N || w.panels->K != K || w.panels->dtype != W.dtype))
    throw Error(std::string("linear: panels were packed from a ") + dtype_name(w.panels->dtype) + " [" +
                std::to_string(w.panels->N) + ", " + std::to_string(w.panels->K) + "] weight, not this " +
                dtype_name(W.dtype) + " " + W.shape_str() + " (call pack_panels again)");
  return v;
}

}  // namespace

namespace {

// Rows of a Linear without panels that go through the row-major matvec kernels rather than the
// backend's GEMM: a single row (memory-bound: the kernels beat both libraries), and every row of
// an I8 weight, which has no backend path.
bool use_matvec(int64_t M, DType wt) { return M == 1 || wt == DType::I8; }

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
  bool panels = true;
  for (size_t i = 0; i < n; ++i) panels = panels && targets[i].w->panels;
  if (panels) {
    PanelJob pj[kMaxGroup];
    for (size_t i = 0; i < n; ++i) {
      const LinearView v = view_linear(*targets[i].w, K);
      pj[i] = PanelJob{targets[i].w->panels.get(), v.scales, v.bias, targets[i].y};
    }
    ensure_threads();
    panel_group(x, M, K, pj, n);
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
  ensure_threads();
  matvec_group(x, M, K, jobs, n);
}

std::string kernel_isa() { return detail::panel_isa(); }

bool pack_panels(Linear& w) {
  if (!w.present() || w.weight.ndim() != 2) return false;
  w.panels = detail::make_panels(w.weight);
  return true;
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

  if (w.panels) {
    const detail::PanelJob job{w.panels.get(), scales, bias, y};
    detail::panel_group(x, M, K, &job, 1);
    return;
  }
  if (use_matvec(M, W.dtype)) {
    const detail::MatvecJob job{W.data, W.dtype, scales, bias, N, y};
    detail::matvec_group(x, M, K, &job, 1);
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
