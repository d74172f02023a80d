// Decoder-only models against the Hugging Face reference: logits, every hidden state, greedy ids
// (with and without the KV cache) and the logits of every greedy step, on both GEMM backends.
#include <gtest/gtest.h>

#include "ordo/ordo.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::fixture_param_name;
using ordo::test::fixture_params;
using ordo::test::Golden;
using ordo::test::ids_of;
using ordo::test::within_tolerance;

namespace {

class DecoderFixture : public ordo::test::FixtureTest {};

TEST_P(DecoderFixture, LogitsAndHiddenStatesMatchReference) {
  for (const auto& c : golden_->json.at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE("case " + name);
    if (c.at("input_ids")[0].is_array()) continue;  // batched cases: see PaddedBatchDecoderFixture below
    const std::vector<int32_t> ids = ids_of(c.at("input_ids"));
    ForwardOutput out = model_->forward(ids, true);
    EXPECT_TRUE(within_tolerance(out.logits.f32(), golden_->tensor(name + ".logits")));
    const size_t n_hidden = model_->spec().decoder.layers.size() + 1;
    ASSERT_EQ(out.hidden.size(), n_hidden);
    for (size_t i = 0; i < n_hidden; ++i) {
      SCOPED_TRACE("hidden_states." + std::to_string(i));
      EXPECT_TRUE(within_tolerance(out.hidden[i].f32(), golden_->tensor(name + ".hidden_states." + std::to_string(i))));
    }
  }
}

TEST_P(DecoderFixture, GreedyWithCacheMatchesReferenceIdsAndStepLogits) {
  for (const auto& c : golden_->json.at("cases")) {
    if (!c.contains("greedy") || c.at("input_ids")[0].is_array()) continue;
    SCOPED_TRACE("case " + c.at("name").get<std::string>());
    ordo::test::expect_greedy_with_cache_matches(*model_, *golden_, c);
  }
}

TEST_P(DecoderFixture, GreedyWithoutCacheMatchesReference) {
  for (const auto& c : golden_->json.at("cases")) {
    if (!c.contains("greedy") || c.at("input_ids")[0].is_array()) continue;
    SCOPED_TRACE("case " + c.at("name").get<std::string>());
    const auto& g = c.at("greedy");
    GenerateParams p;
    p.max_new_tokens = g.at("max_new_tokens");
    p.stop_ids = {-1};
    p.use_cache = false;
    GenerateResult r = model_->generate_ids(ids_of(g.at("input_ids")), p);
    // Where recomputing differs from the cached run (dynamic NTK), the reference records both.
    const char* key = g.at("use_cache_false_same").get<bool>() ? "output_ids" : "use_cache_false_output_ids";
    EXPECT_EQ(r.ids, ids_of(g.at(key)));
  }
}

// Fixtures with batched cases (BLOOM's left-padded batch).
class PaddedBatchDecoderFixture : public DecoderFixture {};

// Each row runs alone with its attention mask (0 = padding); logits and hidden states are compared
// at real positions only, greedy ids and step logits row by row (prompt_mask), with and without
// the KV cache.
TEST_P(PaddedBatchDecoderFixture, RowsMatchReferenceAtRealPositions) {
  bool any = false;
  for (const auto& c : golden_->json.at("cases")) {
    if (!c.at("input_ids")[0].is_array()) continue;
    any = true;
    const std::string name = c.at("name");
    const nlohmann::json no_mask;
    const auto& masks = c.contains("attention_mask") ? c.at("attention_mask") : no_mask;
    const int64_t B = static_cast<int64_t>(c.at("input_ids").size());
    const size_t n_hidden = model_->spec().decoder.layers.size() + 1;
    // Row b of a golden [B, T, X] tensor as a [T, X] view.
    auto row_of = [&](const std::string& key, int64_t b) {
      Tensor t = golden_->tensor(key).rows(b, b + 1);
      t.shape = {t.dim(1), t.dim(2)};
      return t;
    };
    auto mask_of = [](const nlohmann::json& m, size_t T) {
      std::vector<uint8_t> v(T, 1);
      if (!m.is_null())
        for (size_t t = 0; t < T; ++t) v[t] = static_cast<uint8_t>(m[t].get<int>());
      return v;
    };
    for (int64_t b = 0; b < B; ++b) {
      SCOPED_TRACE("case " + name + " row " + std::to_string(b));
      const std::vector<int32_t> ids = ids_of(c.at("input_ids")[b]);
      const int64_t T = static_cast<int64_t>(ids.size());
      const std::vector<uint8_t> mask = mask_of(masks.is_null() ? no_mask : masks[b], ids.size());
      std::vector<int64_t> rows;  // real (mask 1) positions
      for (int64_t t = 0; t < T; ++t)
        if (mask[t]) rows.push_back(t);
      Sequence seq = model_->engine().new_sequence(T);
      ForwardOutput out = model_->engine().decode(seq, ids, mask, LogitsFor::All, true);
      EXPECT_TRUE(within_tolerance(out.logits.f32(), row_of(name + ".logits", b), rows));
      ASSERT_EQ(out.hidden.size(), n_hidden);
      for (size_t i = 0; i < n_hidden; ++i) {
        SCOPED_TRACE("hidden_states." + std::to_string(i));
        const Tensor ref = row_of(name + ".hidden_states." + std::to_string(i), b);
        EXPECT_TRUE(within_tolerance(out.hidden[i].f32(), ref, rows));
      }
    }
    if (!c.contains("greedy")) continue;
    const auto& g = c.at("greedy");
    const auto& gmasks = g.contains("attention_mask") ? g.at("attention_mask") : no_mask;
    for (int64_t b = 0; b < B; ++b) {
      SCOPED_TRACE("case " + name + " greedy row " + std::to_string(b));
      const std::vector<int32_t> prompt = ids_of(g.at("input_ids")[b]);
      GenerateParams p;
      p.max_new_tokens = g.at("max_new_tokens");
      p.stop_ids = {-1};
      p.prompt_mask = mask_of(gmasks.is_null() ? no_mask : gmasks[b], prompt.size());
      GenerateResult r = model_->generate_ids(prompt, p, nullptr, true);
      EXPECT_EQ(r.ids, ids_of(g.at("output_ids")[b]));
      const Tensor ref = row_of(name + ".greedy.logits", b);
      EXPECT_TRUE(ordo::test::step_logits_match(r, ref));
      p.use_cache = false;
      GenerateResult u = model_->generate_ids(prompt, p);
      const bool same = g.at("use_cache_false_same").get<bool>();
      EXPECT_EQ(u.ids, ids_of(g.at(same ? "output_ids" : "use_cache_false_output_ids")[b]));
    }
  }
  EXPECT_TRUE(any) << GetParam().fixture << " has no batched case";
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Llama, DecoderFixture, testing::ValuesIn(fixture_params({"llama", "stories260K"})),
                         fixture_param_name);

INSTANTIATE_TEST_SUITE_P(RopeScaling, DecoderFixture,
                         testing::ValuesIn(fixture_params({"llama-linear", "llama-dynamic", "llama-yarn",
                                                           "llama-llama3", "llama-longrope"})),
                         fixture_param_name);
INSTANTIATE_TEST_SUITE_P(Decoders, DecoderFixture,
                         testing::ValuesIn(fixture_params({"gpt2", "opt", "gpt-neox", "gptj", "bloom", "mpt"})),
                         fixture_param_name);
INSTANTIATE_TEST_SUITE_P(Bloom, PaddedBatchDecoderFixture, testing::ValuesIn(fixture_params({"bloom"})),
                         fixture_param_name);
