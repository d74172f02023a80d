// Line and bar charts for ppl and compare reports: one layout, drawn on a Canvas that writes SVG
// (here) or PNG through cairo (chart_png.cpp), so both formats show the same chart.
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace ordo::cli {

// The colour of a position scheme in every chart of every report (one map, here); a name outside it
// gets a fixed colour from its spelling.
std::string scheme_color(const std::string& scheme);

struct Series {
  std::string name;
  std::vector<double> x, y;  // NaN/inf y values are skipped
  std::string scheme;        // colours the series (scheme_color); "" → a colour by position
  std::vector<double> err;   // half-widths of y's intervals (error bars); empty: none
};

struct ChartOptions {
  std::string title, x_label, y_label;  // axis labels with their units; "(log scale)" is added
  bool log_x = false, log_y = false;
  int width = 720, height = 420;  // height of the plot part; a legend below adds to it
  double lo = NAN, hi = NAN;      // a fixed value-axis range (e.g. 0..1 for an accuracy)
  double mark = NAN;              // a vertical reference line at this x (bar charts: value)
  std::string mark_label;         // e.g. "trained length 512", "chance"
};

// Perplexity against context length, both axes log, the trained length marked: every such chart
// (compare's per-model and per-scheme charts, ppl --plot) starts from these options.
ChartOptions perplexity_chart(double trained_length, const std::string& title);

// Escapes <, >, & and " for SVG/HTML text and attributes.
std::string xml_escape(const std::string& s);

// Where a chart draws: the layout code calls these in page coordinates (pixels, y down).
struct Stroke {
  std::string color = "#000";
  double width = 1;
  int dash = 0;  // 0 solid, 1 dashed, 2 dotted, 3 dash-dot
};
class Canvas {
 public:
  virtual ~Canvas() = default;
  virtual void begin(int width, int height) = 0;
  virtual void line(double x1, double y1, double x2, double y2, const Stroke& s) = 0;
  virtual void polyline(const std::vector<std::pair<double, double>>& pts, const Stroke& s) = 0;
  virtual void rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke) = 0;
  // shape: 0 circle, 1 square, 2 triangle, 3 diamond, 4 cross, -1 none (a tooltip area); tip: a tooltip where the
  // format has them
  virtual void marker(double x, double y, int shape, const std::string& color, const std::string& tip) = 0;
  // anchor: -1 start, 0 middle, 1 end; vertical: rotated to read bottom-up
  virtual void text(double x, double y, const std::string& s, int anchor, double size, bool vertical = false,
                    const std::string& color = "#000") = 0;
};

void draw_line_chart(Canvas& c, const std::vector<Series>& series, const ChartOptions& opts);

struct Bar {
  std::string label, scheme;
  double value = NAN, err = NAN;  // err: the half-width of value's interval (an error bar)
  std::string text;               // the value as printed beside the bar ("" → the value, 3 digits)
};
// Horizontal bars (NaN/inf drawn as "n/a"); log_x for a log-scaled value axis (values <= 0 "n/a").
void draw_bar_chart(Canvas& c, const std::vector<Bar>& bars, const ChartOptions& opts);

std::string svg_line_chart(const std::vector<Series>& series, const ChartOptions& opts);
std::string svg_bar_chart(const std::vector<Bar>& bars, const ChartOptions& opts);
// The line chart as PNG bytes (cairo).
std::string png_line_chart(const std::vector<Series>& series, const ChartOptions& opts);

// "svg" or "png" from a plot file's extension (case-insensitive); "" for any other.
std::string plot_format(const std::string& path);

// Round axis ticks within [lo, hi]: 1, 2, 5 × 10^k (log: those within, fewer when the range is wide).
std::vector<double> nice_ticks(double lo, double hi, bool log);

}  // namespace ordo::cli
