#include "compare_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "ordo/stats.hpp"
#include "svg_chart.hpp"

namespace ordo::cli::report {

double r6(double v) {
  if (!std::isfinite(v) || v == 0.0) return v;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

json num_or_null(double v) { return std::isfinite(v) ? json(r6(v)) : json(nullptr); }

json paired_test_json(const std::vector<double>& a, const std::vector<double>& b) {
  const stats::PairedTest t = stats::paired_t_test(a, b);
  return {{"n", t.n}, {"mean_diff", num_or_null(t.mean_diff)}, {"t", num_or_null(t.t)}, {"p", num_or_null(t.p)}};
}

json interval_json(const std::vector<double>& v) {
  const stats::MeanInterval m = stats::mean_interval(v);
  return {{"mean", num_or_null(m.mean)}, {"half_width", num_or_null(m.half_width)}};
}

std::vector<SeedGroup> seed_groups(const json& rows, std::initializer_list<const char*> keys) {
  std::vector<SeedGroup> groups;
  for (const json& r : rows) {
    if (r.value("kind", "").empty() || r.contains("error")) continue;
    json head;
    for (const char* k : keys) head[k] = r.at(k);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const SeedGroup& x) {
      return std::all_of(keys.begin(), keys.end(), [&](const char* k) { return x.head[k] == head[k]; });
    });
    if (g == groups.end()) {
      head["models"] = json::array();
      g = groups.insert(groups.end(), SeedGroup{head, {}});
    }
    g->head["models"].push_back(r.at("model"));
    g->rows.push_back(&r);
  }
  for (SeedGroup& g : groups) g.head["seeds"] = g.rows.size();
  return groups;
}

std::vector<double> values_at(const SeedGroup& g, const json::json_pointer& ptr) {
  std::vector<double> v;
  for (const json* r : g.rows)
    if (r->contains(ptr) && r->at(ptr).is_number()) v.push_back(r->at(ptr).get<double>());
  return v;
}

std::string show(const json& v) {
  if (v.is_null()) return "n/a";
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return buf;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string html_escape(const std::string& s) { return xml_escape(s); }

std::string cell(const json& doc, const std::string& ptr, const char* tag) {
  const json& v = doc.at(json::json_pointer(ptr));
  if (v.is_null()) return std::string("<") + tag + " class=\"na\">n/a</" + tag + ">";
  return std::string("<") + tag + " data-json=\"" + html_escape(ptr) + "\">" + show(v) + "</" + tag + ">";
}

std::string pm(const json& interval) {
  return show(interval["mean"]) + (interval["half_width"].is_null() ? "" : " ± " + show(interval["half_width"]));
}

std::string pm_spans(const json& doc, const std::string& ptr) {
  const bool half = !doc.at(json::json_pointer(ptr + "/half_width")).is_null();
  return cell(doc, ptr + "/mean", "span") + (half ? " ± " + cell(doc, ptr + "/half_width", "span") : "");
}

std::string pm_cell(const json& doc, const std::string& ptr) { return "<td>" + pm_spans(doc, ptr) + "</td>"; }

std::string pm_cells(const json& doc, const std::string& ptr) {
  return cell(doc, ptr + "/mean") + cell(doc, ptr + "/half_width");
}

std::string text_cell(const std::string& s) { return "<td>" + html_escape(s) + "</td>"; }

std::string err_cell(const json& r) {
  return std::string("<td class=\"err\">") + (r.contains("error") ? html_escape(r["error"].get<std::string>()) : "") +
         "</td>";
}

std::string column(const json& v, int width) {
  std::ostringstream os;
  os << std::left << std::setw(width) << show(v) << ' ';
  return os.str();
}

}  // namespace ordo::cli::report
