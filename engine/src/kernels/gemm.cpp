// linear() and gemm_nt()/gemm_nn(): linear layers on the panel kernels, plain GEMMs on a backend.
//
// Routing:
//   * linear() / linear_group(): the panel kernels of gemm_panels.cpp for every M and dtype —
//     decode steps, batches and prompts alike. A Linear with panels (pack_panels; Transformer
//     packs every linear of its spec) is read as packed; one without is packed for the call.
//   * gemm_nt() / gemm_nn() (attention's scores and weighted values over a prompt): the chosen
//     backend, OpenBLAS cblas_sgemm split over the OpenMP threads or oneDNN's dnnl_sgemm.
//   * Threads: everything runs on the one OpenMP pool (see threads.cpp, gemm_openblas.cpp).
//     Called from inside an OpenMP parallel region, every path runs on the calling thread
//     (except parallel_items on the caller's own team; see team.hpp).
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <string>

#include "gemm_backend.hpp"
#include "ordo/ops.hpp"
#include "panels.hpp"

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

namespace {

void check_blas_dims(const char* what, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (d > INT_MAX)
      throw Error(std::string(what) + ": dimension " + std::to_string(d) + " exceeds the BLAS int range");
}

void gemm_checked(Backend be, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const char* what = trans_b ? "gemm_nt" : "gemm_nn";
  if (M < 0 || N < 0 || K < 0) throw Error(std::string(what) + ": negative dimension");
  if (M == 0 || N == 0) return;
  if (lda < K || ldb < (trans_b ? K : N) || ldc < N)
    throw Error(std::string(what) + ": leading dimension too small (M=" + std::to_string(M) +
                " N=" + std::to_string(N) + " K=" + std::to_string(K) + " lda=" + std::to_string(lda) +
                " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) + ")");
  if (K == 0) {  // C = beta·C; beta == 0 overwrites (C may hold garbage), as in BLAS
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = beta == 0.0f ? 0.0f : beta * C[m * ldc + n];
    return;
  }
  detail::ensure_threads();
  if (be == Backend::OneDNN) {
    detail::onednn_gemm(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
    check_blas_dims(what, {M, N, K, lda, ldb, ldc});
    detail::openblas_gemm(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

}  // namespace

void gemm_nt(Backend be, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
             int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_checked(be, true, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_nn(Backend be, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
             int64_t ldb, float beta, float* C, int64_t ldc) {
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

// The panels linear() reads for w: its own, or (a Linear without panels) a copy packed into `tmp`.
const PanelWeight* panels_of(const Linear& w, std::shared_ptr<const PanelWeight>& tmp) {
  if (w.panels) return w.panels.get();
  tmp = detail::make_panels(w.weight);
  return tmp.get();
}

}  // namespace

void linear_group(Backend be, const float* x, int64_t M, int64_t K, std::initializer_list<LinearTarget> targets) {
  detail::linear_targets(be, x, M, K, targets.begin(), targets.size());
}

void detail::linear_targets(Backend be, const float* x, int64_t M, int64_t K, const LinearTarget* targets, size_t n) {
  if (n > kMaxGroup) throw Error("linear_group: at most 8 weights per group");
  if (M < 1 || K <= 0) {
    for (size_t i = 0; i < n; ++i) linear(be, x, M, K, *targets[i].w, targets[i].y);
    return;
  }
  PanelJob pj[kMaxGroup];
  std::shared_ptr<const PanelWeight> tmp[kMaxGroup];
  for (size_t i = 0; i < n; ++i) {
    const LinearView v = view_linear(*targets[i].w, K);
    pj[i] = PanelJob{panels_of(*targets[i].w, tmp[i]), v.scales, v.bias, targets[i].y};
  }
  ensure_threads();
  panel_group(x, M, K, pj, n);
}

std::string kernel_isa() { return detail::panel_isa(); }

bool pack_panels(Linear& w) {
  if (!w.present() || w.weight.ndim() != 2) return false;
  w.panels = detail::make_panels(w.weight);
  return true;
}

void linear(Backend, const float* x, int64_t M, int64_t K, const Linear& w, float* y) {
  const LinearView view = view_linear(w, K);
  const int64_t N = view.N;
  if (M < 0) throw Error("linear: negative M");
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[m * N + n] = view.bias ? view.bias[n] : 0.0f;
    return;
  }
  std::shared_ptr<const PanelWeight> tmp;
  const detail::PanelJob job{panels_of(w, tmp), view.scales, view.bias, y};
  detail::ensure_threads();
  detail::panel_group(x, M, K, &job, 1);
}

}  // namespace ordo
