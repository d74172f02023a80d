// A self-contained SVG line chart (log-scaled axes optional), for ppl and compare reports.
#pragma once

#include <string>
#include <vector>

namespace ordo::cli {

struct Series {
  std::string name;
  std::vector<double> x, y;  // NaN/inf y values are skipped
};

struct ChartOptions {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  int width = 720, height = 420;
};

// Escapes <, >, & and " for SVG/HTML text and attributes.
std::string xml_escape(const std::string& s);

std::string svg_line_chart(const std::vector<Series>& series, const ChartOptions& opts);

// Horizontal bars, one per label (NaN/inf values are drawn as "n/a"); log_x for a log-scaled value axis
// (values <= 0 drawn as "n/a" then).
std::string svg_bar_chart(const std::vector<std::string>& labels, const std::vector<double>& values,
                          const ChartOptions& opts);

}  // namespace ordo::cli
