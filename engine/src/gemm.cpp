// linear / gemm_nt dispatch.
#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "ordo/ops.hpp"

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
  throw Error("unknown backend '" + name + "' (valid: openblas, onednn)");
}

void gemm_nt(Backend, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  num_threads();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb,
              beta, C, (int)ldc);
}

void linear(Backend be, const float* x, int64_t M, int64_t K, const Linear& w, float* y) {
  if (w.weight.ndim() != 2) throw Error("linear: weight must be 2-D, got " + w.weight.shape_str());
  const int64_t N = w.out_features();
  if (w.in_features() != K)
    throw Error("linear: input has " + std::to_string(K) + " features but weight is " + w.weight.shape_str());
  const float* W = nullptr;
  std::vector<float> deq;
  switch (w.weight.dtype) {
    case DType::F32: W = w.weight.f32(); break;
    case DType::F16:
    case DType::BF16: {
      Tensor t = w.weight.to_f32();
      deq.assign(t.f32(), t.f32() + N * K);
      W = deq.data();
      break;
    }
    case DType::I8: {
      if (w.scales.empty()) throw Error("linear: I8 weight without scales");
      deq.resize(N * K);
      const int8_t* q = static_cast<const int8_t*>(w.weight.data);
      const float* s = w.scales.f32();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) deq[n * K + k] = q[n * K + k] * s[n];
      W = deq.data();
      break;
    }
  }
  gemm_nt(be, M, N, K, 1.0f, x, K, W, K, 0.0f, y, N);
  if (!w.bias.empty()) {
    const float* b = w.bias.f32();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[m * N + n] += b[n];
  }
}

}  // namespace ordo
