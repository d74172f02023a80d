// Encoder-decoder models (T5 v1.0, T5 v1.1, Marian) against the Hugging Face reference: decoder
// logits, every encoder and decoder hidden state, greedy ids from decoder_start_token_id (with and
// without the KV cache) and the logits of every greedy step, on both GEMM backends.
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

class Seq2SeqFixture : public ordo::test::FixtureTest {
 protected:
  void SetUp() override {
    FixtureTest::SetUp();
    ASSERT_EQ(model_->spec().graph, GraphKind::EncoderDecoder);
  }
};

TEST_P(Seq2SeqFixture, LogitsAndHiddenStatesMatchReference) {
  for (const auto& c : golden_->json.at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE("case " + name);
    std::vector<Tensor> enc_hidden;
    ForwardOutput out =
        model_->forward_seq2seq(ids_of(c.at("input_ids")), ids_of(c.at("decoder_input_ids")), true, &enc_hidden);
    EXPECT_TRUE(within_tolerance(out.logits.f32(), golden_->tensor(name + ".logits")));
    const size_t n_enc = model_->spec().encoder.layers.size() + 1;
    const size_t n_dec = model_->spec().decoder.layers.size() + 1;
    ASSERT_EQ(enc_hidden.size(), n_enc);
    ASSERT_EQ(out.hidden.size(), n_dec);
    for (size_t i = 0; i < n_enc; ++i) {
      const std::string key = name + ".encoder_hidden_states." + std::to_string(i);
      SCOPED_TRACE(key);
      EXPECT_TRUE(within_tolerance(enc_hidden[i].f32(), golden_->tensor(key)));
    }
    for (size_t i = 0; i < n_dec; ++i) {
      const std::string key = name + ".decoder_hidden_states." + std::to_string(i);
      SCOPED_TRACE(key);
      EXPECT_TRUE(within_tolerance(out.hidden[i].f32(), golden_->tensor(key)));
    }
  }
}

TEST_P(Seq2SeqFixture, GreedyWithCacheMatchesReferenceIdsAndStepLogits) {
  for (const auto& c : golden_->json.at("cases")) {
    if (!c.contains("greedy")) continue;
    const std::string name = c.at("name");
    SCOPED_TRACE("case " + name);
    // generate_ids starts the decoder from the spec's decoder_start_id.
    EXPECT_EQ(model_->spec().decoder_start_id, c.at("greedy").at("decoder_start_token_id").get<int32_t>());
    ordo::test::expect_greedy_with_cache_matches(*model_, *golden_, c);
  }
}

TEST_P(Seq2SeqFixture, GreedyWithoutCacheMatchesReference) {
  for (const auto& c : golden_->json.at("cases")) {
    if (!c.contains("greedy")) continue;
    SCOPED_TRACE("case " + c.at("name").get<std::string>());
    const auto& g = c.at("greedy");
    ASSERT_TRUE(g.at("use_cache_false_same").get<bool>());
    GenerateParams p;
    p.max_new_tokens = g.at("max_new_tokens");
    p.stop_ids = {-1};
    p.use_cache = false;
    GenerateResult r = model_->generate_ids(ids_of(g.at("input_ids")), p);
    EXPECT_EQ(r.ids, ids_of(g.at("output_ids")));
  }
}

// Teacher forcing through the cache one token at a time gives the same logits as one full pass.
TEST_P(Seq2SeqFixture, IncrementalDecodeMatchesFullPass) {
  const auto& c = golden_->json.at("cases")[0];
  const std::string name = c.at("name");
  const std::vector<int32_t> dec = ids_of(c.at("decoder_input_ids"));
  const Transformer& e = model_->engine();
  Tensor enc = e.encode(ids_of(c.at("input_ids")), {}, {});
  Sequence seq = e.new_sequence(4);  // grows as needed
  e.attach_encoder(seq, enc, {});
  const Tensor& ref = golden_->tensor(name + ".logits");
  const int64_t V = ref.dim(1);
  std::vector<float> got;
  for (int32_t id : dec) {
    Tensor l = e.decode(seq, {id}, {}, LogitsFor::Last).logits;
    got.insert(got.end(), l.f32(), l.f32() + V);
  }
  EXPECT_TRUE(within_tolerance(got.data(), ref));
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Seq2Seq, Seq2SeqFixture, testing::ValuesIn(fixture_params({"t5", "t5-v1_1", "marian"})),
                         fixture_param_name);
