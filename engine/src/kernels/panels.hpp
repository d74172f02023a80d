// Private: linear-layer weights in panel layout and the kernels that read them (gemm_panels.cpp).
//
// Layout. W [N, K] is cut into panels of kPanel = 64 output rows (the last one zero-padded); a
// panel stores its rows column by column, k-major: panel p holds W[64p + j, k] at [k][j] (F32,
// F16, BF16), so one k of a panel is 64 consecutive elements, four 512-bit vectors. I8 panels hold
// pairs of columns, [k/2][j][k%2] (K padded to even with zeros), the operand order of
// vpmaddwd/vpdpwssd: each 32-bit lane sums w[j][k]·x[k] + w[j][k+1]·x[k+1].
//
// Kernels (outer product): a tile of up to 6 input rows × 64 outputs lives in registers; each k
// loads the panel's 64 weights once for all rows and multiplies them by each row's x[k]. Every
// output is one FMA chain over k = 0, 1, ..., K−1 from +0 (F32/F16/BF16), whatever the number
// of rows, the tile or the instruction set (AVX-512, AVX2, scalar std::fma): a row of a batch
// gets the bits it gets alone, on every machine. I8: per 512-column block the exact int32 sum of
// w·xq (xq: x in 16-bit fixed point, fixed_point.hpp), added as a float to a running total t, then
// y = fma(t · step, scale, bias) — the same bits for any batch and instruction set, too. Float
// dtypes then add the bias: y = chain + bias.
#pragma once

#include <cstdint>
#include <memory>

#include "ordo/ops.hpp"

namespace ordo {

struct PanelWeight {
  static constexpr int64_t kPanel = 64;
  DType dtype = DType::F32;
  int64_t N = 0, K = 0;
  int64_t Kp = 0;      // K, or K rounded up to even for I8
  int64_t panels = 0;  // ceil(N / kPanel)
  std::shared_ptr<void> data;
  int64_t panel_elems() const { return Kp * kPanel; }
  const void* panel(int64_t p) const {
    return static_cast<const char*>(data.get()) + p * panel_elems() * static_cast<int64_t>(dtype_size(dtype));
  }
};

namespace detail {

// The instruction set the panel kernels use on this CPU: "avx512-vnni", "avx512", "avx2" or
// "scalar". ORDO_MAX_ISA=avx2 keeps them to AVX2 on an AVX-512 machine, ORDO_MAX_ISA=avx512 to
// AVX-512 without VNNI (to test every path).
const char* panel_isa();

// The panels of W [N, K] (any dtype; I8 scales stay on the Linear).
std::shared_ptr<const PanelWeight> make_panels(const Tensor& W);

// One weight of a panel_group call: y[m · N + n] = (x[m] · W[n]) · scales[n] + bias[n].
struct PanelJob {
  const PanelWeight* w;
  const float* scales;  // I8 only
  const float* bias;    // may be null
  float* y;
};

// Runs every job on the same x [M, K] (row stride K) as one parallel loop over panels (on the
// decode step's team, or one OpenMP region). Any M. At most kMaxGroup jobs, each of K columns
// (the caller checks: linear() and linear_group() through view_linear).
void panel_group(const float* x, int64_t M, int64_t K, const PanelJob* jobs, size_t n_jobs);

}  // namespace detail
}  // namespace ordo
