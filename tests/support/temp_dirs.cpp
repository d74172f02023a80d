// Scratch directories for tests, removed when the test that made them ends.
#include "support/temp_dirs.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace ordo::test {
namespace {

// Directories made since the last test ended; tests may make them from several threads.
std::mutex g_mutex;
std::vector<std::string> g_dirs;

std::vector<std::string> take_dirs() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return std::exchange(g_dirs, {});
}

void remove_dirs(const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs) {
    // A child the test left running may still be writing here; what cannot go stays.
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  }
}

// Without it each run of the suite left ~150 directories (~120 MB) in the temp dir.
class RemoveTempDirs : public testing::EmptyTestEventListener {
  void OnTestEnd(const testing::TestInfo& test) override {
    const std::vector<std::string> dirs = take_dirs();
    if (std::getenv("ORDO_KEEP_TEST_DIRS")) return;
    if (test.result()->Failed()) {
      for (const std::string& d : dirs) std::printf("[   KEPT   ] %s\n", d.c_str());
      return;
    }
    remove_dirs(dirs);
  }
  void OnTestProgramEnd(const testing::UnitTest&) override {
    if (!std::getenv("ORDO_KEEP_TEST_DIRS")) remove_dirs(take_dirs());
  }
};

const bool g_registered = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new RemoveTempDirs);
  return true;
}();

}  // namespace

std::string make_temp_dir(const std::string& tag) {
  std::string tmpl = testing::TempDir() + "ordo-" + tag + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_dirs.push_back(tmpl);
  return tmpl;
}

}  // namespace ordo::test
