// `ordo sweep`: a compare or ppl grid planned, run as cells (--jobs 1, --jobs 2) and merged equals the
// one-process command byte for byte; killed, corrupt, truncated and doubly-run cells never merge wrong.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "support/cli.hpp"
#include "support/golden.hpp"

using ordo::test::make_temp_dir;
using ordo::test::read_file;
using ordo::test::run_cli;
using ordo::test::shell_quote;
namespace fs = std::filesystem;

namespace {

const std::string kText = std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt";
const std::string kPplArgs = "--text " + shell_quote(kText) + " --ctx-lengths 256,512 --scaling none,ntk,self-extend";

constexpr auto ok = &ordo::test::run_cli_ok;  // `ordo ARGS`, exit 0 expected: its stdout

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The one-process ppl run's stdout, JSON and plot in `dir`.
std::string ppl_one_process(const std::string& dir) {
  return ok("ppl " + kPplArgs + " --json " + dir + "/one.json --plot " + dir + "/one.svg");
}

void expect_ppl_merge_equals(const std::string& sweep, const std::string& dir, const std::string& one_out) {
  const std::string out = ok("sweep merge " + sweep + " --json " + dir + "/merged.json --plot " + dir + "/merged.svg");
  EXPECT_EQ(out, one_out);
  EXPECT_EQ(read_file(dir + "/merged.json"), read_file(dir + "/one.json"));
  EXPECT_EQ(read_file(dir + "/merged.svg"), read_file(dir + "/one.svg"));
  EXPECT_FALSE(read_file(dir + "/one.json").empty());
}

std::string status(const std::string& sweep) { return ok("sweep status " + sweep); }

}  // namespace

TEST(SweepCli, CompareQuickMergedEqualsOneProcessRun) {
  const std::string dir = make_temp_dir("sweep-compare");
  const std::string one_out = ok("compare --quick --json " + dir + "/one.json --html " + dir + "/one.html");
  const std::string sweep = dir + "/grid";
  EXPECT_NE(ok("sweep plan " + sweep + " compare --quick").find("planned 144 cells"), std::string::npos);
  EXPECT_NE(status(sweep).find("missing 144: 0-143"), std::string::npos);
  ok("sweep run " + sweep + " --jobs 2");
  EXPECT_NE(status(sweep).find("done 144: 0-143"), std::string::npos);
  const std::string out = ok("sweep merge " + sweep + " --json " + dir + "/m.json --html " + dir + "/m.html");
  EXPECT_EQ(out, one_out);
  EXPECT_EQ(read_file(dir + "/m.json"), read_file(dir + "/one.json"));
  EXPECT_EQ(read_file(dir + "/m.html"), read_file(dir + "/one.html"));
  EXPECT_NE(read_file(dir + "/m.json").find("\"permutation_seed\""), std::string::npos);
  EXPECT_NE(read_file(dir + "/m.json").find("\"half_width\""), std::string::npos);  // intervals merged too
  // --per-cell 3: cells that hold two probes of one model and one of the next, each model loaded once
  // per cell.
  const std::string grouped = dir + "/grouped";
  EXPECT_NE(ok("sweep plan --per-cell 3 " + grouped + " compare --quick").find("planned 48 cells"), std::string::npos);
  ok("sweep run " + grouped + " --jobs 2");
  EXPECT_EQ(ok("sweep merge " + grouped + " --json " + dir + "/g.json"), one_out);
  EXPECT_EQ(read_file(dir + "/g.json"), read_file(dir + "/one.json"));
  fs::remove_all(dir);
}

TEST(SweepCli, PplMergedEqualsOneProcessRunWithOneAndTwoJobs) {
  const std::string dir = make_temp_dir("sweep-ppl");
  const std::string one_out = ppl_one_process(dir);
  // --per-cell 4: cells of 4 and 2 rows, each loading the model once.
  for (const std::string per_cell : {"1", "4"}) {
    for (const char* jobs : {"1", "2"}) {
      const std::string sweep = dir + "/grid" + per_cell + jobs, cells = per_cell == "1" ? "6" : "2";
      EXPECT_NE(ok("sweep plan --per-cell " + per_cell + " " + sweep + " ppl " + kPplArgs).find("planned " + cells),
                std::string::npos);
      ok("sweep run " + sweep + " --jobs " + jobs);
      expect_ppl_merge_equals(sweep, dir, one_out);
      // A second run finds every result done and verified: nothing runs.
      const ordo::test::CliResult again = run_cli("sweep run " + sweep + " --jobs " + jobs);
      EXPECT_EQ(again.exit_code, 0);
      EXPECT_NE(again.err.find("0 of " + cells + " cells to run"), std::string::npos) << again.err;
      // --force runs every cell again, each child too (cell 1 is done: its child must not skip it).
      fs::remove(sweep + "/cells/0.result");
      const ordo::test::CliResult forced = run_cli("sweep run " + sweep + " --force --jobs " + jobs);
      EXPECT_NE(forced.err.find(cells + " of " + cells + " cells to run"), std::string::npos) << forced.err;
      EXPECT_EQ(read_file(sweep + "/logs/1.log").find("skipped"), std::string::npos)
          << read_file(sweep + "/logs/1.log");
      expect_ppl_merge_equals(sweep, dir, one_out);
    }
  }
  fs::remove_all(dir);
}

// The cell is killed with SIGKILL after it has loaded the model and before it scores: its stderr is
// a pipe the test filled, so the cell's first progress line blocks it there.
TEST(SweepCli, KilledCellLeavesNoResultAndRerunRunsOnlyIt) {
  const std::string dir = make_temp_dir("sweep-kill");
  const std::string one_out = ppl_one_process(dir);
  const std::string sweep = dir + "/grid";
  ok("sweep plan " + sweep + " ppl " + kPplArgs);
  ok("sweep run " + sweep + " --cell 0");
  ok("sweep run " + sweep + " --cell 1");
  int p[2];
  ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
  const std::string fill(4096, 'x');
  while (write(p[1], fill.data(), fill.size()) > 0) {
  }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(p[1], STDERR_FILENO);
    const int flags = fcntl(STDERR_FILENO, F_GETFL);
    fcntl(STDERR_FILENO, F_SETFL, flags & ~O_NONBLOCK);
    execl(ORDO_CLI, ORDO_CLI, "sweep", "run", sweep.c_str(), "--cell", "4", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(p[1]);
  usleep(1500 * 1000);  // load the model, then block on stderr
  int st = 0;
  EXPECT_EQ(waitpid(pid, &st, WNOHANG), 0) << "the cell should still be running, blocked";
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  close(p[0]);
  EXPECT_TRUE(WIFSIGNALED(st));
  EXPECT_FALSE(fs::exists(sweep + "/cells/4.result"));
  EXPECT_NE(status(sweep).find("missing 4: 2-5"), std::string::npos) << status(sweep);
  const ordo::test::CliResult merge = run_cli("sweep merge " + sweep);
  EXPECT_EQ(merge.exit_code, 1);
  EXPECT_NE(merge.err.find("4 of 6 cells of " + sweep + " are not done: 2-5"), std::string::npos) << merge.err;
  const ordo::test::CliResult rerun = run_cli("sweep run " + sweep + " --jobs 2");
  EXPECT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_NE(rerun.err.find("4 of 6 cells to run"), std::string::npos) << rerun.err;
  expect_ppl_merge_equals(sweep, dir, one_out);
  fs::remove_all(dir);
}

TEST(SweepCli, CorruptAndTruncatedResultsAreDetectedAndRerun) {
  const std::string dir = make_temp_dir("sweep-corrupt");
  const std::string one_out = ppl_one_process(dir);
  const std::string sweep = dir + "/grid";
  ok("sweep plan " + sweep + " ppl " + kPplArgs);
  ok("sweep run " + sweep + " --jobs 2");
  const std::string r1 = sweep + "/cells/1.result", r3 = sweep + "/cells/3.result";
  std::string bytes = read_file(r1);
  const size_t at = bytes.find("\"ppl\":") + 7;  // a digit of the perplexity
  bytes[at] = bytes[at] == '1' ? '2' : '1';
  write_bytes(r1, bytes);
  const std::string three = read_file(r3);
  write_bytes(r3, three.substr(0, three.size() / 2));
  const ordo::test::CliResult s = run_cli("sweep status " + sweep);
  EXPECT_NE(s.out.find("corrupt 2: 1,3"), std::string::npos) << s.out;
  EXPECT_NE(s.err.find("1.result: its size or checksum does not match"), std::string::npos) << s.err;
  const ordo::test::CliResult merge = run_cli("sweep merge " + sweep);
  EXPECT_EQ(merge.exit_code, 1);
  EXPECT_NE(merge.err.find("are not done: 1,3"), std::string::npos) << merge.err;
  EXPECT_EQ(merge.out, "");  // nothing rendered from a partial grid
  const ordo::test::CliResult rerun = run_cli("sweep run " + sweep + " --jobs 2");
  EXPECT_NE(rerun.err.find("2 of 6 cells to run"), std::string::npos) << rerun.err;
  EXPECT_EQ(read_file(r3), three);
  expect_ppl_merge_equals(sweep, dir, one_out);
  fs::remove_all(dir);
}

TEST(SweepCli, TwoRunsOfOneCellAtOnceLeaveOneVerifiedResult) {
  const std::string dir = make_temp_dir("sweep-twice");
  const std::string one_out = ppl_one_process(dir);
  const std::string sweep = dir + "/grid";
  ok("sweep plan " + sweep + " ppl " + kPplArgs);
  ok("sweep run " + sweep + " --jobs 2");
  const std::string want = read_file(sweep + "/cells/5.result");
  const std::string cell = shell_quote(ORDO_CLI) + " sweep run " + sweep + " --cell 5 --force";
  for (int round = 0; round < 3; ++round) {
    const std::string cmd = "(" + cell + " & " + cell + " & " + cell + " & wait) 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    EXPECT_EQ(read_file(sweep + "/cells/5.result"), want);
  }
  for (const auto& e : fs::directory_iterator(sweep + "/cells"))  // no temporary left behind
    EXPECT_TRUE(std::regex_match(e.path().filename().string(), std::regex("[0-9]+\\.result"))) << e.path();
  expect_ppl_merge_equals(sweep, dir, one_out);
  fs::remove_all(dir);
}
