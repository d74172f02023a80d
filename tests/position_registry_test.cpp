// The position-scheme registry: names, declared scalings and weights, descriptions, scaling names
// and factors, and the none scheme.

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
  for (Case c : {Case{"none", ScalingType::Linear}, Case{"alibi", ScalingType::YaRN}, Case{"learned", ScalingType::NTK},
                 Case{"sinusoidal", ScalingType::Dynamic}, Case{"relative", ScalingType::LongRoPE}}) {
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

// A scheme's parameters are PositionConfig's named fields: setting one changes what the scheme
// computes and what its entry describes.
TEST(PositionRegistry, ParametersAreTheNamedFields) {
  PositionConfig cfg;
  cfg.scheme = "alibi";
  cfg.max_positions = 16;
  cfg.alibi_max_bias = 4.0;
  const PositionContext ctx = ctx_of(8, 2, 4);
  // 2 heads, max_bias 4: head 0's slope is 2^(-4/2) = 0.25; scores -= slope * (qpos - kpos).
  float scores[3] = {0.0f, 0.0f, 0.0f};
  const int32_t kpos[3] = {0, 1, 2};
  make(cfg, ctx)->add_score_bias(scores, 0, 2, kpos, 3);
  EXPECT_FLOAT_EQ(scores[0], -0.5f);
  EXPECT_FLOAT_EQ(scores[1], -0.25f);
  EXPECT_FLOAT_EQ(scores[2], 0.0f);
  EXPECT_EQ(position_scheme_info("alibi").describe(cfg, ctx), "max_bias 4");
  cfg.num_buckets = 16;
  cfg.max_distance = 64;
  EXPECT_EQ(position_scheme_info("relative").describe(cfg, ctx), "16 buckets, max_distance 64");
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
