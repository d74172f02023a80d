// `ordo sweep plan --shards S`: each unit's items split over cells and joined before any statistic,
// so the merge equals the one-process compare and ppl byte for byte; shard cells killed or corrupt
// rerun; temporaries of dead runs cleaned, live ones kept; Slurm scripts quote the sweep directory.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/cli.hpp"
#include "support/golden.hpp"
#include "sweep_temp.hpp"

using ordo::test::make_temp_dir;
using ordo::test::read_file;
using ordo::test::run_cli;
using ordo::test::shell_quote;
namespace fs = std::filesystem;

namespace {

const std::string kText = std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt";
// 5,420 tokens: at 256, 21 windows = 6 groups of --batch-windows 4; at 512, 10 windows = 3 groups.
const std::string kPplArgs = "--text " + shell_quote(kText) + " --ctx-lengths 256,512 --scaling none,ntk,self-extend";

constexpr auto ok = &ordo::test::run_cli_ok;  // `ordo ARGS`, exit 0 expected: its stdout

// Runs the planned sweep and expects its merge to equal the one-process files one.{json,EXT}.
void expect_merge_equals(const std::string& sweep, const std::string& dir, const std::string& report,
                         const std::string& ext, const std::string& one_out) {
  ok("sweep run " + sweep + " --jobs 2");
  EXPECT_EQ(ok("sweep merge " + sweep + " --json " + dir + "/m.json " + report + " " + dir + "/m." + ext), one_out)
      << sweep;
  EXPECT_EQ(read_file(dir + "/m.json"), read_file(dir + "/one.json")) << sweep;
  EXPECT_EQ(read_file(dir + "/m." + ext), read_file(dir + "/one." + ext)) << sweep;
  fs::remove(dir + "/m.json");
  fs::remove(dir + "/m." + ext);
}

// A pid that no process has now: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int st = 0;
  waitpid(pid, &st, 0);
  return pid;
}

void touch(const std::string& path, long long age_seconds) {
  std::ofstream(path) << "partial";
  const time_t t = std::time(nullptr) - static_cast<time_t>(age_seconds);
  const utimbuf times{t, t};
  utime(path.c_str(), &times);
}

}  // namespace

TEST(SweepShards, PplShardsMergeEqualOneProcessRun) {
  const std::string dir = make_temp_dir("sweep-shards-ppl");
  const std::string one_out = ok("ppl " + kPplArgs + " --json " + dir + "/one.json --plot " + dir + "/one.svg");
  // 2 shards of every row; 3 per row in cells of 4 shards; 50, more than any row's groups: 6 and 3.
  EXPECT_NE(ok("sweep plan --shards 2 " + dir + "/s2 ppl " + kPplArgs).find("planned 12 cells"), std::string::npos);
  EXPECT_NE(ok("sweep plan --shards 3 --per-cell 4 " + dir + "/s3 ppl " + kPplArgs).find("planned 5 cells"),
            std::string::npos);
  EXPECT_NE(ok("sweep plan --shards 50 " + dir + "/s50 ppl " + kPplArgs).find("planned 27 cells"), std::string::npos);
  const std::string manifest = read_file(dir + "/s50/manifest.jsonl");
  EXPECT_NE(manifest.find(
                "\"items\":[5,6],\"label\":\"none ctx 256\",\"of\":6,\"scaling\":\"none\",\"shard\":5,\"shards\":6"),
            std::string::npos)
      << manifest;
  for (const char* s : {"s2", "s3", "s50"}) expect_merge_equals(dir + "/" + s, dir, "--plot", "svg", one_out);
  fs::remove_all(dir);
}

// A zoo of two seeds of a decoder scheme, one of another, an encoder and two task models on a short
// suite (links to the committed zoo's models): seed groups, intervals, paired tests and the synthetic
// section, at a size a test can run four times.
TEST(SweepShards, CompareQuickShardsMergeEqualOneProcessRun) {
  const std::string dir = make_temp_dir("sweep-shards-compare"), zoo = dir + "/zoo";
  const std::string src = std::string(ORDO_SOURCE_DIR) + "/models/zoo";
  for (const char* m : {"lm/rope-s1", "lm/rope-s2", "lm/alibi-s1", "mlm/none-s1", "tasks/rope-s1", "tasks/rope-s2"}) {
    fs::create_directories(fs::path(zoo + "/" + m).parent_path());
    fs::create_directory_symlink(src + "/" + m, zoo + "/" + m);
  }
  fs::copy_file(src + "/heldout.txt", zoo + "/heldout.txt");
  std::string suite;
  std::istringstream lines(read_file(src + "/tasks/suite.jsonl"));
  for (std::string l; std::getline(lines, l);)  // the first item of each (task, length)
    if (suite.find(l.substr(0, l.find("\"prompt\""))) == std::string::npos) suite += l + "\n";
  std::ofstream(zoo + "/tasks/suite.jsonl") << suite;
  // 32 pairs: 4 word-order steps of 8 pairs; length: 2 multiples; the others one item each.
  const std::string args =
      "--zoo " + zoo + " --quick --max-pairs 32 --tasks word-order,permutation,length,attention,synthetic";
  const std::string one_out = ok("compare " + args + " --json " + dir + "/one.json --html " + dir + "/one.html");
  const std::string doc = read_file(dir + "/one.json");
  EXPECT_NE(doc.find("\"half_width\""), std::string::npos);  // intervals over seeds
  EXPECT_NE(doc.find("\"permutation_seed\""), std::string::npos);
  EXPECT_NE(doc.find("\"tasks/rope-s2+yarn\""), std::string::npos);  // the synthetic section
  // 4 models x (2 + 1 + 2 + 1) shards + 2 task models; then cells of 4 of 4 x (3 + 1 + 2 + 1) + 2
  // and of 4 x (4 + 1 + 2 + 1) + 2 shards.
  EXPECT_NE(ok("sweep plan --shards 2 " + dir + "/s2 compare " + args).find("planned 26 cells"), std::string::npos);
  EXPECT_NE(read_file(dir + "/s2/manifest.jsonl")
                .find("\"items\":[2,4],\"label\":\"lm/rope-s1\",\"of\":4,\"probe\":\"word-order\""),
            std::string::npos);
  EXPECT_NE(ok("sweep plan --shards 3 --per-cell 4 " + dir + "/s3 compare " + args).find("planned 8 cells"),
            std::string::npos);
  EXPECT_NE(ok("sweep plan --shards 9 --per-cell 4 " + dir + "/s9 compare " + args).find("planned 9 cells"),
            std::string::npos);
  for (const char* s : {"s2", "s3", "s9"}) expect_merge_equals(dir + "/" + s, dir, "--html", "html", one_out);
  fs::remove_all(dir);
}

// Shard cells lost (killed before their rename) or corrupt are rerun alone. Temporaries: a dead
// pid's of this host and an hour-old one of another host go; a live pid's and a fresh one of another
// host (a run that may still be writing) stay.
TEST(SweepShards, KilledAndCorruptShardCellsRerunAndStaleTemporariesGo) {
  const std::string dir = make_temp_dir("sweep-shards-faults"), sweep = dir + "/grid", cells = sweep + "/cells/";
  const std::string one_out = ok("ppl " + kPplArgs + " --json " + dir + "/one.json --plot " + dir + "/one.svg");
  ok("sweep plan --shards 3 " + sweep + " ppl " + kPplArgs);
  ok("sweep run " + sweep + " --jobs 2");
  fs::remove(cells + "4.result");
  const std::string host = ordo::cli::sweep::writer_token(), seven = read_file(cells + "7.result");
  std::ofstream(cells + "7.result", std::ios::trunc) << seven.substr(0, seven.size() / 2);
  const std::string dead = "." + std::string("4.result.") + host + "." + std::to_string(dead_pid()) + ".tmp";
  const std::string live = ".5.result." + host + "." + std::to_string(getpid()) + ".tmp";
  touch(cells + dead, 0);
  touch(cells + live, 0);
  // Another node whose name ends with this one's ("b.a" beside "a"), same pid: not this writer's.
  const std::string lookalike = ".3.result.b_" + host + "." + std::to_string(dead_pid()) + ".tmp";
  touch(cells + lookalike, 0);
  touch(cells + ".6.result.other-node.123.tmp", 60);
  touch(cells + ".8.result.other-node.123.tmp", 7200);
  touch(cells + ".9.result.ordo-AbC123", 7200);  // an older ordo's temporary: by age alone
  const std::string st = ok("sweep status " + sweep);
  EXPECT_NE(st.find("corrupt 1: 7"), std::string::npos) << st;
  EXPECT_NE(st.find("missing 1: 4"), std::string::npos) << st;
  const ordo::test::CliResult rerun = run_cli("sweep run " + sweep + " --jobs 2");
  EXPECT_NE(rerun.err.find("2 of 18 cells to run"), std::string::npos) << rerun.err;
  EXPECT_FALSE(fs::exists(cells + dead));
  EXPECT_TRUE(fs::exists(cells + live));
  EXPECT_TRUE(fs::exists(cells + lookalike));
  EXPECT_TRUE(fs::exists(cells + ".6.result.other-node.123.tmp"));
  EXPECT_FALSE(fs::exists(cells + ".8.result.other-node.123.tmp"));
  EXPECT_FALSE(fs::exists(cells + ".9.result.ordo-AbC123"));
  EXPECT_EQ(ok("sweep merge " + sweep + " --json " + dir + "/m.json --plot " + dir + "/m.svg"), one_out);
  EXPECT_EQ(read_file(dir + "/m.json"), read_file(dir + "/one.json"));
  EXPECT_EQ(read_file(dir + "/m.svg"), read_file(dir + "/one.svg"));
  fs::remove_all(dir);
}

TEST(SweepShards, BadShardCountsAreUsageErrors) {
  const std::string dir = make_temp_dir("sweep-shards-bad");
  for (const std::string v : {"0", "-1", "abc", "1.5", "1000001"}) {
    const ordo::test::CliResult r = run_cli("sweep plan --shards " + v + " " + dir + "/g ppl " + kPplArgs);
    EXPECT_EQ(r.exit_code, 2) << v << "\n" << r.err;
    EXPECT_NE(r.err.find("--shards"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir + "/g/manifest.jsonl"));
  fs::remove_all(dir);
}

// sbatch reads #SBATCH arguments as words: the output path is double-quoted, the script's command
// line shell-quoted.
TEST(SweepShards, SlurmScriptQuotesADirectoryWithASpace) {
  const std::string dir = make_temp_dir("sweep-shards-slurm"), sweep = dir + "/a b/grid";
  ok("sweep plan --shards 2 " + shell_quote(sweep) + " ppl " + kPplArgs);
  ok("sweep slurm " + shell_quote(sweep) + " --dry-run");
  const std::string script = read_file(sweep + "/slurm/array-0.sbatch");
  EXPECT_NE(script.find("#SBATCH --output=\"" + sweep + "/logs/slurm-%A_%a.out\"\n"), std::string::npos) << script;
  EXPECT_NE(script.find(" sweep run '" + sweep + "' --cell $((0 + SLURM_ARRAY_TASK_ID))\n"), std::string::npos)
      << script;
  fs::remove_all(dir);
}

// A text that grew after planning gives more window groups than the shards cover: the cell says so
// instead of merging a part of the new text.
TEST(SweepShards, AShardOfATextChangedSincePlanningIsRefused) {
  const std::string dir = make_temp_dir("sweep-shards-changed"), text = dir + "/t.txt";
  fs::copy_file(kText, text);
  ok("sweep plan --shards 2 " + dir + "/g ppl --text " + text + " --ctx-lengths 256");
  std::ofstream(text, std::ios::app) << read_file(kText);
  const ordo::test::CliResult r = run_cli("sweep run " + dir + "/g --cell 0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("changed since `ordo sweep plan`"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("groups of --batch-windows windows where the plan had"), std::string::npos) << r.err;
  fs::remove_all(dir);
}
