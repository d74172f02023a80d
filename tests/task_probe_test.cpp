// The synthetic-task probe (probes::synthetic_tasks, `ordo compare --tasks synthetic`) against the
// zoo trainer's PyTorch reference: the task models of tests/data/zoo-tiny/tasks and of the committed
// zoo (models/zoo/tasks), their suites, and golden.json "tasks" and "scaled" (accuracy and per-item
// correctness from PyTorch greedy decoding of the exported weights).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ordo/probes.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

using namespace ordo;
namespace pr = ordo::probes;
using json = nlohmann::json;
using ordo::test::error_of;

namespace {

const std::string kTinyZoo = std::string(ORDO_TEST_DATA) + "/zoo-tiny";
const std::string kZoo = std::string(ORDO_SOURCE_DIR) + "/models/zoo";

}  // namespace

TEST(TaskSuite, ParsesItemsAndNamesFileAndLineOfBadOnes) {
  const std::string good = "{\"task\": \"copy\", \"length\": 3, \"prompt\": \"copy a b c =\", \"target\": \"a b c\"}";
  const auto items = pr::parse_task_suite(good + "\n\n  \n" + good + "\n", "suite.jsonl");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].task, "copy");
  EXPECT_EQ(items[1].length, 3);
  EXPECT_EQ(items[1].prompt, "copy a b c =");
  EXPECT_EQ(items[1].target, "a b c");
  const auto error_at_line3 = [&](const std::string& bad) {
    return error_of([&] { pr::parse_task_suite(good + "\n\n" + bad + "\n", "s.jsonl"); });
  };
  EXPECT_EQ(error_at_line3("{\"task\": \"copy\"").rfind("s.jsonl:3: expected {\"task\"", 0), 0u);
  EXPECT_EQ(error_at_line3("{\"task\": \"copy\", \"length\": 3, \"prompt\": \"x\"}").rfind("s.jsonl:3: expected", 0),
            0u);
  EXPECT_EQ(error_at_line3("{\"task\": \"copy\", \"length\": 2.5, \"prompt\": \"x\", \"target\": \"y\"}"),
            "s.jsonl:3: \"length\" must be an integer, got 2.5");
  EXPECT_EQ(error_at_line3("{\"task\": \"copy\", \"length\": 0, \"prompt\": \"x\", \"target\": \"y\"}"),
            "s.jsonl:3: \"length\" must be positive, got 0");
  EXPECT_EQ(error_at_line3("{\"task\": \"\", \"length\": 1, \"prompt\": \"x\", \"target\": \"y\"}"),
            "s.jsonl:3: \"task\" is empty");
  EXPECT_EQ(error_at_line3("{\"task\": \"copy\", \"length\": 1, \"prompt\": \"\", \"target\": \"y\"}"),
            "s.jsonl:3: \"prompt\" is empty");
  EXPECT_EQ(error_at_line3("[1, 2]").rfind("s.jsonl:3: expected", 0), 0u);
  EXPECT_EQ(error_of([] { pr::parse_task_suite("\n \n", "s.jsonl"); }), "s.jsonl: no task items");
  // Nesting is refused before parsing (no recursion 100,000 levels deep); the same for pairs files.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(error_at_line3(deep).rfind("s.jsonl:3: JSON nests arrays/objects more than 128", 0), 0u);
  EXPECT_EQ(error_of([&] { pr::parse_pairs(deep + "\n", "p.jsonl"); }).rfind("p.jsonl:1: JSON nests", 0), 0u);
}

namespace {

std::string task_dir(const std::string& scheme) { return kTinyZoo + "/tasks/" + scheme + "-s1"; }

std::vector<pr::TaskItem> suite_of(const std::string& zoo) {
  const std::string path = zoo + "/tasks/suite.jsonl";
  return pr::parse_task_suite(ordo::test::read_file(path), path);
}
std::vector<pr::TaskItem> tiny_suite() { return suite_of(kTinyZoo); }

json golden_at(const std::string& dir) { return json::parse(ordo::test::read_file(dir + "/golden.json")); }
const json& golden_of(const std::string& scheme) {
  static std::map<std::string, json> cache;
  if (!cache.count(scheme)) cache[scheme] = golden_at(task_dir(scheme));
  return cache[scheme];
}

// The longest task length the trainer trained a model on (config "zoo": {"train_length"}).
double train_length_at(const std::string& dir) {
  return json::parse(ordo::test::read_file(dir + "/config.json")).at("zoo").at("train_length").get<double>();
}
double train_length(const std::string& scheme) { return train_length_at(task_dir(scheme)); }

// One thread: the models are tiny, and extra OpenMP threads only cost on a busy machine.
Model load_task_at(const std::string& dir) {
  ModelOptions o;
  o.threads = 1;
  return Model::load(dir, o);
}
Model load_task(const std::string& scheme) { return load_task_at(task_dir(scheme)); }

const pr::TaskPoint* find_point(const std::vector<pr::TaskPoint>& pts, const json& ref) {
  for (const pr::TaskPoint& p : pts)
    if (p.task == ref.at("task") && p.length == ref.at("length")) return &p;
  return nullptr;
}

// A point against one of golden.json's entries: counts, accuracy and the recorded item bits.
void expect_point_matches(const pr::TaskPoint* p, const json& ref, const std::string& what) {
  ASSERT_NE(p, nullptr) << what;
  EXPECT_EQ(p->error, "") << what;
  EXPECT_EQ(p->items, ref.at("n_items").get<int64_t>()) << what;
  EXPECT_EQ(p->correct, ref.at("correct").get<int64_t>()) << what;
  EXPECT_DOUBLE_EQ(p->accuracy, ref.at("accuracy").get<double>()) << what;
  const std::vector<int> bits = ref.at("items").get<std::vector<int>>();
  ASSERT_GE(p->item_correct.size(), bits.size()) << what;
  for (size_t i = 0; i < bits.size(); ++i) EXPECT_EQ(p->item_correct[i], bits[i]) << what << " item " << i;
}

std::string where(const std::string& scheme, const json& ref) {
  return scheme + " " + ref.value("scaling", std::string("none")) + " " + ref.at("task").get<std::string>() + "@" +
         std::to_string(ref.at("length").get<int64_t>());
}

}  // namespace

// The task model's WordLevel tokenizer.json gives the ids the trainer recorded for its copy6 case
// (read back into words through the vocabulary in the file, not through ordo), and the forward pass
// reproduces PyTorch's logits of that sequence.
TEST(TaskProbe, TokenizerAndLogitsMatchTheTrainer) {
  const json tok = json::parse(ordo::test::read_file(task_dir("rope") + "/tokenizer.json"));
  std::map<int32_t, std::string> word;
  for (auto it = tok.at("model").at("vocab").begin(); it != tok.at("model").at("vocab").end(); ++it)
    word[it.value().get<int32_t>()] = it.key();
  const ordo::test::Golden g = ordo::test::Golden::load("../zoo-tiny/tasks/rope-s1");
  const std::vector<int32_t> ids = ordo::test::ids_of(g.case_json("copy6").at("input_ids"));
  ASSERT_EQ(ids.front(), 1);
  ASSERT_EQ(ids.back(), 2);
  std::string prompt, target;
  size_t k = 1;
  for (; k < ids.size() && word.at(ids[k - 1]) != "="; ++k) prompt += (prompt.empty() ? "" : " ") + word.at(ids[k]);
  for (size_t i = k; i + 1 < ids.size(); ++i) target += (target.empty() ? "" : " ") + word.at(ids[i]);
  EXPECT_EQ(prompt.substr(0, 5), "copy ");
  Model m = load_task("rope");
  EXPECT_EQ(m.encode(prompt, true), std::vector<int32_t>(ids.begin(), ids.begin() + k));
  EXPECT_EQ(m.encode(target, false), std::vector<int32_t>(ids.begin() + k, ids.end() - 1));
  EXPECT_TRUE(ordo::test::within_tolerance(m.forward(ids).logits.f32(), g.tensor("copy6.logits")));
}

// Unscaled: every (task, length) of golden "tasks" equals PyTorch's counts and item bits; a learned
// model refuses the points whose items outrun its table (absent from the golden file) as errors.
TEST(TaskProbe, AccuracyAndItemsMatchPyTorch) {
  const std::vector<pr::TaskItem> suite = tiny_suite();
  for (const std::string scheme : {"rope", "none", "learned"}) {
    Model m = load_task(scheme);
    const int64_t trained = m.spec().position.max_positions;  // the longest training sequence
    ASSERT_GT(trained, 40) << scheme;
    const std::vector<pr::TaskPoint> pts = pr::synthetic_tasks(m, suite, {"none", ScalingType::None}, trained);
    EXPECT_EQ(pts.size(), 9u) << scheme;
    int64_t matched = 0;
    for (const json& ref : golden_of(scheme).at("tasks")) {
      expect_point_matches(find_point(pts, ref), ref, where(scheme, ref));
      ++matched;
    }
    int64_t refused = 0;
    for (const pr::TaskPoint& p : pts) {
      if (p.error.empty()) continue;
      ++refused;
      EXPECT_EQ(scheme, "learned") << p.task << "@" << p.length << ": " << p.error;
      EXPECT_GT(p.longest, trained) << p.task << "@" << p.length;
      EXPECT_TRUE(std::isnan(p.accuracy));
      EXPECT_NE(p.error.find("learned"), std::string::npos) << p.error;
    }
    EXPECT_EQ(matched + refused, 9) << scheme;
    if (scheme == "learned") {
      EXPECT_GE(refused, 3) << "copy, reverse and role at 80 outrun the table";
    }
  }
}

// Scaled, at the trainer's factors (n / L, L its train_length): rope + ntk and yarn, learned + linear interpolation.
TEST(TaskProbe, ScaledVariantsMatchPyTorch) {
  const std::vector<pr::TaskItem> suite = tiny_suite();
  for (const std::string scheme : {"rope", "learned"}) {
    Model m = load_task(scheme);
    int64_t matched = 0;
    for (const pr::LengthMethod& meth : pr::length_methods(scheme)) {
      pr::TaskRunOptions run;
      const double L = train_length(scheme);
      run.factor = [L](const pr::TaskPoint& p) { return static_cast<double>(p.length) / L; };
      const std::vector<pr::TaskPoint> pts = pr::synthetic_tasks(m, suite, meth, m.spec().position.max_positions, run);
      for (const json& ref : golden_of(scheme).at("scaled")) {
        if (ref.at("scaling") != meth.name) continue;
        const pr::TaskPoint* p = find_point(pts, ref);
        ASSERT_NE(p, nullptr) << where(scheme, ref);
        EXPECT_DOUBLE_EQ(p->factor, ref.at("factor").get<double>());
        expect_point_matches(p, ref, where(scheme, ref));
        ++matched;
      }
    }
    EXPECT_EQ(matched, scheme == "rope" ? 12 : 6) << scheme;
  }
}

// The committed zoo's task models, whose numbers the README reports: every plain and scaled point
// the trainer recorded (copy, reverse and role at 20, 40, 80; rope + ntk/yarn and learned + linear
// at n / L) equals PyTorch's counts and item bits, multi-token answers included.
class ZooTasks : public testing::TestWithParam<std::string> {};

TEST_P(ZooTasks, AccuracyAndItemsMatchPyTorch) {
  static const std::vector<pr::TaskItem> suite = suite_of(kZoo);
  const std::string dir = kZoo + "/tasks/" + GetParam();
  const std::string scheme = GetParam().substr(0, GetParam().find("-s"));
  const json golden = golden_at(dir);
  Model m = load_task_at(dir);
  ASSERT_EQ(m.spec().position.scheme, scheme);
  const std::vector<pr::TaskPoint> plain =
      pr::synthetic_tasks(m, suite, {"none", ScalingType::None}, m.spec().position.max_positions);
  int64_t matched = 0, correct = 0;
  for (const json& ref : golden.at("tasks")) {
    expect_point_matches(find_point(plain, ref), ref, where(GetParam(), ref));
    correct += ref.at("correct").get<int64_t>();
    ++matched;
  }
  EXPECT_EQ(matched, scheme == "learned" ? 5 : 9);  // a learned table of 87 rows cannot run n = 40 role or n = 80
  EXPECT_GT(correct, 0);
  const double L = train_length_at(dir);
  int64_t scaled = 0;
  for (const pr::LengthMethod& meth : pr::length_methods(scheme)) {
    pr::TaskRunOptions run;
    run.factor = [L](const pr::TaskPoint& p) { return static_cast<double>(p.length) / L; };
    const std::vector<pr::TaskPoint> pts = pr::synthetic_tasks(m, suite, meth, m.spec().position.max_positions, run);
    for (const json& ref : golden.at("scaled")) {
      if (ref.at("scaling") != meth.name) continue;
      const pr::TaskPoint* p = find_point(pts, ref);
      ASSERT_NE(p, nullptr) << where(GetParam(), ref);
      EXPECT_DOUBLE_EQ(p->factor, ref.at("factor").get<double>());
      expect_point_matches(p, ref, where(GetParam(), ref));
      ++scaled;
    }
  }
  EXPECT_EQ(scaled, scheme == "rope" ? 12 : scheme == "learned" ? 6 : 0);
}

std::vector<std::string> zoo_task_models() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kZoo + "/tasks", ec))
    if (std::filesystem::exists(e.path() / "config.json")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
INSTANTIATE_TEST_SUITE_P(Committed, ZooTasks, testing::ValuesIn(zoo_task_models()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// compare's own factor: the longest item of a point over the trained length; only points beyond it.
// A suite in another vocabulary is refused, naming the item, not scored as <unk> against <unk>.
TEST(TaskProbe, ItemsWithWordsTheModelLacksAreErrors) {
  Model m = load_task("rope");
  const std::vector<pr::TaskItem> suite = pr::parse_task_suite(
      "{\"task\": \"copy\", \"length\": 2, \"prompt\": \"copy zzqx zzqx =\", \"target\": \"zzqx zzqx\"}\n", "s.jsonl");
  EXPECT_EQ(error_of([&] {
              pr::synthetic_tasks(m, suite, {"none", ScalingType::None}, 87);
            }),
            task_dir("rope") + ": task item 1 (copy at length 2) has a word the model's vocabulary lacks");
}

TEST(TaskProbe, DefaultFactorCoversTheLongestItem) {
  const std::vector<pr::TaskItem> suite = tiny_suite();
  Model m = load_task("rope");
  std::map<std::pair<std::string, int64_t>, size_t> longest;
  for (const pr::TaskItem& it : suite) {
    size_t& l = longest[std::make_pair(it.task, it.length)];
    l = std::max(l, m.encode(it.prompt, true).size() + m.encode(it.target, false).size() + 1);
  }
  const int64_t trained = m.spec().position.max_positions;
  const std::vector<pr::TaskPoint> pts = pr::synthetic_tasks(m, suite, {"ntk", ScalingType::NTK}, trained);
  size_t beyond = 0;
  for (const auto& [key, l] : longest) beyond += static_cast<int64_t>(l) > trained;
  EXPECT_EQ(pts.size(), beyond);
  EXPECT_GE(beyond, 3u);  // role at 40 and 80, copy and reverse at 80 at least
  for (const pr::TaskPoint& p : pts) {
    EXPECT_EQ(static_cast<size_t>(p.longest), longest[std::make_pair(p.task, p.length)]);
    EXPECT_DOUBLE_EQ(p.factor, static_cast<double>(p.longest) / static_cast<double>(trained));
    EXPECT_EQ(p.error, "");
    EXPECT_EQ(p.item_correct.size(), static_cast<size_t>(p.items));
  }
  // The model's settings are restored: an unscaled run after it still matches PyTorch.
  const auto again = pr::synthetic_tasks(m, suite, {"none", ScalingType::None}, trained);
  const json& ref = golden_of("rope").at("tasks").at(7);  // role@40
  expect_point_matches(find_point(again, ref), ref, "rope role@40 after a scaled run");
}

// `ordo compare --tasks synthetic` on the tiny zoo: the zoo's task models found by config.json,
// each model's unscaled accuracy and item bits equal PyTorch's, the groups' means, the scaled rows
// only beyond the trained length, the learned table's refusals as errors; table and HTML from the
// same document.
TEST(TaskProbeCli, CompareSyntheticOnTheTinyZoo) {
  const std::string dir = ordo::test::make_temp_dir("compare-tasks");
  auto r = ordo::test::run_cli("compare --zoo " + ordo::test::shell_quote(kTinyZoo) + " --tasks synthetic --json " +
                               ordo::test::shell_quote(dir + "/r.json") + " --html " +
                               ordo::test::shell_quote(dir + "/r.html"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[tasks/rope-s1] synthetic tasks: 180 items"), std::string::npos) << r.err;
  const json doc = json::parse(ordo::test::read_file(dir + "/r.json"));
  ASSERT_FALSE(doc.contains("word_order"));
  const json& s = doc.at("synthetic");
  EXPECT_EQ(s.at("items"), 180);
  ASSERT_EQ(s.at("models").size(), 3u);          // tasks/learned-s1, none-s1, rope-s1
  int64_t learned_rows = 0, learned_points = 0;  // its table; the points it can run unscaled
  for (const json& m : s.at("models"))
    if (m.at("scheme") == "learned") learned_rows = m.at("trained_length").get<int64_t>();
  ASSERT_GT(learned_rows, 40);
  for (const json& row : s.at("results")) {
    const std::string scheme = row.at("scheme");
    if (row.at("method") != "none") {  // factor n / L beyond the model's train_length L
      const double L = train_length(scheme);
      for (const json& p : row.at("points")) {
        EXPECT_GT(p.at("length").get<double>(), L) << row.at("label");
        EXPECT_DOUBLE_EQ(p.at("factor").get<double>(), p.at("length").get<double>() / L) << row.at("label");
      }
      continue;
    }
    for (const json& ref : golden_of(scheme).at("tasks")) {
      const auto p = std::find_if(row.at("points").begin(), row.at("points").end(), [&](const json& x) {
        return x.at("task") == ref.at("task") && x.at("length") == ref.at("length");
      });
      ASSERT_NE(p, row.at("points").end()) << where(scheme, ref);
      EXPECT_EQ(p->at("correct"), ref.at("correct")) << where(scheme, ref);
      std::string bits;
      for (int b : ref.at("items").get<std::vector<int>>()) bits += b ? '1' : '0';
      EXPECT_EQ(p->at("item_correct").get<std::string>().substr(0, bits.size()), bits) << where(scheme, ref);
    }
    if (scheme == "learned") {
      for (const json& p : row.at("points")) {
        EXPECT_EQ(p.at("accuracy").is_null(), p.at("longest").get<int64_t>() > learned_rows) << p.dump();
        learned_points += !p.at("accuracy").is_null();
      }
    }
  }
  std::set<std::string> groups;
  for (const json& g : s.at("groups")) {
    groups.insert(g.at("label").get<std::string>());
    EXPECT_EQ(g.at("n_seeds"), 1);
  }
  EXPECT_EQ(groups, (std::set<std::string>{"learned", "learned+linear", "none", "rope", "rope+linear", "rope+ntk",
                                           "rope+dynamic", "rope+yarn"}));
  const json& rope = *std::find_if(s.at("groups").begin(), s.at("groups").end(),
                                   [](const json& g) { return g.at("label") == "rope"; });
  const json& role40 = rope.at("points").at(7);
  EXPECT_EQ(role40.at("task"), "role");
  EXPECT_EQ(role40.at("length"), 40);
  EXPECT_DOUBLE_EQ(role40.at("mean").get<double>(), golden_of("rope").at("tasks").at(7).at("accuracy").get<double>());
  // Paired tests: rope vs none at all 9 points, learned vs each where its table reaches; the mean
  // item difference is the difference of PyTorch's accuracies.
  EXPECT_EQ(s.at("tests").size(), static_cast<size_t>(9 + 2 * learned_points));
  for (const json& t : s.at("tests")) {
    if (t.at("a") != "none" || t.at("b") != "rope") continue;
    const json* ga = nullptr;
    const json* gb = nullptr;
    for (const json& ref : golden_of("none").at("tasks"))
      if (ref.at("task") == t.at("task") && ref.at("length") == t.at("length")) ga = &ref;
    for (const json& ref : golden_of("rope").at("tasks"))
      if (ref.at("task") == t.at("task") && ref.at("length") == t.at("length")) gb = &ref;
    ASSERT_TRUE(ga && gb);
    EXPECT_NEAR(t.at("mean_diff").get<double>(), ga->at("accuracy").get<double>() - gb->at("accuracy").get<double>(),
                1e-6)
        << t.dump();
  }
  EXPECT_NE(r.out.find("== synthetic tasks by scheme"), std::string::npos);
  const std::string html = ordo::test::read_file(dir + "/r.html");
  EXPECT_NE(html.find("<h2>Synthetic tasks</h2>"), std::string::npos);
  for (size_t g = 0; g < s.at("groups").size(); ++g) {
    const std::string ptr = "/synthetic/groups/" + std::to_string(g) + "/points/0/mean";
    EXPECT_NE(html.find("data-json=\"" + ptr + "\">"), std::string::npos) << ptr;
  }
}

// Discovery and refusals: -m of a task model with --no-zoo needs --suite; a model that is not a
// task model is skipped with a note; a bad suite line is named.
TEST(TaskProbeCli, NoZooModelsAndBadSuites) {
  using ordo::test::shell_quote;
  const std::string dir = ordo::test::make_temp_dir("compare-tasks-m");
  const std::string suite = kTinyZoo + "/tasks/suite.jsonl";
  auto r = ordo::test::run_cli("compare --no-zoo -m " + shell_quote(task_dir("none")) + " --tasks synthetic");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--tasks synthetic: give --suite FILE"), std::string::npos) << r.err;
  r = ordo::test::run_cli("compare --no-zoo -m " + shell_quote(task_dir("none")) + " -m " +
                          shell_quote(kTinyZoo + "/lm/rope-s1") + " --tasks synthetic --suite " + shell_quote(suite) +
                          " --json " + shell_quote(dir + "/r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("lm/rope-s1 is not a task model"), std::string::npos) << r.err;
  const json doc = json::parse(ordo::test::read_file(dir + "/r.json"));
  ASSERT_EQ(doc.at("synthetic").at("results").size(), 1u);  // none-s1: no scaling to apply
  EXPECT_EQ(doc.at("synthetic").at("results").at(0).at("points").at(8).at("correct"),
            golden_of("none").at("tasks").at(8).at("correct"));
  std::ofstream(dir + "/bad.jsonl")
      << "{\"task\": \"copy\", \"length\": 2, \"prompt\": \"copy a b =\", \"target\": \"a b\"}\n"
      << "{\"task\": \"copy\", \"length\": \"2\"}\n";
  r = ordo::test::run_cli("compare --no-zoo -m " + shell_quote(task_dir("none")) + " --tasks synthetic --suite " +
                          shell_quote(dir + "/bad.jsonl"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(dir + "/bad.jsonl:2: "), std::string::npos) << r.err;
  // A FIFO in place of a zoo model's config.json is refused, not read (reading would block).
  const std::string zoo = ordo::test::make_temp_dir("compare-tasks-fifo");
  std::filesystem::create_directories(zoo + "/tasks/x-s1");
  ASSERT_EQ(mkfifo((zoo + "/tasks/x-s1/config.json").c_str(), 0600), 0);
  r = ordo::test::run_cli("compare --zoo " + shell_quote(zoo) + " --tasks synthetic --suite " + shell_quote(suite));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(zoo + "/tasks/x-s1/config.json: not a regular file"), std::string::npos) << r.err;
}

// What a user would try first: `ordo run` on a task model, greedy, gives the answer PyTorch's
// greedy decoding got right (the first such item in the golden file).
TEST(TaskProbeCli, RunOnATaskModel) {
  const std::vector<pr::TaskItem> suite = tiny_suite();
  const pr::TaskItem* item = nullptr;  // the first item PyTorch's greedy decoding got right
  for (const json& ref : golden_of("rope").at("tasks")) {
    const std::vector<int> bits = ref.at("items").get<std::vector<int>>();
    const auto right = std::find(bits.begin(), bits.end(), 1);
    if (right == bits.end()) continue;
    std::vector<const pr::TaskItem*> point;
    for (const pr::TaskItem& it : suite)
      if (it.task == ref.at("task") && it.length == ref.at("length")) point.push_back(&it);
    item = point.at(static_cast<size_t>(right - bits.begin()));
    break;
  }
  ASSERT_NE(item, nullptr) << "the tiny rope task model got no item right";
  auto r = ordo::test::run_cli("run -m " + ordo::test::shell_quote(task_dir("rope")) + " -p " +
                               ordo::test::shell_quote(item->prompt) + " --temp 0 -q -n " +
                               std::to_string(std::count(item->target.begin(), item->target.end(), ' ') + 2));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(item->target), std::string::npos) << r.out;
}
