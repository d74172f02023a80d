// RoPE: rotations against hand-computed angles, and its scalings against the HF-generated llama
// fixtures (tests/data/fixtures/llama*/golden.json "rope").

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

namespace {

PositionConfig rope_cfg(int64_t max_positions = 64) {
  PositionConfig cfg;
  cfg.scheme = "rope";
  cfg.max_positions = max_positions;
  return cfg;
}

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

double dot_in_double(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace

TEST(Rope, HalfSplitRotatesKnownAngles) {
  // head_dim 4, base 1e4: inv_freq = [1, 0.01]; position 1 -> angles 1 and 0.01.
  auto s = make(rope_cfg(), ctx_of(4, 1, 4));
  std::vector<float> x = {1, 2, 3, 4};
  int32_t pos[] = {1};
  s->rotate(x.data(), RotateTarget::Query, 1, pos, 1, 2);
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
  // pairs (x0, x2) at angle 1, (x1, x3) at angle 0.01
  EXPECT_NEAR(x[0], 1 * c1 - 3 * s1, 1e-6);  // -1.9841107
  EXPECT_NEAR(x[2], 3 * c1 + 1 * s1, 1e-6);  //  2.4623779
  EXPECT_NEAR(x[1], 2 * c2 - 4 * s2, 1e-6);
  EXPECT_NEAR(x[3], 4 * c2 + 2 * s2, 1e-6);
  EXPECT_NEAR(x[0], -1.9841107, 1e-6);
}

TEST(Rope, InterleavedRotatesKnownAngles) {
  PositionConfig cfg = rope_cfg();
  cfg.rope_layout = RopeLayout::Interleaved;
  auto s = make(cfg, ctx_of(4, 1, 4));
  std::vector<float> x = {1, 2, 3, 4, /*second head*/ 0, 1, 0, 0};
  int32_t pos[] = {2};
  s->rotate(x.data(), RotateTarget::Query, 2, pos, 1, 3);
  const double c1 = std::cos(2.0), s1 = std::sin(2.0), c2 = std::cos(0.02), s2 = std::sin(0.02);
  // pairs (x0, x1) at angle 2, (x2, x3) at angle 0.02
  EXPECT_NEAR(x[0], 1 * c1 - 2 * s1, 1e-6);
  EXPECT_NEAR(x[1], 2 * c1 + 1 * s1, 1e-6);
  EXPECT_NEAR(x[2], 3 * c2 - 4 * s2, 1e-6);
  EXPECT_NEAR(x[3], 4 * c2 + 3 * s2, 1e-6);
  EXPECT_NEAR(x[4], -s1, 1e-6);
  EXPECT_NEAR(x[5], c1, 1e-6);
}

TEST(Rope, PositionZeroIsIdentity) {
  auto s = make(rope_cfg(), ctx_of(16, 2, 8));
  std::vector<float> x = random_vec(16, 1), y = x;
  int32_t pos[] = {0};
  s->rotate(y.data(), RotateTarget::Query, 2, pos, 1, 1);
  EXPECT_EQ(x, y);
}

TEST(Rope, PartialRotaryLeavesTailUntouchedAndUsesRotaryDim) {
  // head_dim 8, rotary_dim 4: inv_freq over 4 dims = [1, 0.01] (not [1, 0.1, ...] over 8).
  for (RopeLayout layout : {RopeLayout::HalfSplit, RopeLayout::Interleaved}) {
    PositionConfig cfg = rope_cfg();
    cfg.rotary_dim = 4;
    cfg.rope_layout = layout;
    auto s = make(cfg, ctx_of(16, 2, 8));
    std::vector<float> x = random_vec(2 * 2 * 8, 7), orig = x;
    int32_t pos[] = {3, 11};
    s->rotate(x.data(), RotateTarget::Query, 2, pos, 2, 12);
    for (int t = 0; t < 2; ++t)
      for (int h = 0; h < 2; ++h) {
        const float* v = &x[(t * 2 + h) * 8];
        const float* o = &orig[(t * 2 + h) * 8];
        for (int i = 4; i < 8; ++i) EXPECT_EQ(v[i], o[i]);
        // pair 1 rotates by angle pos*0.01
        const int a = layout == RopeLayout::HalfSplit ? 1 : 2, b = 3;
        const double ang = pos[t] * 0.01;
        EXPECT_NEAR(v[a], o[a] * std::cos(ang) - o[b] * std::sin(ang), 1e-5);
        EXPECT_NEAR(v[b], o[b] * std::cos(ang) + o[a] * std::sin(ang), 1e-5);
      }
  }
  PositionConfig bad = rope_cfg();
  bad.rotary_dim = 5;
  EXPECT_THROW(make(bad, ctx_of(16, 2, 8)), Error);
  bad.rotary_dim = 10;
  EXPECT_THROW(make(bad, ctx_of(16, 2, 8)), Error);
}

TEST(Rope, RotationPreservesNorm) {
  for (RopeLayout layout : {RopeLayout::HalfSplit, RopeLayout::Interleaved}) {
    PositionConfig cfg = rope_cfg(32);  // table up to 32, later positions computed per call
    cfg.rope_layout = layout;
    auto s = make(cfg, ctx_of(64, 4, 16));
    std::vector<int32_t> pos = {0, 1, 5, 31, 32, 1000, 70000};
    std::vector<float> x = random_vec(pos.size() * 64, 3), orig = x;
    s->rotate(x.data(), RotateTarget::Query, 4, pos.data(), static_cast<int64_t>(pos.size()), 70001);
    for (size_t t = 0; t < pos.size(); ++t)
      for (int h = 0; h < 4; ++h) {
        const float* v = &x[(t * 4 + h) * 16];
        const float* o = &orig[(t * 4 + h) * 16];
        EXPECT_NEAR(dot_in_double(v, v, 16), dot_in_double(o, o, 16), 1e-4 * dot_in_double(o, o, 16)) << pos[t];
      }
  }
}

TEST(Rope, DotProductDependsOnlyOnRelativePosition) {
  for (RopeLayout layout : {RopeLayout::HalfSplit, RopeLayout::Interleaved}) {
    PositionConfig cfg = rope_cfg(64);
    cfg.rope_layout = layout;
    auto s = make(cfg, ctx_of(16, 1, 16));
    const std::vector<float> q0 = random_vec(16, 11), k0 = random_vec(16, 12);
    auto score = [&](int32_t m, int32_t n) {
      std::vector<float> q = q0, k = k0;
      s->rotate(q.data(), RotateTarget::Query, 1, &m, 1, m + 1);
      s->rotate(k.data(), RotateTarget::Key, 1, &n, 1, n + 1);
      return dot_in_double(q.data(), k.data(), 16);
    };
    for (int32_t delta : {0, 1, 3, 17}) {
      const double ref = score(delta, 0);
      for (int32_t base : {5, 40, 100, 3000}) EXPECT_NEAR(score(base + delta, base), ref, 2e-4) << delta << " " << base;
    }
  }
}

TEST(Rope, LinearScalingDividesPositions) {
  PositionConfig cfg = rope_cfg();
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 4.0;
  auto scaled = make(cfg, ctx_of(16, 1, 16));
  auto plain = make(rope_cfg(), ctx_of(16, 1, 16));
  std::vector<float> a = random_vec(16, 5), b = a;
  int32_t p8 = 8, p2 = 2;
  scaled->rotate(a.data(), RotateTarget::Query, 1, &p8, 1, 9);
  plain->rotate(b.data(), RotateTarget::Query, 1, &p2, 1, 3);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(a[i], b[i], 1e-6);
}

TEST(Rope, NtkStaticMatchesFormula) {
  PositionConfig cfg = rope_cfg();
  cfg.scaling.type = ScalingType::NTK;
  cfg.scaling.factor = 2.0;
  RopeFrequencies f = rope_frequencies(cfg, 16, 0);
  const double base = 1e4 * std::pow(2.0, 16.0 / 14.0);
  ASSERT_EQ(f.inv_freq.size(), 8u);
  for (int i = 0; i < 8; ++i) expect_rel_near(f.inv_freq[i], std::pow(base, -2.0 * i / 16.0), kRelTol, "ntk");
  EXPECT_EQ(f.attention_scaling, 1.0);
}

TEST(Rope, DynamicEqualsDefaultUpToTrainedLength) {
  PositionConfig cfg = rope_cfg(32);
  cfg.scaling.type = ScalingType::Dynamic;
  cfg.scaling.factor = 2.0;
  const RopeFrequencies plain = rope_frequencies(rope_cfg(32), 16, 0);
  for (int64_t L : {0, 1, 12, 31, 32}) EXPECT_EQ(rope_frequencies(cfg, 16, L).inv_freq, plain.inv_freq) << L;
  // Beyond: formula, and the base only ever grows (never negative), even for factor < 1.
  RopeFrequencies f = rope_frequencies(cfg, 16, 80);
  const double base = 1e4 * std::pow(2.0 * 80 / 32 - 1.0, 16.0 / 14.0);
  for (int i = 0; i < 8; ++i) expect_rel_near(f.inv_freq[i], std::pow(base, -2.0 * i / 16.0), kRelTol, "dyn80");
  cfg.scaling.factor = 0.5;
  for (int64_t L : {33, 1000, 1000000}) {
    RopeFrequencies g = rope_frequencies(cfg, 16, L);
    for (int i = 0; i < 8; ++i) {
      EXPECT_TRUE(std::isfinite(g.inv_freq[i]));
      EXPECT_LE(g.inv_freq[i], plain.inv_freq[i]);
      EXPECT_GT(g.inv_freq[i], 0.0f);
    }
  }
}

TEST(Rope, DynamicRotateUsesTheSequenceLength) {
  PositionConfig cfg = rope_cfg(32);
  cfg.scaling.type = ScalingType::Dynamic;
  cfg.scaling.factor = 2.0;
  auto s = make(cfg, ctx_of(16, 1, 16));
  auto plain = make(rope_cfg(32), ctx_of(16, 1, 16));
  const std::vector<float> x0 = random_vec(16, 9);
  int32_t p = 20;
  std::vector<float> a = x0, b = x0, c = x0;
  s->rotate(a.data(), RotateTarget::Query, 1, &p, 1, 21);  // short sequence: unscaled
  plain->rotate(b.data(), RotateTarget::Query, 1, &p, 1, 21);
  EXPECT_EQ(a, b);
  s->rotate(c.data(), RotateTarget::Query, 1, &p, 1, 56);  // same position inside a 56-long sequence: scaled base
  const RopeFrequencies f = rope_frequencies(cfg, 16, 56);
  const float ang = 20.0f * f.inv_freq[1];
  EXPECT_NEAR(c[1], x0[1] * std::cos(ang) - x0[9] * std::sin(ang), 1e-6);
  // HF keeps cached keys as they were: no re-rotation unless asked for.
  EXPECT_FALSE(s->rotation_changes(40, 41));
  cfg.scaling.dynamic_rerotate = true;
  auto r = make(cfg, ctx_of(16, 1, 16));
  EXPECT_TRUE(r->rotation_changes(40, 41));
  EXPECT_TRUE(r->rotation_changes(10, 33));
  EXPECT_FALSE(r->rotation_changes(10, 32));
}

TEST(Rope, YarnMscaleVariants) {
  PositionConfig cfg = rope_cfg(32);
  cfg.scaling.type = ScalingType::YaRN;
  cfg.scaling.factor = 40.0;
  EXPECT_NEAR(rope_frequencies(cfg, 16, 0).attention_scaling, 0.1 * std::log(40.0) + 1.0, 1e-12);
  cfg.scaling.mscale = 0.707;
  cfg.scaling.mscale_all_dim = 0.707;  // DeepSeek-V2: the ratio cancels to 1
  EXPECT_NEAR(rope_frequencies(cfg, 16, 0).attention_scaling, 1.0, 1e-12);
  cfg.scaling.mscale = 1.0;
  EXPECT_NEAR(rope_frequencies(cfg, 16, 0).attention_scaling,
              (0.1 * std::log(40.0) + 1.0) / (0.0707 * std::log(40.0) + 1.0), 1e-12);
  cfg.scaling.attention_factor = 1.5;
  EXPECT_EQ(rope_frequencies(cfg, 16, 0).attention_scaling, 1.5);
}

namespace {

// Builds the PositionConfig the way the llama fixture's config.json describes it.
PositionConfig fixture_config(const json& c, int64_t* head_dim) {
  PositionConfig cfg;
  cfg.scheme = "rope";
  cfg.max_positions = c.at("max_position_embeddings").get<int64_t>();
  cfg.rope_theta = c.value("rope_theta", 10000.0);
  *head_dim = c.contains("head_dim") ? c.at("head_dim").get<int64_t>()
                                     : c.at("hidden_size").get<int64_t>() / c.at("num_attention_heads").get<int64_t>();
  const json& rs = c.at("rope_scaling");
  if (rs.is_null()) return cfg;
  Scaling& s = cfg.scaling;
  s.type = parse_scaling(rs.contains("rope_type") ? rs.at("rope_type").get<std::string>()
                                                  : rs.at("type").get<std::string>());
  s.factor = rs.value("factor", 1.0);
  if (rs.contains("original_max_position_embeddings"))
    s.original_max_positions = rs.at("original_max_position_embeddings").get<int64_t>();
  else if (c.contains("original_max_position_embeddings"))
    s.original_max_positions = c.at("original_max_position_embeddings").get<int64_t>();
  s.beta_fast = rs.value("beta_fast", 32.0);
  s.beta_slow = rs.value("beta_slow", 1.0);
  s.low_freq_factor = rs.value("low_freq_factor", 1.0);
  s.high_freq_factor = rs.value("high_freq_factor", 4.0);
  if (rs.contains("short_factor")) s.short_factor = rs.at("short_factor").get<std::vector<double>>();
  if (rs.contains("long_factor")) s.long_factor = rs.at("long_factor").get<std::vector<double>>();
  if (rs.contains("attention_factor")) s.attention_factor = rs.at("attention_factor").get<double>();
  return cfg;
}

void expect_freqs(const RopeFrequencies& got, const json& want_inv, double want_scale, const std::string& what) {
  std::vector<double> w = want_inv.get<std::vector<double>>();
  ASSERT_EQ(got.inv_freq.size(), w.size()) << what;
  for (size_t i = 0; i < w.size(); ++i)
    expect_rel_near(got.inv_freq[i], w[i], kRelTol, what + " inv_freq[" + std::to_string(i) + "]");
  expect_rel_near(got.attention_scaling, want_scale, 1e-7, what + " attention_scaling");
}

class RopeFixture : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(RopeFixture, InvFreqAndAttentionScalingMatchHF) {
  const std::string dir = std::string(ORDO_TEST_DATA) + "/fixtures/" + GetParam();
  const json config = read_json(dir + "/config.json");
  const json golden = read_json(dir + "/golden.json");
  int64_t head_dim = 0;
  const PositionConfig cfg = fixture_config(config, &head_dim);
  const json& rope = golden.at("rope");

  // At model construction.
  expect_freqs(rope_frequencies(cfg, head_dim, 0), rope.at("inv_freq_at_init"),
               rope.at("attention_scaling_at_init").get<double>(), GetParam() + " at init");

  // Per case: the frequencies in effect for that case's full-sequence forward, both from the
  // formula helper and from what rotate() actually applies.
  auto scheme = make(cfg, ctx_of(head_dim, 1, head_dim));
  for (const json& c : golden.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    const int64_t T = static_cast<int64_t>(c.at("input_ids").size());
    const json& want = rope.at("per_case").at(name);
    const double scale = want.at("attention_scaling").get<double>();
    expect_freqs(rope_frequencies(cfg, head_dim, T), want.at("inv_freq"), scale, GetParam() + " " + name);

    const std::vector<double> inv = want.at("inv_freq").get<std::vector<double>>();
    const int64_t half = head_dim / 2;
    for (int32_t p : {0, 1, static_cast<int32_t>(T / 2), static_cast<int32_t>(T - 1)}) {
      std::vector<float> x = random_vec(static_cast<size_t>(head_dim), static_cast<uint32_t>(p + 1)), orig = x;
      scheme->rotate(x.data(), RotateTarget::Query, 1, &p, 1, T);
      for (int64_t i = 0; i < half; ++i) {
        const float ang = static_cast<float>(p) * static_cast<float>(inv[i]);
        const float c = static_cast<float>(std::cos(ang)) * static_cast<float>(scale);
        const float s = static_cast<float>(std::sin(ang)) * static_cast<float>(scale);
        EXPECT_NEAR(x[i], orig[i] * c - orig[i + half] * s, 1e-5) << name << " p " << p << " i " << i;
        EXPECT_NEAR(x[i + half], orig[i + half] * c + orig[i] * s, 1e-5) << name << " p " << p << " i " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RopeFixture,
                         ::testing::Values("llama", "llama-linear", "llama-dynamic", "llama-yarn", "llama-llama3",
                                           "llama-longrope"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(RopeScaling, DynamicFixtureSeq56DiffersFromInit) {
  const std::string dir = std::string(ORDO_TEST_DATA) + "/fixtures/llama-dynamic";
  int64_t hd = 0;
  const PositionConfig cfg = fixture_config(read_json(dir + "/config.json"), &hd);
  const json golden = read_json(dir + "/golden.json");
  const std::vector<double> at56 =
      golden.at("rope").at("per_case").at("seq56").at("inv_freq").get<std::vector<double>>();
  const std::vector<double> init = golden.at("rope").at("inv_freq_at_init").get<std::vector<double>>();
  EXPECT_NE(at56[1], init[1]);
  const RopeFrequencies f = rope_frequencies(cfg, hd, 56);
  // base' = 1e4 * (2*56/32 - 1)^(16/14)
  const double base = 1e4 * std::pow(2.5, 16.0 / 14.0);
  for (int i = 0; i < 8; ++i) {
    expect_rel_near(f.inv_freq[i], at56[i], kRelTol, "seq56");
    expect_rel_near(f.inv_freq[i], std::pow(base, -i / 8.0), kRelTol, "seq56 formula");
  }
}

TEST(RopeScaling, YarnFixtureMatchesFormula) {
  // d 16, base 1e4, L0 32, s 4: corr_dim(32) = -1.6 -> low 0; corr_dim(1) = 1.41 -> high 2.
  // ramp = [0, .5, 1, ...]: inv_0 kept, inv_1 half/half, the rest / 4.
  int64_t hd = 0;
  const PositionConfig cfg =
      fixture_config(read_json(std::string(ORDO_TEST_DATA) + "/fixtures/llama-yarn/config.json"), &hd);
  const RopeFrequencies f = rope_frequencies(cfg, hd, 0);
  expect_rel_near(f.inv_freq[0], 1.0, kRelTol, "yarn 0");
  expect_rel_near(f.inv_freq[1], 0.5 * std::pow(1e4, -0.125) * (1 + 0.25), kRelTol, "yarn 1");
  for (int i = 2; i < 8; ++i) expect_rel_near(f.inv_freq[i], std::pow(1e4, -i / 8.0) / 4, kRelTol, "yarn i");
  EXPECT_NEAR(f.attention_scaling, 0.1 * std::log(4.0) + 1.0, 1e-12);
}

TEST(RopeScaling, Llama3FixtureMatchesFormula) {
  int64_t hd = 0;
  const PositionConfig cfg =
      fixture_config(read_json(std::string(ORDO_TEST_DATA) + "/fixtures/llama-llama3/config.json"), &hd);
  const RopeFrequencies f = rope_frequencies(cfg, hd, 0);
  // L0 32: lambda_hi 8, lambda_lo 32. wavelengths 2pi*10^(i/2): 6.28 kept, 19.9 smoothed, rest / 8.
  expect_rel_near(f.inv_freq[0], 1.0, kRelTol, "llama3 0");
  const double inv1 = std::pow(1e4, -0.125), sm = (32.0 / (2 * 3.14159265358979323846 / inv1) - 1.0) / 3.0;
  expect_rel_near(f.inv_freq[1], (1 - sm) * inv1 / 8 + sm * inv1, kRelTol, "llama3 1");
  for (int i = 2; i < 8; ++i) expect_rel_near(f.inv_freq[i], std::pow(1e4, -i / 8.0) / 8, kRelTol, "llama3 i");
}

TEST(RopeScaling, LongRopeSwitchesAtOriginalLength) {
  int64_t hd = 0;
  const PositionConfig cfg =
      fixture_config(read_json(std::string(ORDO_TEST_DATA) + "/fixtures/llama-longrope/config.json"), &hd);
  const RopeFrequencies at32 = rope_frequencies(cfg, hd, 32), at33 = rope_frequencies(cfg, hd, 33);
  for (int i = 0; i < 8; ++i) {
    const double inv = std::pow(1e4, -i / 8.0);
    expect_rel_near(at32.inv_freq[i], inv / cfg.scaling.short_factor[i], kRelTol, "short");
    expect_rel_near(at33.inv_freq[i], inv / cfg.scaling.long_factor[i], kRelTol, "long");
  }
  // sqrt(1 + ln(128/32)/ln(32)) in both regimes
  EXPECT_NEAR(at32.attention_scaling, std::sqrt(1 + std::log(4.0) / std::log(32.0)), 1e-12);
  EXPECT_EQ(at32.attention_scaling, at33.attention_scaling);
  auto s = make(cfg, ctx_of(hd, 1, hd));
  EXPECT_FALSE(s->rotation_changes(12, 32));
  EXPECT_TRUE(s->rotation_changes(32, 33));
  EXPECT_TRUE(s->rotation_changes(40, 20));
  EXPECT_FALSE(s->rotation_changes(33, 48));
  // A non-integer max/original ratio stays a floating ratio (not integer division).
  PositionConfig odd = cfg;
  odd.max_positions = 80;
  EXPECT_NEAR(rope_frequencies(odd, hd, 0).attention_scaling, std::sqrt(1 + std::log(2.5) / std::log(32.0)), 1e-12);
  // Per-regime mscale overrides.
  odd.scaling.short_mscale = 1.0;
  odd.scaling.long_mscale = 1.25;
  EXPECT_EQ(rope_frequencies(odd, hd, 10).attention_scaling, 1.0);
  EXPECT_EQ(rope_frequencies(odd, hd, 40).attention_scaling, 1.25);
  // Wrong factor count.
  PositionConfig bad = cfg;
  bad.scaling.long_factor.pop_back();
  EXPECT_THROW(make(bad, ctx_of(hd, 1, hd)), Error);
}
