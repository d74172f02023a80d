// Self-Extend and attention sinks against the independent PyTorch reference
// (tools/longctx/reference.py, written from the papers; sinks with Hugging Face SinkCache's
// conventions, keys re-rotated as the window slides): tests/data/longctx/golden.{json,safetensors}.
// For the Llama-family fixtures with static RoPE scaling, stories260K and every zoo scheme, ordo's
// logits of a long input (one forward) and of a greedy continuation (KV cache, evicting as it goes
// under sinks) must be within the fixtures' tolerance, max |Δ| <= 1e-4 · max(1, max |golden|), with
// the greedy ids identical.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ordo/ordo.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::ids_of;
using ordo::test::within_tolerance;

namespace {

const ordo::test::Golden& golden() {
  static const ordo::test::Golden g{
      "longctx", nlohmann::json::parse(ordo::test::read_file(ordo::test::data_path("longctx/golden.json"))),
      SafeTensors::open(ordo::test::data_path("longctx/golden.safetensors"))};
  return g;
}

std::vector<std::string> case_names() {
  std::vector<std::string> out;
  for (const auto& c : golden().json.at("cases")) out.push_back(c.at("name"));
  return out;
}

std::string dir_of(const std::string& model) {
  if (model.rfind("zoo-", 0) == 0) return std::string(ORDO_SOURCE_DIR) + "/models/zoo/lm/" + model.substr(4) + "-s1";
  return ordo::test::model_dir(model);
}

class ContextExtensionGolden : public testing::TestWithParam<std::string> {};

TEST_P(ContextExtensionGolden, LogitsAndGreedyIdsMatchTheReference) {
  const nlohmann::json* cs = nullptr;
  for (const auto& c : golden().json.at("cases"))
    if (c.at("name") == GetParam()) cs = &c;
  ASSERT_NE(cs, nullptr);
  const nlohmann::json& p = cs->at("params");
  ContextExtension e;
  if (cs->at("method") == "self-extend") {
    e.group = p.at("group");
    e.neighbor = p.at("neighbor");
  } else {
    e.sinks = p.at("sinks");
    e.window = p.at("window");
  }
  ModelOptions o;
  o.load_tokenizer = false;
  o.extension = e;
  const Model m = Model::load(dir_of(cs->at("model")), o);
  const int64_t V = m.spec().vocab_size;

  // Rows of one forward over the whole input.
  const std::vector<int32_t> ids = ids_of(cs->at("input_ids"));
  const ForwardOutput full = m.forward(ids);
  const std::vector<int64_t> rows = cs->at("rows").get<std::vector<int64_t>>();
  std::vector<float> picked;
  for (int64_t r : rows) picked.insert(picked.end(), full.logits.f32() + r * V, full.logits.f32() + (r + 1) * V);
  const ::testing::AssertionResult logits = within_tolerance(picked.data(), golden().tensor(GetParam() + ".logits"));
  EXPECT_TRUE(logits) << e.describe();
  std::printf("[ measured ] %s logits: %s\n", GetParam().c_str(), logits.message());

  // Greedy continuation with the KV cache.
  const nlohmann::json& g = cs->at("greedy");
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + g.at("prompt_len").get<int64_t>());
  GenerateParams gp;
  gp.max_new_tokens = g.at("max_new_tokens");
  gp.stop_ids = {-1};
  const GenerateResult r = m.generate_ids(prompt, gp, nullptr, true);
  EXPECT_EQ(r.ids, ids_of(g.at("output_ids")));
  EXPECT_TRUE(ordo::test::step_logits_match(r, golden().tensor(GetParam() + ".greedy.logits")));
}

INSTANTIATE_TEST_SUITE_P(Reference, ContextExtensionGolden, testing::ValuesIn(case_names()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           std::string n;
                           for (char ch : p.param) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

}  // namespace
