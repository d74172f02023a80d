// The `ordo` binary on tokenizer-only directories (`tokenize`, `--pieces`) and on a Marian directory
// laid out as opus-mt ships it (source.spm, target.spm, vocab.json): `run -p` encodes with source.spm,
// generates greedily and decodes with target.spm.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/golden.hpp"

using ordo::test::CliResult;
using ordo::test::make_temp_dir;
using ordo::test::model_dir;
using ordo::test::run_cli;
using ordo::test::shell_quote;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(ORDO_TEST_DATA) + "/tokenizers";

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    std::ifstream f(kDir + "/golden.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

const nlohmann::json& golden_case(const std::string& tokenizer, size_t i) {
  for (const auto& t : golden()["tokenizers"])
    if (t["name"] == tokenizer) return t["cases"][i];
  throw std::runtime_error("no golden tokenizer " + tokenizer);
}

std::string csv(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t v : ids) s += (s.empty() ? "" : ",") + std::to_string(v);
  return s;
}

TEST(CliTokenize, TokenizerOnlyDirectoryWithPieces) {
  const auto& c = golden_case("bert-base-uncased", 1);  // "Hello, world! How are you today?"
  CliResult r = run_cli("tokenize -m " + shell_quote(kDir + "/bert-base-uncased") + " --pieces " +
                        shell_quote(c["text"].get<std::string>()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);
  const auto ids = c["ids_with_special"].get<std::vector<int32_t>>();
  EXPECT_EQ(line, csv(ids));
  std::vector<std::string> pieces = c["tokens"].get<std::vector<std::string>>();
  pieces.insert(pieces.begin(), "[CLS]");
  pieces.push_back("[SEP]");
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line, std::to_string(ids[i]) + "\t" + pieces[i]);
  }
  EXPECT_FALSE(std::getline(in, line));
  CliResult d = run_cli("tokenize -m " + shell_quote(kDir + "/bert-base-uncased") + " --decode " + csv(ids));
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, c["decoded_with_special"].get<std::string>() + "\n");
}

TEST(CliTokenize, MarianDirectory) {
  const auto& c = golden_case("opus-mt-en-mg", 0);
  CliResult r =
      run_cli("tokenize -m " + shell_quote(kDir + "/opus-mt-en-mg") + " " + shell_quote(c["text"].get<std::string>()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, csv(c["ids_with_special"].get<std::vector<int32_t>>()) + "\n");
}

TEST(CliTokenize, BrokenTokenizerJsonIsAnErrorNamingTheComponent) {
  const std::string dir = make_temp_dir("cli-tokjson");
  std::ofstream(dir + "/tokenizer.json") << R"({"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"},
    "normalizer": {"type": "Precompiled", "precompiled_charsmap": ""}})";
  CliResult r = run_cli("tokenize -m " + shell_quote(dir) + " a");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("normalizer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Precompiled"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// The tiny Marian fixture (random weights, HF greedy reference) with the opus-mt spm pair and a
// vocab.json mapping the prompt's pieces to the fixture's greedy input ids: the text in must give
// exactly HF's greedy output, decoded through target.spm.
TEST(CliMarian, RunTranslatesTextGreedily) {
  const auto& t = golden()["marian_tiny"];
  const std::string dir = make_temp_dir("cli-marian");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    fs::copy_file(model_dir("marian") + "/" + f, dir + "/" + f);
  for (const char* f : {"source.spm", "target.spm"}) fs::copy_file(kDir + "/opus-mt-en-mg/" + f, dir + "/" + f);
  fs::copy_file(kDir + "/marian-tiny/vocab.json", dir + "/vocab.json");
  const std::string text = t["text"];
  CliResult ids = run_cli("tokenize -m " + shell_quote(dir) + " --no-special " + shell_quote(text));
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(ids.out, csv(t["input_ids"].get<std::vector<int32_t>>()) + "\n");
  const auto out_ids = t["output_ids"].get<std::vector<int32_t>>();
  CliResult r = run_cli("run -m " + shell_quote(dir) + " -p " + shell_quote(text) + " --no-special --temp 0 -n " +
                        std::to_string(out_ids.size()) + " -q --print-ids");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, t["decoded_output"].get<std::string>() + "\n" + csv(out_ids) + "\n");
  // With the tokenizer's specials (</s> appended) the same path runs end to end.
  CliResult s = run_cli("run -m " + shell_quote(dir) + " -p " + shell_quote(text) + " --temp 0 -n 4 -q --print-ids");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_FALSE(s.out.empty());
  fs::remove_all(dir);
}

}  // namespace
