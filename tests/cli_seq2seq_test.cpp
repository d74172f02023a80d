// The `ordo` binary on encoder models: `forward` on an encoder-decoder writes the reference logits,
// `embed` prints BERT's pooler output (and T5's mean-pooled encoder output), `run` on an
// encoder-decoder prints only the generated ids.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ordo/ordo.hpp"
#include "ordo/safetensors.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::Golden;
using ordo::test::ids_of;
using ordo::test::within_tolerance;

namespace {

struct CliResult {
  int status = -1;
  std::string out;  // stdout
};

// Runs `ordo <args>` (stderr discarded) and captures stdout.
CliResult run_cli(const std::string& args) {
  const std::string cmd = std::string("\"") + ORDO_CLI + "\" " + args + " 2>/dev/null";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string csv(const nlohmann::json& ids) {
  std::string s;
  for (const auto& v : ids) s += (s.empty() ? "" : ",") + std::to_string(v.get<int>());
  return s;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(testing::TempDir()) / ("ordo_cli_seq2seq_" + name)).string();
}

TEST(CliSeq2Seq, ForwardWritesT5Logits) {
  Golden g = Golden::load("t5");
  const auto& c = g.json.at("cases")[0];
  const std::string name = c.at("name");
  const std::string out = temp_path("t5.safetensors");
  std::filesystem::remove(out);
  CliResult r = run_cli("forward -m " + quoted(ordo::test::model_dir("t5")) + " --ids " + csv(c.at("input_ids")) +
                  " --decoder-ids " + csv(c.at("decoder_input_ids")) + " --hidden -o " + quoted(out));
  ASSERT_EQ(r.status, 0);
  SafeTensors st = SafeTensors::open(out);
  const Tensor& ref = g.tensor(name + ".logits");
  ASSERT_EQ(st.get("logits").shape, ref.shape);
  EXPECT_TRUE(within_tolerance(st.get("logits").f32(), ref));
  for (int i = 0; i <= 2; ++i) {
    const std::string enc = "encoder_hidden_states." + std::to_string(i);
    const std::string dec = "decoder_hidden_states." + std::to_string(i);
    ASSERT_TRUE(st.has(enc));
    ASSERT_TRUE(st.has(dec));
    EXPECT_TRUE(within_tolerance(st.get(enc).f32(), g.tensor(name + "." + enc))) << enc;
    EXPECT_TRUE(within_tolerance(st.get(dec).f32(), g.tensor(name + "." + dec))) << dec;
  }
  std::filesystem::remove(out);
}

TEST(CliSeq2Seq, ForwardWithoutDecoderIdsIsAnError) {
  CliResult r = run_cli("forward -m " + quoted(ordo::test::model_dir("t5")) + " --ids 1,2,3 -o " +
                  quoted(temp_path("none.npy")));
  EXPECT_EQ(r.status, 1);
}

TEST(CliSeq2Seq, EmbedIdsPrintsBertPoolerOutput) {
  Golden g = Golden::load("bert");
  for (const char* name : {"single", "pair"}) {
    SCOPED_TRACE(name);
    const auto& c = g.case_json(name);
    CliResult r = run_cli("embed -m " + quoted(ordo::test::model_dir("bert")) + " --ids " + csv(c.at("input_ids")) +
                    " --token-types " + csv(c.at("token_type_ids")));
    ASSERT_EQ(r.status, 0);
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("mode"), "pooled");
    EXPECT_EQ(j.at("pooling"), "pooler");
    EXPECT_EQ(j.at("ids").get<std::vector<int32_t>>(), ids_of(c.at("input_ids")));
    const std::vector<float> v = j.at("embedding").get<std::vector<float>>();
    const Tensor& ref = g.tensor(std::string(name) + ".pooler_output");
    ASSERT_EQ(static_cast<int64_t>(v.size()), ref.dim(0));
    EXPECT_TRUE(within_tolerance(v.data(), ref));
  }
}

TEST(CliSeq2Seq, EmbedTokensPrintsBertLastHiddenState) {
  Golden g = Golden::load("bert");
  const auto& c = g.case_json("single");
  CliResult r = run_cli("embed -m " + quoted(ordo::test::model_dir("bert")) + " --ids " + csv(c.at("input_ids")) + " --tokens");
  ASSERT_EQ(r.status, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("mode"), "tokens");
  std::vector<float> flat;
  for (const auto& row : j.at("embeddings"))
    for (const auto& x : row) flat.push_back(x.get<float>());
  const Tensor& ref = g.tensor("single.last_hidden_state");
  ASSERT_EQ(static_cast<int64_t>(flat.size()), ref.numel());
  EXPECT_TRUE(within_tolerance(flat.data(), ref));
}

TEST(CliSeq2Seq, EmbedWithoutPoolerMeansTheEncoderOutput) {
  Golden g = Golden::load("t5");
  const auto& c = g.json.at("cases")[0];
  const std::string name = c.at("name");
  CliResult r = run_cli("embed -m " + quoted(ordo::test::model_dir("t5")) + " --ids " + csv(c.at("input_ids")));
  ASSERT_EQ(r.status, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("pooling"), "mean");
  const std::vector<float> v = j.at("embedding").get<std::vector<float>>();
  const Tensor& enc = g.tensor(name + ".encoder_hidden_states.2");  // final (after final_layer_norm)
  const int64_t T = enc.dim(0), d = enc.dim(1);
  Tensor mean = Tensor::zeros({d});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < d; ++i) mean.f32()[i] += enc.f32()[t * d + i] / static_cast<float>(T);
  ASSERT_EQ(static_cast<int64_t>(v.size()), d);
  EXPECT_TRUE(within_tolerance(v.data(), mean));
}

TEST(CliSeq2Seq, EmbedNpyOutput) {
  const std::string out = temp_path("bert.npy");
  std::filesystem::remove(out);
  CliResult r = run_cli("embed -m " + quoted(ordo::test::model_dir("bert")) + " --ids 1,2,3 --tokens -o " + quoted(out));
  ASSERT_EQ(r.status, 0);
  EXPECT_TRUE(r.out.empty());
  // 128-byte header (magic, version, length, dict) + 3·64 float32
  EXPECT_EQ(std::filesystem::file_size(out), 128u + 3 * 64 * 4);
  std::filesystem::remove(out);
}

TEST(CliSeq2Seq, EmbedRejectsDecoderOnlyModels) {
  CliResult r = run_cli("embed -m " + quoted(ordo::test::model_dir("stories260K")) + " --ids 1,2,3");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.empty());
}

TEST(CliSeq2Seq, RunEncoderDecoderPrintsOnlyGeneratedIds) {
  for (const char* fixture : {"t5", "marian"}) {
    SCOPED_TRACE(fixture);
    Golden g = Golden::load(fixture);
    const auto& greedy = g.json.at("cases")[0].at("greedy");
    CliResult r = run_cli("run -m " + quoted(ordo::test::model_dir(fixture)) + " --ids " + csv(greedy.at("input_ids")) +
                    " -n " + std::to_string(greedy.at("max_new_tokens").get<int>()) + " --temp 0 -q");
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.out, csv(greedy.at("output_ids")) + "\n");
  }
}

}  // namespace
