// min-p sampling against Hugging Face's MinPLogitsWarper (tests/data/fixtures/min_p.json, from
// tools/fixtures/make_min_p_golden.py): the distribution a sampler draws from, and its bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "ordo/generate.hpp"
#include "support/golden.hpp"

namespace {

nlohmann::json load_golden() {
  return nlohmann::json::parse(ordo::test::read_file(ordo::test::data_path("fixtures/min_p.json")));
}

TEST(MinP, DistributionMatchesHuggingFaceWarpers) {
  const nlohmann::json g = load_golden();
  ASSERT_EQ(g.at("cases").size(), 27u);
  for (const nlohmann::json& c : g.at("cases")) {
    const std::vector<float> logits = g.at("logits").at(c.at("row").get<size_t>()).get<std::vector<float>>();
    const std::vector<double> want = c.at("probs").get<std::vector<double>>();
    ordo::SamplingParams p;
    p.temperature = c.at("temperature").get<float>();
    p.top_k = c.at("top_k").get<int>();
    p.top_p = c.at("top_p").get<float>();
    p.min_p = c.at("min_p").get<float>();
    ordo::Sampler s(p);
    const std::vector<double> got = s.probabilities(logits.data(), static_cast<int64_t>(logits.size()));
    ASSERT_EQ(got.size(), want.size());
    const std::string where = c.dump();
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i] > 0, want[i] > 0) << where << " token " << i;  // the same tokens kept
      EXPECT_NEAR(got[i], want[i], 1e-6) << where << " token " << i;
    }
  }
}

TEST(MinP, SamplesOnlyKeptTokens) {
  const nlohmann::json g = load_golden();
  const nlohmann::json& c = g.at("cases").at(1);  // row 0, min_p 0.2: 12 of 64 tokens kept
  const std::vector<float> logits = g.at("logits").at(0).get<std::vector<float>>();
  const std::vector<double> want = c.at("probs").get<std::vector<double>>();
  ordo::SamplingParams p;
  p.temperature = 1.0f;
  p.min_p = 0.2f;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    p.seed = seed;
    ordo::Sampler s(p);
    std::vector<float> row = logits;
    const int32_t id = s.pick(row.data(), static_cast<int64_t>(row.size()));
    ASSERT_GT(want.at(static_cast<size_t>(id)), 0.0) << "seed " << seed << " picked dropped token " << id;
  }
}

TEST(MinP, OutOfRangeIsRefused) {
  for (float bad : {-0.1f, 1.5f, std::nanf("")}) {
    ordo::SamplingParams p;
    p.temperature = 1.0f;
    p.min_p = bad;
    try {
      ordo::Sampler s(p);
      ADD_FAILURE() << "min_p " << bad << " accepted";
    } catch (const ordo::Error& e) {
      EXPECT_NE(std::string(e.what()).find("min_p must be in [0, 1]"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
