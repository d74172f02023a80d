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
#include <vector>

#include "ordo/ops.hpp"

namespace ordo {

struct PanelWeight {
  static constexpr int64_t kPanel = 64;
  DType dtype = DType::F32;
  int64_t N = 0, K = 0;
  int64_t Kp = 0;           // K, or K rounded up to even for I8
  int64_t panels = 0;       // ceil(N / kPanel)
  int64_t panel_bytes = 0;  // one panel's bytes
  std::shared_ptr<void> data;
  int64_t panel_elems() const { return Kp * kPanel; }
  const void* panel(int64_t p) const { return static_cast<const char*>(data.get()) + p * panel_bytes; }
};

namespace detail {

// The instruction set the panel kernels use on this CPU: "avx512-vnni", "avx512", "avx2" or
// "scalar". ORDO_MAX_ISA=avx2 keeps them to AVX2 on an AVX-512 machine, ORDO_MAX_ISA=avx512 to
// AVX-512 without VNNI (to test every path); ORDO_MAX_ISA=avx-vnni runs them as AVX2 (and the block
// kernels on AVX-VNNI).
const char* panel_isa();

// The panels of W [N, K] (any dtype; I8 scales stay on the Linear).
std::shared_ptr<const PanelWeight> make_panels(const Tensor& W);

// ---- Q8_0 / Q4_0 / Q4_K panels (gemm_blocks.cpp: layout and arithmetic) ----

// Bytes of one 32-column block of a panel (its 64 rows' codes and scales).
int64_t block_stride(DType t);
// Panel p of the Q8_0 / Q4_0 / Q4_K weight W [N, K] (whole blocks) into dst (zeroed, K / 32 ·
// block_stride).
void pack_block_panel(const Tensor& W, int64_t p, uint8_t* dst);

// Activations quantized per 32-element block as the codec's quantize_q8_0: row m's codes
// q[m·K, (m+1)·K), per block b its scale d[m·K/32 + b] (fp16-rounded) and code sum s[...].
struct BlockInput {
  int64_t K = 0;
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> s;
  void resize(int64_t M, int64_t K);             // room for M rows of K
  void quantize_row(const float* x, int64_t m);  // row m of x [M, K] (after resize)
};
void quantize_blocks(const float* x, int64_t M, int64_t K, BlockInput& in);

// The block kernels' instruction sets. block_isa(): the best this CPU has (AVX-512 VNNI, AVX-VNNI,
// AVX2); ORDO_MAX_ISA=avx2 or avx512 keeps them to AVX2, ORDO_MAX_ISA=avx-vnni to AVX-VNNI.
enum class BlockIsa { Scalar, Avx2, AvxVnni, Avx512Vnni };
BlockIsa block_isa();
const char* block_isa_name(BlockIsa isa);
bool block_isa_supported(BlockIsa isa);
// Raw sums of panels [p0, p1) of w for the M rows of `in` into out (row stride ldo), on `isa`
// (which the CPU must have).
void block_panels(BlockIsa isa, const BlockInput& in, int64_t M, const PanelWeight& w, int64_t p0, int64_t p1,
                  float* out, int64_t ldo);

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
