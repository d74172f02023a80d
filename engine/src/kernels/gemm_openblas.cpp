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
#include <atomic>
#include <cstring>
#include <mutex>

#include "address_space.hpp"
#include "gemm_backend.hpp"
#include "parallel_errors.hpp"

namespace ordo::detail {

namespace {

// Below this many multiply-adds a GEMM is not worth splitting.
constexpr double kSplitMinWork = 1 << 18;
constexpr int64_t kPanelAlign = 16;

// OpenBLAS (0.3.21) takes a work buffer of 128 MiB from a process-wide pool for every call in
// flight and grows the pool when all its buffers are busy; it never frees them. When growing
// fails it retries forever: under `ulimit -v` a call hangs instead of failing. So under an
// address-space limit ordo makes one OpenBLAS call at a time (the pool never needs a second
// buffer), and the call that grows the pool to its one buffer first checks that the address space
// has room for it, with a margin for what other threads allocate meanwhile (the check is not a
// reservation), and is an out-of-memory Error if not. Without a limit nothing is checked or
// serialised.
constexpr size_t kBlasBuffer = size_t(128) << 20;
constexpr size_t kBlasProbe = kBlasBuffer + (size_t(64) << 20);  // the buffer, alignment slack, and a margin

std::atomic<bool> g_has_buffer{false};
std::mutex g_one_call;

class BlasBufferGuard {
 public:
  BlasBufferGuard() {
    if (!address_space_limited()) return;
    lock_ = std::unique_lock<std::mutex>(g_one_call);
    if (g_has_buffer.load()) return;
    if (!address_space_room(kBlasProbe))
      throw out_of_memory("OpenBLAS's work buffer (--backend onednn needs none)", kBlasBuffer);
    grows_ = true;
  }
  ~BlasBufferGuard() {
    if (grows_) g_has_buffer.store(true);
  }
  BlasBufferGuard(const BlasBufferGuard&) = delete;
  BlasBufferGuard& operator=(const BlasBufferGuard&) = delete;

 private:
  bool grows_ = false;
  std::unique_lock<std::mutex> lock_;
};

void sgemm1(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
            int64_t ldb, float beta, float* C, int64_t ldc) {
  const BlasBufferGuard buffer;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda), B,
              static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
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
  ParallelErrors errors;
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t p = 0; p < parts; ++p)
    errors.run([&] {
      const int64_t b = p * panel, n = std::min(panel, len - b);
      if (split_n)  // columns [b, b + n) of C: rows of B (Bᵀ used) or its columns
        sgemm1(trans_b, M, n, K, alpha, A, lda, trans_b ? B + b * ldb : B + b, ldb, beta, C + b, ldc);
      else
        sgemm1(trans_b, n, N, K, alpha, A + b * lda, lda, B, ldb, beta, C + b * ldc, ldc);
    });
  errors.rethrow();
}

}  // namespace ordo::detail
