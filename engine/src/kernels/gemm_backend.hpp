// Private: the pieces behind linear() and gemm_nt()/gemm_nn(), exposed so the kernel
// microbenchmark can time each backend directly. Not installed.
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

// ---- oneDNN (gemm_onednn.cpp). OpenMP-threaded; sequential inside a parallel region. -------
// Same contract as openblas_gemm, through dnnl_sgemm.
void onednn_gemm(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// At most this many weights per linear_group / panel_group call.
constexpr size_t kMaxGroup = 8;
// linear_group over n targets (an array rather than an initializer_list): the panel kernels, any M,
// each row getting the bits it gets alone.
void linear_targets(Backend be, const float* x, int64_t M, int64_t K, const LinearTarget* targets, size_t n);

}  // namespace ordo::detail
