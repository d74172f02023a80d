// Property: whatever output path a user gives (symlink chains, hard links, `..`, trailing slashes,
// relative or absolute, missing parents), `ordo forward -o` / `ordo quantize -o` either refuse it
// naming the path or write it, and the input model's files are byte-identical afterwards.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "support/cli.hpp"
#include "support/golden.hpp"
#include "support/sandbox.hpp"

namespace fs = std::filesystem;
using ordo::test::run_ordo_sh;
using ordo::test::shell_quote;

namespace {

// One arrangement: the path as typed, whether it lands in (or on a file of) the model, whether its
// directory exists.
struct Case {
  std::string path;
  bool into_model = false;
  bool parent_exists = true;
};

// Links that reach the model directory (true) or a directory beside it (false), made under `root`;
// the returned list names the directories as typed, absolute and relative to root.
std::vector<std::pair<std::string, bool>> arrange_links(const std::string& root, const std::string& model) {
  // Ways to reach the model directory and a directory beside it.
  fs::create_directories(root + "/out/deep");
  fs::create_symlink(model, root + "/l1");
  fs::create_symlink(root + "/l1", root + "/l2");     // a chain of two
  fs::create_symlink("../model", root + "/out/rel");  // relative link
  fs::create_symlink(root + "/out", root + "/lo");
  fs::create_hard_link(model + "/model.safetensors", root + "/out/hard.safetensors");
  fs::create_symlink(model + "/model.safetensors", root + "/out/soft.safetensors");
  fs::create_symlink(model + "/config.json", root + "/out/cfg.npy");
  return {{model, true},
          {root + "/l1", true},
          {root + "/l2", true},
          {root + "/out/rel", true},
          {root + "/out/../model", true},
          {root + "/out/deep/../../l2", true},
          {"model", true},
          {"./l1", true},
          {"out/rel/.", true},
          {root + "/out", false},
          {root + "/lo", false},
          {root + "/out/deep", false},
          {"out", false},
          {"lo/deep/..", false},
          {root + "/l1/../out", false}};
}

}  // namespace

TEST(OutputPathsProperty, RefusedNamingThePathOrWrittenAndTheModelIsUntouched) {
  const std::string root = ordo::test::make_temp_dir("of-prop");
  const std::string model = root + "/model";
  ordo::test::copy_bundled_model(model);
  const auto original = ordo::test::snapshot(model);
  const auto model_dirs = arrange_links(root, model);
  const std::vector<std::string> file_names = {"x.npy", "model.safetensors", "logits.safetensors", "config.npy"};

  std::mt19937 rng(31);
  std::vector<Case> cases;
  for (int i = 0; i < 40; ++i) {
    const auto& [dir, in_model] = model_dirs[rng() % model_dirs.size()];
    Case c;
    c.into_model = in_model;
    std::string d = dir;
    switch (rng() % 4) {
      case 0: d += "/"; break;                                  // trailing slash on the directory part
      case 1: d += "/new/sub", c.parent_exists = false; break;  // parents that do not exist
      default: break;
    }
    c.path = d + "/" + file_names[rng() % file_names.size()];
    cases.push_back(c);
  }
  // Links at the output path itself.
  cases.push_back({root + "/out/hard.safetensors", true, true});
  cases.push_back({"out/soft.safetensors", true, true});
  cases.push_back({root + "/lo/cfg.npy", true, true});

  int refused = 0, written = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    const auto r = run_ordo_sh("forward --ids 1,2,3 -m " + shell_quote(model) + " -o " + shell_quote(c.path), -1, root);
    if (r.exit_code == 0) {
      ++written;
      EXPECT_FALSE(c.into_model) << "wrote into the model: " << r.output;
      EXPECT_TRUE(c.parent_exists);
      EXPECT_TRUE(fs::is_regular_file(fs::path(root) / c.path)) << r.output;
    } else {
      ++refused;
      EXPECT_EQ(r.exit_code, 1) << r.output;
      EXPECT_NE(r.output.find("ordo: error: " + c.path + ": "), std::string::npos) << r.output;
      EXPECT_FALSE(!c.into_model && c.parent_exists) << "refused a harmless path: " << r.output;
    }
    ASSERT_TRUE(ordo::test::snapshot(model) == original) << "the input model changed";
  }
  // quantize -o: the same directories as outputs (beside the model: a new subdirectory, so the
  // links above stay for the next case).
  int n = 0;
  for (const auto& [dir, in_model] : model_dirs) {
    const std::string fresh = dir + "/q" + std::to_string(++n);
    for (const std::string& out :
         in_model ? std::vector<std::string>{dir, dir + "/", fresh} : std::vector<std::string>{fresh}) {
      SCOPED_TRACE("quantize -o " + out);
      const auto r = run_ordo_sh(
          "quantize --replace -m " + shell_quote(model) + " -o " + shell_quote(out) + " >/dev/null", -1, root);
      if (in_model) {
        EXPECT_EQ(r.exit_code, 1) << r.output;
        EXPECT_NE(r.output.find("ordo: error: "), std::string::npos) << r.output;
      } else {
        EXPECT_EQ(r.exit_code, 0) << r.output;
        EXPECT_TRUE(fs::exists(fs::path(root) / out / "model.safetensors"));
      }
      ASSERT_TRUE(ordo::test::snapshot(model) == original) << "the input model changed";
    }
  }
  EXPECT_GT(refused, 10);
  EXPECT_GT(written, 5);
}
