// OpenBLAS backend (Debian's pthread build: OpenBLAS keeps its own thread pool, sized by
// set_num_threads(); never call these from inside an OpenMP parallel region).
#include <cblas.h>

#include <cstring>

#include "gemm_backend.hpp"

namespace ordo::detail {

void openblas_gemm_nt(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                      const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(M), static_cast<blasint>(N),
              static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta,
              C, static_cast<blasint>(ldc));
}

void openblas_linear(const float* x, int64_t ldx, int64_t M, int64_t K, const float* W, int64_t ldw,
                     int64_t N, const float* bias, float* y, int64_t ldy) {
  float beta = 0.0f;
  if (bias) {  // y ← bias, then y = x·Wᵀ + 1·y: no extra pass over y after the GEMM.
    for (int64_t m = 0; m < M; ++m) std::memcpy(y + m * ldy, bias, static_cast<size_t>(N) * sizeof(float));
    beta = 1.0f;
  }
  openblas_gemm_nt(M, N, K, 1.0f, x, ldx, W, ldw, beta, y, ldy);
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
