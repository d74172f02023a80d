// The `ordo` CLI's usage messages: each mistake named in a user's words, the nearest subcommand or
// flag suggested, exit 2 for usage errors and 1 for runtime ones, -m diagnosed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/cli.hpp"

using ordo::test::CliResult;
using ordo::test::run_cli;
using ordo::test::shell_quote;

namespace {

const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";
const std::string kText = std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt";

// Exit code `code` and a stderr of exactly "ordo: error: <message>\n".
void expect_error(const std::string& args, int code, const std::string& message) {
  SCOPED_TRACE(args);
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(r.err, "ordo: error: " + message + "\n");
  EXPECT_EQ(r.out, "");
}

TEST(CliMessages, NumbersAreCheckedInWords) {
  expect_error("run -p x -n abc", 2, "--n-predict: 'abc' is not a whole number");
  expect_error("run -p x --temp abc", 2, "--temp: 'abc' is not a number");
  expect_error("run -p x --temp -1", 2, "--temp must be a number >= 0 (0: greedy), got -1");
  expect_error("run -p x --top-k -1", 2, "--top-k must be >= 0 (0: off), got -1");
  expect_error("run -p x --top-p 1.5", 2, "--top-p must be in (0, 1] (1: off), got 1.5");
  expect_error("run -p x --min-p 2", 2, "--min-p must be in [0, 1] (0: off), got 2");
  expect_error("run -p x -n -3", 2, "-n/--n-predict must be a count of tokens >= 0, got -3");
  expect_error("run -p x --num-beams 0", 2, "--num-beams must be >= 1 (1: off), got 0");
  expect_error("bench --quick --reps 0", 2, "--reps must be at least 1, got 0");
  // No CLI11 range text (its limits print as 300-digit numbers).
  EXPECT_EQ(run_cli("run -p x -n abc").err.find("not in range"), std::string::npos);
}

TEST(CliMessages, ContextListsNameTheBadEntry) {
  expect_error("ppl --text " + shell_quote(kText) + " --ctx-lengths 512,abc", 2,
               "--ctx-lengths: 'abc' is not a whole number (give numbers like 512,1024)");
  // The old spelling reads the same list.
  expect_error("ppl --text " + shell_quote(kText) + " --ctx 512,,1024", 2,
               "--ctx-lengths: '512,,1024' has an empty entry (give numbers like 512,1024)");
  expect_error("ppl --text " + shell_quote(kText) + " --ctx-lengths 1", 2,
               "--ctx-lengths: context length 1 must be at least 2");
  expect_error("compare --no-zoo -m " + shell_quote(kStories) + " --ctx-multiples 1,x", 2,
               "--ctx-multiples: 'x' is not a whole number (give numbers like 512,1024)");
}

TEST(CliMessages, UnknownSchemesFailOnceUpFront) {
  const std::string known = "; known: none, learned, sinusoidal, relative, rope, alibi";
  // Before any row is scored: one message, exit 2, nothing on stdout.
  expect_error("ppl --text " + shell_quote(kText) + " --ctx-lengths 64,128 --position rope2", 2,
               "--position: unknown position scheme 'rope2' (did you mean rope?)" + known);
  expect_error("run -p x --position alibbi", 2,
               "--position: unknown position scheme 'alibbi' (did you mean alibi?)" + known);
  expect_error("compare --no-zoo -m " + shell_quote(kStories) + " --position none --position wobble", 2,
               "--position: unknown position scheme 'wobble'" + known);
  expect_error("ppl --text " + shell_quote(kText) + " --scaling none,yarn:4,lineer", 2,
               "--scaling: unknown scaling 'lineer' (did you mean linear?); known: none, linear, ntk, dynamic, yarn, "
               "llama3, longrope");
  expect_error("run -p x --scaling yarm --factor 2", 2,
               "--scaling: unknown scaling 'yarm' (did you mean yarn?); known: none, linear, ntk, dynamic, yarn, "
               "llama3, longrope");
}

TEST(CliMessages, MisspellingsSuggestTheNearestCommandOrFlag) {
  const std::string commands =
      "; commands: run, tokenize, inspect, forward, ppl, embed, compare, bench, quantize, chat, serve, sweep";
  expect_error("runn -p x", 2, "unknown command 'runn' (did you mean run?)" + commands + " (ordo help CMD)");
  expect_error("inspekt", 2, "unknown command 'inspekt' (did you mean inspect?)" + commands + " (ordo help CMD)");
  expect_error("frobnicate", 2, "unknown command 'frobnicate'" + commands + " (ordo help CMD)");
  expect_error(
      "", 2,
      "give a command: run, tokenize, inspect, forward, ppl, embed, compare, bench, quantize, chat, serve, sweep "
      "(ordo help CMD for its flags)");
  expect_error("run -p x --tmep 1", 2, "ordo run: unknown flag --tmep (did you mean --temp?); see ordo run --help");
  expect_error("run -p x --top_k=3", 2, "ordo run: unknown flag --top_k (did you mean --top-k?); see ordo run --help");
  expect_error("embed x --pooling maen", 2,
               "--pooling: 'maen' is not one of mean, cls, last, pooler (did you mean mean?)");
  expect_error("run -p x --dtype f8", 2, "--dtype: 'f8' is not one of f32, f16, bf16, int8, q8_0, q4_0");
  expect_error("ppl --text " + shell_quote(kText) + " --ctx-length 64", 2,
               "ordo ppl: unknown flag --ctx-length (did you mean --ctx-lengths?); see ordo ppl --help");
  expect_error("tokenize hello world", 2,
               "ordo tokenize: unexpected argument 'world' (quote a text with spaces); see ordo tokenize --help");
}

TEST(CliMessages, HelpCommandPrintsHelp) {
  const CliResult all = run_cli("help");
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("Subcommands:"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("run"), std::string::npos);
  const CliResult run = run_cli("help run");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("-c,--ctx-size"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--min-p"), std::string::npos) << run.out;
  EXPECT_EQ(run.out, run_cli("run --help").out);
  EXPECT_EQ(run.out.find("--max-context"), std::string::npos);  // old spellings work, hidden
  expect_error("help runn", 2,
               "unknown command 'runn' (did you mean run?); commands: run, tokenize, inspect, forward, ppl, embed, "
               "compare, bench, quantize, chat, serve, sweep (ordo help CMD)");
}

// Every subcommand: a missing or malformed argument exits 2, a failure while running exits 1.
TEST(CliMessages, ExitCodesAreTheSameForEverySubcommand) {
  for (const std::string& args :
       std::vector<std::string>{"run", "run -p x --threads -1", "tokenize", "inspect --threads -2", "forward -o x.npy",
                                "ppl", "ppl --text " + shell_quote(kText) + " --batch-windows 0", "embed",
                                "embed x --batch-inputs 0", "compare --threads -1", "bench --parallel 0",
                                "quantize -o x", "chat --temp -1", "run -p x --stop-id -3", "embed --no-such-flag"}) {
    SCOPED_TRACE(args);
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("ordo: error: ", 0), 0u) << r.err;
  }
  for (const std::string& args :
       std::vector<std::string>{"run -p x -m /nonexistent", "tokenize -m /nonexistent x",
                                "ppl --text " + shell_quote(kText) + " --ctx-lengths 100000"}) {
    SCOPED_TRACE(args);
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
  }
}

TEST(CliMessages, ModelFlagSaysWhatItFound) {
  expect_error("run -p x -m /nonexistent", 1, "-m /nonexistent: no such file or directory");
  expect_error("inspect -m " + shell_quote(kStories + "/config.json"), 1,
               "-m " + kStories + "/config.json is a file; -m takes the directory that holds it: " + kStories);
  const std::string dir = ordo::test::make_temp_dir("cli-model-dir");
  std::filesystem::create_directory(dir + "/weights");
  std::ofstream(dir + "/notes.txt") << "x";
  expect_error("run -p x -m " + shell_quote(dir), 1,
               "-m " + dir + " is not a model directory: no config.json (it holds notes.txt, weights/)");
  const std::string empty = ordo::test::make_temp_dir("cli-model-empty");
  expect_error("embed x -m " + shell_quote(empty), 1,
               "-m " + empty + " is not a model directory: no config.json (it is empty)");
  const std::string tok = std::string(ORDO_TEST_DATA) + "/tokenizers/bert-base-uncased";
  expect_error("run -p x -m " + shell_quote(tok), 1,
               "-m " + tok +
                   " holds a tokenizer but no model (no config.json; it has tokenizer.json): give the "
                   "directory with config.json and the weights");
  // A tokenizer-only directory is what `ordo tokenize` needs.
  const CliResult t = run_cli("tokenize --no-special -m " + shell_quote(tok) + " hello");
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out, "7592\n");
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(empty);
}

}  // namespace
