// Encoder-only models (BERT) against the Hugging Face reference: last_hidden_state, every hidden
// state, pooler_output, token types (two-segment case) and a right-padded batch (only real rows
// compared), on both GEMM backends.
#include <gtest/gtest.h>

#include <algorithm>

#include "ordo/ordo.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::fixture_param_name;
using ordo::test::fixture_params;
using ordo::test::Golden;
using ordo::test::ids_of;
using ordo::test::within_tolerance;

namespace {

class EncoderFixture : public ordo::test::FixtureTest {
 protected:
  void SetUp() override {
    FixtureTest::SetUp();
    ASSERT_EQ(model_->spec().graph, GraphKind::Encoder);
  }
};

std::vector<int32_t> optional_ids(const nlohmann::json& c, const char* key) {
  return c.contains(key) ? ids_of(c.at(key)) : std::vector<int32_t>{};
}

// Row b of a batched golden tensor [B, ...] as a tensor of shape [...].
Tensor batch_row(const Tensor& t, int64_t b) {
  Tensor r = t.rows(b, b + 1);
  r.shape.erase(r.shape.begin());
  return r;
}

TEST_P(EncoderFixture, HiddenStatesAndPoolerMatchReference) {
  for (const auto& c : golden_->json.at("cases")) {
    if (c.at("input_ids")[0].is_array()) continue;  // batched: see PaddedBatch
    const std::string name = c.at("name");
    SCOPED_TRACE("case " + name);
    std::vector<Tensor> hidden;
    Tensor h = model_->engine().encode(ids_of(c.at("input_ids")), optional_ids(c, "token_type_ids"), {}, &hidden);
    EXPECT_TRUE(within_tolerance(h.f32(), golden_->tensor(name + ".last_hidden_state")));
    const size_t n_hidden = model_->spec().encoder.layers.size() + 1;
    ASSERT_EQ(hidden.size(), n_hidden);
    for (size_t i = 0; i < n_hidden; ++i) {
      const std::string key = name + ".hidden_states." + std::to_string(i);
      SCOPED_TRACE(key);
      EXPECT_TRUE(within_tolerance(hidden[i].f32(), golden_->tensor(key)));
    }
    if (model_->spec().pooler.present()) {
      Tensor pooled = model_->engine().pool(h);
      EXPECT_TRUE(within_tolerance(pooled.f32(), golden_->tensor(name + ".pooler_output")));
    }
  }
}

TEST_P(EncoderFixture, TokenTypesMatter) {
  // The two-segment case differs from running the same ids as one segment.
  for (const auto& c : golden_->json.at("cases")) {
    if (c.at("input_ids")[0].is_array() || !c.contains("token_type_ids")) continue;
    const std::vector<int32_t> types = ids_of(c.at("token_type_ids"));
    if (std::all_of(types.begin(), types.end(), [](int32_t t) { return t == 0; })) continue;
    const std::string name = c.at("name");
    SCOPED_TRACE("case " + name);
    Tensor h = model_->engine().encode(ids_of(c.at("input_ids")), {}, {});
    EXPECT_FALSE(within_tolerance(h.f32(), golden_->tensor(name + ".last_hidden_state")));
  }
}

TEST_P(EncoderFixture, ModelForwardGivesEncoderOutput) {
  const auto& c = golden_->json.at("cases")[0];
  ASSERT_FALSE(c.at("input_ids")[0].is_array());
  const std::string name = c.at("name");
  ForwardOutput out = model_->forward(ids_of(c.at("input_ids")));
  EXPECT_TRUE(out.logits.empty());
  ASSERT_EQ(out.hidden.size(), 1u);
  EXPECT_TRUE(within_tolerance(out.hidden[0].f32(), golden_->tensor(name + ".last_hidden_state")));
}

TEST_P(EncoderFixture, PaddedBatchMatchesReferenceOnRealRows) {
  bool any = false;
  for (const auto& c : golden_->json.at("cases")) {
    if (!c.at("input_ids")[0].is_array()) continue;
    any = true;
    const std::string name = c.at("name");
    const auto& batch = c.at("input_ids");
    for (size_t b = 0; b < batch.size(); ++b) {
      SCOPED_TRACE("case " + name + " row " + std::to_string(b));
      const std::vector<int32_t> ids = ids_of(batch[b]);
      const int64_t T = static_cast<int64_t>(ids.size());
      std::vector<uint8_t> mask(ids.size(), 1);
      std::vector<int64_t> real;
      for (int64_t t = 0; t < T; ++t) {
        if (c.contains("attention_mask")) mask[t] = static_cast<uint8_t>(c.at("attention_mask")[b][t].get<int>());
        if (mask[t]) real.push_back(t);
      }
      std::vector<int32_t> types =
          c.contains("token_type_ids") ? ids_of(c.at("token_type_ids")[b]) : std::vector<int32_t>{};
      std::vector<Tensor> hidden;
      Tensor h = model_->engine().encode(ids, types, mask, &hidden);
      EXPECT_TRUE(within_tolerance(h.f32(), batch_row(golden_->tensor(name + ".last_hidden_state"), b), real));
      ASSERT_EQ(hidden.size(), model_->spec().encoder.layers.size() + 1);
      for (size_t i = 0; i < hidden.size(); ++i) {
        const std::string key = name + ".hidden_states." + std::to_string(i);
        SCOPED_TRACE(key);
        EXPECT_TRUE(within_tolerance(hidden[i].f32(), batch_row(golden_->tensor(key), b), real));
      }
      if (model_->spec().pooler.present()) {
        Tensor pooled = model_->engine().pool(h);
        EXPECT_TRUE(within_tolerance(pooled.f32(), batch_row(golden_->tensor(name + ".pooler_output"), b)));
      }
    }
  }
  EXPECT_TRUE(any) << "fixture has no padded batch case";
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Encoder, EncoderFixture, testing::ValuesIn(fixture_params({"bert"})), fixture_param_name);
