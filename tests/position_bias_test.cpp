// Schemes that bias attention scores: T5 relative buckets and ALiBi slopes against hand-computed
// values and the BLOOM/MPT conventions.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ordo/position.hpp"
#include "support/golden.hpp"
#include "support/position.hpp"

using namespace ordo;
using namespace ordo::test;
using json = nlohmann::json;

TEST(T5Relative, BucketTable) {
  // num_buckets 32, max_distance 128. Bidirectional: nb 16, max_exact 8, keys after the query
  // (rp > 0) in buckets 16..31; large = 8 + floor(ln(n/8)/ln(16)*8). Causal: nb 32, max_exact 16,
  // future keys in bucket 0; large = 16 + floor(ln(n/16)/ln(8)*16), capped at 31.
  struct Row {
    int64_t rp, bidir, causal;
  };
  const Row rows[] = {
      {0, 0, 0},      {1, 17, 0},   {-1, 1, 1},     {7, 23, 0},    {-7, 7, 7},     {8, 24, 0},     {-8, 8, 8},
      {15, 25, 0},    {-15, 9, 15}, {16, 26, 0},    {-16, 10, 16}, {100, 31, 0},   {-100, 15, 30}, {127, 31, 0},
      {-127, 15, 31}, {128, 31, 0}, {-128, 15, 31}, {500, 31, 0},  {-500, 15, 31},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(t5_relative_bucket(r.rp, true, 32, 128), r.bidir) << "rp " << r.rp << " bidirectional";
    EXPECT_EQ(t5_relative_bucket(r.rp, false, 32, 128), r.causal) << "rp " << r.rp << " causal";
  }
}

TEST(T5Relative, BiasReadsTheBucketEntry) {
  const int64_t H = 3;
  std::vector<float> tab(32 * H);
  for (int64_t b = 0; b < 32; ++b)
    for (int64_t h = 0; h < H; ++h) tab[b * H + h] = static_cast<float>(100 * h + b);
  PositionWeights w;
  w.tensors["relative_bias"] = Tensor::from({32, H}, tab);
  PositionConfig cfg;
  cfg.scheme = "relative";
  for (bool causal : {false, true}) {
    auto s = make(cfg, ctx_of(12, H, 4, causal), w);
    ASSERT_TRUE(s->has_score_bias());
    // A decode step: query at position 300, keys 0..300 (distances up to 300 > max_distance).
    const int32_t qpos = 300;
    std::vector<int32_t> kpos(301);
    std::iota(kpos.begin(), kpos.end(), 0);
    for (int64_t h = 0; h < H; ++h) {
      std::vector<float> scores(kpos.size(), 0.5f);
      s->add_score_bias(scores.data(), h, qpos, kpos.data(), static_cast<int64_t>(kpos.size()));
      for (size_t j = 0; j < kpos.size(); ++j) {
        const int64_t b = t5_relative_bucket(kpos[j] - qpos, !causal, 32, 128);
        ASSERT_EQ(scores[j], 0.5f + tab[b * H + h]) << "causal " << causal << " head " << h << " key " << j;
      }
    }
    // Keys after the query (encoder): bucket 16 + n for small n.
    std::vector<int32_t> after = {301, 305};
    std::vector<float> sc(2, 0.0f);
    s->add_score_bias(sc.data(), 1, qpos, after.data(), 2);
    EXPECT_EQ(sc[0], causal ? 100.0f : 117.0f);
    EXPECT_EQ(sc[1], causal ? 100.0f : 121.0f);
  }
}

TEST(T5Relative, LinearScalingDividesTheDistance) {
  std::vector<float> tab(32);
  std::iota(tab.begin(), tab.end(), 0.0f);
  PositionWeights w;
  w.tensors["relative_bias"] = Tensor::from({32, 1}, tab);
  PositionConfig cfg;
  cfg.scheme = "relative";
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 2.0;
  auto s = make(cfg, ctx_of(4, 1, 4, false), w);
  const int32_t kpos[] = {0, 3, 13, 17, 30, 40};  // rp = -20, -17, -7, -3, +10, +20 from qpos 20
  std::vector<float> sc(6, 0.0f);
  s->add_score_bias(sc.data(), 0, 20, kpos, 6);
  // |rp|/2 floored, sign kept: -10, -8, -3, -1, +5, +10
  EXPECT_EQ(sc[0], static_cast<float>(t5_relative_bucket(-10, true, 32, 128)));
  EXPECT_EQ(sc[1], 8.0f);
  EXPECT_EQ(sc[2], 3.0f);
  EXPECT_EQ(sc[3], 1.0f);
  EXPECT_EQ(sc[4], 21.0f);
  EXPECT_EQ(sc[5], static_cast<float>(t5_relative_bucket(10, true, 32, 128)));
}

TEST(T5Relative, MissingOrMisshapenTableIsAnError) {
  PositionConfig cfg;
  cfg.scheme = "relative";
  EXPECT_NE(error_of([&] { make(cfg, ctx_of(8, 2, 4)); }).find("relative attention bias"), std::string::npos);
  PositionWeights w;
  w.tensors["relative_bias"] = Tensor::zeros({16, 2});
  EXPECT_THROW(make(cfg, ctx_of(8, 2, 4), w), Error);
  w.tensors["relative_bias"] = Tensor::zeros({32, 3});
  EXPECT_THROW(make(cfg, ctx_of(8, 2, 4), w), Error);
}

// ---------------------------------------------------------------- ALiBi

namespace {

// POSITIONS.md: power of 2: 2^(-8h/n), h = 1..n; otherwise the c = 2^floor(log2 n) set, then the
// first n - c odd-indexed slopes 2^(-4k/c), k = 1, 3, 5, ...
std::vector<double> alibi_closed_form(int64_t n) {
  int64_t c = 1;
  while (c * 2 <= n) c *= 2;
  std::vector<double> out;
  for (int64_t h = 1; h <= c; ++h) out.push_back(std::exp2(-8.0 * h / c));
  for (int64_t k = 1; static_cast<int64_t>(out.size()) < n; k += 2) out.push_back(std::exp2(-4.0 * k / c));
  return out;
}

// HF build_mpt_alibi_tensor: N = 2^ceil(log2 n) slopes 1/2^(k*max/N), k = 1..N; for n != N keep
// slopes[1::2] + slopes[::2], first n.
std::vector<double> alibi_mpt(int64_t n, double max_bias) {
  int64_t N = 1;
  while (N < n) N *= 2;
  std::vector<double> s;
  for (int64_t k = 1; k <= N; ++k) s.push_back(1.0 / std::exp2(k * (max_bias / N)));
  if (N == n) return s;
  std::vector<double> out;
  for (int64_t i = 1; i < N; i += 2) out.push_back(s[i]);
  for (int64_t i = 0; i < N; i += 2) out.push_back(s[i]);
  out.resize(n);
  return out;
}

}  // namespace

TEST(Alibi, SlopesMatchClosedForm) {
  for (int64_t n : {1, 2, 4, 8, 12, 16, 24, 32}) {
    std::vector<float> got = alibi_slopes(n, 8.0);
    std::vector<double> want = alibi_closed_form(n);
    ASSERT_EQ(got.size(), want.size());
    for (int64_t h = 0; h < n; ++h) expect_rel_near(got[h], want[h], kRelTol, "n=" + std::to_string(n));
  }
}

TEST(Alibi, TwelveHeadsAndBloom) {
  // 12 heads: 2^-1 .. 2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
  const double e12[] = {1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5};
  std::vector<float> s12 = alibi_slopes(12);
  for (int h = 0; h < 12; ++h) expect_rel_near(s12[h], std::exp2(-e12[h]), kRelTol, "12 heads");
  // BLOOM fixture, 4 heads: 2^-2, 2^-4, 2^-6, 2^-8 (exact).
  EXPECT_EQ(alibi_slopes(4), (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f}));
  EXPECT_EQ(alibi_slopes(1), (std::vector<float>{0.00390625f}));
}

TEST(Alibi, MptConventionAgreesForEveryHeadCount) {
  for (double max_bias : {8.0, 16.0}) {
    for (int64_t n = 1; n <= 64; ++n) {
      std::vector<float> got = alibi_slopes(n, max_bias);
      std::vector<double> want = alibi_mpt(n, max_bias);
      for (int64_t h = 0; h < n; ++h)
        expect_rel_near(got[h], want[h], kRelTol,
                        "mpt n=" + std::to_string(n) + " max_bias=" + std::to_string(max_bias));
    }
  }
}

TEST(Alibi, DecodeStepGetsItsBias) {
  PositionConfig cfg;
  cfg.scheme = "alibi";
  auto causal = make(cfg, ctx_of(32, 4, 8, true));
  auto bidir = make(cfg, ctx_of(32, 4, 8, false));
  const std::vector<float> m = {0.25f, 0.0625f, 0.015625f, 0.00390625f};
  std::vector<int32_t> kpos(11);
  std::iota(kpos.begin(), kpos.end(), 0);
  for (int64_t h = 0; h < 4; ++h) {
    std::vector<float> sc(11, 1.0f);
    causal->add_score_bias(sc.data(), h, 10, kpos.data(), 11);  // one query at position 10
    for (int j = 0; j <= 10; ++j) EXPECT_EQ(sc[j], 1.0f - m[h] * static_cast<float>(10 - j)) << h << " " << j;
    EXPECT_EQ(sc[0], 1.0f - 10.0f * m[h]);  // not 0: the bias uses the real query position
  }
  // Causal form is -m(i-j), not -m|i-j| (a key after the query is masked anyway, but the sign shows the form).
  {
    const int32_t future[] = {12};
    float sc1 = 0.0f;
    causal->add_score_bias(&sc1, 0, 10, future, 1);
    EXPECT_EQ(sc1, 0.5f);
  }
  // Bidirectional: -m|i-j| with keys on both sides.
  const int32_t k2[] = {2, 5, 8};
  std::vector<float> sc(3, 0.0f);
  bidir->add_score_bias(sc.data(), 0, 5, k2, 3);
  EXPECT_EQ(sc, (std::vector<float>{-0.75f, 0.0f, -0.75f}));
}

TEST(Alibi, LinearScalingDividesSlopes) {
  PositionConfig cfg;
  cfg.scheme = "alibi";
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 2.0;
  auto s = make(cfg, ctx_of(32, 4, 8));
  const int32_t k[] = {0};
  float sc = 0.0f;
  s->add_score_bias(&sc, 0, 8, k, 1);
  EXPECT_EQ(sc, -0.125f * 8.0f);
}
