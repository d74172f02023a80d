// `ordo sweep`: bad directories, manifests, cell indices and commands are named errors; the Slurm
// job array scripts (written, not submitted) run the missing cells, throttled and split by MaxArraySize.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli.hpp"
#include "support/golden.hpp"

using ordo::test::make_temp_dir;
using ordo::test::read_file;
using ordo::test::run_cli;
using ordo::test::shell_quote;
namespace fs = std::filesystem;

namespace {

const std::string kTextArg = "--text " + shell_quote(std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt");
const std::string kPplArgs = kTextArg + " --ctx-lengths 256,512 --scaling none,ntk,self-extend";

void expect_error(const std::string& args, int code, const std::string& message) {
  const ordo::test::CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, code) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
}

std::string planned(const std::string& tag) {
  const std::string sweep = make_temp_dir(tag) + "/grid";
  const ordo::test::CliResult r = run_cli("sweep plan " + sweep + " ppl " + kPplArgs);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return sweep;
}

}  // namespace

TEST(SweepCli, BadDirectoryManifestAndCellAreNamedErrors) {
  const std::string sweep = planned("sweep-errors");
  expect_error("sweep status " + sweep + "/nope", 1, "nope is not a directory");
  expect_error("sweep run " + sweep + " --cell 6", 1, "--cell 6: " + sweep + " has cells 0 to 5");
  expect_error("sweep run " + sweep + " --cell -1", 1, "--cell -1");
  expect_error("sweep run " + sweep + " --cell x", 2, "--cell");
  expect_error("sweep status " + sweep + " --bogus", 2, "ordo sweep status: unexpected argument '--bogus'");
  expect_error("sweep plan --per-cell 0 " + sweep + "2 ppl " + kPplArgs, 2, "--per-cell must be in [1, 1000000]");
  expect_error("sweep run " + sweep + " --jobs 0", 2, "--jobs must be in [1, 4096]");
  expect_error("sweep plan " + sweep + "2 serve", 2, "'serve' cannot run as a sweep (compare or ppl)");
  expect_error("sweep plan " + sweep + "2 ppl " + kTextArg + " --scaling bogus", 2, "bogus");
  expect_error("sweep plan " + sweep + "2 ppl " + kTextArg + " --no-such-flag", 2, "--no-such-flag");
  EXPECT_FALSE(fs::exists(sweep + "2/manifest.jsonl"));
  // Another plan in the same directory would orphan its results: refused unless --replace.
  expect_error("sweep plan " + sweep + " ppl " + kPplArgs + " --stride 64", 1, "already plans another sweep");
  const std::string manifest = sweep + "/manifest.jsonl", good = read_file(manifest);
  std::ofstream(manifest, std::ios::trunc) << good.substr(0, good.rfind("\n{\"cell\"") + 1);  // a cell line lost
  expect_error("sweep status " + sweep, 1, manifest + " lists 5 cells, its header says 6");
  std::ofstream(manifest, std::ios::trunc) << good << "not json\n";
  expect_error("sweep merge " + sweep, 1, manifest + " line 8 is not a JSON object");
  // A hand-edited cell line: what run and merge read of it is checked when the manifest is read.
  std::string edited = good;
  edited.replace(edited.find("\"first\":1"), 9, "\"first\":7");
  std::ofstream(manifest, std::ios::trunc) << edited;
  expect_error("sweep run " + sweep + " --cell 1", 1,
               manifest + " line 3: \"first\" is 7, the cells before it end at unit 1");
  edited = good;
  edited.replace(edited.find("\"units\":["), 9, "\"units\":7,\"x\":[");
  std::ofstream(manifest, std::ios::trunc) << edited;
  expect_error("sweep merge " + sweep, 1, manifest + " line 2: \"units\" must be a non-empty array");
  std::ofstream(manifest, std::ios::trunc) << "";
  expect_error("sweep run " + sweep, 1, manifest + " is empty");
  fs::remove(manifest);
  expect_error("sweep run " + sweep + " --cell 0", 1, manifest + " cannot be read");
  fs::remove_all(fs::path(sweep).parent_path());
}

TEST(SweepCli, FailedCellIsReportedAndNamedInStatus) {
  const std::string dir = make_temp_dir("sweep-failed");
  const std::string sweep = dir + "/grid", text = dir + "/text.txt";
  std::ofstream(text) << read_file(std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt");
  ASSERT_EQ(run_cli("sweep plan " + sweep + " ppl --text " + text + " --ctx-lengths 256 --scaling none").exit_code, 0);
  std::ofstream(text, std::ios::trunc) << "Once upon a time.";  // now too short for a 256-token window
  expect_error("sweep run " + sweep + " --jobs 1", 1, "1 cells failed: 0");
  EXPECT_NE(read_file(sweep + "/logs/0.log").find("is longer than"), std::string::npos);
  EXPECT_NE(read_file(sweep + "/cells/0.failed").find("is longer than"), std::string::npos);
  EXPECT_NE(run_cli("sweep status " + sweep).out.find("failed 1: 0"), std::string::npos);
  fs::remove_all(dir);
}

// A cell that cannot start (here its log path is a directory) ends the run with the error, but only
// after the cells already running have finished: none is left behind writing results.
TEST(SweepCli, ACellThatCannotStartWaitsForTheRunningOnes) {
  const std::string sweep = planned("sweep-nostart");
  fs::create_directories(sweep + "/logs/1.log");
  expect_error("sweep run " + sweep + " --jobs 2", 1, "sweep run: cannot write " + sweep + "/logs/1.log");
  EXPECT_TRUE(fs::exists(sweep + "/cells/0.result"));   // cell 0 had started: it was waited for
  EXPECT_FALSE(fs::exists(sweep + "/cells/2.result"));  // and nothing started after the error
  fs::remove_all(fs::path(sweep).parent_path());
}

TEST(SweepCli, SlurmScriptsRunMissingCellsThrottledAndSplitByMaxArraySize) {
  const std::string sweep = planned("sweep-slurm");
  ASSERT_EQ(run_cli("sweep run " + sweep + " --cell 2").exit_code, 0);
  const ordo::test::CliResult r = run_cli("sweep slurm " + sweep + " --max-parallel 2 --dry-run -- --partition=debug");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("5 tasks, --array=0-1,3-5%2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'sbatch' '--parsable' '--partition=debug'"), std::string::npos) << r.out;
  const std::string script = read_file(sweep + "/slurm/array-0.sbatch");
  EXPECT_NE(script.find("#SBATCH --array=0-1,3-5%2\n"), std::string::npos) << script;
  EXPECT_NE(script.find(" sweep run '" + sweep + "' --cell $((0 + SLURM_ARRAY_TASK_ID))\n"), std::string::npos)
      << script;
  // MaxArraySize 4: cells 0-3 as indices 0-3 of one array, cells 4-5 as indices 0-1 of another.
  const ordo::test::CliResult split = run_cli("sweep slurm " + sweep + " --max-array-size 4 --script-only");
  ASSERT_EQ(split.exit_code, 0) << split.err;
  EXPECT_NE(read_file(sweep + "/slurm/array-0.sbatch").find("--array=0-1,3\n"), std::string::npos);
  const std::string second = read_file(sweep + "/slurm/array-1.sbatch");
  EXPECT_NE(second.find("--array=0-1\n"), std::string::npos) << second;
  EXPECT_NE(second.find("--cell $((4 + SLURM_ARRAY_TASK_ID))"), std::string::npos) << second;
  expect_error("sweep slurm " + sweep + " --max-array-size 0 --dry-run", 1, "--max-array-size must be >= 1");
  fs::remove_all(fs::path(sweep).parent_path());
}
