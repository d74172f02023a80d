// `ordo compare --no-zoo -m DIR` without --text: scored on the zoo's held-out text, or refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/golden.hpp"

using json = nlohmann::json;
using ordo::test::run_cli;
using ordo::test::shell_quote;

namespace {

const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";
const std::string kHeldout = std::string(ORDO_SOURCE_DIR) + "/models/zoo/heldout.txt";

json compare_json(const std::string& flags, const std::string& tag) {
  const std::string out = ordo::test::make_temp_dir(tag) + "/r.json";
  auto r = run_cli("compare --quick --no-zoo -m " + shell_quote(kStories) +
                   " --position none --tasks word-order,length " + flags + " --json " + shell_quote(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(ordo::test::read_file(out));
}

}  // namespace

// The README's `ordo compare --no-zoo -m models/stories260K --position none --position alibi` once
// printed n/a in every word-order and length cell: without --text it now uses the zoo's
// heldout.txt, giving exactly the results of naming that file.
TEST(CompareDefaultText, NoZooModelsAreScoredOnTheZoosHeldoutText) {
  const json dflt = compare_json("", "compare-default-text");
  const json named = compare_json("--text " + shell_quote(kHeldout), "compare-named-text");
  EXPECT_EQ(dflt.at("settings").at("text"), kHeldout);
  ASSERT_EQ(dflt.at("word_order").at("pairs").size(), 8u);  // --quick: 8 pairs built from the text
  EXPECT_EQ(dflt.at("word_order"), named.at("word_order"));
  EXPECT_EQ(dflt.at("length"), named.at("length"));
  for (const json& row : dflt.at("word_order").at("results")) {
    ASSERT_TRUE(row.at("accuracy").is_number()) << row.dump();
    EXPECT_GE(row.at("accuracy").get<double>(), 0.0);
    EXPECT_LE(row.at("accuracy").get<double>(), 1.0);
  }
  ASSERT_FALSE(dflt.at("length").at("results").empty());
  for (const json& row : dflt.at("length").at("results"))
    for (const json& point : row.at("points")) EXPECT_TRUE(point.at("ppl").is_number()) << row.dump();
}

// No zoo to take the text from and no --text: an error naming the flag, not a table of n/a.
TEST(CompareDefaultText, NoTextAnywhereIsAnError) {
  const std::string empty = ordo::test::make_temp_dir("compare-no-zoo-text");
  auto r =
      run_cli("compare --no-zoo --zoo " + shell_quote(empty) + " -m " + shell_quote(kStories) + " --tasks word-order");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--text FILE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(empty + "/heldout.txt"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("n/a"), std::string::npos) << r.out;
}
