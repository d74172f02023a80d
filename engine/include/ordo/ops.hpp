// Compute kernels. Every op's contract sits beside its declaration: shapes are
// row-major, "[M, K]" means M rows of K contiguous floats. All ops compute in F32.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "ordo/tensor.hpp"

namespace ordo {

// ---- GEMM backends (gemm_nt / gemm_nn: attention over a prompt) -------------

enum class Backend { OpenBLAS, OneDNN };

const char* backend_name(Backend b);
// Parses "openblas" / "onednn" (case-insensitive); throws Error naming the value otherwise.
Backend parse_backend(const std::string& name);

// A weight of any dtype in ordo's panel layout, read by the batch-invariant kernels (opaque;
// pack_panels).
struct PanelWeight;

// A linear layer's parameters. weight is [N, K] (out, in) like nn.Linear; bias is [N] or empty.
// weight may be F32, F16, BF16, or I8 with per-output-row `scales` [N] (F32).
struct Linear {
  Tensor weight;
  Tensor bias;
  Tensor scales;
  // Optional (pack_panels, done by Transformer for every linear of its spec): the weight in panel
  // layout, which linear() then reads for every M instead of packing `weight` (see linear()). Packing a
  // whole spec may release `weight`'s values (pack_panels(ModelSpec&)): weight then keeps its
  // shape and dtype with no data, and the panels are the only copy.
  std::shared_ptr<const PanelWeight> panels;
  bool present() const { return !weight.empty() || panels != nullptr; }
  int64_t out_features() const { return weight.dim(0); }
};

// y[M, N] = x[M, K] · Wᵀ + b.
// x and y must not alias. Throws Error if K does not match the weight.
// Every M and dtype runs on ordo's panel kernels, which read each weight once for all rows (AVX2,
// or AVX-512 where the CPU has it, chosen at run time; F16/BF16 converted on the fly; I8 weights
// times x rounded to 16-bit fixed point, relative error <= 3.1e-5 of max|x|, with integer
// multiply-adds). Each output is computed in one fixed order, so a row's result is bit for bit the
// same whatever the other rows, the row count or the instruction set. A Linear without panels
// (pack_panels) is packed for the call, a copy of the weight each time: pack it once to call
// linear() repeatedly. `be` is not used (linear layers never go through a GEMM backend); it stays
// for source compatibility.
// Thread-safe; may be called from inside an OpenMP parallel region (it then runs on the calling
// thread), otherwise it uses num_threads() threads.
void linear(Backend be, const float* x, int64_t M, int64_t K, const Linear& w, float* y);

// Copies the weight into the panel layout of ordo's batch kernels (w.panels): F32/F16/BF16/I8,
// one extra copy of the weight. Returns false, leaving w alone, for an absent or non-2-D weight.
// With panels, every output of linear() on the built-in kernels is one FMA chain over k in order
// (I8: exact int32 sums per 512 columns), so a row's result does not depend on the other rows,
// the row count or the instruction set. Replacing w.weight afterwards needs pack_panels again:
// linear() refuses panels whose shape or dtype no longer match the weight.
bool pack_panels(Linear& w);

// Several linears over one input (q/k/v, gate/up): *t.y = x · t.wᵀ + b for each target, with the
// same results as calling linear() on each. They share one parallel region (saving a fork/join
// per weight), at any M. At most 8 targets.
struct LinearTarget {
  const Linear* w;
  float* y;
};
void linear_group(Backend be, const float* x, int64_t M, int64_t K, std::initializer_list<LinearTarget> targets);

// C[M, N] = alpha · A[M, K] · B[N, K]ᵀ + beta · C  (plain F32 GEMM, both backends).
void gemm_nt(Backend be, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
             int64_t ldb, float beta, float* C, int64_t ldc);
// C[M, N] = alpha · A[M, K] · B[K, N] + beta · C. Both GEMMs: leading dimensions are row
// strides; called inside an OpenMP parallel region they run on the calling thread.
void gemm_nn(Backend be, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
             int64_t ldb, float beta, float* C, int64_t ldc);

// Instruction sets in use, chosen at run time: ordo's own kernels ("scalar", "avx2", "avx512",
// "avx512-vnni"; ORDO_MAX_ISA=avx2 or avx512 limits them) and oneDNN's (its cpu_isa, e.g. "avx2",
// "avx512_core_amx"; ONEDNN_MAX_CPU_ISA limits it).
std::string kernel_isa();
std::string onednn_isa();

// ---- threads --------------------------------------------------------------

// Sets the one thread count used by OpenMP kernels, OpenBLAS and oneDNN (0 = all cores).
// All three share the OpenMP pool: OpenBLAS itself is kept single-threaded and its GEMMs are
// split over the OpenMP threads. Default on first use: all cores. Error for n outside
// [0, kMaxThreads]: libgomp cannot start tens of thousands of threads.
constexpr int kMaxThreads = 1024;
void set_num_threads(int n);
int num_threads();

// ---- element-wise and row ops --------------------------------------------

enum class NormKind { RMS, Layer };
enum class Activation { SiLU, GeluErf, GeluTanh, ReLU };

const char* activation_name(Activation a);

// Root-mean-square norm over each row: y = x / sqrt(mean(x²) + eps) · w.   x, y: [M, D]; w: [D].
// y may alias x.
void rmsnorm(const float* x, const float* w, float eps, int64_t M, int64_t D, float* y);

// LayerNorm over each row: y = (x − mean) / sqrt(var + eps) · w + b (b may be null; w may be null
// for weight 1). x, y: [M, D]; y may alias x.
void layernorm(const float* x, const float* w, const float* b, float eps, int64_t M, int64_t D, float* y);

// In place: x[i] = act(x[i]) for n elements.
void activate(Activation a, float* x, int64_t n);

// In place: gate[i] = act(gate[i]) · up[i] (SwiGLU / GeGLU).
void gated_activate(Activation a, float* gate, const float* up, int64_t n);

// In place numerically stable softmax over n values (−inf entries get weight 0).
// If every entry is −inf (a fully masked row) all n outputs are written as 0.
void softmax(float* x, int64_t n);
// softmax() without the final division: in place x[i] = exp(x[i] − max x), returns Σ x[i] (the
// caller divides later, e.g. attention divides its n·hd output instead of n probabilities).
// A fully masked row (every entry −inf) becomes zeros and returns 0.
float softmax_unnormalized(float* x, int64_t n);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);

// Dot product of two length-n vectors.
float dot(const float* a, const float* b, int64_t n);

// y[i] += a · x[i]
void axpy(float a, const float* x, float* y, int64_t n);

}  // namespace ordo
