// Reference fixtures (Hugging Face transformers, CPU float32): golden.json + golden.safetensors.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/tensor.hpp"

namespace ordo::test {

// Directory of a fixture's model (config.json + model.safetensors). stories260K is the bundled
// default model under models/; the others live under tests/data/fixtures/.
std::string model_dir(const std::string& fixture);
std::string data_path(const std::string& relative);  // tests/data/<relative>
std::string read_file(const std::string& path);      // whole file ("" if unreadable)

// The message of the ordo::Error f throws ("" if it throws none).
std::string error_of(const std::function<void()>& f);

// log p(target) from one row of full-vocabulary logits, by hand (log-sum-exp in double).
double log_prob(const float* row, int64_t vocab, int32_t target);
// Σ_{t>=from} log p(ids[t] | ids[<t]) from one unbatched Model::forward.
double sequence_logprob(const Model& m, const std::vector<int32_t>& ids, size_t from = 1);

struct Golden {
  std::string name;
  nlohmann::json json;
  SafeTensors tensors;
  static Golden load(const std::string& fixture);
  const Tensor& tensor(const std::string& key) const { return tensors.get(key); }
  const nlohmann::json& case_json(const std::string& case_name) const;
};

std::vector<int32_t> ids_of(const nlohmann::json& j);

// The fixtures README rule: max |got − golden| <= 1e-4 · max(1, max |golden|) over the rows
// listed in `rows` (all rows when empty). got is row-major with the golden tensor's shape.
::testing::AssertionResult within_tolerance(const float* got, const Tensor& golden,
                                            const std::vector<int64_t>& rows = {}, double rel = 1e-4);

// The logits of every greedy step (GenerateResult::step_logits, kept with keep_logits) against the
// reference's [steps, vocab] greedy.logits, by the same tolerance rule.
::testing::AssertionResult step_logits_match(const GenerateResult& r, const Tensor& golden);

// A case's "greedy" entry through model.generate_ids with the KV cache, not stopping at EOS (as
// the reference): the ids must equal output_ids and every step's logits <name>.greedy.logits.
void expect_greedy_with_cache_matches(const Model& model, const Golden& golden, const nlohmann::json& test_case);

// Every case of `golden` through model.forward with hidden states: the logits and the n_hidden
// hidden states (embedding, each layer, final) within tolerance. Returns the number of cases.
int expect_forward_cases_match(const Model& model, const Golden& golden, size_t n_hidden);

// Fixture tests run every reference fixture on every GEMM backend.
struct FixtureParam {
  std::string fixture;
  Backend backend;
};
std::string fixture_param_name(const testing::TestParamInfo<FixtureParam>& p);
std::vector<FixtureParam> fixture_params(const std::vector<std::string>& fixtures);

// Loads the fixture's golden data and its model (ids only: fixtures ship no tokenizer).
class FixtureTest : public testing::TestWithParam<FixtureParam> {
 protected:
  void SetUp() override;
  std::unique_ptr<Golden> golden_;
  std::unique_ptr<Model> model_;
};

}  // namespace ordo::test
