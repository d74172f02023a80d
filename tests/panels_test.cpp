// Panel kernels (pack_panels): every output against its contract computed here element by element
// — the in-order FMA chain for F32/F16/BF16, exact int32 sums per 512 columns for I8, at any row
// count — bit for bit, at row counts that hit every tile shape, widths
// around the 64-row panels and K around the column-pair and block boundaries. Run again by
// Avx2Only.Suite (ORDO_MAX_ISA=avx2) and Avx512NoVnni.Suite (ORDO_MAX_ISA=avx512): the same expected
// bits hold for every kernel, so the results do not depend on the instruction set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ordo/ops.hpp"
#include "support/golden.hpp"

using ordo::Backend;
using ordo::DType;
using ordo::Linear;
using ordo::Tensor;

namespace {

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A linear of dtype dt from random values; w_float holds each weight as the kernels read it.
Linear make_linear(int64_t N, int64_t K, DType dt, bool bias, uint32_t seed, std::vector<float>& w_float) {
  const std::vector<float> src = random_vec(static_cast<size_t>(N * K), seed);
  Linear l;
  l.weight = Tensor::zeros({N, K}, dt);
  w_float.resize(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    switch (dt) {
      case DType::F32:
        l.weight.f32()[i] = src[i];
        w_float[i] = src[i];
        break;
      case DType::F16:
        static_cast<uint16_t*>(l.weight.data)[i] = ordo::f32_to_f16(src[i]);
        w_float[i] = ordo::f16_to_f32(ordo::f32_to_f16(src[i]));
        break;
      case DType::BF16:
        static_cast<uint16_t*>(l.weight.data)[i] = ordo::f32_to_bf16(src[i]);
        w_float[i] = ordo::bf16_to_f32(ordo::f32_to_bf16(src[i]));
        break;
      case DType::I8: {
        const auto q = static_cast<int8_t>(std::lround(src[i] * 127.0f));
        static_cast<int8_t*>(l.weight.data)[i] = q;
        w_float[i] = q;
        break;
      }
      case DType::Q8_0:
      case DType::Q4_0:
      case DType::Q4_K: break;  // not built here: block weights are tested in block_kernels_test.cpp
    }
  }
  if (dt == DType::I8) {
    l.scales = Tensor::zeros({N});
    for (int64_t n = 0; n < N; ++n) l.scales.f32()[n] = 0.5f / 127.0f + 1e-4f * static_cast<float>(n % 7);
  }
  if (bias) l.bias = Tensor::from({N}, random_vec(static_cast<size_t>(N), seed + 1));
  EXPECT_TRUE(ordo::pack_panels(l));
  return l;
}

// The contract for F32/F16/BF16: acc = fma(w[n][k], x[k], acc) for k = 0..K-1 from +0, then + bias.
std::vector<float> fma_chain(const std::vector<float>& w, const Linear& l, const float* x, int64_t M, int64_t N,
                             int64_t K) {
  std::vector<float> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(w[n * K + k], x[m * K + k], acc);
      if (!l.bias.empty()) acc += l.bias.f32()[n];
      y[m * N + n] = acc;
    }
  return y;
}

// The contract for I8: x rounded to 16-bit fixed point (step max|x| / 16383, round to nearest
// even), Σ w·xq exact in int32 per 512 columns, each block added to a float total from 0, then
// fma(total · step, scale[n], bias[n]).
std::vector<float> int8_blocks(const std::vector<float>& w, const Linear& l, const float* x, int64_t M, int64_t N,
                               int64_t K) {
  std::vector<float> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) {
    float mx = 0.0f;
    for (int64_t k = 0; k < K; ++k) mx = std::max(mx, std::fabs(x[m * K + k]));
    const float step = mx / 16383.0f, inv = mx > 0.0f ? 16383.0f / mx : 0.0f;
    std::vector<int32_t> xq(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) xq[k] = static_cast<int32_t>(std::nearbyint(x[m * K + k] * inv));
    for (int64_t n = 0; n < N; ++n) {
      float total = 0.0f;
      for (int64_t k0 = 0; k0 < K; k0 += 512) {
        int32_t s = 0;
        for (int64_t k = k0; k < std::min(K, k0 + 512); ++k) s += static_cast<int32_t>(w[n * K + k]) * xq[k];
        total += static_cast<float>(s);
      }
      y[m * N + n] = std::fma(total * step, l.scales.f32()[n], l.bias.empty() ? 0.0f : l.bias.f32()[n]);
    }
  }
  return y;
}

// Count of outputs whose bits differ (NaNs compared by bits too).
size_t differing(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  size_t d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return d;
}

std::string name(DType dt, int64_t M, int64_t N, int64_t K) {
  return std::string(ordo::dtype_name(dt)) + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
         " K=" + std::to_string(K);
}

}  // namespace

TEST(PanelKernels, EveryOutputIsItsContractBitForBit) {
  uint32_t seed = 1;
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::I8})
    for (int64_t N : {1, 63, 64, 65, 200})
      for (int64_t K : {1, 5, 64, 513, 1030})
        for (int64_t M : {1, 2, 3, 6, 7, 16, 17, 40, 70}) {  // 7-64: chunked; 70: whole panels
          if (M > 7 && N == 200 && K > 64) continue;         // keeps the scalar references quick
          std::vector<float> wf;
          const Linear l = make_linear(N, K, dt, N % 2 == 1, seed++, wf);
          const std::vector<float> x = random_vec(static_cast<size_t>(M * K), seed++, 3.0f);
          std::vector<float> y(static_cast<size_t>(M * N), std::nanf(""));
          ordo::linear(Backend::OneDNN, x.data(), M, K, l, y.data());
          const std::vector<float> want =
              dt == DType::I8 ? int8_blocks(wf, l, x.data(), M, N, K) : fma_chain(wf, l, x.data(), M, N, K);
          EXPECT_EQ(differing(y, want), 0u) << name(dt, M, N, K);
        }
}

TEST(PanelKernels, ARowOfABatchGetsTheBitsItGetsAlone) {
  const int64_t N = 300, K = 768;
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::I8}) {
    std::vector<float> wf;
    const Linear l = make_linear(N, K, dt, true, 77, wf);
    const int64_t M = 23;  // tiles of 6, 6, 6, 5
    const std::vector<float> x = random_vec(static_cast<size_t>(M * K), 78);
    std::vector<float> y(static_cast<size_t>(M * N));
    ordo::linear(Backend::OpenBLAS, x.data(), M, K, l, y.data());
    for (int64_t m = 0; m < M; ++m) {
      std::vector<float> alone(static_cast<size_t>(N));
      ordo::linear(Backend::OpenBLAS, x.data() + m * K, 1, K, l, alone.data());
      EXPECT_EQ(differing(std::vector<float>(y.begin() + m * N, y.begin() + (m + 1) * N), alone), 0u)
          << ordo::dtype_name(dt) << " row " << m;
    }
  }
}

// An I8 row holding a NaN or inf cannot be put in fixed point: it takes the float path (an FMA chain
// over the int8 weights, then scales and bias) and the other rows keep their integer results.
TEST(PanelKernels, Int8RowsWithNanOrInfTakeTheFloatPath) {
  const int64_t N = 70, K = 40, M = 3;
  std::vector<float> wf;
  const Linear l = make_linear(N, K, DType::I8, true, 5, wf);
  std::vector<float> x = random_vec(static_cast<size_t>(M * K), 6);
  x[1 * K + 7] = std::numeric_limits<float>::infinity();
  std::vector<float> y(static_cast<size_t>(M * N));
  ordo::linear(Backend::OneDNN, x.data(), M, K, l, y.data());
  for (int64_t m : {0, 2}) {  // the reference for the finite rows only: it has no float path
    const std::vector<float> ints = int8_blocks(wf, l, x.data() + m * K, 1, N, K);
    for (int64_t n = 0; n < N; ++n) EXPECT_EQ(y[m * N + n], ints[n]) << m << "," << n;
  }
  for (int64_t n = 0; n < N; ++n) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; ++k) acc = std::fma(wf[n * K + k], x[K + k], acc);
    const float want = std::fma(acc, l.scales.f32()[n], l.bias.f32()[n]);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(y[N + n])) << n;
    else
      EXPECT_EQ(y[N + n], want) << n;
  }
}

// A row too small for 16-bit fixed point (1 / step would overflow: max |x| ~1e-36) takes the float
// path too, instead of turning into saturated integers.
TEST(PanelKernels, Int8RowsTooSmallForFixedPointTakeTheFloatPath) {
  const int64_t N = 70, K = 40, M = 2;
  std::vector<float> wf;
  const Linear l = make_linear(N, K, DType::I8, true, 7, wf);
  std::vector<float> x = random_vec(static_cast<size_t>(M * K), 8);
  for (int64_t k = 0; k < K; ++k) x[K + k] *= 1e-36f;
  std::vector<float> y(static_cast<size_t>(M * N));
  ordo::linear(Backend::OneDNN, x.data(), M, K, l, y.data());
  const std::vector<float> ints = int8_blocks(wf, l, x.data(), 1, N, K);
  for (int64_t n = 0; n < N; ++n) EXPECT_EQ(y[n], ints[n]) << n;
  for (int64_t n = 0; n < N; ++n) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; ++k) acc = std::fma(wf[n * K + k], x[K + k], acc);
    EXPECT_EQ(y[N + n], std::fma(acc, l.scales.f32()[n], l.bias.f32()[n])) << n;
  }
}

// Panels are a copy of the weight: replacing the weight without packing again is an error that
// says so, not a read of the old panels (or a write past the new, smaller output).
TEST(PanelKernels, StalePanelsAreRefused) {
  std::vector<float> wf;
  Linear l = make_linear(130, 32, DType::F32, false, 9, wf);
  l.weight = make_linear(64, 32, DType::F32, false, 10, wf).weight;
  const std::vector<float> x = random_vec(32, 11);
  std::vector<float> y(64);
  const std::string err = ordo::test::error_of([&] { ordo::linear(Backend::OneDNN, x.data(), 1, 32, l, y.data()); });
  EXPECT_NE(err.find("panels were packed from a F32 [130, 32] weight"), std::string::npos) << err;
  EXPECT_NE(err.find("call pack_panels again"), std::string::npos) << err;
  ASSERT_TRUE(ordo::pack_panels(l));
  ordo::linear(Backend::OneDNN, x.data(), 1, 32, l, y.data());
  EXPECT_EQ(differing(y, fma_chain(wf, l, x.data(), 1, 64, 32)), 0u);
}

// q/k/v and gate/up run as one parallel loop over all their panels: the same bits as one call each.
TEST(PanelKernels, GroupEqualsSeparateCalls) {
  const int64_t K = 256;
  std::vector<float> wa, wb, wc;
  const Linear a = make_linear(130, K, DType::F32, true, 11, wa);
  const Linear b = make_linear(64, K, DType::I8, false, 12, wb);
  const Linear c = make_linear(200, K, DType::F16, true, 13, wc);
  for (int64_t M : {1, 2, 9}) {
    const std::vector<float> x = random_vec(static_cast<size_t>(M * K), 14);
    std::vector<float> ya(static_cast<size_t>(M * 130)), yb(static_cast<size_t>(M * 64)),
        yc(static_cast<size_t>(M * 200));
    ordo::linear_group(Backend::OneDNN, x.data(), M, K, {{&a, ya.data()}, {&b, yb.data()}, {&c, yc.data()}});
    EXPECT_EQ(differing(ya, fma_chain(wa, a, x.data(), M, 130, K)), 0u) << M;
    EXPECT_EQ(differing(yb, int8_blocks(wb, b, x.data(), M, 64, K)), 0u) << M;
    EXPECT_EQ(differing(yc, fma_chain(wc, c, x.data(), M, 200, K)), 0u) << M;
  }
}

// ORDO_MAX_ISA (set by the Avx2Only and Avx512NoVnni suites) caps the kernels the panels run on.
TEST(PanelKernels, MaxIsaCapsTheKernels) {
  const char* cap = std::getenv("ORDO_MAX_ISA");
  const std::string isa = ordo::kernel_isa();
  const std::vector<std::string> known = {"scalar", "avx2", "avx512", "avx512-vnni"};
  EXPECT_NE(std::find(known.begin(), known.end(), isa), known.end()) << isa;
  if (cap && std::string(cap) == "avx2") {
    EXPECT_TRUE(isa == "avx2" || isa == "scalar") << isa;
  }
  if (cap && std::string(cap) == "avx512") {
    EXPECT_NE(isa, "avx512-vnni");
  }
}
