// OutputFile, OutputDir and the output-is-not-an-input check, called directly.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ordo/output_dir.hpp"
#include "ordo/output_file.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"
#include "support/sandbox.hpp"

namespace fs = std::filesystem;
using ordo::test::read_file;

namespace {

void put(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

mode_t mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

template <class F>
std::string error_of(F f) {
  return ordo::test::error_of(f);
}

}  // namespace

TEST(OutputFile, CommitReplacesContentAndKeepsPermissionBits) {
  const std::string d = ordo::test::make_temp_dir("of-mode");
  const std::string p = d + "/out.json";
  put(p, "old content\n");
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  ordo::write_file_atomic(p, "new\n");
  EXPECT_EQ(read_file(p), "new\n");
  EXPECT_EQ(mode_of(p), 0640u);
  EXPECT_EQ(ordo::test::leftover_temporaries(d), "");
}

TEST(OutputFile, NewFileGetsUmaskedMode) {
  const std::string d = ordo::test::make_temp_dir("of-umask");
  const mode_t old = ::umask(027);
  ordo::write_file_atomic(d + "/a", "x");
  ::umask(old);
  EXPECT_EQ(mode_of(d + "/a"), 0640u);  // 0666 & ~027, not mkstemp's 0600
}

TEST(OutputFile, WithoutCommitTheEarlierFileIsWholeAndNoTemporaryRemains) {
  const std::string d = ordo::test::make_temp_dir("of-nocommit");
  const std::string p = d + "/x.npy";
  put(p, "earlier");
  {
    ordo::OutputFile f(p);
    f.write(std::string(100000, 'z'));
    EXPECT_EQ(read_file(p), "earlier");
  }
  EXPECT_EQ(read_file(p), "earlier");
  EXPECT_EQ(ordo::test::leftover_temporaries(d), "");
}

TEST(OutputFile, KillBeforeCommitLeavesTheEarlierFile) {
  const std::string d = ordo::test::make_temp_dir("of-kill");
  const std::string p = d + "/x.jsonl";
  put(p, "earlier\n");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ordo::OutputFile f(p);
    f.write(std::string(1 << 20, 'n'));
    ::_exit(0);  // no destructor, no commit: as a kill would leave it
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(read_file(p), "earlier\n");
  EXPECT_NE(ordo::test::leftover_temporaries(d), "");  // the partial file is the hidden temporary
}

TEST(OutputFile, DevNullIsWrittenInPlaceNotReplaced) {
  ordo::write_file_atomic("/dev/null", std::string(10000, 'a'));
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(OutputFile, FullDeviceIsAnErrorNamingThePath) {
  const std::string e = error_of([] { ordo::write_file_atomic("/dev/full", std::string(100000, 'a')); });
  EXPECT_NE(e.find("/dev/full: write failed: No space left on device"), std::string::npos) << e;
}

TEST(OutputFile, MissingDirectoryIsAnErrorNamingThePath) {
  const std::string d = ordo::test::make_temp_dir("of-missing");
  const std::string p = d + "/no/such/x.json";
  const std::string e = error_of([&] { ordo::write_file_atomic(p, "x"); });
  EXPECT_NE(e.find(p + ": "), std::string::npos) << e;
  EXPECT_NE(e.find("No such file or directory"), std::string::npos) << e;
  const std::string c = error_of([&] { ordo::check_output_path(p, {}); });
  EXPECT_NE(c.find(p + ": cannot write in directory"), std::string::npos) << c;
  EXPECT_NE(error_of([&] { ordo::check_output_path(d, {}); }).find(d + ": is a directory"), std::string::npos);
}

TEST(OutputFile, HardLinkAndSymlinkAreReplacedNotWrittenThrough) {
  const std::string d = ordo::test::make_temp_dir("of-links");
  put(d + "/original", "original");
  fs::create_hard_link(d + "/original", d + "/hard");
  fs::create_symlink(d + "/original", d + "/soft");
  ordo::write_file_atomic(d + "/hard", "via hard");
  ordo::write_file_atomic(d + "/soft", "via soft");
  EXPECT_EQ(read_file(d + "/original"), "original");
  EXPECT_EQ(read_file(d + "/hard"), "via hard");
  EXPECT_EQ(read_file(d + "/soft"), "via soft");
  EXPECT_FALSE(fs::is_symlink(d + "/soft"));
}

TEST(OutputFile, TwoWritersOfOnePathDoNotCollide) {
  const std::string d = ordo::test::make_temp_dir("of-two");
  ordo::OutputFile a(d + "/x"), b(d + "/x");
  a.write("aaaa");
  b.write("bb");
  a.commit();
  EXPECT_EQ(read_file(d + "/x"), "aaaa");
  b.commit();
  EXPECT_EQ(read_file(d + "/x"), "bb");
}

TEST(OutputFile, OutputsInsideOrLinkedIntoAnInputAreRefused) {
  const std::string d = ordo::test::make_temp_dir("of-inputs");
  const std::string m = d + "/model";
  ordo::test::copy_bundled_model(m);
  fs::create_symlink(m, d + "/link");
  fs::create_hard_link(m + "/config.json", d + "/config-copy.json");
  fs::create_directories(d + "/out");
  for (const std::string& p : {m + "/config.json", m + "/new.json", m + "/sub/new.json", m, m + "/", d + "/link/x.npy",
                               d + "/out/../model/x.npy", d + "/config-copy.json", d + "/link"}) {
    const std::string e = error_of([&] { ordo::check_output_path(p, {m}); });
    EXPECT_NE(e.find(p + ": "), std::string::npos) << p << " -> " << e;
    EXPECT_NE(e.find("input model '" + m + "'"), std::string::npos) << p << " -> " << e;
  }
  EXPECT_EQ(error_of([&] { ordo::check_output_path(d + "/out/x.npy", {m}); }), "");
  EXPECT_EQ(error_of([&] { ordo::check_output_path(d + "/x.npy", {m, d + "/out"}); }), "");
}

TEST(OutputDir, KillBeforeCommitLeavesTheEarlierDirectory) {
  const std::string d = ordo::test::make_temp_dir("od-kill");
  const std::string out = d + "/q";
  {
    ordo::OutputDir od(out, {}, false, "test");
    put(od.path() + "/a", "first");
    od.commit();
  }
  const auto before = ordo::test::snapshot(out);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ordo::OutputDir od(out, {}, false, "test");
    put(od.path() + "/a", "second");
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(ordo::test::snapshot(out) == before);
  {  // ordo's own output is replaced whole: no file of the old one survives
    ordo::OutputDir od(out, {}, false, "test");
    put(od.path() + "/b", "third");
    od.commit();
  }
  EXPECT_FALSE(fs::exists(out + "/a"));
  EXPECT_EQ(read_file(out + "/b"), "third");
}

TEST(OutputDir, ForeignFolderNeedsReplace) {
  const std::string d = ordo::test::make_temp_dir("od-foreign");
  fs::create_directories(d + "/mine");
  put(d + "/mine/tokenizer.json", "someone else's");
  const std::string e = error_of([&] { ordo::OutputDir od(d + "/mine", {}, false, "test"); });
  EXPECT_NE(e.find(d + "/mine: not empty and not ordo's own earlier output (it holds 'tokenizer.json')"),
            std::string::npos)
      << e;
  EXPECT_EQ(read_file(d + "/mine/tokenizer.json"), "someone else's");
  ordo::OutputDir od(d + "/mine", {}, true, "test");
  put(od.path() + "/config.json", "{}");
  od.commit();
  EXPECT_FALSE(fs::exists(d + "/mine/tokenizer.json"));
  EXPECT_TRUE(fs::exists(d + "/mine/" + std::string(ordo::kOutputDirManifest)));
  EXPECT_EQ(ordo::test::leftover_temporaries(d), "");
}
