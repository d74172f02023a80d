// The `ordo` CLI's conventions, as a llama.cpp user types them: -c/-t/-s/-n, -f FILE as one prompt
// and -f - for stdin, --prompts-file, run --json, the seed of a sampled run, --min-p, the old
// spellings kept, and `tools/dev.sh install`'s layout (cmake --install) run from elsewhere.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/cli.hpp"
#include "support/golden.hpp"

namespace fs = std::filesystem;
using ordo::test::CliResult;
using ordo::test::run_cli;
using ordo::test::shell_quote;

namespace {

// `command` through the shell (stdout and stderr captured), e.g. with its own stdin redirection.
CliResult run_shell(const std::string& command) {
  const std::string dir = ordo::test::make_temp_dir("shell");
  const std::string cmd = "(" + command + ") >" + dir + "/out 2>" + dir + "/err";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ordo::test::read_file(dir + "/out");
  r.err = ordo::test::read_file(dir + "/err");
  fs::remove_all(dir);
  return r;
}

std::string write_file(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

const std::string kPrompt = "Once upon a time\nthere was a dog";

TEST(CliConventions, FileFlagIsOnePromptWithItsLines) {
  const std::string dir = ordo::test::make_temp_dir("conv-f");
  const std::string path = write_file(dir, "prompt.txt", kPrompt + "\n");
  const CliResult alone = run_cli("run -p " + shell_quote(kPrompt + "\n") + " -n 12 --temp 0 -q");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const CliResult file = run_cli("run -f " + shell_quote(path) + " -n 12 --temp 0 -q");
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out, alone.out);  // one generation, the newline kept
  EXPECT_EQ(file.out.rfind(kPrompt + "\n", 0), 0u) << file.out;
  // --file is the same flag.
  EXPECT_EQ(run_cli("run --file " + shell_quote(path) + " -n 12 --temp 0 -q").out, alone.out);
  // -f - reads stdin; one trailing newline (as echo adds) is dropped.
  const CliResult in = run_shell(shell_quote(ORDO_CLI) + " run -f - -n 12 --temp 0 -q <" + shell_quote(path));
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(in.out, run_cli("run -p " + shell_quote(kPrompt) + " -n 12 --temp 0 -q").out);
  // A .jsonl of prompts given to -f is an old script: pointed at --prompts-file.
  const std::string jsonl = write_file(dir, "p.jsonl", "{\"prompt\": \"x\"}\n");
  const CliResult old = run_cli("run -f " + shell_quote(jsonl));
  EXPECT_EQ(old.exit_code, 2);
  EXPECT_EQ(old.err, "ordo: error: -f reads one prompt from a file; for a .jsonl of prompts give --prompts-file " +
                         jsonl + "\n");
  const CliResult empty = run_shell("printf '' | " + shell_quote(ORDO_CLI) + " run -f -");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_EQ(empty.err, "ordo: error: -f -: the prompt is empty\n");
  fs::remove_all(dir);
}

TEST(CliConventions, PromptsFileRunsOnePromptPerLine) {
  const std::string dir = ordo::test::make_temp_dir("conv-pf");
  const std::string path = write_file(dir, "prompts.txt", "Once upon a time\nThe dog\n");
  for (const char* batch : {"--parallel 2", "--batch 2"}) {
    const CliResult r = run_cli("run --prompts-file " + shell_quote(path) + " -n 6 --temp 0 -q " + std::string(batch));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string first = run_cli("run -p 'Once upon a time' -n 6 --temp 0 -q").out;
    const std::string second = run_cli("run -p 'The dog' -n 6 --temp 0 -q").out;
    EXPECT_EQ(r.out, first + second) << batch;
  }
  fs::remove_all(dir);
}

TEST(CliConventions, ShortFlagsAndOldSpellingsAgree) {
  const std::string base = "run -p 'Once upon a time' -q --temp 0.9 --top-k 30";
  const CliResult shorts = run_cli(base + " -n 16 -s 11 -c 256 -t 1");
  ASSERT_EQ(shorts.exit_code, 0) << shorts.err;
  const CliResult longs = run_cli(base + " --n-predict 16 --seed 11 --ctx-size 256 --threads 1");
  const CliResult old = run_cli(base + " --max-tokens 16 --seed 11 --max-context 256 --threads 1");
  EXPECT_EQ(longs.out, shorts.out);
  EXPECT_EQ(old.out, shorts.out);
  // -c is the context limit: a prompt and generation past it are refused.
  const CliResult small = run_cli("run -p 'Once upon a time' -n 40 --temp 0 -q -c 8");
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_NE(small.err.find("context limit of 8"), std::string::npos) << small.err;
}

TEST(CliConventions, SampledRunPrintsItsSeedAndRepeatsWithIt) {
  const CliResult a = run_cli("run -p 'Once upon a time' -n 20 --temp 1.0");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(a.err, m, std::regex("(^|\\n)seed: ([0-9]+)\\n"))) << a.err;
  const CliResult b = run_cli("run -p 'Once upon a time' -n 20 --temp 1.0 -q -s " + m[2].str());
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, a.out);
  // Greedy runs use no seed: none printed; -q prints none either.
  EXPECT_EQ(run_cli("run -p x -n 4 --temp 0").err.find("seed:"), std::string::npos);
  EXPECT_EQ(b.err, "");
}

TEST(CliConventions, RunJsonIsOneObject) {
  const CliResult r = run_cli("run --json -p 'Once upon a time' -n 8 --temp 0.7 --top-k 20 --min-p 0.05 -s 4 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;  // one line
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("prompt"), "Once upon a time");
  EXPECT_EQ(j.at("seed"), 4);
  EXPECT_EQ(j.at("ids").size(), 8u);
  EXPECT_EQ(j.at("tokens").at("generated"), 8);
  EXPECT_EQ(j.at("tokens").at("prompt"), 5);  // BOS + 4 pieces
  EXPECT_GT(j.at("timings").at("decode_seconds").get<double>(), 0.0);
  EXPECT_EQ(j.at("settings").at("decoding"), "sampling");
  EXPECT_EQ(j.at("settings").at("temperature"), 0.7);
  EXPECT_EQ(j.at("settings").at("top_k"), 20);
  EXPECT_EQ(j.at("settings").at("min_p"), 0.05);
  // The same generation as the streamed run: its text and ids.
  const CliResult plain =
      run_cli("run -p 'Once upon a time' -n 8 --temp 0.7 --top-k 20 --min-p 0.05 -s 4 -q --print-ids");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::string ids;
  for (int id : j.at("ids")) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  EXPECT_EQ(plain.out, "Once upon a time" + j.at("text").get<std::string>() + "\n" + ids + "\n");
  const nlohmann::json greedy = nlohmann::json::parse(run_cli("run --json --ids 1,403 -n 4 --temp 0 -q").out);
  EXPECT_TRUE(greedy.at("seed").is_null());
  EXPECT_EQ(greedy.at("prompt_ids"), nlohmann::json({1, 403}));
}

// min-p through the CLI: a min-p of 1 keeps only the most likely token, so sampling is greedy.
TEST(CliConventions, MinPOfOneSamplesGreedily) {
  const std::string greedy = run_cli("run -p 'Once upon a time' -n 16 --temp 0 -q").out;
  for (const char* seed : {"1", "2", "3"})
    EXPECT_EQ(run_cli(std::string("run -p 'Once upon a time' -n 16 --temp 1.5 --min-p 1 -q -s ") + seed).out, greedy);
}

// `tools/dev.sh install`'s step: cmake --install to a prefix; the installed ordo, run from another
// directory, finds the bundled model under PREFIX/share/ordo/models (not the source tree's).
TEST(CliInstall, InstalledBinaryFindsItsBundledModel) {
  const std::string prefix = ordo::test::make_temp_dir("install");
  const std::string build = fs::path(ORDO_CLI).parent_path().parent_path().string();
  const CliResult inst = run_shell("cmake --install " + shell_quote(build) + " --prefix " + shell_quote(prefix) +
                                   " --component Unspecified");
  ASSERT_EQ(inst.exit_code, 0) << inst.out << inst.err;
  const std::string ordo = prefix + "/bin/ordo";
  ASSERT_TRUE(fs::exists(ordo));
  ASSERT_TRUE(fs::exists(prefix + "/share/ordo/models/stories260K/config.json"));
  const std::string elsewhere = ordo::test::make_temp_dir("elsewhere");
  const std::string cmd = "cd " + shell_quote(elsewhere) + " && env -u ORDO_DEFAULT_MODEL " + shell_quote(ordo);
  const CliResult r = run_shell(cmd + " run -p 'Once upon a time' -n 8 --temp 0 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, run_cli("run -p 'Once upon a time' -n 8 --temp 0 -q").out);
  // The model it used is the installed one: without its weights it fails naming that path.
  fs::remove(prefix + "/share/ordo/models/stories260K/model.safetensors");
  const CliResult gone = run_shell(cmd + " run -p 'Once upon a time' -n 8 --temp 0 -q");
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find(prefix + "/share/ordo/models/stories260K"), std::string::npos) << gone.err;
  fs::remove_all(prefix);
  fs::remove_all(elsewhere);
}

}  // namespace
