#include "compare_report.hpp"

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
