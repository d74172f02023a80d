// The `ordo` command line on the bundled stories260K model: outputs, help and exit codes.
#include "support/cli.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ordo/safetensors.hpp"
#include "support/golden.hpp"

using ordo::test::run_cli;
using ordo::test::shell_quote;

namespace {

const nlohmann::json& stories_case(const ordo::test::Golden& g, const std::string& name) { return g.case_json(name); }

}  // namespace

TEST(Cli, RunGreedyZooPrintsReferenceText) {
  auto g = ordo::test::Golden::load("stories260K");
  const std::string ref = stories_case(g, "zoo").at("greedy_text");  // 48 greedy tokens from BOS + "Zoo"
  auto r = run_cli("run -p Zoo -n 60 --temp 0 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(ref, 0), 0u) << "output: " << r.out << "\nreference: " << ref;
}

TEST(Cli, RunIdsPrintsReferenceIds) { ordo::test::expect_greedy_reference_ids("--backend onednn"); }

TEST(Cli, RunSamplingIsReproducibleWithSeed) {
  auto a = run_cli("run -p 'Once upon a time' -n 24 --temp 1.0 --top-k 20 --top-p 0.9 --seed 7 -q");
  auto b = run_cli("run -p 'Once upon a time' -n 24 --temp 1.0 --top-k 20 --top-p 0.9 --seed 7 -q");
  auto c = run_cli("run -p 'Once upon a time' -n 24 --temp 1.0 --top-k 20 --top-p 0.9 --seed 8 -q");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  EXPECT_EQ(a.out.rfind("Once upon a time", 0), 0u);
}

TEST(Cli, RunStopsAtStopString) {
  auto r = run_cli("run -p Zoo -n 60 --temp 0 -q --stop Lily");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Zoo was a little girl named \n");
}

TEST(Cli, TokenizeAndDecodeStoriesCases) {
  auto g = ordo::test::Golden::load("stories260K");
  int checked = 0;
  for (const auto& c : g.json.at("tokenizer").at("cases")) {
    const std::string text = c.at("text");
    if (text.empty() || text.find('\n') != std::string::npos) continue;
    std::string ids;
    for (int id : c.at("ids")) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    auto r = run_cli("tokenize --no-special " + shell_quote(text));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, ids + "\n") << text;
    auto d = run_cli("tokenize --decode " + shell_quote(ids));
    EXPECT_EQ(d.out, c.at("decoded").get<std::string>() + "\n");
    if (++checked == 6) break;  // a handful through the CLI; tests/tokenizer_test covers all
  }
  EXPECT_EQ(checked, 6);
}

TEST(Cli, InspectReportsArchitectureAndScheme) {
  auto r = run_cli("inspect");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("family:       llama"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters:   260032"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("position:     rope (theta 10000, rotary_dim 8, half-split)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model.layers.4.mlp.down_proj.weight"), std::string::npos);
}

TEST(Cli, ForwardWritesReferenceLogitsAndHiddenStates) {
  auto g = ordo::test::Golden::load("stories260K");
  const auto& c = stories_case(g, "story64");
  std::string ids;
  for (int id : c.at("input_ids")) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const std::string dir = ordo::test::make_temp_dir("fwd");
  auto r = run_cli("forward --ids " + ids + " --hidden -o " + dir + "/out.safetensors");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ordo::SafeTensors st = ordo::SafeTensors::open(dir + "/out.safetensors");
  EXPECT_TRUE(ordo::test::within_tolerance(st.get("logits").f32(), g.tensor("story64.logits")));
  for (int i = 0; i <= 5; ++i)
    EXPECT_TRUE(ordo::test::within_tolerance(st.get("hidden_states." + std::to_string(i)).f32(),
                                             g.tensor("story64.hidden_states." + std::to_string(i))));
  // .npy: 128-byte header for a 2-D float32 array, then the data
  auto n = run_cli("forward --ids " + ids + " -o " + dir + "/out.npy");
  ASSERT_EQ(n.exit_code, 0) << n.err;
  std::ifstream f(dir + "/out.npy", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_NE(bytes.find("'shape': (64, 512)"), std::string::npos);
  const size_t header = 10 + static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]);
  ASSERT_EQ(bytes.size(), header + 64 * 512 * 4);
  EXPECT_TRUE(
      ordo::test::within_tolerance(reinterpret_cast<const float*>(bytes.data() + header), g.tensor("story64.logits")));
  std::filesystem::remove_all(dir);
}

TEST(Cli, HelpForEverySubcommandExitsZero) {
  for (const char* sub : {"run", "tokenize", "inspect", "forward", "ppl"}) {
    auto r = run_cli(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("--"), std::string::npos) << sub;
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_cli("").exit_code, 2);
  EXPECT_EQ(run_cli("frobnicate").exit_code, 2);
  EXPECT_EQ(run_cli("run --temp").exit_code, 2);
  EXPECT_EQ(run_cli("run -p x --temp -1").exit_code, 2);
}

TEST(Cli, ErrorsExitNonZeroWithClearMessage) {
  auto bad_id = run_cli("run --ids 1,99999 -n 2");
  EXPECT_EQ(bad_id.exit_code, 1);
  EXPECT_NE(bad_id.err.find("token id 99999"), std::string::npos) << bad_id.err;
  auto missing = run_cli("inspect -m /nonexistent/model");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model"), std::string::npos) << missing.err;
  auto scheme = run_cli("run -p x -n 2 --position wobble");
  EXPECT_EQ(scheme.exit_code, 2);
  EXPECT_NE(scheme.err.find("wobble"), std::string::npos) << scheme.err;
  EXPECT_NE(scheme.err.find("alibi"), std::string::npos) << scheme.err;  // lists the known schemes
  auto backend = run_cli("run -p x -n 2 --backend cuda");
  EXPECT_EQ(backend.exit_code, 2);
  EXPECT_NE(backend.err.find("cuda"), std::string::npos) << backend.err;
}

namespace {

// `ordo run --prompts-file` over a file of prompts of different lengths: each prompt's generated ids equal what
// `ordo run -p PROMPT` prints alone with the same flags (greedy, or sampling with one seed).
void expect_file_run_matches_single_runs(const std::string& flags) {
  const std::vector<std::string> prompts = {"Once upon a time", "The dog bites the man", "Lily saw a big", "One day",
                                            "The man bites the dog and then"};
  const std::string dir = ordo::test::make_temp_dir("run_file");
  const std::string path = dir + "/prompts.txt";
  {
    std::ofstream f(path);
    for (const std::string& p : prompts) f << p << "\n\n";  // blank lines are skipped
  }
  auto all = run_cli("run --prompts-file " + shell_quote(path) + " --batch 3 --print-ids -q " + flags);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::vector<std::string> lines;
  std::istringstream in(all.out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 2 * prompts.size()) << all.out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto one = run_cli("run -p " + shell_quote(prompts[i]) + " --print-ids -q " + flags);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(lines[2 * i] + "\n" + lines[2 * i + 1] + "\n", one.out) << prompts[i];
  }
}

}  // namespace

TEST(Cli, RunFileGreedyEqualsEachPromptAlone) { expect_file_run_matches_single_runs("-n 12 --temp 0"); }

TEST(Cli, RunFileSeededSamplingEqualsEachPromptAlone) {
  expect_file_run_matches_single_runs("-n 12 --temp 0.8 --top-k 20 --seed 5");
}

TEST(Cli, RunJsonlFileWritesOneJsonLinePerPrompt) {
  const std::string dir = ordo::test::make_temp_dir("run_jsonl");
  const std::string path = dir + "/prompts.jsonl";
  {
    std::ofstream f(path);
    f << R"({"prompt": "Once upon a time"})"
      << "\n"
      << R"({"prompt": "The cat", "id": 7})"
      << "\n";
  }
  auto r = run_cli("run --prompts-file " + shell_quote(path) + " -n 8 --temp 0 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::vector<nlohmann::json> rows;
  for (std::string l; std::getline(in, l);) rows.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("prompt"), "Once upon a time");
  EXPECT_EQ(rows[1].at("prompt"), "The cat");
  auto alone = run_cli("run -p 'The cat' -n 8 --temp 0 -q --print-ids");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const std::string ids_line = alone.out.substr(alone.out.rfind('\n', alone.out.size() - 2) + 1);
  std::string ids;
  for (int id : rows[1].at("ids")) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  EXPECT_EQ(ids + "\n", ids_line);
  EXPECT_EQ("The cat" + rows[1].at("text").get<std::string>() + "\n",
            alone.out.substr(0, alone.out.size() - ids_line.size()));
}

TEST(Cli, RunFileErrorsNameTheFileLineAndFlag) {
  const std::string dir = ordo::test::make_temp_dir("run_file_errors");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return shell_quote(dir + "/" + name);
  };
  auto bad_json = run_cli("run --prompts-file " + write("a.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": \n") + " -n 2");
  EXPECT_NE(bad_json.exit_code, 0);
  EXPECT_NE(bad_json.err.find("a.jsonl:2: not valid JSON"), std::string::npos) << bad_json.err;
  auto no_prompt = run_cli("run --prompts-file " + write("b.jsonl", "{\"text\": \"x\"}\n") + " -n 2");
  EXPECT_NE(no_prompt.err.find("b.jsonl:1: no \"prompt\" field"), std::string::npos) << no_prompt.err;
  auto not_string = run_cli("run --prompts-file " + write("c.jsonl", "{\"prompt\": 3}\n") + " -n 2");
  EXPECT_NE(not_string.err.find("c.jsonl:1: \"prompt\" is not a string"), std::string::npos) << not_string.err;
  auto empty = run_cli("run --prompts-file " + write("d.txt", "\n  \n") + " -n 2");
  EXPECT_NE(empty.err.find("d.txt: no prompts"), std::string::npos) << empty.err;
  auto missing = run_cli("run --prompts-file " + shell_quote(dir + "/none.txt") + " -n 2");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("none.txt: cannot open"), std::string::npos) << missing.err;
  auto zero = run_cli("run --prompts-file " + write("e.txt", "hi\n") + " --batch 0");
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.err.find("--parallel must be at least 1"), std::string::npos) << zero.err;
}
