// Private: the pieces behind linear()/gemm_nt(), exposed so the kernel microbenchmark can time
// each variant directly. Not installed.
#pragma once

#include <cstdint>
#include <memory>

#include "ordo/ops.hpp"
#include "ordo/tensor.hpp"

namespace ordo::detail {

// Thread count for the calling thread: initialises the global count on first use (all cores)
// and re-applies omp_set_num_threads() in threads that have not seen the latest count.
int ensure_threads();

// ---- OpenBLAS (gemm_openblas.cpp): single-threaded OpenBLAS calls, split over the OpenMP
// threads; sequential inside an enclosing parallel region. ----------------------------------
// C = alpha · A · op(B) + beta · C, op(B) = Bᵀ (B[N, K]) if trans_b, else B[K, N].
void openblas_gemm(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// y[M, N] (row stride ldy) = x[M, K] (ldx) · W[N, K] (ldw)ᵀ + bias (bias may be null).
void openblas_linear(const float* x, int64_t ldx, int64_t M, int64_t K, const float* W, int64_t ldw,
                     int64_t N, const float* bias, float* y, int64_t ldy);
// y[N] = W[N, K] · x[K] + bias via cblas_sgemv (single-threaded; for the benchmark).
void openblas_gemv(const float* x, int64_t K, const float* W, int64_t N, const float* bias, float* y);

// ---- oneDNN (gemm_onednn.cpp). OpenMP-threaded; sequential inside a parallel region. -------
// Same contract as openblas_gemm, through dnnl_sgemm.
void onednn_gemm(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// Same contract as openblas_linear, through a cached dnnl::matmul primitive (bias fused).
void onednn_linear(const float* x, int64_t ldx, int64_t M, int64_t K, const float* W, int64_t ldw,
                   int64_t N, const float* bias, float* y, int64_t ldy);
// Number of cached matmul primitives (for tests).
size_t onednn_cache_size();

// ---- row-major matrix-vector kernels (gemm.cpp), for Linears without panels --------------
// One matrix-vector product: y[N] = (W[N, K] · x[K]) · scales[n] + bias[n], converting W from
// `wt` on the fly. scales (I8 only) and bias may be null.
struct MatvecJob {
  const void* W;
  DType wt;
  const float* scales;
  const float* bias;
  int64_t N;
  float* y;
};
// Runs every job on the same x [M, K] as one parallel loop (parallel_items: chunks of rows taken
// dynamically by the decode step's team or one OpenMP region's threads); job j writes
// y[m · N + n]. The M rows run one after another, each re-reading the weight (the batched kernels
// are the panel ones), so every row's result is bit for bit the one M = 1 gives it. At most
// kMaxGroup jobs.
constexpr size_t kMaxGroup = 8;
void matvec_group(const float* x, int64_t M, int64_t K, const MatvecJob* jobs, size_t n_jobs);
// linear_group over n targets. When every target has panels: the panel kernels, any M (each row
// gets what it gets alone). Otherwise, matvec: every row through the matvec kernels, so each
// row's result is the one it gets alone; or as linear() chooses.
void linear_targets(Backend be, const float* x, int64_t M, int64_t K, const LinearTarget* targets, size_t n,
                    bool matvec);
// dst[r, :] = float(W[r0 + r, :]) for r in [0, rows), without applying I8 scales.
void dequantize_rows(const void* W, DType wt, int64_t K, int64_t r0, int64_t rows, float* dst);

}  // namespace ordo::detail
