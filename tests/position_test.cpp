// Position schemes: formulas against hand-computed values, and RoPE scaling against the
// HF-generated llama fixtures (tests/data/fixtures/llama*/golden.json "rope").
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ordo/position.hpp"
#include "support/golden.hpp"

using namespace ordo;
using json = nlohmann::json;
using ordo::test::error_of;

namespace {

std::unique_ptr<PositionScheme> make(const PositionConfig& cfg, const PositionContext& ctx,
                                     const PositionWeights& w = {}) {
  return make_position_scheme(cfg, ctx, w);
}

PositionContext ctx_of(int64_t d_model, int64_t n_heads, int64_t head_dim, bool causal = true) {
  PositionContext c;
  c.d_model = d_model;
  c.n_heads = n_heads;
  c.head_dim = head_dim;
  c.causal = causal;
  return c;
}


// Weights for every scheme that reads any, shaped for ctx_of(8, 2, 4) and 16 positions.
PositionWeights weights_for_small_context() {
  PositionWeights w;
  w.set("table", Tensor::zeros({16, 8}));
  w.set("relative_bias", Tensor::zeros({32, 2}));
  return w;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return json::parse(in);
}

constexpr float kRelTol = 1e-6f;

void expect_rel_near(double got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), rel * std::fabs(want) + 1e-30) << what << ": got " << got << " want " << want;
}

}  // namespace

// ---------------------------------------------------------------- registry

TEST(PositionRegistry, ListsSchemesInOrder) {
  EXPECT_EQ(position_scheme_names(),
            (std::vector<std::string>{"none", "learned", "sinusoidal", "relative", "rope", "alibi"}));
}

TEST(PositionRegistry, EveryNameConstructs) {
  const PositionWeights w = weights_for_small_context();
  for (const PositionSchemeInfo* info : position_schemes()) {
    PositionConfig cfg;
    cfg.scheme = info->name;
    cfg.max_positions = 16;
    auto s = make(cfg, ctx_of(8, 2, 4), w);
    ASSERT_TRUE(s) << info->name;
    EXPECT_EQ(std::string(s->name()), info->name);
    EXPECT_EQ(s->has_score_bias(), std::string(info->acts) == "attention scores") << info->name;
  }
}

TEST(PositionRegistry, UnknownNameListsKnownOnes) {
  PositionConfig cfg;
  cfg.scheme = "xpos";
  std::string msg = error_of([&] { make(cfg, ctx_of(8, 2, 4)); });
  EXPECT_NE(msg.find("xpos"), std::string::npos) << msg;
  for (const std::string& name : position_scheme_names()) EXPECT_NE(msg.find(name), std::string::npos) << msg;
}

TEST(PositionRegistry, UnsupportedScalingIsAnError) {
  struct Case {
    const char* scheme;
    ScalingType type;
  };
  const PositionWeights w = weights_for_small_context();
  for (Case c : {Case{"none", ScalingType::Linear}, Case{"alibi", ScalingType::YaRN},
                 Case{"learned", ScalingType::NTK}, Case{"sinusoidal", ScalingType::Dynamic},
                 Case{"relative", ScalingType::LongRoPE}}) {
    PositionConfig cfg;
    cfg.scheme = c.scheme;
    cfg.scaling.type = c.type;
    cfg.scaling.factor = 2.0;
    std::string msg = error_of([&] { make(cfg, ctx_of(8, 2, 4), w); });
    EXPECT_NE(msg.find(std::string(c.scheme) + " does not support " + scaling_name(c.type) + " scaling; supported:"),
              std::string::npos)
        << msg;
  }
  PositionConfig cfg;
  cfg.scheme = "alibi";
  cfg.scaling.type = ScalingType::YaRN;
  EXPECT_NE(error_of([&] { make(cfg, ctx_of(8, 2, 4)); }).find("supported: none, linear"), std::string::npos);
}

// Every registered scheme, every scaling type: what the entry declares is what construction accepts.
TEST(PositionRegistry, EntryScalingsAreWhatTheSchemeAccepts) {
  const PositionWeights w = weights_for_small_context();
  for (const PositionSchemeInfo* info : position_schemes()) {
    EXPECT_TRUE(info->supports(ScalingType::None)) << info->name;
    for (ScalingType t : {ScalingType::Linear, ScalingType::NTK, ScalingType::Dynamic, ScalingType::YaRN,
                          ScalingType::Llama3, ScalingType::LongRoPE}) {
      PositionConfig cfg;
      cfg.scheme = info->name;
      cfg.max_positions = 16;
      cfg.scaling.type = t;
      cfg.scaling.factor = 2.0;
      bool factor_only = false;
      for (const ScalingSupport& s : info->scalings) factor_only = factor_only || (s.type == t && s.factor_only);
      const std::string msg = error_of([&] { make(cfg, ctx_of(8, 2, 4), w); });
      if (!info->supports(t)) {
        EXPECT_NE(msg.find(std::string(info->name) + " does not support " + scaling_name(t)), std::string::npos)
            << info->name << " " << scaling_name(t) << ": " << msg;
      } else if (factor_only) {
        EXPECT_EQ(msg, "") << info->name << " " << scaling_name(t);
      }
    }
  }
}

TEST(PositionRegistry, EntryDescribesTheSettings) {
  PositionConfig cfg;
  const PositionContext ctx = ctx_of(8, 2, 4);
  EXPECT_EQ(position_scheme_info("rope").describe(cfg, ctx), "theta 10000, rotary_dim 4, half-split");
  cfg.rotary_dim = 2;
  cfg.rope_layout = RopeLayout::Interleaved;
  cfg.rope_theta = 500000;
  EXPECT_EQ(position_scheme_info("rope").describe(cfg, ctx), "theta 500000, rotary_dim 2, interleaved");
  EXPECT_EQ(position_scheme_info("relative").describe(cfg, ctx), "32 buckets, max_distance 128");
  EXPECT_EQ(position_scheme_info("alibi").describe(cfg, ctx), "max_bias 8");
  EXPECT_EQ(position_scheme_info("learned").describe(cfg, ctx), "");
  cfg.learned_offset = 2;
  EXPECT_EQ(position_scheme_info("learned").describe(cfg, ctx), "offset 2");
  EXPECT_EQ(position_scheme_info("none").describe(cfg, ctx), "");
}

TEST(PositionRegistry, EntryNamesTheWeightsItsSchemeReads) {
  // A scheme that declares a weight refuses to build without it; one that declares none builds.
  for (const PositionSchemeInfo* info : position_schemes()) {
    PositionConfig cfg;
    cfg.scheme = info->name;
    cfg.max_positions = 16;
    const std::string msg = error_of([&] { make(cfg, ctx_of(8, 2, 4)); });
    EXPECT_EQ(msg.empty(), info->weights.empty()) << info->name << ": " << msg;
  }
  EXPECT_TRUE(PositionWeights{}.get("table").empty());
}

TEST(PositionRegistry, ParametersOutsideTheNamedFields) {
  PositionConfig cfg;
  const std::string msg = error_of([&] { cfg.param("xpos_scale_base"); });
  EXPECT_NE(msg.find("'xpos_scale_base' is declared by no registered scheme"), std::string::npos) << msg;
  cfg.params["xpos_scale_base"] = 512.0;
  EXPECT_EQ(cfg.param("xpos_scale_base"), 512.0);
}

TEST(PositionRegistry, ParseScaling) {
  EXPECT_EQ(parse_scaling("none"), ScalingType::None);
  EXPECT_EQ(parse_scaling("default"), ScalingType::None);
  EXPECT_EQ(parse_scaling("linear"), ScalingType::Linear);
  EXPECT_EQ(parse_scaling("NTK"), ScalingType::NTK);
  EXPECT_EQ(parse_scaling("dynamic"), ScalingType::Dynamic);
  EXPECT_EQ(parse_scaling("yarn"), ScalingType::YaRN);
  EXPECT_EQ(parse_scaling("llama3"), ScalingType::Llama3);
  EXPECT_EQ(parse_scaling("longrope"), ScalingType::LongRoPE);
  EXPECT_EQ(parse_scaling("su"), ScalingType::LongRoPE);
  for (ScalingType t : {ScalingType::None, ScalingType::Linear, ScalingType::NTK, ScalingType::Dynamic,
                        ScalingType::YaRN, ScalingType::Llama3, ScalingType::LongRoPE})
    EXPECT_EQ(parse_scaling(scaling_name(t)), t);
  std::string msg = error_of([] { parse_scaling("rotary"); });
  EXPECT_NE(msg.find("'rotary'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("longrope"), std::string::npos) << msg;
}

TEST(PositionRegistry, BadFactorIsAnError) {
  PositionConfig cfg;
  cfg.scheme = "alibi";
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 0.0;
  EXPECT_THROW(make(cfg, ctx_of(8, 2, 4)), Error);
}

TEST(PositionRegistry, NoneIsANoOp) {
  PositionConfig cfg;
  auto s = make(cfg, ctx_of(4, 1, 4));
  std::vector<float> x = {1, 2, 3, 4};
  int32_t pos[1] = {7};
  s->embed(x.data(), pos, 1);
  s->rotate(x.data(), RotateTarget::Query, 1, pos, 1, 8);
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_FALSE(s->has_score_bias());
}

// ---------------------------------------------------------------- T5 relative

TEST(T5Relative, BucketTable) {
  // num_buckets 32, max_distance 128. Bidirectional: nb 16, max_exact 8, keys after the query
  // (rp > 0) in buckets 16..31; large = 8 + floor(ln(n/8)/ln(16)*8). Causal: nb 32, max_exact 16,
  // future keys in bucket 0; large = 16 + floor(ln(n/16)/ln(8)*16), capped at 31.
  struct Row {
    int64_t rp, bidir, causal;
  };
  const Row rows[] = {
      {0, 0, 0},        {1, 17, 0},       {-1, 1, 1},      {7, 23, 0},      {-7, 7, 7},
      {8, 24, 0},       {-8, 8, 8},       {15, 25, 0},     {-15, 9, 15},    {16, 26, 0},
      {-16, 10, 16},    {100, 31, 0},     {-100, 15, 30},  {127, 31, 0},    {-127, 15, 31},
      {128, 31, 0},     {-128, 15, 31},   {500, 31, 0},    {-500, 15, 31},
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
        expect_rel_near(got[h], want[h], kRelTol, "mpt n=" + std::to_string(n) + " max_bias=" + std::to_string(max_bias));
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

// ---------------------------------------------------------------- RoPE

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
  s->rotate(a.data(), RotateTarget::Query, 1, &p, 1, 21);   // short sequence: unscaled
  plain->rotate(b.data(), RotateTarget::Query, 1, &p, 1, 21);
  EXPECT_EQ(a, b);
  s->rotate(c.data(), RotateTarget::Query, 1, &p, 1, 56);   // same position inside a 56-long sequence: scaled base
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

// ---------------------------------------------------------------- RoPE scaling vs HF fixtures

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
  s.type = parse_scaling(rs.contains("rope_type") ? rs.at("rope_type").get<std::string>() : rs.at("type").get<std::string>());
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
  for (size_t i = 0; i < w.size(); ++i) expect_rel_near(got.inv_freq[i], w[i], kRelTol, what + " inv_freq[" + std::to_string(i) + "]");
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
  const std::vector<double> at56 = golden.at("rope").at("per_case").at("seq56").at("inv_freq").get<std::vector<double>>();
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
  const PositionConfig cfg = fixture_config(read_json(std::string(ORDO_TEST_DATA) + "/fixtures/llama-yarn/config.json"), &hd);
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

// ---------------------------------------------------------------- learned

namespace {

PositionWeights learned_table(int64_t rows, int64_t d) {
  std::vector<float> v(static_cast<size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < d; ++i) v[r * d + i] = static_cast<float>(10 * r + i);
  PositionWeights w;
  w.tensors["table"] = Tensor::from({rows, d}, v);
  return w;
}

}  // namespace

TEST(Learned, LooksUpWithOffset) {
  PositionConfig cfg;
  cfg.scheme = "learned";
  cfg.learned_offset = 2;
  auto s = make(cfg, ctx_of(3, 1, 3), learned_table(8, 3));
  std::vector<float> x(6, 1.0f);
  int32_t pos[] = {0, 5};
  s->embed(x.data(), pos, 2);
  EXPECT_EQ(x, (std::vector<float>{21, 22, 23, 71, 72, 73}));  // rows 2 and 7
  s->check_positions(5);
  EXPECT_THROW(s->check_positions(6), Error);
  int32_t too_far[] = {6};
  EXPECT_THROW(s->embed(x.data(), too_far, 1), Error);
}

TEST(Learned, TooLongSuggestsInterpolation) {
  PositionConfig cfg;
  cfg.scheme = "learned";
  cfg.learned_offset = 2;
  auto s = make(cfg, ctx_of(3, 1, 3), learned_table(66, 3));  // OPT-like: 64 positions
  s->check_positions(63);
  const std::string msg = error_of([&] { s->check_positions(79); });
  EXPECT_NE(msg.find("longer than"), std::string::npos) << msg;
  EXPECT_NE(msg.find("80"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("interpolat"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--scaling linear --factor 1.25"), std::string::npos) << msg;
  // Following the suggestion works.
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 1.25;
  auto t = make(cfg, ctx_of(3, 1, 3), learned_table(66, 3));
  t->check_positions(79);
  EXPECT_THROW(t->check_positions(80), Error);
}

TEST(Learned, LinearInterpolationByHand) {
  // 3 real rows r_p = [10(p+2), 10(p+2)+1] after 2 offset rows; factor 2 -> 6 positions reading the
  // table at p/2: p0 r0, p1 (r0+r1)/2, p2 r1, p3 (r1+r2)/2, p4 r2, p5 r2 (past the end: last row).
  PositionConfig cfg;
  cfg.scheme = "learned";
  cfg.learned_offset = 2;
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 2.0;
  auto s = make(cfg, ctx_of(2, 1, 2), learned_table(5, 2));
  std::vector<float> x(12, 0.0f);
  int32_t pos[] = {0, 1, 2, 3, 4, 5};
  s->embed(x.data(), pos, 6);
  EXPECT_EQ(x, (std::vector<float>{20, 21, 25, 26, 30, 31, 35, 36, 40, 41, 40, 41}));
  EXPECT_THROW(s->check_positions(6), Error);
}

TEST(Learned, MissingTableIsAnError) {
  PositionConfig cfg;
  cfg.scheme = "learned";
  EXPECT_NE(error_of([&] { make(cfg, ctx_of(3, 1, 3)); }).find("the model has no learned position table"),
            std::string::npos);
  EXPECT_THROW(make(cfg, ctx_of(4, 1, 4), learned_table(8, 3)), Error);  // d_model mismatch
}

// ---------------------------------------------------------------- sinusoidal

TEST(Sinusoidal, LayoutsMatchClosedForm) {
  // d 8: 10000^(2i/8) = 10^i.
  for (SinusoidalLayout layout : {SinusoidalLayout::Concat, SinusoidalLayout::Interleaved}) {
    PositionConfig cfg;
    cfg.scheme = "sinusoidal";
    cfg.sinusoidal_layout = layout;
    cfg.max_positions = 4;  // p = 5 is computed outside the table
    auto s = make(cfg, ctx_of(8, 2, 4));
    for (int32_t p : {0, 1, 5}) {
      std::vector<float> x(8, 0.0f);
      s->embed(x.data(), &p, 1);
      for (int i = 0; i < 4; ++i) {
        const double a = p / std::pow(10.0, i);
        const float sn = static_cast<float>(std::sin(a)), cs = static_cast<float>(std::cos(a));
        if (layout == SinusoidalLayout::Concat) {
          EXPECT_EQ(x[i], sn) << p << " " << i;
          EXPECT_EQ(x[4 + i], cs) << p << " " << i;
        } else {
          EXPECT_EQ(x[2 * i], sn) << p << " " << i;
          EXPECT_EQ(x[2 * i + 1], cs) << p << " " << i;
        }
      }
    }
  }
  // Known numbers: p = 1, concat: sin 1 = 0.84147098, cos 1 = 0.54030231 at dims 0 and 4.
  PositionConfig cfg;
  cfg.scheme = "sinusoidal";
  auto s = make(cfg, ctx_of(8, 2, 4));
  std::vector<float> x(8, 1.0f);
  int32_t p = 1;
  s->embed(x.data(), &p, 1);
  EXPECT_NEAR(x[0], 1.84147098f, 1e-6);
  EXPECT_NEAR(x[4], 1.54030231f, 1e-6);
  EXPECT_NEAR(x[1], 1.0f + std::sin(0.1), 1e-6);
}

TEST(Sinusoidal, OddWidthConcatSplitsLikeMarian) {
  // d 5: sentinel 3 -> sin of angles j = 0, 2, 4 (i = 0, 1, 2), cos of j = 1, 3 (i = 0, 1).
  PositionConfig cfg;
  cfg.scheme = "sinusoidal";
  auto s = make(cfg, ctx_of(5, 1, 5));
  std::vector<float> x(5, 0.0f);
  int32_t p = 3;
  s->embed(x.data(), &p, 1);
  auto a = [](int i) { return 3.0 / std::pow(10000.0, 2.0 * i / 5.0); };
  EXPECT_EQ(x[0], static_cast<float>(std::sin(a(0))));
  EXPECT_EQ(x[1], static_cast<float>(std::sin(a(1))));
  EXPECT_EQ(x[2], static_cast<float>(std::sin(a(2))));
  EXPECT_EQ(x[3], static_cast<float>(std::cos(a(0))));
  EXPECT_EQ(x[4], static_cast<float>(std::cos(a(1))));
}

TEST(Sinusoidal, LinearScalingHalvesPositions) {
  PositionConfig cfg;
  cfg.scheme = "sinusoidal";
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 2.0;
  auto scaled = make(cfg, ctx_of(8, 2, 4));
  cfg.scaling = Scaling{};
  auto plain = make(cfg, ctx_of(8, 2, 4));
  std::vector<float> a(8, 0.0f), b(8, 0.0f);
  int32_t p10 = 10, p5 = 5;
  scaled->embed(a.data(), &p10, 1);
  plain->embed(b.data(), &p5, 1);
  EXPECT_EQ(a, b);
  std::vector<float> c(8, 0.0f);
  int32_t p5b = 5;
  scaled->embed(c.data(), &p5b, 1);  // position 2.5
  EXPECT_EQ(c[0], static_cast<float>(std::sin(2.5)));
  EXPECT_EQ(c[4], static_cast<float>(std::cos(2.5)));
}
