// `ordo compare --tasks synthetic` (see compare_tasks.hpp).
#include "compare_tasks.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "common.hpp"
#include "compare_html.hpp"
#include "compare_report.hpp"
#include "ordo/probes.hpp"
#include "ordo/stats.hpp"
#include "svg_chart.hpp"
#include "zoo_index.hpp"

namespace fs = std::filesystem;

namespace ordo::cli {
namespace {

using json = nlohmann::json;
using namespace report;

// The zoo's task models (kind "tasks"; zoo_dir "" for none), then the -m directories that are task
// models.
std::vector<ZooModel> task_models(const std::string& zoo_dir, const std::vector<std::string>& dirs) {
  std::vector<ZooModel> out;
  if (!zoo_dir.empty())
    for (ZooModel& z : discover_zoo(zoo_dir))
      if (z.kind == "tasks") out.push_back(std::move(z));
  for (const std::string& d : dirs) {
    if (std::any_of(out.begin(), out.end(), [&](const ZooModel& t) { return same_directory(t.dir, d); })) continue;
    std::string label = dir_label(d);
    if (std::any_of(out.begin(), out.end(), [&](const ZooModel& t) { return t.label == label; })) label = d;
    ZooModel t;
    if (read_zoo_model(d, label, t) && t.kind == "tasks")
      out.push_back(std::move(t));
    else
      std::cerr << "compare: " << d
                << " is not a task model (config.json \"zoo\": {\"kind\": \"tasks\"}): synthetic skips it\n";
  }
  return out;
}

json point_json(const probes::TaskPoint& p) {
  std::string bits;
  for (uint8_t b : p.item_correct) bits += b ? '1' : '0';
  json j = {{"task", p.task},
            {"length", p.length},
            {"longest", p.longest},
            {"factor", r6(p.factor)},
            {"items", p.items},
            {"correct", p.correct},
            {"accuracy", num_or_null(p.accuracy)},
            {"item_correct", bits}};
  if (!p.error.empty()) j["error"] = p.error;
  return j;
}

// One row per method (as the model is, then each factor-only scaling of its scheme) into `results`.
void run_model(const ZooModel& t, Model& m, const std::vector<probes::TaskItem>& suite, int batch, const Progress& pg,
               json& results) {
  const int64_t trained = m.spec().position.max_positions;
  for (const probes::LengthMethod& meth : probes::length_methods(t.scheme)) {
    const std::string label = meth.name == "none" ? t.label : t.label + "+" + meth.name;
    json row = {{"model", t.label}, {"scheme", t.scheme},        {"seed", t.seed},         {"method", meth.name},
                {"label", label},   {"trained_length", trained}, {"points", json::array()}};
    pg.note("[" + label + "] synthetic tasks: " + std::to_string(suite.size()) + " items" +
            (meth.name == "none" ? "" : ", the points beyond the trained length"));
    try {
      probes::TaskRunOptions run;
      run.max_batch = batch;
      // Scaled as the task's lengths grow beyond those trained on (n / L: 2 at 2L), when known.
      if (t.train_length > 0) {
        const double L = static_cast<double>(t.train_length);
        run.factor = [L](const probes::TaskPoint& p) { return static_cast<double>(p.length) / L; };
      }
      run.progress = [&](const probes::TaskPoint& p, size_t done) {
        pg.show("[", label, "] ", p.task, " at length ", p.length, ": ", done, "/", p.items);
      };
      const std::vector<probes::TaskPoint> points = probes::synthetic_tasks(m, suite, meth, trained, run);
      pg.clear();
      for (const probes::TaskPoint& p : points) row["points"].push_back(point_json(p));
    } catch (const Error& err) {  // e.g. a prompt the tokenizer cannot encode
      row["error"] = err.what();
      pg.note("[" + label + "] synthetic tasks: " + err.what());
    }
    results.push_back(row);
  }
}

// Per (scheme, method): the seeds' accuracies per (task, length), their mean and 95% interval.
json group_results(const json& results) {
  struct Group {
    json head;
    std::vector<std::pair<std::string, int64_t>> order;
    std::map<std::pair<std::string, int64_t>, std::vector<double>> acc;
  };
  std::vector<Group> groups;
  for (const json& r : results) {
    const std::string label = r["method"] == "none"
                                  ? r["scheme"].get<std::string>()
                                  : r["scheme"].get<std::string>() + "+" + r["method"].get<std::string>();
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.head["label"] == label; });
    if (g == groups.end()) {
      groups.push_back({{{"label", label},
                         {"scheme", r["scheme"]},
                         {"method", r["method"]},
                         {"models", json::array()},
                         {"seeds", json::array()}},
                        {},
                        {}});
      g = groups.end() - 1;
    }
    g->head["models"].push_back(r["model"]);
    g->head["seeds"].push_back(r["seed"]);
    for (const json& p : r["points"]) {
      const auto key = std::make_pair(p["task"].get<std::string>(), p["length"].get<int64_t>());
      if (!g->acc.count(key)) g->order.push_back(key);
      if (!p["accuracy"].is_null()) g->acc[key].push_back(p["accuracy"].get<double>());
    }
  }
  json out = json::array();
  for (Group& g : groups) {
    g.head["n_seeds"] = g.head["seeds"].size();
    g.head["points"] = json::array();
    for (const auto& key : g.order) {
      const std::vector<double>& a = g.acc[key];
      const stats::MeanInterval mi = stats::mean_interval(a);  // Student t, n − 1 dof
      json acc = json::array();
      for (double v : a) acc.push_back(r6(v));
      g.head["points"].push_back({{"task", key.first},
                                  {"length", key.second},
                                  {"seeds", a.size()},
                                  {"accuracy", acc},
                                  {"mean", num_or_null(mi.mean)},
                                  {"half_width", num_or_null(mi.half_width)}});
    }
    out.push_back(g.head);
  }
  return out;
}

// Per item of `row`'s point at (task, length): correctness averaged over the group's seeds; empty
// when a seed lacks the point or its items.
std::vector<double> item_means(const json& results, const json& group, const json& sp) {
  std::vector<double> items;
  for (const json& r : results) {
    if (r["scheme"] != group["scheme"] || r["method"] != group["method"]) continue;
    const auto p = std::find_if(r["points"].begin(), r["points"].end(),
                                [&](const json& x) { return x["task"] == sp["task"] && x["length"] == sp["length"]; });
    if (p == r["points"].end()) return {};
    const std::string bits = (*p)["item_correct"].get<std::string>();
    if (bits.empty() || (!items.empty() && bits.size() != items.size())) return {};
    items.resize(bits.size(), 0.0);
    for (size_t i = 0; i < bits.size(); ++i) items[i] += bits[i] == '1';
  }
  for (double& v : items) v /= static_cast<double>(group["n_seeds"].get<size_t>());
  return items;
}

// Paired t-tests between every two schemes as they are (method "none") at every suite point, on
// the per-item correctness averaged over seeds.
json paired_tests(const json& results, const json& groups, const json& suite_pts) {
  json tests = json::array();
  for (const json& sp : suite_pts) {
    std::vector<std::vector<double>> items(groups.size());  // per group, once per point
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g]["method"] == "none") items[g] = item_means(results, groups[g], sp);
    for (size_t a = 0; a < groups.size(); ++a)
      for (size_t b = a + 1; b < groups.size(); ++b) {
        if (items[a].empty() || items[a].size() != items[b].size()) continue;
        json test = {
            {"task", sp["task"]}, {"length", sp["length"]}, {"a", groups[a]["scheme"]}, {"b", groups[b]["scheme"]}};
        test.update(paired_test_json(items[a], items[b]));
        tests.push_back(test);
      }
  }
  return tests;
}

// The suite's (task, length) points in suite order, with their item counts.
json suite_points(const std::vector<probes::TaskItem>& suite) {
  json pts = json::array();
  for (const probes::TaskItem& it : suite) {
    auto p = std::find_if(pts.begin(), pts.end(),
                          [&](const json& x) { return x["task"] == it.task && x["length"] == it.length; });
    if (p == pts.end())
      pts.push_back({{"task", it.task}, {"length", it.length}, {"items", 1}});
    else
      (*p)["items"] = (*p)["items"].get<int64_t>() + 1;
  }
  return pts;
}

// The point of `row` at (task, length) of suite point `sp`, or nullptr.
const json* point_of(const json& row, const json& sp, size_t* index = nullptr) {
  for (size_t i = 0; i < row["points"].size(); ++i)
    if (row["points"][i]["task"] == sp["task"] && row["points"][i]["length"] == sp["length"]) {
      if (index) *index = i;
      return &row["points"][i];
    }
  return nullptr;
}

std::string point_name(const json& sp) {
  return sp["task"].get<std::string>() + "@" + std::to_string(sp["length"].get<int64_t>());
}

// The paired tests as a terminal table.
void print_synthetic_tests(const json& s, std::ostream& o) {
  if (s["tests"].empty()) return;
  o << "\n== synthetic tasks: paired t-tests between schemes on per-item correctness (averaged over seeds)\n"
    << column("point", 12) << column("a", 12) << column("b", 12) << column("items", 6) << column("a - b", 12)
    << column("p", 12) << "\n";
  for (const json& t : s["tests"])
    o << column(point_name(t), 12) << column(t["a"], 12) << column(t["b"], 12) << column(t["n"], 6)
      << column(t["mean_diff"], 12) << column(t["p"], 12) << "\n";
}

}  // namespace

void SyntheticTaskOptions::add(CLI::App* c) {
  c->add_option("--suite", suite,
                "Synthetic task suite, JSONL {\"task\", \"length\", \"prompt\", \"target\"} (default: "
                "ZOO/tasks/suite.jsonl)")
      ->check(CLI::ExistingFile);
  c->add_option("--task-batch", batch, "Synthetic tasks: sequences decoded at once (default 32)");
}

void SyntheticTaskOptions::validate() const { check_flag_range("--task-batch", batch, 1, 4096); }

namespace {

std::string suite_path(const SyntheticTaskOptions& o, const std::string& zoo_dir) {
  if (!o.suite.empty()) return o.suite;
  if (zoo_dir.empty()) throw Error("--tasks synthetic: give --suite FILE (with --no-zoo there is no zoo suite)");
  return (fs::path(zoo_dir) / "tasks" / "suite.jsonl").string();
}

std::vector<probes::TaskItem> read_suite(const std::string& suite_file) {
  return probes::parse_task_suite(read_input_text(suite_file), suite_file);
}

Error no_task_models(const std::string& zoo_dir) {
  return Error("--tasks synthetic: no task models (" + (zoo_dir.empty() ? std::string() : zoo_dir + "/tasks/*, ") +
               "or -m DIR whose config.json has \"zoo\": {\"kind\": \"tasks\"})");
}

}  // namespace

std::vector<std::string> synthetic_model_labels(const SyntheticTaskOptions& o, const std::string& zoo_dir,
                                                const std::vector<std::string>& dirs) {
  o.validate();
  read_suite(suite_path(o, zoo_dir));  // its errors before any model runs
  std::vector<std::string> labels;
  for (const ZooModel& t : task_models(zoo_dir, dirs)) labels.push_back(t.label);
  if (labels.empty()) throw no_task_models(zoo_dir);
  return labels;
}

namespace {

json model_part(const ZooModel& t, const std::vector<probes::TaskItem>& suite, int batch, const ModelOptions& opts,
                const Progress& pg) {
  pg.note("[" + t.label + "] loading " + t.dir);
  Model m = Model::load(t.dir, opts);
  json results = json::array();
  run_model(t, m, suite, batch, pg, results);
  return {{"model",
           {{"label", t.label},
            {"dir", t.dir},
            {"scheme", t.scheme},
            {"seed", t.seed},
            {"family", m.family()},
            {"trained_length", m.spec().position.max_positions}}},
          {"results", results}};
}

}  // namespace

json synthetic_model(const SyntheticTaskOptions& o, const std::string& zoo_dir, const std::vector<std::string>& dirs,
                     const ModelOptions& opts, size_t k, const Progress& pg) {
  const std::vector<probes::TaskItem> suite = read_suite(suite_path(o, zoo_dir));
  const std::vector<ZooModel> models = task_models(zoo_dir, dirs);
  if (k >= models.size()) throw Error("--tasks synthetic: no task model " + std::to_string(k));
  return model_part(models[k], suite, o.batch, opts, pg);
}

json synthetic_join(const SyntheticTaskOptions& o, const std::string& zoo_dir, const std::vector<json>& per_model) {
  const std::string suite_file = suite_path(o, zoo_dir);
  const std::vector<probes::TaskItem> suite = read_suite(suite_file);
  json mlist = json::array(), results = json::array();
  for (const json& pm : per_model) {
    mlist.push_back(pm.at("model"));
    for (const json& row : pm.at("results")) results.push_back(row);
  }
  const json points = suite_points(suite), groups = group_results(results);
  return {{"suite", suite_file}, {"items", suite.size()},
          {"batch", o.batch},    {"points", points},
          {"models", mlist},     {"results", results},
          {"groups", groups},    {"tests", paired_tests(results, groups, points)}};
}

json synthetic_section(const SyntheticTaskOptions& o, const std::string& zoo_dir, const std::vector<std::string>& dirs,
                       const ModelOptions& opts) {
  o.validate();
  const std::vector<probes::TaskItem> suite = read_suite(suite_path(o, zoo_dir));
  const std::vector<ZooModel> models = task_models(zoo_dir, dirs);
  if (models.empty()) throw no_task_models(zoo_dir);
  Progress pg("ordo compare: synthetic tasks", models.size());
  std::vector<json> per_model;
  for (size_t k = 0; k < models.size(); ++k) {
    pg.step(k + 1, "task models: " + models[k].label);
    per_model.push_back(model_part(models[k], suite, o.batch, opts, pg));
  }
  pg.finish();
  return synthetic_join(o, zoo_dir, per_model);
}

void print_synthetic(const json& doc, std::ostream& o) {
  const json& s = doc["synthetic"];
  int lw = 14;
  for (const json& r : s["results"]) lw = std::max(lw, static_cast<int>(r["label"].get<std::string>().size()) + 2);
  o << "\n== synthetic tasks: exact-match accuracy per task@length (" << s["items"] << " items of "
    << s["suite"].get<std::string>() << "; scaled rows: beyond the trained length only)\n"
    << column("model", lw);
  for (const json& sp : s["points"]) o << column(point_name(sp), 11);
  o << "\n";
  for (const json& r : s["results"]) {
    o << column(r["label"], lw);
    for (const json& sp : s["points"]) {
      const json* p = point_of(r, sp);
      o << column(p ? (*p)["accuracy"] : json("-"), 11);
    }
    o << (r.contains("error") ? r["error"].get<std::string>() : "") << "\n";
  }
  o << "\n== synthetic tasks by scheme: mean accuracy ± 95% interval over seeds\n"
    << column("scheme", lw) << column("seeds", 6);
  for (const json& sp : s["points"]) o << column(point_name(sp), 17);
  o << "\n";
  for (const json& g : s["groups"]) {
    o << column(g["label"], lw) << column(g["n_seeds"], 6);
    for (const json& sp : s["points"]) {
      const json* p = point_of(g, sp);
      o << column(p ? pm(*p) : "-", 17);
    }
    o << "\n";
  }
  print_synthetic_tests(s, o);
}

namespace {

// The paired tests as an HTML table, folded to the comparisons that matter (compare_html.hpp).
void html_synthetic_tests(const json& doc, std::ostream& h) {
  h << "<p>Paired t-tests (two-sided) between schemes, item by item, on each item's correctness averaged "
       "over seeds; significance after Holm's correction over all of them.</p>\n";
  html_test_table(doc, "/synthetic/tests", h, "point", [](const json& t) { return point_name(t); });
}

// The per-model table: one row per model and method, one accuracy cell per suite point.
void html_synthetic_models(const json& doc, std::ostream& h) {
  const json& s = doc["synthetic"];
  h << "<table><tr><th>model</th><th>method</th><th>trained length</th>";
  for (const json& sp : s["points"]) h << "<th>" << html_escape(point_name(sp)) << "</th>";
  h << "<th></th></tr>\n";
  for (size_t i = 0; i < s["results"].size(); ++i) {
    const json& r = s["results"][i];
    const std::string p = "/synthetic/results/" + std::to_string(i);
    h << "<tr>" << text_cell(r["model"].get<std::string>()) << text_cell(r["method"].get<std::string>())
      << cell(doc, p + "/trained_length");
    for (const json& sp : s["points"]) {
      size_t k = 0;
      if (point_of(r, sp, &k))
        h << cell(doc, p + "/points/" + std::to_string(k) + "/accuracy");
      else
        h << "<td class=\"na\">-</td>";
    }
    h << err_cell(r) << "</tr>\n";
  }
  h << "</table>\n";
}

// The per-group table (mean ± interval cells) and one accuracy-vs-length chart per task.
void html_synthetic_groups(const json& doc, std::ostream& h) {
  const json& s = doc["synthetic"];
  h << "<table><tr><th>scheme</th><th>seeds</th>";
  for (const json& sp : s["points"]) h << "<th>" << html_escape(point_name(sp)) << "</th>";
  h << "</tr>\n";
  std::map<std::string, std::vector<Series>> charts;  // per task
  for (size_t i = 0; i < s["groups"].size(); ++i) {
    const json& g = s["groups"][i];
    const std::string gp = "/synthetic/groups/" + std::to_string(i);
    h << "<tr>" << text_cell(g["label"].get<std::string>()) << cell(doc, gp + "/n_seeds");
    for (const json& sp : s["points"]) {
      size_t k = 0;
      const json* p = point_of(g, sp, &k);
      if (!p) {
        h << "<td class=\"na\">-</td>";
        continue;
      }
      h << pm_cell(doc, gp + "/points/" + std::to_string(k));
      std::vector<Series>& task = charts[sp["task"].get<std::string>()];
      if (task.empty() || task.back().name != g["label"])
        task.push_back({g["label"].get<std::string>(), {}, {}, g.value("scheme", ""), {}});
      task.back().x.push_back(sp["length"].get<double>());
      task.back().y.push_back((*p)["mean"].is_null() ? NAN : (*p)["mean"].get<double>());
      task.back().err.push_back((*p)["half_width"].is_null() ? NAN : (*p)["half_width"].get<double>());
    }
    h << "</tr>\n";
  }
  h << "</table>\n";
  for (const auto& [task, series] : charts) {
    ChartOptions co;
    co.title = task + ": exact-match accuracy vs length (mean over seeds)";
    co.x_label = "task length n (items)";
    co.y_label = "exact-match accuracy (0–1)";
    co.lo = 0, co.hi = 1;
    h << svg_line_chart(series, co);
  }
}

}  // namespace

void html_synthetic(const json& doc, std::ostream& h) {
  const json& s = doc["synthetic"];
  h << "<h2>Synthetic tasks</h2>\n<p>Exact-match accuracy of greedy decoding on the " << s["items"].get<int64_t>()
    << " items of " << html_escape(s["suite"].get<std::string>())
    << ": an item is right when the model produces exactly the target's tokens, then end of sequence. Scaled "
       "rows apply the scaling at factor n / L for task length n and the longest length trained on L (the "
       "model's config \"zoo\": {\"train_length\"}; without it, (longest item's tokens) / (trained positions)), "
       "where that factor is above 1. Per scheme: mean over seeds ± 95% interval.</p>\n";
  html_synthetic_groups(doc, h);
  html_synthetic_tests(doc, h);
  h << "<details><summary>every model</summary>\n";
  html_synthetic_models(doc, h);
  h << "</details>\n";
}

}  // namespace ordo::cli
