// How `ordo compare` stores and renders numbers: rounding, intervals, tests, table cells.
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
    std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
    return buf;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

namespace {

// 10^d is the place both numbers of an interval are rounded to: the half-width's leading digit, or
// its two leading digits when they start with 1 or 2 (0.14 keeps 0.14, 0.6 keeps 0.6).
int interval_place(double half) {
  int e = static_cast<int>(std::floor(std::log10(half)));
  const double lead = half / std::pow(10.0, e);
  if (lead >= 9.5) ++e;  // rounds up to the next power of ten
  return lead < 2.95 && lead < 9.5 ? e - 1 : e;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, decimals), v);
  return buf;
}

}  // namespace

std::pair<std::string, std::string> interval_text(double mean, double half) {
  if (!std::isfinite(mean)) return {"n/a", ""};
  if (!std::isfinite(half) || half <= 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g", mean);
    const std::string m = buf;
    if (!std::isfinite(half)) return {m, ""};
    // every seed gave the same value: ± 0 at the mean's own precision
    const size_t dot = m.find('.');
    const int decimals = dot == std::string::npos || m.find('e') != std::string::npos ? 0 : int(m.size() - dot - 1);
    return {m, fixed(0.0, decimals)};
  }
  const int d = interval_place(half);
  const double q = std::pow(10.0, d);
  const double m = std::round(mean / q) * q, hr = std::round(half / q) * q;  // as they will print
  const double big = std::max(std::fabs(m), hr);
  if (big >= 1e-3 && big < 1e6 && d >= -6) return {fixed(m, -d), fixed(hr, -d)};  // 0.00763 ± 0.00028
  // Very small or very large: one power of ten for both, "(m ± h)e-7" shown as m, h with the exponent.
  const int E = static_cast<int>(std::floor(std::log10(big)));
  const double s = std::pow(10.0, E);
  return {fixed(m / s, E - d) + "e" + std::to_string(E), fixed(hr / s, E - d) + "e" + std::to_string(E)};
}

std::string html_escape(const std::string& s) { return xml_escape(s); }

std::string cell(const json& doc, const std::string& ptr, const char* tag) {
  const json& v = doc.at(json::json_pointer(ptr));
  if (v.is_null()) return std::string("<") + tag + " class=\"na\">n/a</" + tag + ">";
  return std::string("<") + tag + " data-json=\"" + html_escape(ptr) + "\">" + show(v) + "</" + tag + ">";
}

static double num(const json& v) { return v.is_number() ? v.get<double>() : NAN; }

std::string pm(const json& interval) {
  const auto [m, h] = interval_text(num(interval["mean"]), num(interval["half_width"]));
  return h.empty() ? m : m + " ± " + h;
}

std::string pm_spans(const json& doc, const std::string& ptr) {
  const json& iv = doc.at(json::json_pointer(ptr));
  if (iv["mean"].is_null()) return "<span class=\"na\">n/a</span>";
  const auto [m, h] = interval_text(num(iv["mean"]), num(iv["half_width"]));
  std::string s = "<span data-json=\"" + html_escape(ptr + "/mean") + "\">" + m + "</span>";
  if (!h.empty()) s += " ± <span data-json=\"" + html_escape(ptr + "/half_width") + "\">" + h + "</span>";
  return s;
}

std::string pm_cell(const json& doc, const std::string& ptr) {
  return "<td class=\"pm\">" + pm_spans(doc, ptr) + "</td>";
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
