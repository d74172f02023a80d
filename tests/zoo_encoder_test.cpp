// The zoo's masked-LM encoders ("bidirectional": true) and the PLL word-order probe, on encoders
// made from the committed decoders' weights (config.json switched to bidirectional with a mask
// id): the family builds a non-causal encoder with logits, refuses bad mask ids and generation,
// PLL equals the hand-masked forward of each position, and the tie rule holds what permutation
// equivariance predicts: a NoPE encoder ties on every pair whose tokens are a permutation of the
// original's (exact arithmetic gives equal PLLs), the position schemes separate them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ordo/probes.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

using namespace ordo;
namespace pr = ordo::probes;
using ordo::test::error_of;

namespace {

const std::string kZoo = std::string(ORDO_SOURCE_DIR) + "/models/zoo/";

// models/zoo/lm/<scheme>-s1 as a masked-LM encoder: the same weights, config edited by `edit`.
std::string encoder_dir(const std::string& scheme, const std::function<void(nlohmann::json&)>& edit = {}) {
  const std::string dir = ordo::test::make_temp_dir("zoo-enc-" + scheme);
  for (const char* f : {"model.safetensors", "tokenizer.model"})
    std::filesystem::copy_file(kZoo + "lm/" + scheme + "-s1/" + f, dir + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  nlohmann::json cfg = nlohmann::json::parse(ordo::test::read_file(kZoo + "lm/" + scheme + "-s1/config.json"));
  cfg["bidirectional"] = true;
  cfg["mask_token_id"] = 3;
  if (edit) edit(cfg);
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  return dir;
}

std::vector<pr::WordPair> heldout_pairs(size_t n) {
  return pr::default_pairs(ordo::test::read_file(kZoo + "heldout.txt").substr(0, 40000), n);
}

}  // namespace

TEST(ZooEncoder, BidirectionalConfigBuildsAnEncoderWithLogits) {
  const Model m = Model::load(encoder_dir("rope"));
  EXPECT_EQ(m.spec().graph, GraphKind::Encoder);
  EXPECT_FALSE(m.spec().encoder.causal);
  EXPECT_EQ(m.spec().mask_id, 3);
  EXPECT_TRUE(pr::is_masked_lm(m));
  const std::vector<int32_t> ids = m.encode("In the beginning God created the heaven and the earth.", true);
  const ForwardOutput out = m.forward(ids, true);
  ASSERT_EQ(out.logits.shape, (std::vector<int64_t>{static_cast<int64_t>(ids.size()), 1024}));
  EXPECT_EQ(out.hidden.size(), m.spec().encoder.layers.size() + 1);
  // Non-causal: the first position's output depends on the last token.
  std::vector<int32_t> other = ids;
  other.back() = other.back() == 5 ? 6 : 5;
  EXPECT_NE(m.forward(other).logits.f32()[0], out.logits.f32()[0]);
  const Model dec = Model::load(kZoo + "lm/rope-s1");
  EXPECT_FALSE(pr::is_masked_lm(dec));
}

TEST(ZooEncoder, BadMaskIdAndGenerationAreErrors) {
  const std::string big = encoder_dir("none", [](nlohmann::json& c) { c["mask_token_id"] = 1024; });
  EXPECT_NE(
      error_of([&] { Model::load(big); }).find("config.json: field 'mask_token_id' must be a token id in [0, 1023]"),
      std::string::npos);
  const std::string neg = encoder_dir("none", [](nlohmann::json& c) { c["mask_token_id"] = -1; });
  EXPECT_NE(error_of([&] { Model::load(neg); }).find("got -1"), std::string::npos);
  const std::string none = encoder_dir("none", [](nlohmann::json& c) { c.erase("mask_token_id"); });
  EXPECT_NE(error_of([&] { Model::load(none); }).find("field 'mask_token_id' missing"), std::string::npos);

  const std::string ok = encoder_dir("none");
  const Model m = Model::load(ok);
  const std::string gen = error_of([&] { m.generate("In the beginning", TextGenerateParams{}); });
  EXPECT_NE(gen.find("encoder-only model (bidirectional masked-LM"), std::string::npos) << gen;
  EXPECT_NE(gen.find("cannot generate"), std::string::npos) << gen;
  const auto r = ordo::test::run_cli("run -m " + ordo::test::shell_quote(ok) + " -p hello -n 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot generate"), std::string::npos) << r.err;
  const Model dec = Model::load(kZoo + "lm/none-s1");
  const std::string text = "In the beginning";
  EXPECT_NE(error_of([&] { pr::pseudo_log_likelihoods(dec, {&text}); }).find("PLL needs a masked-LM encoder"),
            std::string::npos);
}

// PLL by its definition: each non-special position masked in turn, one unbatched forward each.
TEST(ZooEncoder, PllEqualsHandMaskedForwards) {
  const Model m = Model::load(encoder_dir("alibi"));
  const std::vector<std::string> texts = {"And God said, Let there be light: and there was light.",
                                          "And the evening and the morning were the first day."};
  const std::vector<pr::TextScore> got = pr::pseudo_log_likelihoods(m, {&texts[0], &texts[1]});
  for (size_t k = 0; k < texts.size(); ++k) {
    const std::vector<int32_t> ids = m.encode(texts[k], true);
    ASSERT_EQ(ids[0], 1) << "bos first";
    ASSERT_EQ(got[k].ids, ids);
    double pll = 0, abs_terms = 0;
    for (size_t i = 1; i < ids.size(); ++i) {  // every position but the bos
      std::vector<int32_t> masked = ids;
      masked[i] = 3;
      const double lp = ordo::test::log_prob(m.forward(masked).logits.f32() + i * 1024, 1024, ids[i]);
      pll += lp;
      abs_terms += std::fabs(lp);
    }
    EXPECT_NEAR(got[k].logprob, pll, 1e-4 * std::fabs(pll)) << texts[k];
    EXPECT_NEAR(got[k].abs_terms, abs_terms, 1e-4 * abs_terms) << texts[k];
  }
}

TEST(ZooEncoder, TieRuleIsRelativeToTheTerms) {
  pr::TextScore a, b;
  a.logprob = -100, a.abs_terms = 100;
  b.logprob = -100.000019, b.abs_terms = 100.000019;
  EXPECT_TRUE(pr::is_tie(a, b)) << "1.9e-5 <= 1e-7 x 200";
  b.logprob = -100.000021;
  EXPECT_FALSE(pr::is_tie(a, b));
}

// NoPE: every pair whose tokens are a permutation of the original's ties; the other schemes
// separate most pairs (each has a position signal the permutation changes).
TEST(ZooEncoder, NoPeEncoderTiesOnPermutedPairsOthersSeparate) {
  const std::vector<pr::WordPair> pairs = heldout_pairs(20);
  ASSERT_EQ(pairs.size(), 20u);
  for (const std::string scheme : {"none", "learned", "sinusoidal", "relative", "rope", "alibi"}) {
    SCOPED_TRACE(scheme);
    const pr::WordOrderResult r = pr::word_order(Model::load(encoder_dir(scheme)), pairs);
    EXPECT_EQ(r.method, "pll");
    int64_t permuted = 0, permuted_ties = 0;
    for (const pr::PairScore& p : r.pairs) {
      permuted += p.same_tokens;
      permuted_ties += p.same_tokens && p.tie;
      if (p.tie) {
        EXPECT_EQ(p.margin, 0.0);
      }
    }
    EXPECT_GE(permuted, 15) << "most swaps move whole tokens";
    if (scheme == "none") {
      EXPECT_EQ(permuted_ties, permuted);
    } else {
      EXPECT_LE(permuted_ties, permuted / 10);
    }
  }
}
