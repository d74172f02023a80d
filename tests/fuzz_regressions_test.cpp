// Every input the fuzzers ever crashed on (tests/data/fuzz-regressions/<target>/), and every seed
// of their corpora (tests/fuzz/corpus/<target>/), replayed through the same target function: each
// must now end in a normal result or an ordo::Error, with every property of the target holding
// (a broken property aborts the test binary, which fails the run).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/fuzz_targets.hpp"

namespace fs = std::filesystem;

namespace {

size_t replay_dir(const fs::path& root, const ordo::fuzz::TargetInfo& t) {
  const fs::path dir = root / t.name;
  if (!fs::is_directory(dir)) return 0;
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(t.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    ++n;
  }
  return n;
}

}  // namespace

TEST(FuzzRegressions, EverySavedCrashInputIsHandled) {
  size_t n = 0;
  for (const auto& t : ordo::fuzz::targets()) n += replay_dir(fs::path(ORDO_TEST_DATA) / "fuzz-regressions", t);
  EXPECT_GT(n, 0u) << "no regression inputs found";
}

TEST(FuzzRegressions, EverySeedOfEveryCorpusIsHandled) {
  for (const auto& t : ordo::fuzz::targets()) {
    SCOPED_TRACE(t.name);
    EXPECT_GT(replay_dir(fs::path(ORDO_SOURCE_DIR) / "tests/fuzz/corpus", t), 0u) << "no seeds for " << t.name;
  }
}
