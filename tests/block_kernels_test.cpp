// The W8A8 / W4A8 block kernels (Q8_0 / Q4_0 / Q4_K weights, activations quantized per 32-element block):
// every instruction-set path the CPU runs against a double-precision reference on the same quantized
// activations and weights (dequantised by the codec), the paths bit-identical to each other, the
// activation quantizer equal to the codec's, and linear() on block weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../engine/src/kernels/panels.hpp"
#include "ordo/ops.hpp"
#include "ordo/quant_blocks.hpp"
#include "ordo/quantize.hpp"
#include "ordo/synthetic.hpp"

namespace {

using ordo::DType;
using ordo::detail::BlockInput;
using ordo::detail::BlockIsa;

std::vector<float> random_values(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(g);
  return v;
}

const BlockIsa kAll[] = {BlockIsa::Scalar, BlockIsa::Avx2, BlockIsa::AvxVnni, BlockIsa::Avx512Vnni};

// Every path this CPU runs (the test names them, so a machine without VNNI shows it ran fewer).
std::vector<BlockIsa> paths() {
  std::vector<BlockIsa> p;
  for (BlockIsa i : kAll)
    if (ordo::detail::block_isa_supported(i)) p.push_back(i);
  return p;
}

// |s·q| + |m| of Q4_K element k of a row (x = s·q - m): the size of the terms the kernel adds apart.
double q4k_magnitude(const uint8_t* row, int64_t k) {
  const uint8_t* sb = row + k / ordo::kQ4KBlock * ordo::kQ4KBytes;
  const int64_t j = k % ordo::kQ4KBlock / 32, l = k % 32;
  int sc = 0, mn = 0;
  ordo::q4_k_scale_min(static_cast<int>(j), sb + 4, &sc, &mn);
  const uint8_t byte = sb[16 + 32 * (j / 2) + l];
  const int q = j % 2 ? byte >> 4 : byte & 0x0F;
  uint16_t d, dmin;
  std::memcpy(&d, sb, 2);
  std::memcpy(&dmin, sb + 2, 2);
  return std::fabs(double(ordo::f16_to_f32(d)) * sc * q) + std::fabs(double(ordo::f16_to_f32(dmin)) * mn);
}

// W [N, K] quantized to `dt` (Q4_K: random blocks) and x [M, K]: each path's raw sums against
// Σ_k ŵ[n][k]·x̂[m][k] in double, ŵ and x̂ the codec's dequantised weights and activations. The
// float path adds one fma per block to a running total and rounds d_w·d_x once: |error| <=
// (blocks + 2)·2^-24·Σ|ŵ·x̂| (+ a denormal's worth). Q4_K adds its min in a second fma per block and
// ŵ is rounded once more, so there the bound is (2·blocks + 4)·2^-24·Σ(|s·q| + |m|)·|x̂|. The paths
// also equal each other bit for bit.
void check_shape(DType dt, int64_t M, int64_t N, int64_t K, uint32_t seed) {
  SCOPED_TRACE(std::string(ordo::weight_dtype_name(dt)) + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
               " K=" + std::to_string(K));
  ordo::Linear q;
  if (dt == DType::Q4_K) {
    q.weight = ordo::random_q4_k(N, K, seed, 0.05f);  // ordo writes no Q4_K: random blocks
  } else {
    ordo::Linear f;
    f.weight = ordo::Tensor::from({N, K}, random_values(N * K, seed, 0.05f));
    q = ordo::convert_linear(f, dt);
  }
  const std::vector<float> x = random_values(M * K, seed + 1);
  // ŵ: the codec's dequantisation of the stored rows (Q4_K's decoder is held to gguf-py's in
  // gguf_reader_test.cpp); mag_w: each weight's size for the bound.
  std::vector<float> w_hat(static_cast<size_t>(N * K)), x_hat(static_cast<size_t>(M * K));
  std::vector<double> mag_w(static_cast<size_t>(N * K));
  const size_t row_bytes = ordo::dtype_row_bytes(dt, K);
  for (int64_t n = 0; n < N; ++n) {
    const auto* row = static_cast<const uint8_t*>(q.weight.data) + n * row_bytes;
    (dt == DType::Q8_0   ? ordo::dequantize_q8_0
     : dt == DType::Q4_0 ? ordo::dequantize_q4_0
                         : ordo::dequantize_q4_k)(row, K, w_hat.data() + n * K);
    for (int64_t k = 0; k < K; ++k)
      mag_w[n * K + k] = dt == DType::Q4_K ? q4k_magnitude(row, k) : std::fabs(double(w_hat[n * K + k]));
  }
  // x̂: the activations as the codec quantizes them (the kernels' quantizer must agree, below).
  std::vector<uint8_t> xb(ordo::q8_0_bytes(K));
  for (int64_t m = 0; m < M; ++m) {
    ordo::quantize_q8_0(x.data() + m * K, K, xb.data());
    ordo::dequantize_q8_0(xb.data(), K, x_hat.data() + m * K);
  }
  const auto panels = ordo::detail::make_panels(q.weight);
  BlockInput in;
  ordo::detail::quantize_blocks(x.data(), M, K, in);
  const int64_t ldo = panels->panels * ordo::PanelWeight::kPanel;
  std::vector<float> first;
  for (BlockIsa isa : paths()) {
    SCOPED_TRACE(ordo::detail::block_isa_name(isa));
    std::vector<float> out(static_cast<size_t>(M * ldo), -1.0f);
    ordo::detail::block_panels(isa, in, M, *panels, 0, panels->panels, out.data(), ldo);
    const double blocks = static_cast<double>(K / 32), terms = dt == DType::Q4_K ? 2 * blocks + 4 : blocks + 2;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          ref += static_cast<double>(w_hat[n * K + k]) * x_hat[m * K + k];
          mag += mag_w[n * K + k] * std::fabs(x_hat[m * K + k]);
        }
        const double got = out[m * ldo + n];
        ASSERT_NEAR(got, ref, terms * std::ldexp(mag, -24) + 1e-30) << "m=" << m << " n=" << n;
      }
    if (first.empty())
      first = out;
    else
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n)
          ASSERT_EQ(out[m * ldo + n], first[m * ldo + n]) << "m=" << m << " n=" << n << " differs from scalar";
  }
}

TEST(BlockKernels, EveryPathMatchesDoubleReference) {
  ASSERT_TRUE(ordo::detail::block_isa_supported(BlockIsa::Scalar));
  uint32_t seed = 1;
  for (DType dt : {DType::Q8_0, DType::Q4_0})
    for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 16})
      for (int64_t N : {64, 100, 130})
        for (int64_t K : {32, 96, 288, 1024}) check_shape(dt, M, N, K, seed++);
}

// Q4_K: whole super-blocks of 256 columns; one row (decode), a batch's rows, and N past a panel.
TEST(BlockKernels, Q4KEveryPathMatchesDoubleReference) {
  uint32_t seed = 100;
  for (int64_t M : {1, 2, 3, 5, 16})
    for (int64_t N : {64, 100, 130})
      for (int64_t K : {256, 768, 2048}) check_shape(DType::Q4_K, M, N, K, seed++);
}

TEST(BlockKernels, PrefillShapes) {
  check_shape(DType::Q8_0, 512, 192, 512, 7);
  check_shape(DType::Q4_0, 67, 256, 2048, 8);
  check_shape(DType::Q8_0, 40, 128, 1280, 9);  // a prompt's 32-block chunks, and a last one of 8
  check_shape(DType::Q4_K, 67, 128, 1280, 10);
}

// The kernels' activation quantizer writes what the codec writes: the same codes and fp16 scale,
// ties (x / d at k + 0.5) rounded away from zero. Rows of 40 blocks: AVX-512 quantizes 16 blocks at a
// time, then the rest one by one. Row 3's blocks span magnitudes from fp16's subnormals to past its
// range; row 2 holds a NaN (its block: codes 0, scale NaN; its group's other blocks as the codec).
TEST(BlockKernels, ActivationQuantizerEqualsCodec) {
  const int64_t K = 40 * 32, nb = K / 32, M = 4;
  std::vector<float> x = random_values(M * K, 11, 3.0f);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 15) * 0.5f;  // block 0: many exact halves of d
  x[0] = 127.0f;                                                          // d = 1: x / d = k + 0.5
  for (int j = 32; j < 64; ++j) x[j] = 0.0f;                              // an all-zero block
  x[2 * K + 20 * 32 + 5] = std::nanf("");
  for (int64_t blk = 0; blk < nb; ++blk)  // row 3: block blk scaled by 10^(blk - 14): 1e-14 .. 1e25
    for (int j = 0; j < 32; ++j) x[3 * K + blk * 32 + j] *= std::pow(10.0f, static_cast<float>(blk - 14));
  BlockInput in;
  ordo::detail::quantize_blocks(x.data(), M, K, in);
  std::vector<uint8_t> b(ordo::q8_0_bytes(K));
  for (int64_t m = 0; m < M; ++m) {
    ordo::quantize_q8_0(x.data() + m * K, K, b.data());
    for (int64_t blk = 0; blk < nb; ++blk) {
      if (m == 2 && blk == 20) {
        EXPECT_TRUE(std::isnan(in.d[m * nb + blk]));
        EXPECT_EQ(in.s[m * nb + blk], 0);
        for (int j = 0; j < 32; ++j) EXPECT_EQ(in.q[m * K + blk * 32 + j], 0);
        continue;
      }
      uint16_t h;
      std::memcpy(&h, b.data() + blk * 34, 2);
      EXPECT_EQ(in.d[m * nb + blk], ordo::f16_to_f32(h)) << m << "," << blk;
      int32_t sum = 0;
      for (int j = 0; j < 32; ++j) {
        const int8_t want = static_cast<int8_t>(b[blk * 34 + 2 + j]);
        EXPECT_EQ(in.q[m * K + blk * 32 + j], want) << m << "," << blk << "," << j;
        sum += want;
      }
      EXPECT_EQ(in.s[m * nb + blk], sum) << m << "," << blk;
    }
  }
  // Block 0 has d = 127 / 127 = 1: x = 0.5 and -6.5 are ties, rounded away from zero.
  EXPECT_EQ(in.q[16], 1);
  EXPECT_EQ(in.q[2], -7);
  // Row 3 reached a scale below fp16's range (0), its subnormals and its infinity.
  EXPECT_EQ(in.d[3 * nb + 4], 0.0f);
  EXPECT_LT(in.d[3 * nb + 10], 6.1e-5f);
  EXPECT_GT(in.d[3 * nb + 10], 0.0f);
  EXPECT_TRUE(std::isinf(in.d[3 * nb + 39]));
}

// linear() on Q8_0 / Q4_0 / Q4_K weights with a bias: the kernels' sums plus the bias, for decode and
// a batch; a non-finite activation makes its row's outputs NaN, not a silent number.
TEST(BlockKernels, LinearAddsBiasAndPropagatesNonFinite) {
  for (DType dt : {DType::Q8_0, DType::Q4_0, DType::Q4_K}) {
    SCOPED_TRACE(ordo::weight_dtype_name(dt));
    const int64_t K = 256;
    ordo::Linear l;
    if (dt == DType::Q4_K) {
      l.weight = ordo::random_q4_k(96, K, 5, 0.1f);
    } else {
      ordo::Linear f;
      f.weight = ordo::Tensor::from({96, K}, random_values(96 * K, 5, 0.1f));
      l = ordo::convert_linear(f, dt);
    }
    l.bias = ordo::Tensor::from({96}, random_values(96, 6));
    const std::vector<float> x = random_values(3 * K, 9);
    std::vector<float> y(3 * 96), y1(96);
    ordo::linear(ordo::Backend::OpenBLAS, x.data(), 3, K, l, y.data());
    ordo::linear(ordo::Backend::OpenBLAS, x.data() + K, 1, K, l, y1.data());
    const auto panels = ordo::detail::make_panels(l.weight);
    BlockInput in;
    ordo::detail::quantize_blocks(x.data(), 3, K, in);
    std::vector<float> raw(3 * 128);
    ordo::detail::block_panels(BlockIsa::Scalar, in, 3, *panels, 0, panels->panels, raw.data(), 128);
    for (int64_t m = 0; m < 3; ++m)
      for (int64_t n = 0; n < 96; ++n) EXPECT_EQ(y[m * 96 + n], raw[m * 128 + n] + l.bias.f32()[n]);
    for (int64_t n = 0; n < 96; ++n) EXPECT_EQ(y1[n], y[96 + n]) << "a row's result depends on the batch";
    std::vector<float> bad = x;
    bad[K + 40] = std::nanf("");
    ordo::linear(ordo::Backend::OpenBLAS, bad.data(), 3, K, l, y.data());
    EXPECT_TRUE(std::isnan(y[96 + 7]));
    EXPECT_FALSE(std::isnan(y[7]));
  }
}

// Q4_K is read, never written: converting to it, or a random one whose rows are not whole
// super-blocks, is an error naming the rule.
TEST(BlockKernels, Q4KIsReadOnlyAndNeedsWholeSuperBlocks) {
  ordo::Linear f;
  f.weight = ordo::Tensor::from({2, 256}, std::vector<float>(512, 1.0f));
  try {
    ordo::convert_linear(f, DType::Q4_K);
    FAIL() << "no error";
  } catch (const ordo::Error& e) {
    EXPECT_STREQ(e.what(),
                 "convert_linear: ordo reads q4_k weights from GGUF files but does not write them (to: q8_0, q4_0)");
  }
  try {
    ordo::random_q4_k(2, 288, 1, 0.1f);
    FAIL() << "no error";
  } catch (const ordo::Error& e) {
    EXPECT_STREQ(e.what(), "a q4_k weight needs a multiple of 256 columns, got [2, 288]");
  }
  EXPECT_EQ(ordo::Tensor::zeros({3, 512}, DType::Q4_K).nbytes(), 3u * 2u * 144u);
  EXPECT_THROW(ordo::q4_k_bytes(288), ordo::Error);
}

TEST(BlockKernels, BlockWeightNeedsWholeBlocks) {
  ordo::Linear f;
  f.weight = ordo::Tensor::from({2, 40}, std::vector<float>(80, 1.0f));
  try {
    ordo::convert_linear(f, DType::Q4_0);
    FAIL() << "no error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ordo::dtype_size(DType::Q8_0), ordo::Error);
  EXPECT_EQ(ordo::parse_weight_dtype("Q4_0"), DType::Q4_0);
  EXPECT_EQ(ordo::Tensor::zeros({3, 64}, DType::Q8_0).nbytes(), 3u * 68u);
}

}  // namespace
