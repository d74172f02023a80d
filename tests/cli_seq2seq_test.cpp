// The `ordo` binary on encoder models: `forward` on an encoder-decoder writes the reference logits,
// `embed` prints BERT's pooler output with --pooling pooler, the mean of T5's encoder output and the
// last token of a decoder by default, `run` on an encoder-decoder prints only the generated ids.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ordo/ordo.hpp"
#include "ordo/safetensors.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::CliResult;
using ordo::test::Golden;
using ordo::test::ids_of;
using ordo::test::make_temp_dir;
using ordo::test::model_dir;
using ordo::test::run_cli;
using ordo::test::shell_quote;
using ordo::test::within_tolerance;

namespace {

std::string csv(const nlohmann::json& ids) {
  std::string s;
  for (const auto& v : ids) s += (s.empty() ? "" : ",") + std::to_string(v.get<int>());
  return s;
}

TEST(CliSeq2Seq, ForwardWritesT5Logits) {
  Golden g = Golden::load("t5");
  const auto& c = g.json.at("cases")[0];
  const std::string name = c.at("name");
  const std::string dir = make_temp_dir("seq2seq-forward");
  const std::string out = dir + "/t5.safetensors";
  CliResult r = run_cli("forward -m " + shell_quote(model_dir("t5")) + " --ids " + csv(c.at("input_ids")) +
                        " --decoder-ids " + csv(c.at("decoder_input_ids")) + " --hidden -o " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0);
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
  std::filesystem::remove_all(dir);
}

TEST(CliSeq2Seq, ForwardWithoutDecoderIdsIsAnError) {
  const std::string dir = ordo::test::make_temp_dir("seq2seq-nodec");  // a writable -o: the error is the flag's
  CliResult r =
      run_cli("forward -m " + shell_quote(model_dir("t5")) + " --ids 1,2,3 -o " + shell_quote(dir + "/none.npy"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--decoder-ids"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/none.npy"));
  std::filesystem::remove_all(dir);
}

TEST(CliSeq2Seq, EmbedIdsPrintsBertPoolerOutput) {
  Golden g = Golden::load("bert");
  for (const char* name : {"single", "pair"}) {
    SCOPED_TRACE(name);
    const auto& c = g.case_json(name);
    CliResult r = run_cli("embed -m " + shell_quote(model_dir("bert")) + " --ids " + csv(c.at("input_ids")) +
                          " --token-types " + csv(c.at("token_type_ids")) + " --pooling pooler");
    ASSERT_EQ(r.exit_code, 0);
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("mode"), "pooled");
    EXPECT_EQ(j.at("pooling"), "pooler");
    EXPECT_EQ(j.at("normalized"), false);
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
  CliResult r =
      run_cli("embed -m " + shell_quote(model_dir("bert")) + " --ids " + csv(c.at("input_ids")) + " --tokens");
  ASSERT_EQ(r.exit_code, 0);
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
  CliResult r = run_cli("embed -m " + shell_quote(model_dir("t5")) + " --ids " + csv(c.at("input_ids")));
  ASSERT_EQ(r.exit_code, 0);
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
  const std::string dir = make_temp_dir("seq2seq-embed");
  const std::string out = dir + "/bert.npy";
  CliResult r = run_cli("embed -m " + shell_quote(model_dir("bert")) + " --ids 1,2,3 --tokens -o " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty());
  // 128-byte header (magic, version, length, dict) + 3·64 float32
  EXPECT_EQ(std::filesystem::file_size(out), 128u + 3 * 64 * 4);
  std::filesystem::remove_all(dir);
}

// BERT's default is now the mean over tokens (sentence-transformers), here normalized: computed
// from HF's last_hidden_state. A decoder's default is its last token's final hidden state.
TEST(CliSeq2Seq, EmbedMeanNormalizedAndDecoderLastToken) {
  Golden g = Golden::load("bert");
  const auto& c = g.case_json("pair");
  CliResult r = run_cli("embed -m " + shell_quote(model_dir("bert")) + " --ids " + csv(c.at("input_ids")) +
                        " --token-types " + csv(c.at("token_type_ids")) + " --normalize");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("pooling"), "mean");
  EXPECT_EQ(j.at("normalized"), true);
  const Tensor& h = g.tensor("pair.last_hidden_state");
  const int64_t T = h.dim(0), d = h.dim(1);
  std::vector<double> mean(static_cast<size_t>(d), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < d; ++i) mean[static_cast<size_t>(i)] += h.f32()[t * d + i] / static_cast<double>(T);
  double norm = 0;
  for (double x : mean) norm += x * x;
  std::vector<float> ref;
  for (double x : mean) ref.push_back(static_cast<float>(x / std::sqrt(norm)));
  const std::vector<float> v = j.at("embedding").get<std::vector<float>>();
  ASSERT_EQ(v.size(), ref.size());
  EXPECT_TRUE(within_tolerance(v.data(), Tensor::from({d}, ref)));

  Golden s = Golden::load("stories260K");
  const auto& sc = s.case_json("once_upon");
  CliResult dr = run_cli("embed -m " + shell_quote(model_dir("stories260K")) + " --ids " + csv(sc.at("input_ids")));
  ASSERT_EQ(dr.exit_code, 0) << dr.err;
  nlohmann::json dj = nlohmann::json::parse(dr.out);
  EXPECT_EQ(dj.at("pooling"), "last");
  const Tensor& sh = s.tensor("once_upon.hidden_states.5");  // final, after the final norm
  const Tensor last = sh.rows(sh.dim(0) - 1, sh.dim(0));
  const std::vector<float> dv = dj.at("embedding").get<std::vector<float>>();
  ASSERT_EQ(static_cast<int64_t>(dv.size()), sh.dim(1));
  EXPECT_TRUE(
      within_tolerance(dv.data(), Tensor::from({sh.dim(1)}, std::vector<float>(last.f32(), last.f32() + sh.dim(1)))));
}

TEST(CliSeq2Seq, EmbedPoolerWithoutPoolerIsAnError) {
  CliResult r = run_cli("embed -m " + shell_quote(model_dir("t5")) + " --ids 1,2,3 --pooling pooler");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("has no pooler: it embeds with mean, cls or last pooling"), std::string::npos) << r.err;
  CliResult bad = run_cli("embed -m " + shell_quote(model_dir("t5")) + " --ids 1,2,3 --pooling max");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--pooling"), std::string::npos) << bad.err;
}

TEST(CliSeq2Seq, RunEncoderDecoderPrintsOnlyGeneratedIds) {
  for (const char* fixture : {"t5", "marian"}) {
    SCOPED_TRACE(fixture);
    Golden g = Golden::load(fixture);
    const auto& greedy = g.json.at("cases")[0].at("greedy");
    CliResult r = run_cli("run -m " + shell_quote(model_dir(fixture)) + " --ids " + csv(greedy.at("input_ids")) +
                          " -n " + std::to_string(greedy.at("max_new_tokens").get<int>()) + " --temp 0 -q");
    ASSERT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, csv(greedy.at("output_ids")) + "\n");
  }
}

}  // namespace

// Many inputs at once (-f .jsonl, two per encoder forward): every line is the reference pooler
// output of its case, in input order; .npy stacks them; file errors name the line.
TEST(CliSeq2Seq, EmbedFileEmbedsEveryInputInOrder) {
  Golden g = Golden::load("bert");
  const std::vector<std::string> names = {"pair", "single", "pair"};
  const std::string dir = make_temp_dir("embed_file");
  const std::string path = dir + "/inputs.jsonl";
  {
    std::ofstream f(path);
    for (const std::string& n : names) {
      const auto& c = g.case_json(n);
      f << nlohmann::json{{"ids", c.at("input_ids")}, {"token_types", c.at("token_type_ids")}}.dump() << "\n";
    }
  }
  CliResult r = run_cli("embed -m " + shell_quote(model_dir("bert")) + " -f " + shell_quote(path) +
                        " --batch 2 --pooling pooler");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  size_t i = 0;
  for (std::string line; std::getline(in, line); ++i) {
    ASSERT_LT(i, names.size());
    SCOPED_TRACE(names[i]);
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("ids").get<std::vector<int32_t>>(), ids_of(g.case_json(names[i]).at("input_ids")));
    const std::vector<float> v = j.at("embedding").get<std::vector<float>>();
    EXPECT_TRUE(within_tolerance(v.data(), g.tensor(names[i] + ".pooler_output")));
  }
  EXPECT_EQ(i, names.size());
  const std::string npy = dir + "/out.npy";
  CliResult n =
      run_cli("embed -m " + shell_quote(model_dir("bert")) + " -f " + shell_quote(path) + " -o " + shell_quote(npy));
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_NE(n.err.find("[3, 64]"), std::string::npos) << n.err;
  {
    std::ofstream f(dir + "/bad.jsonl");
    f << "{\"ids\": [1, 2]}\n{\"ids\": \"x\"}\n";
  }
  CliResult bad = run_cli("embed -m " + shell_quote(model_dir("bert")) + " -f " + shell_quote(dir + "/bad.jsonl"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("bad.jsonl:2: \"ids\" is not an array"), std::string::npos) << bad.err;
}
