// `ordo compare`: seed groups of every section and the word-order tests (compare_groups.hpp).
#include "compare_groups.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "compare_report.hpp"
#include "svg_chart.hpp"

namespace ordo::cli {
namespace {

using json = nlohmann::json;
using namespace report;

json::json_pointer ptr(const std::string& p) { return json::json_pointer(p); }

// The interval of the numbers at `field` (an array) index i in each row, for every index of the
// group's first row.
json intervals_per_index(const SeedGroup& g, const std::string& field) {
  json out = json::array();
  for (size_t i = 0; i < g.rows[0]->at(field).size(); ++i)
    out.push_back(interval_json(values_at(g, ptr("/" + field + "/" + std::to_string(i)))));
  return out;
}

json permutation_groups(const json& results) {
  json out = json::array();
  for (const SeedGroup& g : seed_groups(results, {"kind", "scheme"})) {
    json head = g.head;
    head.update({{"tokens", g.rows[0]->at("tokens")},
                 {"rel_error", interval_json(values_at(g, ptr("/rel_error")))},
                 {"max_abs_error", interval_json(values_at(g, ptr("/max_abs_error")))}});
    out.push_back(head);
  }
  return out;
}

// Per (kind, scheme, method) and multiple: perplexity over the seeds that have it (n of them).
json length_groups(const json& results) {
  json out = json::array();
  for (const SeedGroup& g : seed_groups(results, {"kind", "scheme", "method"})) {
    json head = g.head;
    const std::string method = g.head["method"];
    head["label"] = g.head["kind"].get<std::string>() + " " + g.head["scheme"].get<std::string>() +
                    (method == "none" ? "" : "+" + method);
    head["points"] = json::array();
    const json& first = g.rows[0]->at("points");
    for (size_t j = 0; j < first.size(); ++j) {
      const std::vector<double> ppl = values_at(g, ptr("/points/" + std::to_string(j) + "/ppl"));
      head["points"].push_back({{"multiple", first[j]["multiple"]},
                                {"ctx", first[j]["ctx"]},
                                {"n", ppl.size()},
                                {"ppl", interval_json(ppl)}});
    }
    out.push_back(head);
  }
  return out;
}

json attention_groups(const json& results) {
  json out = json::array();
  for (const SeedGroup& g : seed_groups(results, {"kind", "scheme"})) {
    json head = g.head;
    head["mean_weight"] = intervals_per_index(g, "mean_weight");
    head["mass"] = intervals_per_index(g, "mass");
    out.push_back(head);
  }
  return out;
}

std::string group_name(const json& g) {
  return g.contains("label") ? g["label"].get<std::string>()
                             : g["kind"].get<std::string>() + " " + g["scheme"].get<std::string>();
}

constexpr const char* kOverSeeds = "mean ± 95% interval (Student t) over seeds";

}  // namespace

void add_seed_groups(json& doc) {
  if (doc.contains("permutation")) doc["permutation"]["groups"] = permutation_groups(doc["permutation"]["results"]);
  if (doc.contains("length")) doc["length"]["groups"] = length_groups(doc["length"]["results"]);
  if (doc.contains("attention")) doc["attention"]["groups"] = attention_groups(doc["attention"]["results"]);
}

void print_seed_groups(const json& doc, const std::string& section, std::ostream& o) {
  const json& groups = doc[section]["groups"];
  if (groups.empty()) return;
  int lw = 14;
  for (const json& g : groups) lw = std::max(lw, static_cast<int>(group_name(g).size()) + 2);
  if (section == "permutation") {
    o << "\n== permutation probe by kind and scheme: " << kOverSeeds << "\n"
      << column("group", lw) << column("seeds", 6) << column("relative", 24) << column("max_abs", 24) << "\n";
    for (const json& g : groups)
      o << column(group_name(g), lw) << column(g["seeds"], 6) << column(pm(g["rel_error"]), 24)
        << column(pm(g["max_abs_error"]), 24) << "\n";
  } else if (section == "length") {
    o << "\n== length by kind, scheme and method: perplexity, " << kOverSeeds << "\n"
      << column("group", lw) << column("seeds", 6);
    for (const json& k : doc["settings"]["multiples"]) o << column(k.dump() + "x", 20);
    o << "\n";
    for (const json& g : groups) {
      o << column(group_name(g), lw) << column(g["seeds"], 6);
      for (const json& p : g["points"]) o << column(pm(p["ppl"]), 20);
      o << "\n";
    }
  } else if (section == "attention") {
    o << "\n== attention by kind and scheme: mean weight by distance, " << kOverSeeds << "\n"
      << column("group", lw) << column("seeds", 6);
    for (const json& b : doc["attention"]["buckets"]) o << column(b["label"], 22);
    o << "\n";
    for (const json& g : groups) {
      o << column(group_name(g), lw) << column(g["seeds"], 6);
      for (const json& v : g["mean_weight"]) o << column(pm(v), 22);
      o << "\n";
    }
  }
}

namespace {

void html_length_chart(const json& groups, std::ostream& h) {
  std::vector<Series> plain, scaled;
  double trained = NAN;
  for (const json& g : groups) {
    Series s{g["label"].get<std::string>(), {}, {}, g["scheme"].get<std::string>(), {}};
    for (const json& p : g["points"]) {
      s.x.push_back(p["ctx"].get<double>());
      s.y.push_back(p["ppl"]["mean"].is_null() ? NAN : p["ppl"]["mean"].get<double>());
      s.err.push_back(p["ppl"]["half_width"].is_null() ? NAN : p["ppl"]["half_width"].get<double>());
      if (p["multiple"] == 1) trained = p["ctx"].get<double>();
    }
    (g["method"] == "none" ? plain : scaled).push_back(s);
  }
  ChartOptions co =
      perplexity_chart(trained, "perplexity vs context length by scheme, no scaling (mean over seeds, 95% interval)");
  h << svg_line_chart(plain, co);
  if (!scaled.empty()) {
    co.title = "perplexity vs context length by scheme, with scaling (mean over seeds, 95% interval)";
    h << svg_line_chart(scaled, co);
  }
}

}  // namespace

void html_seed_groups(const json& doc, const std::string& section, std::ostream& h) {
  const json& groups = doc[section]["groups"];
  if (groups.empty()) return;
  const std::string base = "/" + section + "/groups/";
  h << "<h3>Zoo models by kind and scheme" << (section == "length" ? " and method" : "") << "</h3>\n<p>Seeds are "
    << "replicates: " << kOverSeeds << " (n − 1 dof; no interval from one seed).</p>\n";
  if (section == "permutation") {
    h << "<table><tr><th>group</th><th>seeds</th><th>tokens</th><th>relative error</th><th>max abs error</th></tr>\n";
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string p = base + std::to_string(i);
      h << "<tr>" << text_cell(group_name(groups[i])) << cell(doc, p + "/seeds") << cell(doc, p + "/tokens")
        << pm_cell(doc, p + "/rel_error") << pm_cell(doc, p + "/max_abs_error") << "</tr>\n";
    }
    h << "</table>\n";
    return;
  }
  const bool length = section == "length";
  for (const char* key : length ? std::vector<const char*>{"ppl"} : std::vector<const char*>{"mean_weight", "mass"}) {
    h << "<table><tr><th>" << key << "</th><th>seeds</th>";
    if (length)
      for (size_t j = 0; j < doc["settings"]["multiples"].size(); ++j)
        h << "<th>" << cell(doc, "/settings/multiples/" + std::to_string(j), "span") << "× trained</th>";
    else
      for (const json& b : doc["attention"]["buckets"])
        h << "<th>distance " << html_escape(b["label"].get<std::string>()) << "</th>";
    h << "</tr>\n";
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string p = base + std::to_string(i);
      h << "<tr>" << text_cell(group_name(groups[i])) << cell(doc, p + "/seeds");
      const size_t n = length ? groups[i]["points"].size() : groups[i][key].size();
      for (size_t j = 0; j < n; ++j) {
        if (!length) {
          h << pm_cell(doc, p + "/" + key + "/" + std::to_string(j));
          continue;
        }
        // mean ± half width, then how many seeds had a value at that context length
        const std::string pt = p + "/points/" + std::to_string(j);
        h << "<td>" << pm_spans(doc, pt + "/ppl") << " <small>(n " << cell(doc, pt + "/n", "span") << ", ctx "
          << cell(doc, pt + "/ctx", "span") << ", " << cell(doc, pt + "/multiple", "span") << "x)</small></td>";
      }
      h << "</tr>\n";
    }
    h << "</table>\n";
  }
  if (length) html_length_chart(groups, h);
}

// word_order["groups"]: per (kind, scheme), accuracy and mean margin as mean ± 95% interval over
// seeds, and each pair's margin averaged over the seeds as mean ± interval over pairs;
// word_order["tests"]: a paired t-test on those per-pair margins between every two schemes of a kind.
void word_order_stats(json& wo) {
  const std::vector<SeedGroup> groups = seed_groups(wo["results"], {"kind", "scheme"});
  std::vector<std::vector<double>> items(groups.size());  // per group: per pair, the margin averaged over seeds
  wo["groups"] = json::array();
  for (size_t i = 0; i < groups.size(); ++i) {
    const SeedGroup& g = groups[i];
    items[i].assign(g.rows[0]->at("scores").size(), 0.0);
    for (const json* r : g.rows)
      for (size_t k = 0; k < items[i].size(); ++k) items[i][k] += r->at("scores")[k]["margin"].get<double>();
    for (double& v : items[i]) v /= static_cast<double>(g.rows.size());
    json head = g.head;
    head.update({{"pairs", items[i].size()},
                 {"accuracy", interval_json(values_at(g, json::json_pointer("/accuracy")))},
                 {"mean_margin", interval_json(values_at(g, json::json_pointer("/mean_margin")))},
                 {"item_margin", interval_json(items[i])}});
    wo["groups"].push_back(head);
  }
  wo["tests"] = json::array();
  for (size_t a = 0; a < groups.size(); ++a)
    for (size_t b = a + 1; b < groups.size(); ++b) {
      if (groups[a].head["kind"] != groups[b].head["kind"] || items[a].size() != items[b].size()) continue;
      json test = {{"kind", groups[a].head["kind"]}, {"a", groups[a].head["scheme"]}, {"b", groups[b].head["scheme"]}};
      test.update(paired_test_json(items[a], items[b]));
      wo["tests"].push_back(test);
    }
}

}  // namespace ordo::cli
