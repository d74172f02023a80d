// Nothing a user had is lost and every write is checked: `ordo` commands against links into their
// input, other models' folders, full disks (/dev/full, RLIMIT_FSIZE) and missing directories.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "ordo/output_dir.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"
#include "support/sandbox.hpp"

namespace fs = std::filesystem;
using ordo::test::read_file;
using ordo::test::run_ordo_sh;
using ordo::test::shell_quote;
using ordo::test::snapshot;

namespace {

const std::string kText = std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt";

// A scratch directory with a copy of the bundled model at <dir>/model.
struct Sandbox {
  std::string dir, model;
  std::map<std::string, std::string> model_files;
  explicit Sandbox(const std::string& tag) : dir(ordo::test::make_temp_dir(tag)), model(dir + "/model") {
    ordo::test::copy_bundled_model(model);
    model_files = snapshot(model);
  }
  std::string m() const { return " -m " + shell_quote(model) + " "; }
  void expect_model_untouched() const { EXPECT_TRUE(snapshot(model) == model_files) << "the input model changed"; }
};

void expect_refused(const ordo::test::ShellRun& r, const std::string& path) {
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("ordo: error: " + path), std::string::npos) << r.output;
}

void put(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

}  // namespace

TEST(OutputFiles, QuantizeIntoHardLinksOfTheInputIsRefused) {
  Sandbox s("of-q-hard");
  const std::string out = s.dir + "/linked";
  fs::create_directories(out);
  for (const auto& f : s.model_files) fs::create_hard_link(s.model + "/" + f.first, out + "/" + f.first);
  for (const char* extra : {"", "--replace"}) {
    const auto r = run_ordo_sh("quantize" + s.m() + "-o " + shell_quote(out) + " " + extra);
    expect_refused(r, out + "/");
    EXPECT_NE(r.output.find("input model '" + s.model + "'"), std::string::npos) << r.output;
  }
  s.expect_model_untouched();
  EXPECT_TRUE(snapshot(out) == s.model_files);
}

TEST(OutputFiles, QuantizeIntoASymlinkToTheInputOrASnapshotOfLinksIsRefused) {
  Sandbox s("of-q-sym");
  fs::create_symlink(s.model, s.dir + "/alias");
  fs::create_directories(s.dir + "/snapshot");  // a Hugging Face cache snapshot: links to the blobs
  for (const auto& f : s.model_files) fs::create_symlink(s.model + "/" + f.first, s.dir + "/snapshot/" + f.first);
  for (const std::string& out : {s.dir + "/alias", s.dir + "/snapshot", s.model, s.model + "/q"}) {
    const auto r = run_ordo_sh("quantize" + s.m() + "-o " + shell_quote(out) + " --replace");
    expect_refused(r, out);
  }
  s.expect_model_untouched();
  EXPECT_TRUE(snapshot(s.dir + "/snapshot") == s.model_files);
}

TEST(OutputFiles, QuantizeIntoAnotherModelsFolderIsRefusedThenReplacedWhole) {
  Sandbox s("of-q-other");
  const std::string out = s.dir + "/other";
  fs::create_directories(out);
  put(out + "/tokenizer.json", "{\"stale\": true}");
  put(out + "/config.json", "{}");
  const auto r = run_ordo_sh("quantize" + s.m() + "-o " + shell_quote(out));
  expect_refused(r, out + ": not empty and not ordo's own earlier output");
  EXPECT_NE(r.output.find("--replace"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(out + "/tokenizer.json"), "{\"stale\": true}");
  const auto ok = run_ordo_sh("quantize" + s.m() + "-o " + shell_quote(out) + " --replace");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_FALSE(fs::exists(out + "/tokenizer.json"));  // no stale tokenizer from the other model
  EXPECT_EQ(read_file(out + "/tokenizer.model"), s.model_files.at("tokenizer.model"));
  const auto run = run_ordo_sh("run -m " + shell_quote(out) + " -p Zoo -n 4 --temp 0 -q");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(ordo::test::leftover_temporaries(s.dir), "");
  s.expect_model_untouched();
}

TEST(OutputFiles, QuantizeReplacesItsOwnOutputButNotAUsersAddedFile) {
  Sandbox s("of-q-own");
  const std::string out = s.dir + "/q";
  ASSERT_EQ(run_ordo_sh("quantize" + s.m() + "-o " + shell_quote(out)).exit_code, 0);
  const auto again = run_ordo_sh("quantize" + s.m() + "--dtype f16 -o " + shell_quote(out));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(read_file(out + "/config.json").find("\"f16\""), std::string::npos);
  put(out + "/notes.txt", "mine");
  expect_refused(run_ordo_sh("quantize" + s.m() + "-o " + shell_quote(out)), out + ": not empty");
  EXPECT_EQ(read_file(out + "/notes.txt"), "mine");
}

TEST(OutputFiles, QuantizeFailingPartWayLeavesTheEarlierOutputWhole) {
  Sandbox s("of-q-full");
  const std::string out = s.dir + "/q";
  ASSERT_EQ(run_ordo_sh("quantize" + s.m() + "-o " + shell_quote(out)).exit_code, 0);
  const auto before = snapshot(out);
  const auto r = run_ordo_sh("quantize" + s.m() + "--dtype f16 -o " + shell_quote(out), 64 * 1024);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("model.safetensors: write failed: File too large"), std::string::npos) << r.output;
  EXPECT_TRUE(snapshot(out) == before);
  EXPECT_EQ(ordo::test::leftover_temporaries(s.dir), "");
}

TEST(OutputFiles, ForwardIntoTheModelDirectoryIsRefused) {
  Sandbox s("of-fwd-in");
  for (const std::string& out :
       {s.model + "/model.safetensors", s.model + "/logits.npy", s.dir + "/model/../model/x.npy"}) {
    const auto r = run_ordo_sh("forward" + s.m() + "--ids 1,2,3 -o " + shell_quote(out));
    expect_refused(r, out);
    EXPECT_NE(r.output.find("input model '" + s.model + "'"), std::string::npos) << r.output;
  }
  s.expect_model_untouched();
}

TEST(OutputFiles, ForwardOnAFullDiskKeepsTheEarlierFileAndItsMode) {
  Sandbox s("of-fwd-full");
  const std::string out = s.dir + "/x.npy";
  put(out, "earlier");
  ASSERT_EQ(::chmod(out.c_str(), 0600), 0);
  const auto r = run_ordo_sh("forward" + s.m() + "--ids 1,2,3 -o " + shell_quote(out), 2048);
  expect_refused(r, out + ": write failed: File too large");
  EXPECT_EQ(read_file(out), "earlier");
  EXPECT_EQ(ordo::test::leftover_temporaries(s.dir), "");
  const auto ok = run_ordo_sh("forward" + s.m() + "--ids 1,2,3 -o " + shell_quote(out));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(read_file(out).substr(0, 6), "\x93NUMPY");
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(OutputFiles, EmbedErrorPartWayKeepsTheEarlierJsonl) {
  Sandbox s("of-embed");
  std::string lines;
  for (int i = 0; i < 40; ++i) lines += "Once upon a time " + std::to_string(i) + "\n";
  put(s.dir + "/in.txt", lines);
  const std::string out = s.dir + "/out.jsonl";
  put(out, "earlier\n");
  const auto r =
      run_ordo_sh("embed" + s.m() + "-f " + shell_quote(s.dir + "/in.txt") + " -o " + shell_quote(out), 4096);
  expect_refused(r, out + ": write failed: File too large");
  EXPECT_EQ(r.output.find("wrote"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(out), "earlier\n");
  const auto ok = run_ordo_sh("embed" + s.m() + "-f " + shell_quote(s.dir + "/in.txt") + " -o " + shell_quote(out));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const std::string all = read_file(out);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 40);
}

// Every command that prints: a full stdout is an error naming stdout, exit 1.
TEST(OutputFiles, FullStdoutIsAnErrorForEveryPrintingCommand) {
  Sandbox s("of-stdout");
  put(s.dir + "/prompts.txt", "Zoo\nOnce upon\n");
  for (const std::string& cmd :
       {"tokenize" + s.m() + "hello", "tokenize" + s.m() + "--decode 1,2,3", "inspect" + s.m(),
        "run" + s.m() + "-p Zoo -n 8 --temp 0 -q", "run" + s.m() + "--ids 1,2 -n 4 --temp 0 -q",
        "run" + s.m() + "-f " + shell_quote(s.dir + "/prompts.txt") + " -n 4 --temp 0 -q", "embed" + s.m() + "Zoo",
        "ppl" + s.m() + "--text " + shell_quote(kText) + " --ctx 32",
        "quantize" + s.m() + "-o " + shell_quote(s.dir + "/q")}) {
    const auto r = run_ordo_sh(cmd + " >/dev/full");
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("ordo: error: stdout: No space left on device"), std::string::npos)
        << cmd << ": " << r.output;
    const auto null = run_ordo_sh(cmd + " >/dev/null");
    EXPECT_EQ(null.exit_code, 0) << cmd << ": " << null.output;
  }
  s.expect_model_untouched();
}

TEST(OutputFiles, ClosedPipeEndsByTheDefaultSigpipe) {
  const auto r = run_ordo_sh("run -p Zoo -n 60 --temp 0 -q | head -c 3");
  EXPECT_EQ(r.output, "Zoo");  // no error message: `| head` is not a failure
}

// Every file output flag: a full device and a missing directory are errors naming the path; the
// missing directory is found before the run; /dev/null is written, not replaced.
TEST(OutputFiles, EveryOutputFlagChecksItsWrites) {
  Sandbox s("of-flags");
  const std::string ppl = "ppl" + s.m() + "--text " + shell_quote(kText) + " --ctx 32 ";
  const std::string cmp = "compare --no-zoo --quick" + s.m() + "--tasks length --ctx-base 16 --multiples 1 --text " +
                          shell_quote(kText) + " ";
  const std::string bench =
      "bench --synthetic 64,2,4,2,96,256 --quick --backend onednn --dtypes f32 --prompts 8 --contexts '' ";
  const std::string missing = s.dir + "/no/such";
  // --plot takes only names whose extension is a plot format, so devices are not among its targets.
  for (const std::string& flag : {ppl + "--json", ppl + "--plot", cmp + "--json", cmp + "--html", bench + "--json"}) {
    const bool plot = flag.find("--plot") != std::string::npos;
    const std::string ext = plot ? ".svg" : ".out";
    if (!plot) {
      const auto full = run_ordo_sh(flag + " /dev/full");
      expect_refused(full, "/dev/full: write failed: No space left on device");
      const auto null = run_ordo_sh(flag + " /dev/null");
      EXPECT_EQ(null.exit_code, 0) << flag << ": " << null.output;
    }
    const auto gone = run_ordo_sh(flag + " " + missing + "/x" + ext);
    expect_refused(gone, missing + "/x" + ext + ": cannot write in directory '" + missing + "'");
    EXPECT_EQ(gone.output.find("ppl\n"), std::string::npos) << "ran before refusing: " << gone.output;
    if (flag.rfind("bench", 0) == 0) continue;  // bench --synthetic has no input model
    expect_refused(run_ordo_sh(flag + " " + shell_quote(s.model + "/report" + ext)), s.model + "/report" + ext);
  }
  for (const std::string& cmd :
       {"forward" + s.m() + "--ids 1,2 -o " + missing + "/x.npy", "embed" + s.m() + "Zoo -o " + missing + "/x.json",
        "quantize" + s.m() + "-o " + shell_quote(s.model + "/config.json/q")})
    EXPECT_EQ(run_ordo_sh(cmd).exit_code, 1) << cmd;
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  s.expect_model_untouched();
}

// /dev/stdout redirected to a file is that file behind a link: appended to in place, never replaced.
TEST(OutputFiles, DevStdoutRedirectedToAFileGetsTheJsonAfterTheTable) {
  Sandbox s("of-devstdout");
  const std::string out = s.dir + "/all.txt";
  const auto r =
      run_ordo_sh("ppl" + s.m() + "--text " + shell_quote(kText) + " --ctx 32 --json /dev/stdout >" + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string all = read_file(out);
  const size_t table = all.find("scaling "), json = all.find("{\n  \"model\"");
  ASSERT_NE(table, std::string::npos) << all;
  ASSERT_NE(json, std::string::npos) << all;
  EXPECT_LT(table, json);
  EXPECT_TRUE(fs::is_symlink("/dev/stdout"));
}

// Under `ulimit -f` (SIGXFSZ at its default, as in a shell) ordo reports the write, not a signal.
TEST(OutputFiles, FileSizeLimitIsAnErrorNotASignal) {
  Sandbox s("of-xfsz");
  const std::string out = s.dir + "/x.npy";
  const auto r = run_ordo_sh("forward" + s.m() + "--ids 1,2,3 -o " + shell_quote(out), 1024, "", false);
  EXPECT_EQ(r.signal_number, 0);
  expect_refused(r, out + ": write failed: File too large");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(ordo::test::leftover_temporaries(s.dir), "");
}
