// The position-scheme zoo's decoders at the command line and through the library (models/zoo/lm,
// seed 1 of each scheme; their logits against the trainer are in zoo_trainer_test.cpp): the
// tokenizer gives the trainer's ids, `ordo inspect` names each scheme, and the learned model
// refuses to run past its 128-row table unless interpolated.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::Golden;
using ordo::test::ids_of;
using ordo::test::run_cli;
using ordo::test::shell_quote;

namespace {

std::string zoo_dir(const std::string& scheme) {
  return std::string(ORDO_SOURCE_DIR) + "/models/zoo/lm/" + scheme + "-s1";
}

// The zoo's decoders: every registered scheme that has a trained model under models/zoo/lm.
std::vector<std::string> zoo_schemes() {
  std::vector<std::string> out;
  for (const std::string& s : position_scheme_names())
    if (std::filesystem::exists(zoo_dir(s) + "/config.json")) out.push_back(s);
  return out;
}
const std::vector<std::string> kSchemes = zoo_schemes();

Golden load_zoo_golden(const std::string& scheme) {
  const std::string dir = zoo_dir(scheme);
  std::ifstream f(dir + "/golden.json");
  if (!f) throw Error(dir + "/golden.json: cannot open");
  return Golden{"zoo-" + scheme, nlohmann::json::parse(f), SafeTensors::open(dir + "/golden.safetensors")};
}

// The golden input is <s> and the start of models/zoo/heldout.txt; ordo's sentencepiece tokenizer
// must give the ids the training script got from spm_encode.
TEST(ZooTokenizer, HeldOutTextEncodesLikeTheTrainingScript) {
  const Golden g = load_zoo_golden("none");
  const std::vector<int32_t> ref = ids_of(g.json.at("cases")[0].at("input_ids"));
  std::ifstream f(std::string(ORDO_SOURCE_DIR) + "/models/zoo/heldout.txt");
  std::string first_verse;
  ASSERT_TRUE(std::getline(f, first_verse));
  const Model m = Model::load(zoo_dir("none"));
  std::vector<int32_t> ids = m.encode(first_verse, true);
  ASSERT_FALSE(ids.empty());
  if (ids.size() > ref.size()) ids.resize(ref.size());
  EXPECT_EQ(ids, std::vector<int32_t>(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(ids.size())));
}

TEST(ZooCli, InspectReportsEachScheme) {
  EXPECT_EQ(kSchemes.size(), position_scheme_names().size()) << "a registered scheme has no zoo decoder";
  for (const auto& s : kSchemes) {
    SCOPED_TRACE(s);
    const auto r = run_cli("inspect -m " + shell_quote(zoo_dir(s)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find("position:");
    ASSERT_NE(at, std::string::npos) << r.out;
    const size_t b = r.out.find_first_not_of(' ', at + 9);
    const size_t e = r.out.find_first_of(" \n", b);
    EXPECT_EQ(r.out.substr(b, e - b), s) << r.out;
    EXPECT_NE(r.out.find("family:       zoo"), std::string::npos) << r.out;
  }
}

std::string ids_csv(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(3 + (i * 37) % 900);
  return s;
}

TEST(ZooCli, LearnedNeedsInterpolationPastItsTable) {
  const std::string dir = ordo::test::make_temp_dir("zoo_learned");
  const std::string model = shell_quote(zoo_dir("learned"));
  const std::string out = shell_quote(dir + "/out.npy");
  // 128 positions: fine.
  auto ok = run_cli("forward -m " + model + " --ids " + ids_csv(128) + " -o " + out);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // 200 positions: the 128-row table cannot serve them; the error suggests interpolation.
  auto r = run_cli("forward -m " + model + " --ids " + ids_csv(200) + " -o " + out);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("128 positions"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--scaling linear --factor"), std::string::npos) << r.err;
  // Interpolated to 256 positions, it runs.
  auto s = run_cli("forward -m " + model + " --ids " + ids_csv(200) + " -o " + out + " --scaling linear --factor 2");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  // The other schemes run past the trained length without help.
  for (const auto& name : kSchemes) {
    if (name == "learned") continue;
    SCOPED_TRACE(name);
    auto t = run_cli("forward -m " + shell_quote(zoo_dir(name)) + " --ids " + ids_csv(200) + " -o " + out);
    EXPECT_EQ(t.exit_code, 0) << t.err;
  }
}

TEST(ZooLibrary, LearnedThrowsPastItsTableAndInterpolates) {
  ModelOptions o;
  o.load_tokenizer = false;
  std::vector<int32_t> ids(160);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 3 + static_cast<int32_t>((i * 37) % 900);
  const Model plain = Model::load(zoo_dir("learned"), o);
  try {
    plain.forward(ids);
    FAIL() << "a 160-token forward through a 128-row learned table should fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("interpolate"), std::string::npos) << e.what();
  }
  Scaling s;
  s.type = ScalingType::Linear;
  s.factor = 2.0;
  o.scaling = s;
  const Model scaled = Model::load(zoo_dir("learned"), o);
  const ForwardOutput out = scaled.forward(ids);
  EXPECT_EQ(out.logits.dim(0), 160);
}

}  // namespace
