// Batched forward steps and continuous batching, held to the Hugging Face references: every case
// (and every row of a padded batch) of a fixture runs as one batch — decoder prompts of different
// lengths in one decode_batch, encoder inputs in one encode_batch — and greedy generation runs
// through generate_batch with fewer slots than sequences, so sequences join and leave mid-flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ordo/ordo.hpp"
#include "ordo/quantize.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::ids_of;
using ordo::test::within_tolerance;

namespace {

// One row of a fixture case: a single case, or row b of a batched (padded) one.
struct Row {
  std::string name;  // the case's tensor-name prefix
  int64_t b = -1;    // row of a batched golden tensor, -1: not batched
  std::vector<int32_t> ids, types, decoder_ids;
  std::vector<uint8_t> mask;  // empty: all real
  const nlohmann::json* greedy = nullptr;
  int64_t keep = -1;  // > 0: only the first `keep` decoder positions (a causal prefix of the case)
};

std::vector<uint8_t> mask_of(const nlohmann::json& m) {
  std::vector<uint8_t> v;
  for (const auto& x : m) v.push_back(static_cast<uint8_t>(x.get<int>()));
  return v;
}

// prefix: add a causal prefix of the first case (not for dynamic NTK and LongRoPE, whose rotation
// depends on the sequence's length, so a prefix is not the reference's first rows).
std::vector<Row> rows_of(const test::Golden& g, bool prefix) {
  std::vector<Row> rows;
  for (const auto& c : g.json.at("cases")) {
    const std::string name = c.at("name");
    const bool batched = c.at("input_ids")[0].is_array();
    const int64_t B = batched ? static_cast<int64_t>(c.at("input_ids").size()) : 1;
    for (int64_t b = 0; b < B; ++b) {
      auto at = [&](const char* key) -> const nlohmann::json& { return batched ? c.at(key)[b] : c.at(key); };
      Row r;
      r.name = name;
      r.b = batched ? b : -1;
      r.ids = ids_of(at("input_ids"));
      if (c.contains("token_type_ids")) r.types = ids_of(at("token_type_ids"));
      if (c.contains("decoder_input_ids")) r.decoder_ids = ids_of(at("decoder_input_ids"));
      if (c.contains("attention_mask")) r.mask = mask_of(at("attention_mask"));
      if (c.contains("greedy")) r.greedy = &c.at("greedy");
      rows.push_back(std::move(r));
    }
  }
  // A causal prefix of the first case: its logits are the reference's first rows, and it makes
  // the batch ragged even for fixtures with one case.
  Row p = rows.front();
  std::vector<int32_t>& dec = p.decoder_ids.empty() ? p.ids : p.decoder_ids;
  if (prefix && p.mask.empty() && p.types.empty() && dec.size() >= 2) {
    p.keep = static_cast<int64_t>(dec.size() / 2);
    dec.resize(static_cast<size_t>(p.keep));
    rows.push_back(std::move(p));
  }
  return rows;
}

// The golden tensor `key` of a row: itself, or its row b as a tensor without the batch axis.
Tensor golden_of(const test::Golden& g, const Row& r, const std::string& key) {
  Tensor t = g.tensor(key);
  if (r.b >= 0) {
    t = t.rows(r.b, r.b + 1);
    t.shape.erase(t.shape.begin());
  }
  return r.keep > 0 ? t.rows(0, r.keep) : t;
}

std::vector<int64_t> real_rows(const Row& r) {
  std::vector<int64_t> rows;
  for (size_t t = 0; t < r.mask.size(); ++t)
    if (r.mask[t]) rows.push_back(static_cast<int64_t>(t));
  return rows;  // empty: every row
}

bool length_dependent(const Transformer& e) {
  const ScalingType t = e.spec().position.scaling.type;
  return t == ScalingType::Dynamic || t == ScalingType::LongRoPE;
}

class BatchFixture : public test::FixtureTest {};
class BatchGenerateFixture : public test::FixtureTest {};

TEST_P(BatchFixture, AllCasesInOneForwardMatchReference) {
  const Transformer& e = model_->engine();
  const std::vector<Row> rows = rows_of(*golden_, !length_dependent(e));
  ASSERT_GE(rows.size(), 2u);
  if (e.spec().graph == GraphKind::Encoder) {
    std::vector<EncodeRequest> reqs;
    for (const Row& r : rows) reqs.push_back(EncodeRequest{r.ids, r.types, r.mask});
    const std::vector<Tensor> out = e.encode_batch(reqs);
    ASSERT_EQ(out.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      SCOPED_TRACE(rows[i].name + " row " + std::to_string(rows[i].b));
      EXPECT_TRUE(within_tolerance(out[i].f32(), golden_of(*golden_, rows[i], rows[i].name + ".last_hidden_state"),
                                   real_rows(rows[i])));
    }
    return;
  }
  for (PromptRows mode : {PromptRows::Alone, PromptRows::Shared}) {
    SCOPED_TRACE(mode == PromptRows::Alone ? "prompts alone" : "prompts shared");
    std::vector<Sequence> seqs;
    for (size_t i = 0; i < rows.size(); ++i) seqs.push_back(e.new_sequence());
    std::vector<DecodeRequest> reqs;
    if (e.spec().graph == GraphKind::EncoderDecoder) {
      std::vector<EncodeRequest> enc;
      for (const Row& r : rows) enc.push_back(EncodeRequest{r.ids, {}, r.mask});
      const std::vector<Tensor> enc_out = e.encode_batch(enc);
      for (size_t i = 0; i < rows.size(); ++i) {
        e.attach_encoder(seqs[i], enc_out[i], rows[i].mask);
        reqs.push_back(DecodeRequest{&seqs[i], rows[i].decoder_ids, {}, LogitsFor::All});
      }
    } else {
      for (size_t i = 0; i < rows.size(); ++i)
        reqs.push_back(DecodeRequest{&seqs[i], rows[i].ids, rows[i].mask, LogitsFor::All});
    }
    const std::vector<ForwardOutput> out = e.decode_batch(reqs, mode);
    ASSERT_EQ(out.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      SCOPED_TRACE(rows[i].name + " row " + std::to_string(rows[i].b));
      EXPECT_EQ(seqs[i].length(), static_cast<int64_t>(reqs[i].ids.size()));
      EXPECT_TRUE(within_tolerance(out[i].logits.f32(), golden_of(*golden_, rows[i], rows[i].name + ".logits"),
                                   e.spec().graph == GraphKind::Decoder ? real_rows(rows[i]) : std::vector<int64_t>{}));
    }
  }
}

TEST_P(BatchGenerateFixture, GreedyThroughContinuousBatchingMatchesReference) {
  const Transformer& e = model_->engine();
  std::vector<Row> rows;
  for (Row& r : rows_of(*golden_, false))
    if (r.greedy && r.keep < 0) rows.push_back(std::move(r));
  ASSERT_FALSE(rows.empty());
  // Each greedy row twice: once cut to half its tokens (the reference's prefix), once whole,
  // interleaved, with fewer slots than requests: a short one leaves and the next request's prompt
  // joins while the others decode.
  struct Want {
    const Row* row;
    int n;  // tokens to generate
  };
  std::vector<Want> wants;
  for (const Row& r : rows) {
    const int n = r.greedy->at("max_new_tokens");
    wants.push_back({&r, std::max(1, n / 2)});
    wants.push_back({&r, n});
  }
  std::vector<Tensor> enc_out(wants.size());
  std::vector<GenerateRequest> reqs;
  for (size_t i = 0; i < wants.size(); ++i) {
    const Row& row = *wants[i].row;
    const nlohmann::json& g = *row.greedy;
    auto at = [&](const char* key) -> const nlohmann::json& { return row.b >= 0 ? g.at(key)[row.b] : g.at(key); };
    GenerateRequest r;
    r.params.max_new_tokens = wants[i].n;
    r.params.stop_ids = {-1};  // the reference does not stop at EOS
    if (e.spec().graph == GraphKind::EncoderDecoder) {
      enc_out[i] = e.encode(ids_of(at("input_ids")), {}, {});
      r.encoder_out = &enc_out[i];
      r.prompt = {g.at("decoder_start_token_id").get<int32_t>()};
    } else {
      r.prompt = ids_of(at("input_ids"));
      if (g.contains("attention_mask")) r.params.prompt_mask = mask_of(at("attention_mask"));
    }
    reqs.push_back(std::move(r));
  }
  const int slots = std::max(2, static_cast<int>(wants.size()) - 1);
  std::vector<size_t> order;
  const std::vector<GenerateResult> res = generate_batch(
      e, reqs, slots,
      [&](size_t i, int32_t) {
        order.push_back(i);
        return true;
      },
      true);
  ASSERT_EQ(res.size(), wants.size());
  for (size_t i = 0; i < wants.size(); ++i) {
    const Row& row = *wants[i].row;
    SCOPED_TRACE(row.name + " row " + std::to_string(row.b) + ", " + std::to_string(wants[i].n) + " tokens");
    std::vector<int32_t> want = ids_of(row.b >= 0 ? row.greedy->at("output_ids")[row.b] : row.greedy->at("output_ids"));
    want.resize(static_cast<size_t>(wants[i].n));
    EXPECT_EQ(res[i].ids, want);
    const Tensor ref = golden_of(*golden_, row, row.name + ".greedy.logits");
    EXPECT_TRUE(test::step_logits_match(res[i], ref.rows(0, wants[i].n)));
  }
  if (wants.size() <= 2) return;  // one greedy case: the two requests run side by side
  // The last request started only after the first (short) one left, while others were decoding.
  const size_t last = wants.size() - 1;
  const auto first_of_last = std::find(order.begin(), order.end(), last);
  const auto last_of_first = std::find(order.rbegin(), order.rend(), size_t{0}).base();
  EXPECT_GE(first_of_last, last_of_first);
  EXPECT_NE(std::find(first_of_last, order.end(), size_t{1}), order.end());
}

const std::vector<std::string> kGenerators = {
    "llama", "llama-dynamic", "llama-linear", "llama-llama3", "llama-longrope", "llama-yarn",
    "gpt2",  "opt",           "gpt-neox",     "gptj",         "bloom",          "mpt",
    "t5",    "t5-v1_1",       "marian",       "stories260K"};

std::vector<test::FixtureParam> every_family() {
  std::vector<test::FixtureParam> p = test::fixture_params(kGenerators);
  for (const test::FixtureParam& e : test::fixture_params({"bert"})) p.push_back(e);
  return p;
}

INSTANTIATE_TEST_SUITE_P(Families, BatchFixture, testing::ValuesIn(every_family()), test::fixture_param_name);
INSTANTIATE_TEST_SUITE_P(Families, BatchGenerateFixture, testing::ValuesIn(test::fixture_params(kGenerators)),
                         test::fixture_param_name);

}  // namespace

namespace {

// The bundled model with real prompts: generate_batch gives every request exactly what it gets
// alone — the same ids and the same bits in every step's logits — greedy and seeded sampling
// alike, with requests of different lengths joining and leaving: 3 slots for 8 requests (prompts
// join while others decode), and 20 slots for 24 requests (more one-token rows per step than one
// pass of the matvec kernels takes), for F32 weights and for int8 weights with an int8 KV cache.
struct SlotsParam {
  std::optional<DType> dtype;
  int requests, slots;
};

class ContinuousBatching : public testing::TestWithParam<SlotsParam> {};

TEST_P(ContinuousBatching, EveryRequestGetsWhatItGetsAlone) {
  ModelOptions o;
  o.dtype = GetParam().dtype;
  if (o.dtype) o.kv_dtype = *o.dtype;
  const Model m = Model::load(test::model_dir("stories260K"), o);
  const std::vector<std::string> prompts = {
      "Once upon a time", "The dog bites the man",   "Lily saw a big", "One day", "The man bites the dog and then",
      "Tom and",          "She was sad because her", "The cat"};
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < GetParam().requests; ++i) {
    GenerateRequest r;
    r.prompt = m.encode(prompts[static_cast<size_t>(i) % prompts.size()]);
    r.params.max_new_tokens = 6 + (i * 5) % 23;
    if (i % 2) {
      r.params.sampling.temperature = 0.8f;
      r.params.sampling.top_k = 20;
      r.params.sampling.seed = 7 * static_cast<uint64_t>(i);
    }
    reqs.push_back(std::move(r));
  }
  const std::vector<GenerateResult> batched = generate_batch(m.engine(), reqs, GetParam().slots, nullptr, true);
  ASSERT_EQ(batched.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const GenerateResult alone = generate(m.engine(), reqs[i].prompt, reqs[i].params, nullptr, nullptr, {}, true);
    EXPECT_FALSE(alone.ids.empty());
    EXPECT_EQ(batched[i].ids, alone.ids);
    EXPECT_EQ(batched[i].prompt_tokens, static_cast<int64_t>(reqs[i].prompt.size()));
    ASSERT_EQ(batched[i].step_logits.size(), alone.step_logits.size());
    for (size_t k = 0; k < alone.step_logits.size(); ++k)
      EXPECT_EQ(std::memcmp(batched[i].step_logits[k].data, alone.step_logits[k].data,
                            static_cast<size_t>(alone.step_logits[k].numel()) * sizeof(float)),
                0)
          << "step " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Slots, ContinuousBatching,
                         testing::Values(SlotsParam{std::nullopt, 8, 3}, SlotsParam{std::nullopt, 24, 20},
                                         SlotsParam{DType::I8, 8, 3}, SlotsParam{DType::I8, 24, 20}),
                         [](const testing::TestParamInfo<SlotsParam>& p) {
                           return std::string(p.param.dtype ? weight_dtype_name(*p.param.dtype) : "f32") + "_" +
                                  std::to_string(p.param.requests) + "_in_" + std::to_string(p.param.slots);
                         });

TEST(DecodeBatch, OneSequenceTwiceIsAnError) {
  const Model m = Model::load(test::model_dir("stories260K"));
  Sequence s = m.engine().new_sequence();
  try {
    m.engine().decode_batch(
        {DecodeRequest{&s, {1, 2}, {}, LogitsFor::Last}, DecodeRequest{&s, {3}, {}, LogitsFor::Last}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("requests 0 and 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.length(), 0);  // nothing was appended
}

TEST(DecodeBatch, EmptyRequestAndZeroSlotsAreErrors) {
  const Model m = Model::load(test::model_dir("stories260K"));
  Sequence s = m.engine().new_sequence();
  EXPECT_THROW(m.engine().decode_batch({DecodeRequest{&s, {}, {}, LogitsFor::Last}}), Error);
  GenerateRequest r;
  r.prompt = {1};
  EXPECT_THROW(generate_batch(m.engine(), {r}, 0), Error);
}

}  // namespace

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.data, b.data, static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

// int8 weights go through the integer kernels for any number of rows, so a batched prompt's
// logits are the bits it gets alone even when the step has more rows than the float kernels take.
TEST(DecodeBatch, Int8PromptsAreBitIdenticalToAloneAtAnyRowCount) {
  ModelOptions o;
  o.dtype = DType::I8;
  const Model m = Model::load(test::model_dir("stories260K"), o);
  const std::vector<std::vector<int32_t>> prompts = {
      m.encode("Once upon a time there was a little girl named Lily who"), m.encode("The dog bites the man"),
      m.encode("One day, Tom went to the park with his mom and dad and they saw a big red ball near the tree")};
  std::vector<Sequence> seqs(prompts.size());
  std::vector<DecodeRequest> reqs;
  int64_t rows = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    seqs[i] = m.engine().new_sequence();
    reqs.push_back(DecodeRequest{&seqs[i], prompts[i], {}, LogitsFor::All});
    rows += static_cast<int64_t>(prompts[i].size());
  }
  ASSERT_GT(rows, 16);
  const std::vector<ForwardOutput> batched = m.engine().decode_batch(reqs);
  for (size_t i = 0; i < prompts.size(); ++i) {
    Sequence alone = m.engine().new_sequence();
    EXPECT_TRUE(same_bits(batched[i].logits, m.engine().decode(alone, prompts[i], {}, LogitsFor::All).logits))
        << "prompt " << i;
  }
}

// One-token steps of up to 16 sequences run the same kernels as one sequence: the same bits, for
// every weight dtype.
TEST(DecodeBatch, DecodeStepsAreBitIdenticalToAlone) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::I8}) {
    ModelOptions o;
    o.dtype = dt;
    const Model m = Model::load(test::model_dir("stories260K"), o);
    const std::vector<int32_t> prompt = m.encode("Once upon a time");
    std::vector<Sequence> batch, alone;
    for (int i = 0; i < 16; ++i) {
      batch.push_back(m.engine().new_sequence());
      alone.push_back(m.engine().new_sequence());
      const std::vector<int32_t> p(prompt.begin(), prompt.begin() + 1 + i % static_cast<int>(prompt.size()));
      m.engine().decode(batch.back(), p, {}, LogitsFor::None);
      m.engine().decode(alone.back(), p, {}, LogitsFor::None);
    }
    std::vector<DecodeRequest> reqs;
    for (int i = 0; i < 16; ++i)
      reqs.push_back(DecodeRequest{&batch[static_cast<size_t>(i)], {100 + i}, {}, LogitsFor::Last});
    const std::vector<ForwardOutput> out = m.engine().decode_batch(reqs);
    for (int i = 0; i < 16; ++i)
      EXPECT_TRUE(same_bits(out[static_cast<size_t>(i)].logits,
                            m.engine().decode(alone[static_cast<size_t>(i)], {100 + i}, {}, LogitsFor::Last).logits))
          << weight_dtype_name(dt) << " sequence " << i;
  }
}

// StepTimes: where a step's time goes, for the steps this thread runs under a recording.
TEST(StepTimes, RecordsEachStepAndItsParts) {
  const Model m = Model::load(test::model_dir("stories260K"));
  std::vector<Sequence> seqs;
  for (int i = 0; i < 4; ++i) seqs.push_back(m.engine().new_sequence());
  std::vector<DecodeRequest> reqs;
  for (int i = 0; i < 4; ++i)
    reqs.push_back(DecodeRequest{&seqs[static_cast<size_t>(i)], m.encode("Once upon a time"), {}, LogitsFor::Last});
  StepTimes t;
  {
    const StepTimes::Recording rec(t);
    m.engine().decode_batch(reqs);  // one step of four prompts
    for (int k = 0; k < 3; ++k) {   // three one-token steps of four sequences
      for (DecodeRequest& r : reqs) r.ids = {100 + k};
      m.engine().decode_batch(reqs);
    }
    m.engine().decode(seqs[0], {7}, {}, LogitsFor::Last);  // and one of a single sequence
  }
  EXPECT_EQ(t.steps, 5);
  EXPECT_GT(t.linears, 0.0);
  EXPECT_GT(t.attention, 0.0);
  EXPECT_GT(t.rope_and_cache, 0.0);  // stories260K rotates q and k (RoPE)
  EXPECT_GT(t.lm_head, 0.0);
  EXPECT_GE(t.other(), 0.0);
  EXPECT_LE(t.linears + t.attention + t.rope_and_cache + t.lm_head, t.total);
}

TEST(StepTimes, OnlyStepsOfThisThreadUnderTheInnermostRecording) {
  const Model m = Model::load(test::model_dir("stories260K"));
  const std::vector<int32_t> prompt = m.encode("The dog bites the man");
  auto one_step = [&] {
    Sequence s = m.engine().new_sequence();
    m.engine().decode(s, prompt, {}, LogitsFor::Last);
  };
  StepTimes outer, inner;
  one_step();  // no recording: nothing to record into
  {
    const StepTimes::Recording a(outer);
    one_step();
    {
      const StepTimes::Recording b(inner);
      one_step();
      one_step();
      std::thread other([&] { one_step(); });  // another thread's step goes nowhere
      other.join();
    }
    one_step();
  }
  one_step();
  EXPECT_EQ(outer.steps, 2);
  EXPECT_EQ(inner.steps, 2);
  EXPECT_GT(outer.total, 0.0);
  EXPECT_GT(inner.total, 0.0);
}

TEST(StepTimes, RecordsTheStepsOfGenerateBatch) {
  const Model m = Model::load(test::model_dir("stories260K"));
  TextGenerateParams p;
  p.max_new_tokens = 6;
  StepTimes t;
  std::vector<TextResult> r;
  {
    const StepTimes::Recording rec(t);
    r = m.generate_batch({"Once upon a time", "The dog bites the man"}, p, 2, nullptr);
  }
  ASSERT_EQ(r.size(), 2u);
  // One step per generated token at least for the longest result (the prompts' step included).
  size_t most = 0;
  for (const TextResult& x : r) most = std::max(most, x.generation.ids.size());
  EXPECT_GE(t.steps, static_cast<int64_t>(most));
  EXPECT_GT(t.linears, 0.0);
  EXPECT_LE(t.linears + t.attention + t.rope_and_cache + t.lm_head, t.total);
}

TEST(StepTimes, AStepThatFailsAddsNothing) {
  const Model m = Model::load(test::model_dir("stories260K"));
  Sequence s = m.engine().new_sequence();
  StepTimes t;
  const StepTimes::Recording rec(t);
  // The same sequence twice in one step is an Error (DecodeBatch.OneSequenceTwiceIsAnError).
  EXPECT_THROW(m.engine().decode_batch(
                   {DecodeRequest{&s, {1}, {}, LogitsFor::Last}, DecodeRequest{&s, {2}, {}, LogitsFor::Last}}),
               Error);
  EXPECT_EQ(t.steps, 0);
  EXPECT_EQ(t.total, 0.0);
  EXPECT_EQ(t.linears, 0.0);
  m.engine().decode(s, {1}, {}, LogitsFor::Last);
  EXPECT_EQ(t.steps, 1);
}

}  // namespace
