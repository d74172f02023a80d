// The probes library (ordo/probes.hpp) called directly: pairs built by its documented rule, word
// order and perplexity against log-probabilities computed by hand from the model's own forward
// pass, permutation equivariance, and attention mass that sums to one per query.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ordo/probes.hpp"
#include "support/golden.hpp"

using namespace ordo;
namespace pr = ordo::probes;
using ordo::test::error_of;
using ordo::test::sequence_logprob;

namespace {

const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";
const std::string kZoo = std::string(ORDO_SOURCE_DIR) + "/models/zoo/";

std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> w;
  std::stringstream ss(s);
  for (std::string x; ss >> x;) w.push_back(x);
  return w;
}

}  // namespace

TEST(Probes, SplitSentences) {
  EXPECT_EQ(pr::split_sentences("One two.  Three\n four! \"Five?\" Six"),
            (std::vector<std::string>{"One two.", "Three four!", "\"Five?\"", "Six"}));
  EXPECT_EQ(pr::split_sentences("He said 'no.' Then left."), (std::vector<std::string>{"He said 'no.'", "Then left."}));
  EXPECT_TRUE(pr::split_sentences("   ").empty());
}

TEST(Probes, DefaultPairsSwapTwoContentWords) {
  // One candidate each: the words of >= 4 letters after the first are "hungry" and "bites", then
  // "said" and "Never"; punctuation stays where it was.
  EXPECT_EQ(pr::default_pairs("The hungry dog bites a man.", 10).at(0).swapped, "The bites dog hungry a man.");
  const std::vector<pr::WordPair> p = pr::default_pairs("Then Sam said, \"Never,\" and sat. Too short here. ", 10);
  ASSERT_EQ(p.size(), 1u) << "a sentence under 5 words is skipped";
  EXPECT_EQ(p[0].original, "Then Sam said, \"Never,\" and sat.");
  EXPECT_EQ(p[0].swapped, "Then Sam Never, \"said,\" and sat.");

  const std::string text = ordo::test::read_file(kZoo + "heldout.txt").substr(0, 20000);
  const std::vector<pr::WordPair> pairs = pr::default_pairs(text, 50);
  ASSERT_EQ(pairs.size(), 50u);
  for (const pr::WordPair& q : pairs) {
    const std::vector<std::string> a = words_of(q.original), b = words_of(q.swapped);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_GE(a.size(), 5u);
    EXPECT_LE(a.size(), 30u);
    std::vector<size_t> changed;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) changed.push_back(i);
    ASSERT_EQ(changed.size(), 2u) << q.original << " | " << q.swapped;
    EXPECT_GT(changed[0], 0u);
    std::vector<std::string> sa = a, sb = b;
    std::sort(sa.begin(), sa.end());
    std::sort(sb.begin(), sb.end());
    if (sa != sb) {  // punctuation stayed in place: the letters moved, not the whole words
      std::string la, lb;
      for (size_t i : changed) la += a[i], lb += b[i];
      std::sort(la.begin(), la.end());
      std::sort(lb.begin(), lb.end());
      EXPECT_EQ(la, lb) << q.original << " | " << q.swapped;
    }
  }
  EXPECT_EQ(pr::default_pairs(text, 50)[7].swapped, pairs[7].swapped) << "deterministic for a seed";
}

TEST(Probes, ParsePairs) {
  const auto p = pr::parse_pairs(
      "{\"original\": \"a b\", \"swapped\": \"b a\"}\n\n  \n{\"original\": \"c\", \"swapped\": \"d\"}\n", "p.jsonl");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].original, "c");
  EXPECT_NE(error_of([] { pr::parse_pairs("{\"original\": \"a\"}\n", "p.jsonl"); }).find("p.jsonl:1: expected"),
            std::string::npos);
  EXPECT_EQ(error_of([] { pr::parse_pairs("\n", "p.jsonl"); }), "p.jsonl: no pairs");
}

TEST(Probes, WordOrderMatchesHandScoredForward) {
  const Model m = Model::load(kStories);
  const std::vector<pr::WordPair> pairs = {{"The cat sat on the mat.", "The mat sat on the cat."},
                                           {"Tom gave the ball to the dog.", "Tom gave the dog to the ball."},
                                           {"Lily was happy.", "Lily was happy."}};
  size_t calls = 0;
  const pr::WordOrderResult r = pr::word_order(m, pairs, [&](size_t done, size_t total) {
    ++calls;
    EXPECT_EQ(total, 3u);
    EXPECT_LE(done, total);
  });
  EXPECT_EQ(calls, 1u);
  ASSERT_EQ(r.pairs.size(), 3u);
  EXPECT_EQ(r.method, "logprob");
  int64_t wins = 0;
  double sum = 0;
  for (size_t i = 0; i < 2; ++i) {
    const double want =
        sequence_logprob(m, m.encode(pairs[i].original, true)) - sequence_logprob(m, m.encode(pairs[i].swapped, true));
    EXPECT_NEAR(r.pairs[i].margin, want, 1e-4 * std::max(1.0, std::fabs(want))) << i;
    EXPECT_NEAR(r.pairs[i].original, sequence_logprob(m, m.encode(pairs[i].original, true)), 1e-4) << i;
    EXPECT_TRUE(r.pairs[i].same_tokens) << "two whole words swapped: the same tokens";
    wins += want > 0;
    sum += want;
  }
  EXPECT_EQ(r.pairs[2].margin, 0.0) << "the same sentence twice is a tie";
  EXPECT_TRUE(r.pairs[2].tie);
  EXPECT_EQ(r.ties, 1);
  EXPECT_EQ(r.wins, wins);
  EXPECT_DOUBLE_EQ(r.accuracy, (static_cast<double>(wins) + 0.5) / 3.0);
  EXPECT_NEAR(r.mean_margin, sum / 3.0, 1e-4);
}

TEST(Probes, PermutationIsExactOnlyWithoutPositions) {
  Model none = Model::load(kZoo + "lm/none-s1");
  Model rope = Model::load(kZoo + "lm/rope-s1");
  const std::vector<int32_t> ids = pr::probe_ids({}, 24, none.spec().vocab_size, 1);
  const pr::PermutationResult a = pr::permutation(none, ids);
  EXPECT_GT(a.max_abs_hidden, 0.1);
  EXPECT_LT(a.rel_error, 1e-5);
  EXPECT_GT(pr::permutation(rope, ids).rel_error, 1e-3);
  // The probe leaves the model causal again.
  EXPECT_TRUE(none.engine().causal());
}

TEST(Probes, LengthMethodsComeFromTheRegistry) {
  std::vector<std::string> names;
  for (const pr::LengthMethod& m : pr::length_methods("rope")) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"none", "linear", "ntk", "dynamic", "yarn"}));
  EXPECT_EQ(pr::length_methods("none").size(), 1u);
  EXPECT_EQ(pr::length_methods("alibi").size(), 2u);
}

TEST(Probes, LengthPerplexityMatchesHandScoredWindows) {
  Model m = Model::load(kStories);
  std::vector<int32_t> ids =
      m.encode(ordo::test::read_file(std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt").substr(0, 1200), false);
  ids.resize(ids.size() / 32 * 32);
  const std::vector<pr::LengthPoint> pts = pr::length(m, ids, {"none", ScalingType::None}, {1, 2, 100000}, 16, 512);
  ASSERT_EQ(pts.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t ctx = 16 << i;
    double nll = 0;
    int64_t n = 0;
    for (size_t w = 0; w + ctx <= ids.size(); w += ctx) {
      nll -= sequence_logprob(m, std::vector<int32_t>(ids.begin() + w, ids.begin() + w + ctx));
      n += ctx - 1;
    }
    EXPECT_EQ(pts[i].ctx, ctx);
    EXPECT_EQ(pts[i].tokens, n);
    EXPECT_TRUE(pts[i].error.empty()) << pts[i].error;
    EXPECT_NEAR(pts[i].ppl, std::exp(nll / n), 1e-4 * std::exp(nll / n));
  }
  EXPECT_TRUE(std::isnan(pts[2].ppl));
  EXPECT_NE(pts[2].error.find("fewer than the context of 1600000"), std::string::npos) << pts[2].error;
  // Scaled rows run at factor max(1, ctx / trained) and the model's scaling is restored after.
  const std::vector<pr::LengthPoint> lin = pr::length(m, ids, {"linear", ScalingType::Linear}, {1}, 16, 8);
  EXPECT_EQ(lin[0].factor, 2.0);
  EXPECT_EQ(m.spec().position.scaling.type, ScalingType::None);
}

TEST(Probes, AttentionMassSumsToOnePerQuery) {
  Model m = Model::load(kZoo + "lm/alibi-s1");
  const int64_t base = 32;
  const std::vector<pr::DistanceBucket> bk = pr::distance_buckets(base - 1);
  ASSERT_GE(bk.size(), 5u);
  EXPECT_EQ(bk[4].label(), "4-7");
  EXPECT_EQ(bk[0].label(), "0");
  const std::vector<std::vector<int32_t>> windows = {pr::probe_ids({}, base, m.spec().vocab_size, 7),
                                                     pr::probe_ids({}, base, m.spec().vocab_size, 8)};
  const pr::AttentionProfile a = pr::attention_by_distance(m, windows, bk);
  const int64_t layers = static_cast<int64_t>(m.spec().decoder.layers.size());
  EXPECT_EQ(a.rows, layers * m.spec().n_heads * base * 2);
  double mass = 0;
  for (size_t b = 0; b < bk.size(); ++b)
    if (!std::isnan(a.mass[b])) mass += a.mass[b];
  EXPECT_NEAR(mass, 1.0, 1e-5);
  EXPECT_GT(a.mean_weight[0], a.mean_weight[5]) << "ALiBi favours near keys";
  EXPECT_TRUE(std::isnan(a.mean_weight.back())) << "no pair is 64+ apart in 32 tokens";
}
