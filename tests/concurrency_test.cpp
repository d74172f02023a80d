// One loaded Model shared by many threads, each with its own inputs: every result must be
// identical (bit for bit) to the same call made alone, on both GEMM backends, for every weight
// dtype and KV-cache dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ordo/ordo.hpp"
#include "support/golden.hpp"

using namespace ordo;

namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 24;

struct Config {
  const char* name;
  Backend backend;
  std::optional<DType> dtype;
  DType kv;
};

std::string config_name(const testing::TestParamInfo<Config>& p) { return p.param.name; }

// What one call returned: logits of a forward pass, or the ids of a generation.
struct Outcome {
  std::vector<float> logits;
  std::vector<int32_t> ids;
  bool operator==(const Outcome& o) const {
    return ids == o.ids && logits.size() == o.logits.size() &&
           (logits.empty() || std::memcmp(logits.data(), o.logits.data(), logits.size() * sizeof(float)) == 0);
  }
};

const std::vector<std::string> kPrompts = {
    "Once upon a time",       "The dog bites the man",      "The man bites the dog", "Lily and Tom went to the park",
    "One day, a little bird", "She was very happy because", "The sun was hot and",   "Tim had a red ball"};

// Call `kind` (0 forward, 1 greedy, 2 seeded sampling) on prompt `item`.
Outcome run_one(const Model& m, int item, int kind) {
  const std::vector<int32_t> ids = m.encode(kPrompts[static_cast<size_t>(item)]);
  Outcome o;
  if (kind == 0) {
    const ForwardOutput f = m.forward(ids);
    o.logits.assign(f.logits.f32(), f.logits.f32() + f.logits.numel());
    return o;
  }
  GenerateParams p;
  p.max_new_tokens = 24;
  if (kind == 2) {
    p.sampling.temperature = 0.9f;
    p.sampling.top_k = 40;
    p.sampling.top_p = 0.95f;
    p.sampling.seed = 1000 + static_cast<uint64_t>(item);
  }
  o.ids = m.generate_ids(ids, p).ids;
  return o;
}

class SharedModel : public testing::TestWithParam<Config> {};

TEST_P(SharedModel, ThreadsGetWhatEachCallGetsAlone) {
  const Config& c = GetParam();
  ModelOptions opts;
  opts.backend = c.backend;
  opts.dtype = c.dtype;
  opts.kv_dtype = c.kv;
  const Model m = Model::load(test::model_dir("stories260K"), opts);
  const int items = static_cast<int>(kPrompts.size());
  std::vector<Outcome> alone(static_cast<size_t>(items * 3));
  for (int i = 0; i < items; ++i)
    for (int k = 0; k < 3; ++k) alone[static_cast<size_t>(i * 3 + k)] = run_one(m, i, k);
  // The reference calls are not degenerate: forward logits are finite, and prompts differ.
  EXPECT_FALSE(alone[0] == alone[3]);
  EXPECT_FALSE(alone[1].ids.empty());

  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int it = 0; it < kIterations; ++it) {
        const int item = (t * 5 + it) % items, kind = (t + it) % 3;
        try {
          if (!(run_one(m, item, kind) == alone[static_cast<size_t>(item * 3 + kind)])) ++mismatches;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(mismatches.load(), 0) << "of " << kThreads * kIterations << " calls";
  EXPECT_EQ(errors.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Stories260K, SharedModel,
                         testing::Values(Config{"OneDNN_F32", Backend::OneDNN, std::nullopt, DType::F32},
                                         Config{"OpenBLAS_F32", Backend::OpenBLAS, std::nullopt, DType::F32},
                                         Config{"OneDNN_F16_KvF16", Backend::OneDNN, DType::F16, DType::F16},
                                         Config{"OpenBLAS_F16_KvF16", Backend::OpenBLAS, DType::F16, DType::F16},
                                         Config{"OneDNN_I8_KvI8", Backend::OneDNN, DType::I8, DType::I8},
                                         Config{"OpenBLAS_I8_KvI8", Backend::OpenBLAS, DType::I8, DType::I8},
                                         Config{"OneDNN_BF16_KvF32", Backend::OneDNN, DType::BF16, DType::F32},
                                         Config{"OpenBLAS_BF16_KvF16", Backend::OpenBLAS, DType::BF16, DType::F16},
                                         Config{"OneDNN_F32_KvI8", Backend::OneDNN, std::nullopt, DType::I8}),
                         config_name);

// Every graph kind and the schemes whose rotation depends on the sequence (dynamic NTK,
// LongRoPE): each fixture case's forward and greedy run.
class SharedFixtureModel : public testing::TestWithParam<test::FixtureParam> {};

Outcome run_case(const Model& m, const nlohmann::json& c, bool greedy) {
  const std::vector<int32_t> ids = test::ids_of(c.at("input_ids"));
  Outcome o;
  if (greedy) {
    GenerateParams p;
    p.max_new_tokens = 12;
    p.stop_ids = {-1};  // run every step, as the reference does
    o.ids = m.generate_ids(ids, p).ids;
    return o;
  }
  ForwardOutput f;
  if (m.spec().graph == GraphKind::EncoderDecoder)
    f = m.forward_seq2seq(ids, test::ids_of(c.at("decoder_input_ids")));
  else
    f = m.forward(ids);
  const Tensor& t = m.spec().graph == GraphKind::Encoder ? f.hidden.back() : f.logits;
  o.logits.assign(t.f32(), t.f32() + t.numel());
  return o;
}

TEST_P(SharedFixtureModel, ThreadsGetWhatEachCallGetsAlone) {
  const test::FixtureParam& fp = GetParam();
  ModelOptions opts;
  opts.backend = fp.backend;
  opts.load_tokenizer = false;
  const Model m = Model::load(test::model_dir(fp.fixture), opts);
  const test::Golden golden = test::Golden::load(fp.fixture);
  std::vector<std::pair<const nlohmann::json*, bool>> calls;  // (case, greedy)
  for (const auto& c : golden.json.at("cases")) {
    if (c.contains("attention_mask")) continue;  // padded batches: rows are run alone elsewhere
    calls.emplace_back(&c, false);
    if (c.contains("greedy") && m.spec().graph != GraphKind::Encoder) calls.emplace_back(&c, true);
  }
  ASSERT_FALSE(calls.empty());
  std::vector<Outcome> alone;
  for (const auto& call : calls) alone.push_back(run_case(m, *call.first, call.second));
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> pool;
  const int n = static_cast<int>(calls.size());
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int it = 0; it < 8; ++it) {
        const int k = (t + it) % n;
        try {
          if (!(run_case(m, *calls[static_cast<size_t>(k)].first, calls[static_cast<size_t>(k)].second) ==
                alone[static_cast<size_t>(k)]))
            ++mismatches;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(mismatches.load(), 0) << "of " << kThreads * 8 << " calls";
  EXPECT_EQ(errors.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Families, SharedFixtureModel,
                         testing::ValuesIn(test::fixture_params({"t5", "marian", "bert", "bloom", "gpt2",
                                                                 "llama-dynamic", "llama-longrope"})),
                         test::fixture_param_name);

}  // namespace
