// OpenBLAS backend.
//
// Debian's libopenblas is the pthread build: it has its own thread pool, separate from the
// OpenMP pool our kernels and oneDNN use. Letting both pools run alternately on the same cores
// makes their idle threads spin against each other (an OpenMP kernel right after a threaded
// OpenBLAS call ran ~70x slower on 2 cores; docs/performance.md). So OpenBLAS is pinned to one
// thread (threads.cpp) and we parallelise
// its GEMMs ourselves: the output is split into one panel per OpenMP thread and each thread
// makes its own single-threaded cblas_sgemm call. Inside an enclosing parallel region the call
// simply runs on the calling thread. One pool, never oversubscribed.
#include <cblas.h>

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "gemm_backend.hpp"

namespace ordo::detail {

namespace {

// Below this many multiply-adds a GEMM is not worth splitting.
constexpr double kSplitMinWork = 1 << 18;
constexpr int64_t kPanelAlign = 16;

void sgemm1(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
            int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(M), static_cast<blasint>(N),
              static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta,
              C, static_cast<blasint>(ldc));
}

}  // namespace

void openblas_gemm(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const int nt = omp_in_parallel() ? 1 : ensure_threads();
  if (nt == 1 || double(M) * double(N) * double(K) < kSplitMinWork) {
    sgemm1(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Split the longer output dimension into nt panels (N panels aligned for the packing kernels).
  const bool split_n = N >= M;
  const int64_t len = split_n ? N : M;
  int64_t panel = (len + nt - 1) / nt;
  if (split_n) panel = (panel + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
  const int64_t parts = (len + panel - 1) / panel;
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t b = p * panel, n = std::min(panel, len - b);
    if (split_n)  // columns [b, b + n) of C: rows of B (Bᵀ used) or its columns
      sgemm1(trans_b, M, n, K, alpha, A, lda, trans_b ? B + b * ldb : B + b, ldb, beta, C + b, ldc);
    else
      sgemm1(trans_b, n, N, K, alpha, A + b * lda, lda, B, ldb, beta, C + b * ldc, ldc);
  }
}

void openblas_linear(const float* x, int64_t ldx, int64_t M, int64_t K, const float* W, int64_t ldw,
                     int64_t N, const float* bias, float* y, int64_t ldy) {
  float beta = 0.0f;
  if (bias) {  // y ← bias, then y = x·Wᵀ + 1·y: no extra pass over y after the GEMM.
    for (int64_t m = 0; m < M; ++m) std::memcpy(y + m * ldy, bias, static_cast<size_t>(N) * sizeof(float));
    beta = 1.0f;
  }
  openblas_gemm(true, M, N, K, 1.0f, x, ldx, W, ldw, beta, y, ldy);
}

void openblas_gemv(const float* x, int64_t K, const float* W, int64_t N, const float* bias, float* y) {
  float beta = 0.0f;
  if (bias) {
    std::memcpy(y, bias, static_cast<size_t>(N) * sizeof(float));
    beta = 1.0f;
  }
  cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(N), static_cast<blasint>(K), 1.0f, W,
              static_cast<blasint>(K), x, 1, beta, y, 1);
}

}  // namespace ordo::detail
