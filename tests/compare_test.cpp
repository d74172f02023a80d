// `ordo compare`: its numbers against independent computations (word order, perplexity), the
// permutation probe's equivariance without positions, and JSON/HTML agreement on every number.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "ordo/ordo.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

using namespace ordo;
using json = nlohmann::json;
using ordo::test::run_cli;
using ordo::test::sequence_logprob;
using ordo::test::shell_quote;

namespace {

const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";
const std::string kText = std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt";

const json* find_by(const json& arr, const std::string& key, const std::string& value) {
  for (const json& r : arr)
    if (r.at(key) == value) return &r;
  return nullptr;
}

void expect_close6(double got, double want, const std::string& what) {
  // compare rounds every stored number to 6 significant digits
  EXPECT_NEAR(got, want, 2e-6 * std::max(1.0, std::fabs(want))) << what;
}

void collect_numbers(const json& j, const std::string& ptr, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) collect_numbers(*it, ptr + "/" + it.key(), out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) collect_numbers(j[i], ptr + "/" + std::to_string(i), out);
  } else if (j.is_number()) {
    out[ptr] = j;
  }
}

// The value of the last digit of a printed number: "0.83" → 0.01, "1.2e-7" → 1e-8, "57" → 1.
double display_unit(const std::string& text) {
  const size_t e = text.find_first_of("eE");
  const std::string mant = text.substr(0, e);
  const size_t dot = mant.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(mant.size() - dot - 1);
  const int exp = e == std::string::npos ? 0 : std::stoi(text.substr(e + 1));
  return std::pow(10.0, exp - decimals);
}

void expect_html_shows_every_number(const json& doc, const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"ordo-compare-results\">";
  const size_t a = html.find(open);
  ASSERT_NE(a, std::string::npos);
  const size_t b = html.find("</script>", a);
  EXPECT_EQ(json::parse(html.substr(a + open.size(), b - a - open.size())), doc);

  std::map<std::string, json> numbers;
  collect_numbers(doc, "", numbers);
  std::set<std::string> shown;
  const std::regex cell_re("data-json=\"([^\"]*)\">([^<]*)<");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), cell_re); it != std::sregex_iterator(); ++it) {
    const std::string ptr = (*it)[1], text = (*it)[2];
    ASSERT_TRUE(numbers.count(ptr)) << "HTML shows " << ptr << " which the JSON lacks";
    // The HTML prints a number at the precision it supports: the JSON's value rounded to the last
    // digit shown (integers exactly).
    if (numbers[ptr].is_number_integer()) {
      EXPECT_EQ(json::parse(text), numbers[ptr]) << ptr;
    } else {
      const double shown_v = std::stod(text), want = numbers[ptr].get<double>();
      EXPECT_LE(std::fabs(shown_v - want), 0.5 * display_unit(text) * (1 + 1e-9) + 1e-300) << ptr << ": " << text;
    }
    shown.insert(ptr);
  }
  for (const auto& [ptr, v] : numbers) EXPECT_TRUE(shown.count(ptr)) << "the HTML does not show " << ptr << " = " << v;
}

size_t numbers_shown(const std::string& html) {
  size_t n = 0;
  for (size_t at = 0; (at = html.find("data-json=\"", at)) != std::string::npos; ++at) ++n;
  return n;
}

}  // namespace

// Word order and perplexity against the model's own forward pass, scored by hand in the test.
TEST(CompareCli, WordOrderAndPerplexityMatchIndependentComputation) {
  const std::string dir = ordo::test::make_temp_dir("compare-wo");
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"The cat sat on the mat.", "The mat sat on the cat."},
      {"Lily went to the park with her mom.", "Lily went to the mom with her park."},
      {"Tom gave the ball to the dog.", "Tom gave the dog to the ball."},
  };
  {
    std::ofstream f(dir + "/pairs.jsonl");
    for (const auto& p : pairs) f << json{{"original", p.first}, {"swapped", p.second}}.dump() << "\n";
  }
  const std::string text = ordo::test::read_file(kText).substr(0, 1500);  // ~700 tokens
  std::ofstream(dir + "/text.txt", std::ios::binary) << text;
  const std::string out = dir + "/r.json";
  auto r = run_cli("compare --no-zoo -m " + shell_quote(kStories) + " --pairs " + shell_quote(dir + "/pairs.jsonl") +
                   " --text " + shell_quote(dir + "/text.txt") +
                   " --tasks word-order,length --ctx-base 16 --multiples 1,2 --json " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(ordo::test::read_file(out));

  Model m = Model::load(kStories);
  // Word order.
  int wins = 0;
  double margin = 0;
  for (const auto& p : pairs) {
    const double d = sequence_logprob(m, m.encode(p.first, true)) - sequence_logprob(m, m.encode(p.second, true));
    wins += d > 0;
    margin += d;
  }
  const json& wo = doc.at("word_order").at("results").at(0);
  EXPECT_EQ(wo.at("model"), "stories260K");
  EXPECT_EQ(wo.at("pairs"), 3);
  EXPECT_EQ(wo.at("wins"), wins);
  expect_close6(wo.at("accuracy"), wins / 3.0, "accuracy");
  expect_close6(wo.at("mean_margin"), margin / 3.0, "mean margin");

  // Perplexity: the text cut to whole windows of the longest length (32), non-overlapping windows,
  // the first token of each window unscored.
  std::vector<int32_t> ids = m.encode(text, false);
  ids.resize(ids.size() / 32 * 32);
  for (int64_t ctx : {16, 32}) {
    double nll = 0;
    int64_t n = 0;
    for (size_t w = 0; w + ctx <= ids.size(); w += ctx) {
      const std::vector<int32_t> win(ids.begin() + w, ids.begin() + w + ctx);
      nll -= sequence_logprob(m, win);
      n += ctx - 1;
    }
    const double want = std::exp(nll / n);
    const json* plain = find_by(doc.at("length").at("results"), "label", "stories260K");
    ASSERT_NE(plain, nullptr);
    const json& pt = plain->at("points").at(ctx == 16 ? 0 : 1);
    EXPECT_EQ(pt.at("ctx"), ctx);
    EXPECT_EQ(pt.at("tokens"), n);
    expect_close6(pt.at("ppl"), want, "ppl at " + std::to_string(ctx));
  }
  // Linear scaling with factor 1 is the plain model.
  const json* linear = find_by(doc.at("length").at("results"), "label", "stories260K+linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->at("points").at(0).at("ppl"),
            find_by(doc.at("length").at("results"), "label", "stories260K")->at("points").at(0).at("ppl"));
}

// Without positions and without the causal mask, attention is permutation-equivariant.
TEST(CompareCli, PermutationProbeIsExactWithoutPositionsOnly) {
  const std::string dir = ordo::test::make_temp_dir("compare-perm");
  const std::string out = dir + "/r.json";
  auto r =
      run_cli("compare --no-zoo -m " + shell_quote(ordo::test::model_dir("llama")) +
              " --position none --position alibi --tasks permutation --probe-tokens 24 --json " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json res = json::parse(ordo::test::read_file(out)).at("permutation").at("results");
  ASSERT_EQ(res.size(), 3u);
  const json* rope = find_by(res, "model", "llama");
  const json* none = find_by(res, "model", "llama[pos=none]");
  const json* alibi = find_by(res, "model", "llama[pos=alibi]");
  ASSERT_TRUE(rope && none && alibi);
  EXPECT_EQ(rope->at("scheme"), "rope");
  EXPECT_EQ(none->at("scheme"), "none");
  EXPECT_LT(none->at("max_abs_error").get<double>(), 1e-4);
  EXPECT_GT(rope->at("max_abs_error").get<double>(), 1e-2);
  EXPECT_GT(alibi->at("max_abs_error").get<double>(), 1e-2);
  EXPECT_GT(none->at("max_abs_hidden").get<double>(), 0.1);  // the probe saw real activations
}

// One quick run of every probe; the JSON file, the JSON embedded in the HTML and every number the
// HTML shows (cells tagged with their JSON pointer) agree, and every number in the JSON is shown.
TEST(CompareCli, QuickRunJsonAndHtmlAgreeOnEveryNumber) {
  const std::string dir = ordo::test::make_temp_dir("compare-quick");
  const std::string jpath = dir + "/r.json", hpath = dir + "/r.html";
  auto r =
      run_cli("compare --quick --no-zoo -m " + shell_quote(kStories) + " --position none --position alibi --text " +
              shell_quote(kText) + " --ctx-base 32 --json " + shell_quote(jpath) + " --html " + shell_quote(hpath));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("word order"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stories260K[pos=alibi]"), std::string::npos) << r.out;
  const json doc = json::parse(ordo::test::read_file(jpath));
  const std::string html = ordo::test::read_file(hpath);
  for (const char* section : {"word_order", "permutation", "length", "attention"})
    EXPECT_TRUE(doc.contains(section)) << section;
  EXPECT_EQ(doc.at("word_order").at("pairs").size(), 8u);
  EXPECT_EQ(doc.at("attention").at("buckets").size(), 9u);  // 0,1,2,3,4-7,...,64-127

  expect_html_shows_every_number(doc, html);
  EXPECT_GT(numbers_shown(html), 50u);
  EXPECT_NE(html.find("<svg"), std::string::npos);
}

// The committed zoo: one quick run over its lm and mlm models. The permutation probe runs every
// model with bidirectional attention, under which a model without positions (NoPE, decoder or
// encoder) is permutation-equivariant and every other scheme is not. Plain `learned` cannot go
// past its table (n/a with the reason), learned+linear can.
TEST(CompareCli, QuickZooRun) {
  const std::string zoo = std::string(ORDO_SOURCE_DIR) + "/models/zoo";
  ASSERT_TRUE(std::filesystem::exists(zoo + "/lm/rope-s1/config.json")) << "the zoo is part of the repository: " << zoo;
  const std::string dir = ordo::test::make_temp_dir("compare-zoo");
  auto r = run_cli("compare --quick --zoo " + shell_quote(zoo) + " --json " + shell_quote(dir + "/r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(ordo::test::read_file(dir + "/r.json"));
  EXPECT_EQ(doc.at("models").size(), 36u) << "lm and mlm, 6 schemes x 3 seeds (task models have their own probe)";
  for (const char* kind : {"lm", "mlm"})
    for (const char* s : {"none", "learned", "sinusoidal", "relative", "rope", "alibi"}) {
      const std::string label = std::string(kind) + "/" + s + "-s1";
      EXPECT_NE(r.out.find(label), std::string::npos) << label;
      const json* p = find_by(doc.at("permutation").at("results"), "model", label);
      ASSERT_NE(p, nullptr) << label;
      if (std::string(s) == "none")
        EXPECT_LT(p->at("rel_error").get<double>(), 1e-5) << label;
      else
        EXPECT_GT(p->at("rel_error").get<double>(), 1e-3) << label;
      const json* wo = find_by(doc.at("word_order").at("results"), "model", label);
      ASSERT_NE(wo, nullptr) << label;
      EXPECT_EQ(wo->at("pairs"), 8) << label;
    }
  const json* learned = find_by(doc.at("length").at("results"), "label", "lm/learned-s1");
  const json* learned_linear = find_by(doc.at("length").at("results"), "label", "lm/learned-s1+linear");
  ASSERT_TRUE(learned && learned_linear);
  EXPECT_FALSE(learned->at("points").at(0).at("ppl").is_null());
  EXPECT_TRUE(learned->at("points").at(1).at("ppl").is_null());
  EXPECT_FALSE(learned->at("points").at(1).value("error", "").empty());
  EXPECT_FALSE(learned_linear->at("points").at(1).at("ppl").is_null());
}

namespace {

// A zoo in the issue-17 layout made from the committed models: <kind>/<scheme>-s<seed>/ with the
// "zoo" block; seed 2 scales the embeddings by 1.1 so the seeds differ; mlm dirs are bidirectional.
std::string make_layout_zoo() {
  const std::string zoo = ordo::test::make_temp_dir("compare-layout-zoo");
  const std::string src = std::string(ORDO_SOURCE_DIR) + "/models/zoo/";
  for (const std::string kind : {"lm", "mlm"})
    for (const std::string scheme : {"none", "rope"})
      for (int seed : {1, 2}) {
        const std::string dir = zoo + "/" + kind + "/" + scheme + "-s" + std::to_string(seed);
        std::filesystem::create_directories(dir);
        for (const char* f : {"model.safetensors", "tokenizer.model"})
          std::filesystem::copy_file(src + "lm/" + scheme + "-s1/" + f, dir + "/" + f);
        json cfg = json::parse(ordo::test::read_file(src + "lm/" + scheme + "-s1/config.json"));
        cfg["zoo"] = {{"kind", kind}, {"scheme", scheme}, {"seed", seed}};
        if (seed == 2) cfg["embed_scale"] = cfg["embed_scale"].get<double>() * 1.1;
        if (kind == "mlm") cfg["bidirectional"] = true, cfg["mask_token_id"] = 3;
        std::ofstream(dir + "/config.json") << cfg.dump(2);
      }
  std::filesystem::create_directories(zoo + "/lm/notes");  // no config.json: not a model
  return zoo;
}

}  // namespace

// Zoo discovery, per-pair scores, groups over seeds and paired tests, against values computed here:
// log-probs by hand, the interval with SciPy's t.ppf(0.975, 1) = 12.706204736432095, and the test's
// p-value with the closed form of Student t at 2 dof: P(|T| > |t|) = 1 − |t| / sqrt(2 + t²).
TEST(CompareCli, ZooGroupsOverSeedsWithPairedTests) {
  const std::string zoo = make_layout_zoo(), dir = ordo::test::make_temp_dir("compare-groups");
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"And God saw the light, that it was good.", "And God saw the good, that it was light."},
      {"The earth was without form, and void.", "The form was without earth, and void."},
      {"And God called the firmament Heaven.", "And God called the Heaven firmament."}};
  {
    std::ofstream f(dir + "/pairs.jsonl");
    for (const auto& p : pairs) f << json{{"original", p.first}, {"swapped", p.second}}.dump() << "\n";
  }
  auto r =
      run_cli("compare --zoo " + shell_quote(zoo) + " --tasks word-order --pairs " + shell_quote(dir + "/pairs.jsonl") +
              " --json " + shell_quote(dir + "/r.json") + " --html " + shell_quote(dir + "/r.html"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(ordo::test::read_file(dir + "/r.json"));
  expect_html_shows_every_number(doc, ordo::test::read_file(dir + "/r.html"));
  const json& wo = doc.at("word_order");
  std::vector<std::string> labels;
  for (const json& m : doc.at("models")) labels.push_back(m.at("label"));
  EXPECT_EQ(labels, (std::vector<std::string>{"lm/none-s1", "lm/none-s2", "lm/rope-s1", "lm/rope-s2", "mlm/none-s1",
                                              "mlm/none-s2", "mlm/rope-s1", "mlm/rope-s2"}));
  // Decoders: both scores per pair by hand; the margin is their difference.
  std::map<std::string, std::vector<double>> margins;
  for (const json& res : wo.at("results")) {
    ASSERT_FALSE(res.contains("error")) << res.dump();
    const std::string label = res.at("model");
    EXPECT_EQ(res.at("method"), label.rfind("mlm/", 0) == 0 ? "pll" : "logprob");
    for (size_t i = 0; i < pairs.size(); ++i) {
      const json& sc = res.at("scores").at(i);
      margins[label].push_back(sc.at("margin"));
      if (label.rfind("lm/", 0) != 0) continue;
      const Model m = Model::load(zoo + "/" + label);
      expect_close6(sc.at("original"), sequence_logprob(m, m.encode(pairs[i].first, true)), label);
      expect_close6(sc.at("swapped"), sequence_logprob(m, m.encode(pairs[i].second, true)), label);
      EXPECT_NEAR(sc.at("margin").get<double>(), sc.at("original").get<double>() - sc.at("swapped").get<double>(),
                  1e-4);
    }
    if (label.rfind("mlm/none", 0) == 0) {
      for (const json& sc : res.at("scores")) EXPECT_TRUE(sc.at("tie").get<bool>()) << label << " is a bag of words";
    }
  }
  ASSERT_EQ(wo.at("groups").size(), 4u);
  const json& g = wo.at("groups").at(2);  // mlm none
  EXPECT_EQ(g.at("kind"), "mlm");
  EXPECT_EQ(g.at("scheme"), "none");
  EXPECT_EQ(g.at("seeds"), 2);
  EXPECT_EQ(g.at("item_margin").at("mean"), 0.0);
  // lm rope: accuracy and mean margin over two seeds.
  const json& rope = wo.at("groups").at(1);
  const json* s1 = find_by(wo.at("results"), "model", "lm/rope-s1");
  const json* s2 = find_by(wo.at("results"), "model", "lm/rope-s2");
  const double a = s1->at("mean_margin"), b = s2->at("mean_margin");
  expect_close6(rope.at("mean_margin").at("mean"), (a + b) / 2, "mean over seeds");
  expect_close6(rope.at("mean_margin").at("half_width"), 12.706204736432095 * std::fabs(a - b) / 2, "95% half width");
  // Paired test lm none vs lm rope on per-pair margins averaged over seeds (n = 3, 2 dof).
  const json* t = nullptr;
  for (const json& x : wo.at("tests"))
    if (x.at("kind") == "lm") t = &x;
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(wo.at("tests").size(), 2u) << "one test per kind: two schemes each";
  std::vector<double> d;
  for (size_t i = 0; i < 3; ++i)
    d.push_back((margins["lm/none-s1"][i] + margins["lm/none-s2"][i]) / 2 -
                (margins["lm/rope-s1"][i] + margins["lm/rope-s2"][i]) / 2);
  const double mean = (d[0] + d[1] + d[2]) / 3;
  double ss = 0;
  for (double v : d) ss += (v - mean) * (v - mean);
  const double tt = mean / (std::sqrt(ss / 2) / std::sqrt(3.0));
  EXPECT_NEAR(t->at("t").get<double>(), tt, 1e-3 * std::fabs(tt));
  EXPECT_NEAR(t->at("p").get<double>(), 1 - std::fabs(tt) / std::sqrt(2 + tt * tt), 1e-3);
  EXPECT_NE(r.out.find("paired t-tests"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#3  And God called the firmament Heaven."), std::string::npos) << r.out;
}

// The permutation, length and attention sections group the zoo's seeds too: every group number is
// the mean ± SciPy's t.ppf(0.975, 1) = 12.706204736432095 · |a − b| / 2 of its two seeds' rows.
TEST(CompareCli, PermutationLengthAttentionGroupOverSeeds) {
  const std::string zoo = make_layout_zoo(), dir = ordo::test::make_temp_dir("compare-groups-probes");
  const std::string text = std::string(ORDO_SOURCE_DIR) + "/models/zoo/heldout.txt";
  auto r = run_cli("compare --zoo " + shell_quote(zoo) + " --text " + shell_quote(text) +
                   " --quick --tasks permutation,length,attention --json " + shell_quote(dir + "/r.json") + " --html " +
                   shell_quote(dir + "/r.html"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(ordo::test::read_file(dir + "/r.json"));
  expect_html_shows_every_number(doc, ordo::test::read_file(dir + "/r.html"));
  const auto expect_pair = [](const json& interval, const json& a, const json& b, const std::string& what) {
    const double x = a.get<double>(), y = b.get<double>();
    expect_close6(interval.at("mean"), (x + y) / 2, what + " mean");
    expect_close6(interval.at("half_width"), 12.706204736432095 * std::fabs(x - y) / 2, what + " half width");
  };
  const json& perm = doc.at("permutation");
  ASSERT_EQ(perm.at("groups").size(), 4u) << perm.at("groups").dump();  // lm/mlm x none/rope
  for (const json& g : perm.at("groups")) {
    const std::string base = g.at("kind").get<std::string>() + "/" + g.at("scheme").get<std::string>();
    EXPECT_EQ(g.at("seeds"), 2);
    EXPECT_EQ(g.at("models"), json({base + "-s1", base + "-s2"}));
    const json* a = find_by(perm.at("results"), "model", base + "-s1");
    const json* b = find_by(perm.at("results"), "model", base + "-s2");
    ASSERT_TRUE(a && b) << base;
    expect_pair(g.at("rel_error"), a->at("rel_error"), b->at("rel_error"), base + " rel_error");
  }
  // Length: encoders are left out (no causal perplexity), so only the lm groups, per method.
  const json& len = doc.at("length");
  ASSERT_FALSE(len.at("groups").empty());
  for (const json& g : len.at("groups")) {
    EXPECT_EQ(g.at("kind"), "lm");
    ASSERT_EQ(g.at("models").size(), 2u);
    std::vector<const json*> rows;
    for (const json& r : len.at("results"))
      if (r.value("kind", "") == "lm" && r.at("scheme") == g.at("scheme") && r.at("method") == g.at("method"))
        rows.push_back(&r);
    ASSERT_EQ(rows.size(), 2u) << g.dump();
    for (size_t j = 0; j < g.at("points").size(); ++j)
      expect_pair(g.at("points").at(j).at("ppl"), rows[0]->at("points").at(j).at("ppl"),
                  rows[1]->at("points").at(j).at("ppl"), g.at("label").get<std::string>() + " ppl");
  }
  const json& att = doc.at("attention");
  ASSERT_EQ(att.at("groups").size(), 4u);
  const json& g = att.at("groups").at(1);  // lm rope
  EXPECT_EQ(g.at("scheme"), "rope");
  const json* a = find_by(att.at("results"), "model", "lm/rope-s1");
  const json* b = find_by(att.at("results"), "model", "lm/rope-s2");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(g.at("mean_weight").size(), a->at("mean_weight").size());
  for (size_t j = 0; j < g.at("mean_weight").size(); ++j)
    expect_pair(g.at("mean_weight").at(j), a->at("mean_weight").at(j), b->at("mean_weight").at(j), "attention");
  EXPECT_NE(r.out.find("== permutation probe by kind and scheme"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== length by kind, scheme and method"), std::string::npos) << r.out;
}

// A zoo whose models misdescribe themselves is refused, naming the file and the field; unfinished
// trainer outputs (.tmp-*) are not models.
TEST(CompareCli, ZooBlocksThatMisdescribeTheirModelAreErrors) {
  const auto first_error = [](const std::string& zoo) {
    const auto r = run_cli("compare --zoo " + shell_quote(zoo) + " --quick --tasks word-order");
    EXPECT_NE(r.exit_code, 0);
    return r.err;
  };
  const auto edit = [](const std::string& dir, const std::function<void(json&)>& f) {
    json cfg = json::parse(ordo::test::read_file(dir + "/config.json"));
    f(cfg);
    std::ofstream(dir + "/config.json") << cfg.dump(2);
  };
  std::string zoo = make_layout_zoo();
  edit(zoo + "/lm/rope-s2", [](json& c) { c["zoo"]["seed"] = 1; });
  EXPECT_NE(first_error(zoo).find(zoo + ": lm/rope-s1 and lm/rope-s2 are both lm rope seed 1; remove one"),
            std::string::npos);
  zoo = make_layout_zoo();
  edit(zoo + "/lm/rope-s2", [](json& c) { c["zoo"]["scheme"] = "alibi"; });
  EXPECT_NE(first_error(zoo).find("lm/rope-s2/config.json: zoo: scheme 'alibi' but position_scheme is \"rope\""),
            std::string::npos);
  zoo = make_layout_zoo();
  edit(zoo + "/mlm/none-s1", [](json& c) { c.erase("bidirectional"); });
  EXPECT_NE(first_error(zoo).find("mlm/none-s1/config.json: zoo: kind 'mlm' but bidirectional is false"),
            std::string::npos);
  zoo = make_layout_zoo();
  std::ofstream(zoo + "/lm/none-s1/config.json") << "{\"model_type\": \"ordo-zoo\",";
  EXPECT_NE(first_error(zoo).find(zoo + "/lm/none-s1/config.json: not valid JSON"), std::string::npos);
  // A .tmp-* copy of a model is skipped, so it is not a second seed 1.
  zoo = make_layout_zoo();
  std::filesystem::copy(zoo + "/lm/rope-s1", zoo + "/lm/.tmp-rope-s1-123");
  const auto r = run_cli("compare --zoo " + shell_quote(zoo) + " --quick --tasks permutation,length --text " +
                         shell_quote(kText) + " --json " + shell_quote(zoo + "/r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(ordo::test::read_file(zoo + "/r.json"));
  EXPECT_EQ(doc.at("models").size(), 8u);
  // Perplexity is a decoder's: the encoders are left out of the length section, with a note.
  std::set<std::string> length_models;
  for (const json& row : doc.at("length").at("results")) length_models.insert(row.at("model").get<std::string>());
  EXPECT_EQ(length_models, (std::set<std::string>{"lm/none-s1", "lm/none-s2", "lm/rope-s1", "lm/rope-s2"}));
  EXPECT_NE(r.err.find("[mlm/rope-s2] length: skipped (an encoder has no causal perplexity)"), std::string::npos)
      << r.err;
}
