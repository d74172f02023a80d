// oneDNN v2.6 backend for gemm_nt / gemm_nn: dnnl_sgemm (row-major BLAS-like entry point), which
// needs no primitive and so suits attention shapes that change every decode step. Debian's libdnnl
// is built on OpenMP, so it uses the calling thread's omp_get_max_threads() and runs sequentially
// inside an OpenMP parallel region.
#include <omp.h>
#include <dnnl.hpp>

#include <string>

#include "address_space.hpp"
#include "gemm_backend.hpp"

namespace ordo::detail {

namespace {

// Address space a oneDNN call may allocate inside the library: JIT code and its bookkeeping, plus
// packed copies of the operands. An allocation failing there throws through oneDNN's C interface
// (the process aborts), so under an address-space limit each call first checks that this much is
// free. Generous on purpose: an Error a little early beats an abort.
// Inside a parallel region every thread of it may be in oneDNN at once, each allocating: the room
// checked is the whole team's (a probe reserves nothing).
size_t onednn_room(int64_t M, int64_t N, int64_t K) {
  const size_t per_call = (size_t(32) << 20) + 2 * sizeof(float) * static_cast<size_t>(M * K + K * N + M * N);
  return per_call * static_cast<size_t>(omp_in_parallel() ? omp_get_num_threads() : 1);
}

}  // namespace

void onednn_gemm(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  require_address_space(onednn_room(M, N, K), "oneDNN's GEMM (its kernels and packed copies of the operands)");
  dnnl_status_t st = dnnl_sgemm('N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success)
    throw Error("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(st)) + ") for M=" + std::to_string(M) +
                " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

}  // namespace ordo::detail

namespace ordo {

std::string onednn_isa() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "sse41";
    case isa::avx: return "avx";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512_core: return "avx512_core";
    case isa::avx512_core_vnni: return "avx512_core_vnni";
    case isa::avx512_core_bf16: return "avx512_core_bf16";
    case isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

}  // namespace ordo
