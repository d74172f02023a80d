// The zoo against its trainer (tools/zoo/train_zoo.py): the committed zoo (models/zoo, every lm,
// mlm and task model) and the tiny-preset fixtures (tests/data/zoo-tiny) hold float32 PyTorch
// references computed from their exported F16 weights. ordo must match them: logits and hidden
// states on both GEMM backends for every model, the PLL (encoders) and causal log-prob (decoders)
// of the trainer's probe texts, and the word-order ties a NoPE encoder must give on those pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>

#include "ordo/probes.hpp"
#include "support/golden.hpp"

using namespace ordo;
namespace pr = ordo::probes;
using ordo::test::expect_forward_cases_match;
using ordo::test::Golden;
using ordo::test::ids_of;

namespace {

const std::string kTiny = std::string(ORDO_TEST_DATA) + "/zoo-tiny";
const std::string kZoo = std::string(ORDO_SOURCE_DIR) + "/models/zoo";

// "<kind>/<scheme>-s<seed>" of every model of `kind` under root.
std::vector<std::string> zoo_models(const std::string& root, const std::string& kind) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root + "/" + kind, ec))
    if (std::filesystem::exists(e.path() / "config.json")) out.push_back(kind + "/" + e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<std::string> tiny_models(const std::string& kind) { return zoo_models(kTiny, kind); }

Golden load_golden(const std::string& root, const std::string& model) {
  const std::string dir = root + "/" + model;
  std::ifstream f(dir + "/golden.json");
  if (!f) throw Error(dir + "/golden.json: cannot open");
  return Golden{model, nlohmann::json::parse(f), SafeTensors::open(dir + "/golden.safetensors")};
}

struct Param {
  std::string root;  // kTiny or kZoo
  std::string model;
  Backend backend;
  std::string dir() const { return root + "/" + model; }
  std::string label() const { return (root == kTiny ? "tiny/" : "zoo/") + model; }
};
// How CTest's test list shows the parameter (not as raw bytes).
void PrintTo(const Param& p, std::ostream* os) { *os << p.label() << " on " << backend_name(p.backend); }

std::vector<Param> params(std::initializer_list<const char*> kinds) {
  std::vector<Param> v;
  for (const std::string& root : {kTiny, kZoo})
    for (const char* kind : kinds)
      for (const std::string& m : zoo_models(root, kind))
        for (Backend b : {Backend::OpenBLAS, Backend::OneDNN}) v.push_back({root, m, b});
  return v;
}

std::string param_name(const testing::TestParamInfo<Param>& p) {
  std::string s = p.param.label() + "_" + backend_name(p.param.backend);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class ZooForward : public testing::TestWithParam<Param> {};
class ZooProbe : public testing::TestWithParam<Param> {};

}  // namespace

// Both zoos are complete: 6 schemes x 3 kinds (the committed one x 3 seeds).
TEST(ZooModels, ArePresent) {
  for (const char* kind : {"lm", "mlm", "tasks"}) {
    EXPECT_EQ(tiny_models(kind).size(), std::string(kind) == "lm"    ? 1u
                                        : std::string(kind) == "mlm" ? 4u
                                                                     : 3u)
        << kTiny << " " << kind;
    EXPECT_EQ(zoo_models(kZoo, kind).size(), 18u) << kZoo << " " << kind;
  }
  EXPECT_TRUE(std::filesystem::exists(kTiny + "/mlm/none-s1/config.json"));
}

TEST_P(ZooForward, LogitsAndHiddenStatesMatchTheTrainer) {
  const Golden g = load_golden(GetParam().root, GetParam().model);
  ModelOptions o;
  o.backend = GetParam().backend;
  o.load_tokenizer = false;
  const Model m = Model::load(GetParam().dir(), o);
  const bool mlm = GetParam().model.rfind("mlm/", 0) == 0;
  EXPECT_EQ(m.spec().graph, mlm ? GraphKind::Encoder : GraphKind::Decoder);
  const std::string scheme = GetParam().model.substr(GetParam().model.find('/') + 1);
  EXPECT_EQ(m.spec().position.scheme, scheme.substr(0, scheme.find("-s")));
  EXPECT_GE(expect_forward_cases_match(m, g, (mlm ? m.spec().encoder : m.spec().decoder).layers.size() + 1), 1);
}

// The probe texts' PLL (encoders) or log-prob (decoders) against the trainer's float64 sums of
// float32 log-softmax terms.
TEST_P(ZooProbe, ProbeScoresMatchTheTrainer) {
  const Golden g = load_golden(GetParam().root, GetParam().model);
  ModelOptions o;
  o.backend = GetParam().backend;
  const Model m = Model::load(GetParam().dir(), o);
  const char* key = pr::is_masked_lm(m) ? "pll" : "logprob";
  ASSERT_TRUE(g.json.contains(key)) << key;
  std::vector<std::string> texts;
  for (const auto& p : g.json.at(key)) texts.push_back(p.at("text"));
  std::vector<const std::string*> ptrs;
  for (const std::string& t : texts) ptrs.push_back(&t);
  const std::vector<pr::TextScore> got = pr::text_scores(m, ptrs);
  ASSERT_GE(got.size(), 4u);
  for (size_t i = 0; i < got.size(); ++i) {
    const auto& ref = g.json.at(key)[i];
    SCOPED_TRACE(texts[i]);
    EXPECT_EQ(got[i].ids, ids_of(ref.at("ids"))) << "ordo's tokenizer gives the trainer's ids";
    const double want = ref.at(key);
    EXPECT_NEAR(got[i].logprob, want, 1e-4 * std::max(1.0, std::fabs(want)));
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooForward, testing::ValuesIn(params({"lm", "mlm", "tasks"})), param_name);
INSTANTIATE_TEST_SUITE_P(Zoo, ZooProbe, testing::ValuesIn(params({"lm", "mlm"})), param_name);

// The trainer's probe pairs: the NoPE encoder ties on every pair whose tokens are a permutation of
// the original's; every other scheme's encoder separates them.
// PLL of a text beyond the context limit is refused before T masked copies of T tokens are made.
TEST(ZooTinyWordOrder, PllOfATextBeyondTheContextLimitIsAnError) {
  const Model m = Model::load(kTiny + "/mlm/rope-s1");
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "and the ";
  const std::string err = ordo::test::error_of([&] { pr::pseudo_log_likelihoods(m, {&text}); });
  EXPECT_EQ(err.rfind("PLL of 'and the and the and the and the and the ' needs ", 0), 0u) << err;
  EXPECT_NE(err.find("more than the context limit of 1024"), std::string::npos) << err;
}

TEST(ZooWordOrder, NoPeEncoderTiesOthersSeparate) {
  for (const std::string& root : {kTiny, kZoo})
    for (const std::string& model : zoo_models(root, "mlm")) {
      SCOPED_TRACE(root + "/" + model);
      const Golden g = load_golden(root, model);
      std::map<int, pr::WordPair> by_pair;
      for (const auto& p : g.json.at("pll"))
        (p.at("order") == "original" ? by_pair[p.at("pair")].original : by_pair[p.at("pair")].swapped) = p.at("text");
      std::vector<pr::WordPair> pairs;
      for (const auto& [i, p] : by_pair) pairs.push_back(p);
      const pr::WordOrderResult r = pr::word_order(Model::load(root + "/" + model), pairs);
      ASSERT_EQ(r.method, "pll");
      const bool nope = model.find("/none-") != std::string::npos;
      int permuted = 0;
      for (const pr::PairScore& p : r.pairs) {
        if (!p.same_tokens) continue;
        ++permuted;
        EXPECT_EQ(p.tie, nope) << p.original << " vs " << p.swapped;
        if (nope) {
          // The raw PLLs, not the tie rule's output: equal but for float summation order.
          EXPECT_LT(std::fabs(p.original - p.swapped), 1e-7 * std::fabs(p.original)) << p.original;
          EXPECT_EQ(p.margin, 0.0);  // and reported as a tie
        } else {
          EXPECT_GT(std::fabs(p.original - p.swapped), 1e-7 * std::fabs(p.original)) << p.original;
        }
        std::printf("[ measured ] %s |orig-swapped| = %.3g nats (tie: %d)\n", model.c_str(),
                    std::fabs(p.original - p.swapped), p.tie);
      }
      EXPECT_GE(permuted, 1);
    }
}
