// Sampler semantics on hand-made logits, and streaming generation through the public API.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "ordo/generate.hpp"
#include "ordo/ordo.hpp"
#include "support/golden.hpp"

using namespace ordo;

namespace {

std::map<int32_t, int> histogram(const SamplingParams& p, std::vector<float> logits, int draws,
                                 const std::vector<int32_t>& history = {}) {
  Sampler s(p);
  std::map<int32_t, int> h;
  for (int i = 0; i < draws; ++i) {
    std::vector<float> l = logits;
    ++h[s.sample(l.data(), static_cast<int64_t>(l.size()), history)];
  }
  return h;
}

}  // namespace

TEST(Sampler, TemperatureZeroIsArgmax) {
  SamplingParams p;
  std::vector<float> l = {0.1f, 2.0f, -1.0f, 1.9f};
  EXPECT_EQ(Sampler(p).sample(l.data(), 4, {}), 1);
}

TEST(Sampler, TopKOneIsArgmaxAtAnyTemperature) {
  SamplingParams p;
  p.temperature = 5.0f;
  p.top_k = 1;
  auto h = histogram(p, {0.1f, 2.0f, -1.0f, 1.9f}, 200);
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(h.begin()->first, 1);
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // probabilities 0.5, 0.3, 0.2: top_p 0.7 keeps {0, 1}; 0.5 keeps {0}
  const std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.7f;
  auto h = histogram(p, l, 2000);
  EXPECT_EQ(h.count(2), 0u);
  EXPECT_GT(h[0], h[1]);
  EXPECT_GT(h[1], 500);  // 0.3/0.8 of 2000 = 750 expected
  p.top_p = 0.5f;
  EXPECT_EQ(histogram(p, l, 200).size(), 1u);
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  const std::vector<float> l = {0.0f, std::log(3.0f)};  // p = 0.25, 0.75
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 3;
  auto h = histogram(p, l, 4000);
  EXPECT_NEAR(h[1] / 4000.0, 0.75, 0.03);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  std::vector<float> l = {3.0f, 2.0f, -1.0f};
  Sampler s(p);
  EXPECT_EQ(s.sample(l.data(), 3, {0, 2}), 1);  // 3 → 1.5 loses to 2
  EXPECT_FLOAT_EQ(l[0], 1.5f);
  EXPECT_FLOAT_EQ(l[2], -2.0f);
}

TEST(Sampler, SameSeedSameDraws) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 11;
  const std::vector<float> l = {0.3f, 0.1f, 0.2f, 0.25f, 0.0f};
  EXPECT_EQ(histogram(p, l, 100), histogram(p, l, 100));
}

TEST(Sampler, RejectsBadSettings) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_THROW(Sampler{p}, Error);
  p = {};
  p.temperature = -1.0f;
  EXPECT_THROW(Sampler{p}, Error);
}

TEST(Generate, StreamedPiecesConcatenateToTheResultAndStopAtEos) {
  Model m = Model::load(ordo::test::model_dir("stories260K"));
  TextGenerateParams p;
  p.max_new_tokens = 30;
  std::string streamed;
  int pieces = 0;
  TextResult r = m.generate("Once upon a time", p, [&](const std::string& s) {
    streamed += s;
    ++pieces;
    return true;
  });
  EXPECT_EQ(streamed, r.text);
  EXPECT_GT(pieces, 10);  // token by token, not all at the end
  EXPECT_EQ(r.text.rfind(", there was a little girl named Lily.", 0), 0u) << r.text;
  // The reference greedy ids decode to the same text.
  auto g = ordo::test::Golden::load("stories260K");
  std::vector<int32_t> ref = ordo::test::ids_of(g.case_json("once_upon").at("greedy").at("output_ids"));
  ref.resize(30);
  EXPECT_EQ(r.generation.ids, ref);
  // A callback returning false stops generation.
  int seen = 0;
  TextResult early = m.generate("Once upon a time", p, [&](const std::string&) { return ++seen < 3; });
  EXPECT_EQ(seen, 3);
  EXPECT_LT(early.generation.ids.size(), 30u);
  // A stop id (EOS, normally) ends generation right after it is emitted.
  GenerateParams gp;
  gp.max_new_tokens = 5;
  gp.stop_ids = {ref[2]};
  GenerateResult stopped = m.generate_ids(m.encode("Once upon a time"), gp);
  EXPECT_TRUE(stopped.stopped_by_eos);
  EXPECT_EQ(stopped.ids, std::vector<int32_t>(ref.begin(), ref.begin() + 3));
}
