// Line and bar chart layout on a Canvas, and the SVG canvas (svg_chart.hpp).
#include "svg_chart.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace ordo::cli {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

std::string scheme_color(const std::string& scheme) {
  // Colour-blind-safe (Okabe–Ito), one per registered scheme; none (no positions) is grey.
  static const std::map<std::string, std::string> kSchemes = {{"none", "#7f7f7f"},    {"sinusoidal", "#e69f00"},
                                                              {"learned", "#56b4e9"}, {"rope", "#009e73"},
                                                              {"alibi", "#d55e00"},   {"relative", "#cc79a7"}};
  static const char* kOther[] = {"#0072b2", "#8c564b", "#bcbd22", "#17becf", "#9467bd"};
  const auto it = kSchemes.find(scheme);
  if (it != kSchemes.end()) return it->second;
  size_t h = 0;
  for (char ch : scheme) h = h * 31 + static_cast<unsigned char>(ch);
  return kOther[h % (sizeof(kOther) / sizeof(kOther[0]))];
}

std::string plot_format(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == "svg" || ext == "png" ? ext : "";
}

std::vector<double> nice_ticks(double lo, double hi, bool log) {
  std::vector<double> t;
  if (!(lo < hi)) return {lo};
  if (log) {
    const int k0 = static_cast<int>(std::floor(std::log10(lo))), k1 = static_cast<int>(std::ceil(std::log10(hi)));
    for (const std::vector<double>& mult : {std::vector<double>{1, 2, 5}, std::vector<double>{1}}) {
      t.clear();
      const int every = k1 - k0 > 12 ? (k1 - k0) / 6 : 1;
      for (int k = k0; k <= k1; ++k)
        for (double m : mult) {
          const double v = m * std::pow(10.0, k);
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9) && (mult.size() > 1 || (k - k0) % every == 0))
            t.push_back(v);
        }
      if (t.size() <= 8) break;
    }
    if (t.size() >= 3) return t;
    // a range within a few 1-2-5 steps: linear round ticks on it
  }
  const double raw = (hi - lo) / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
  t.clear();
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

namespace {

// A round number as a reader writes it: 2000, 0.05, 1e-7 (no "e+03", no "e-07").
std::string tick_label(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (v == std::round(v) && a < 1e7) {  // a whole number (a measured length: 1024) as it is
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  if (a >= 1e-4 && a < 1e7) {
    std::snprintf(buf, sizeof buf, "%.6g", std::stod([&] {
                    char b[32];
                    std::snprintf(b, sizeof b, "%.3g", v);
                    return std::string(b);
                  }()));
    return buf;
  }
  const int e = static_cast<int>(std::floor(std::log10(a)));
  const double m = v / std::pow(10.0, e);
  if (std::fabs(m - std::round(m)) < 1e-9)
    std::snprintf(buf, sizeof buf, "%se%d",
                  std::round(m) == 1 ? "1" : std::to_string(static_cast<int>(std::round(m))).c_str(), e);
  else
    std::snprintf(buf, sizeof buf, "%.2ge%d", m, e);
  return buf;
}

// Approximate width of s at `size` px in a sans-serif font (UTF-8 code points × 0.58 em).
double text_width(const std::string& s, double size) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return 0.58 * size * static_cast<double>(n);
}

std::string with_scale(const std::string& label, bool log) { return log ? label + " (log scale)" : label; }

// One colour per scheme; series of the same colour told apart by dash and marker shape.
struct Look {
  std::string color;
  int dash = 0, shape = 0;
};
std::vector<Look> looks(const std::vector<Series>& series) {
  static const char* kByIndex[] = {"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#7f7f7f"};
  std::map<std::string, int> seen;
  std::vector<Look> out;
  for (size_t i = 0; i < series.size(); ++i) {
    Look l;
    l.color = series[i].scheme.empty() ? kByIndex[i % 7] : scheme_color(series[i].scheme);
    const int k = seen[l.color]++;
    l.dash = k % 4;
    l.shape = k % 5;
    out.push_back(l);
  }
  return out;
}

// The legend below a chart: as many columns as fit the width, wrapped into rows.
struct LegendLayout {
  int cols = 1, rows = 0;
  double item_w = 0;
};
LegendLayout legend_layout(const std::vector<std::string>& names, int width) {
  LegendLayout l;
  if (names.size() <= 1) return l;
  double w = 0;
  for (const std::string& n : names) w = std::max(w, text_width(n, 12));
  l.item_w = w + 44;
  l.cols = std::max(1, static_cast<int>((width - 40) / l.item_w));
  l.rows = static_cast<int>((names.size() + l.cols - 1) / l.cols);
  return l;
}
constexpr double kLegendRow = 18;

void axis_frame(Canvas& c, double L, double T, double pw, double ph) { c.rect(L, T, pw, ph, "none", "#444"); }

// The plotted range: every finite point with its error bar (and the mark), widened to round
// numbers unless ChartOptions fixes it.
struct PlotRange {
  double x0, x1, y0, y1;
};

PlotRange plot_range(const std::vector<Series>& series, const ChartOptions& o) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i]) || (o.log_y && s.y[i] <= 0) || (o.log_x && s.x[i] <= 0)) continue;
      const double e = i < s.err.size() && std::isfinite(s.err[i]) ? s.err[i] : 0.0;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, o.log_y && s.y[i] - e <= 0 ? s.y[i] : s.y[i] - e);
      y1 = std::max(y1, s.y[i] + e);
    }
  if (std::isfinite(o.mark) && (!o.log_x || o.mark > 0)) x0 = std::min(x0, o.mark), x1 = std::max(x1, o.mark);
  if (!std::isfinite(x0)) x0 = 1, x1 = 10, y0 = 1, y1 = 10;
  if (std::isfinite(o.lo)) y0 = o.lo;
  if (std::isfinite(o.hi)) y1 = o.hi;
  if (x1 == x0) x1 = o.log_x ? x0 * 2 : x0 + 1, x0 = o.log_x ? x0 / 2 : x0 - 1;
  if (y1 == y0) y1 = o.log_y ? y0 * 2 : y0 + 1, y0 = o.log_y ? y0 / 2 : y0 - 1;
  // Widen the value range to round numbers (a 1-2-5 tick or a 5% margin) unless it is fixed.
  if (!std::isfinite(o.lo) || !std::isfinite(o.hi)) {
    if (o.log_y) {
      const double d = std::pow(10.0, (std::log10(y1) - std::log10(y0)) * 0.05);
      if (!std::isfinite(o.lo)) y0 /= d;
      if (!std::isfinite(o.hi)) y1 *= d;
    } else {
      const double d = (y1 - y0) * 0.05;
      if (!std::isfinite(o.lo)) y0 = y0 >= 0 && y0 - d < 0 ? 0 : y0 - d;
      if (!std::isfinite(o.hi)) y1 += d;
    }
  }
  return {x0, x1, y0, y1};
}

// Legend names; a series identical to an earlier one would hide behind it: its legend entry names
// the twin and dodge[i] counts its twins, to shift its markers sideways.
std::vector<std::string> legend_names(const std::vector<Series>& series, std::vector<int>& dodge) {
  std::vector<std::string> names;
  for (size_t i = 0; i < series.size(); ++i) {
    names.push_back(series[i].name);
    int twins = 0;
    for (size_t j = 0; j < i; ++j)
      if (series[j].x == series[i].x && series[j].y == series[i].y) {
        if (twins++ == 0) names.back() += " (= " + series[j].name + ")";
      }
    dodge[i] = twins;
  }
  return names;
}

// x ticks: the measured lengths themselves when they are a few whole numbers (128, 256, 512), else
// round ticks.
std::vector<double> x_ticks(const std::vector<Series>& series, const ChartOptions& o, double x0, double x1) {
  std::vector<double> xt;
  for (const Series& s : series)
    for (double v : s.x)
      if (std::isfinite(v) && (!o.log_x || v > 0)) xt.push_back(v);
  std::sort(xt.begin(), xt.end());
  xt.erase(std::unique(xt.begin(), xt.end()), xt.end());
  const bool whole = std::all_of(xt.begin(), xt.end(), [](double v) { return v == std::round(v); });
  if (xt.size() < 2 || xt.size() > 8 || !whole) xt = nice_ticks(x0, x1, o.log_x);
  return xt;
}

}  // namespace

void draw_line_chart(Canvas& c, const std::vector<Series>& series, const ChartOptions& o) {
  auto tx = [&](double v) { return o.log_x ? std::log10(v) : v; };
  auto ty = [&](double v) { return o.log_y ? std::log10(v) : v; };
  const PlotRange r = plot_range(series, o);
  const double x0 = r.x0, x1 = r.x1, y0 = r.y0, y1 = r.y1;
  std::vector<int> dodge(series.size(), 0);
  const std::vector<std::string> names = legend_names(series, dodge);
  const LegendLayout lg = legend_layout(names, o.width);
  const double L = 78, R = 24, T = 40, B = 56;
  const double pw = o.width - L - R, ph = o.height - T - B;
  const int height = o.height + static_cast<int>(lg.rows * kLegendRow + (lg.rows ? 8 : 0));
  const double X0 = tx(x0), X1 = tx(x1), Y0 = ty(y0), Y1 = ty(y1);
  // x: a small margin so end points and their markers are inside the frame
  const double xm = (X1 - X0) * 0.03;
  auto px = [&](double v) { return L + (tx(v) - X0 + xm) / (X1 - X0 + 2 * xm) * pw; };
  auto py = [&](double v) { return T + ph - (ty(v) - Y0) / (Y1 - Y0) * ph; };

  c.begin(o.width, height);
  c.rect(0, 0, o.width, height, "white", "none");
  c.text(o.width / 2.0, 22, o.title, 0, 15);
  for (double v : nice_ticks(y0, y1, o.log_y)) {
    if (v < y0 || v > y1) continue;
    c.line(L - 5, py(v), L + pw, py(v), {"#ddd", 1, 0});
    c.text(L - 8, py(v) + 4, tick_label(v), 1, 12);
  }
  const std::vector<double> xt = x_ticks(series, o, x0, x1);
  for (double v : xt) {
    c.line(px(v), T, px(v), T + ph + 5, {"#eee", 1, 0});
    c.text(px(v), T + ph + 18, tick_label(v), 0, 12);
  }
  axis_frame(c, L, T, pw, ph);
  c.text(L + pw / 2, T + ph + 38, with_scale(o.x_label, o.log_x), 0, 12);
  c.text(18, T + ph / 2, with_scale(o.y_label, o.log_y), 0, 12, true);
  if (std::isfinite(o.mark) && (!o.log_x || o.mark > 0)) {
    c.line(px(o.mark), T, px(o.mark), T + ph, {"#444", 1.2, 1});
    c.text(px(o.mark) + 4, T + 13, o.mark_label, -1, 11, false, "#444");
  }
  const std::vector<Look> lk = looks(series);
  // Sideways shifts: a twin's markers, and the error bars of several series at one x, apart.
  bool bars = false;
  for (const Series& s : series) bars = bars || !s.err.empty();
  std::vector<double> shift(series.size());
  for (size_t si = 0; si < series.size(); ++si)
    shift[si] = 5.0 * dodge[si] + (bars ? 3.0 * (static_cast<double>(si) - (series.size() - 1) / 2.0) : 0.0);
  for (size_t si = 0; si < series.size(); ++si) {
    const Series& s = series[si];
    std::vector<std::pair<double, double>> pts;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i]) || (o.log_y && s.y[i] <= 0) || (o.log_x && s.x[i] <= 0)) continue;
      pts.emplace_back(px(s.x[i]) + shift[si], py(s.y[i]));
      if (i < s.err.size() && std::isfinite(s.err[i]) && s.err[i] > 0) {
        const double lo = o.log_y && s.y[i] - s.err[i] <= 0 ? y0 : std::max(y0, s.y[i] - s.err[i]);
        const double hi = std::min(y1, s.y[i] + s.err[i]);
        const double x = px(s.x[i]) + shift[si];
        c.line(x, py(lo), x, py(hi), {lk[si].color, 1.2, 0});
        c.line(x - 4, py(lo), x + 4, py(lo), {lk[si].color, 1.2, 0});
        c.line(x - 4, py(hi), x + 4, py(hi), {lk[si].color, 1.2, 0});
      }
    }
    c.polyline(pts, {lk[si].color, 2, lk[si].dash});
    for (size_t i = 0, p = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i]) || (o.log_y && s.y[i] <= 0) || (o.log_x && s.x[i] <= 0)) continue;
      const std::string err =
          i < s.err.size() && std::isfinite(s.err[i]) ? " ± " + tick_label(s.err[i]) : std::string();
      c.marker(pts[p].first, pts[p].second, lk[si].shape, lk[si].color,
               s.name + ": " + tick_label(s.x[i]) + " → " + tick_label(s.y[i]) + err);
      ++p;
    }
  }
  if (series.size() == 1 && !series[0].name.empty()) {
    c.text(L + pw - 6, T + 16, series[0].name, 1, 12, false, lk[0].color);
  }
  for (size_t si = 0; si < series.size() && lg.rows > 0; ++si) {
    const double lx = 40 + lg.item_w * static_cast<double>(si % lg.cols);
    const double ly = o.height + kLegendRow * static_cast<double>(si / lg.cols);
    c.line(lx, ly, lx + 28, ly, {lk[si].color, 2, lk[si].dash});
    c.marker(lx + 14, ly, lk[si].shape, lk[si].color, "");
    c.text(lx + 34, ly + 4, names[si], -1, 12);
  }
}

void draw_bar_chart(Canvas& c, const std::vector<Bar>& bars, const ChartOptions& o) {
  auto ok = [&](double v) { return std::isfinite(v) && (!o.log_x || v > 0); };
  auto tv = [&](double v) { return o.log_x ? std::log10(v) : v; };
  double v0 = o.log_x ? INFINITY : 0.0, v1 = -INFINITY;
  for (const Bar& b : bars)
    if (ok(b.value)) {
      const double e = std::isfinite(b.err) ? b.err : 0.0;
      v0 = std::min(v0, o.log_x ? b.value : b.value - e);
      v1 = std::max(v1, b.value + e);
    }
  if (!std::isfinite(v1)) v0 = o.log_x ? 1 : 0, v1 = o.log_x ? 10 : 1;
  if (o.log_x) v0 = std::pow(10.0, std::floor(std::log10(v0))), v1 = std::pow(10.0, std::ceil(std::log10(v1)));
  if (std::isfinite(o.lo)) v0 = o.lo;
  if (std::isfinite(o.hi)) v1 = o.hi;
  if (v1 <= v0) v1 = o.log_x ? v0 * 10 : v0 + 1;
  double lw = 60;
  for (const Bar& b : bars) lw = std::max(lw, text_width(b.label, 12) + 16);
  const double L = std::min(lw, o.width * 0.4), R = 120, T = 40, bar = 22;
  const double ph = bar * static_cast<double>(bars.size());
  std::vector<std::string> schemes;
  for (const Bar& b : bars)
    if (!b.scheme.empty() && std::find(schemes.begin(), schemes.end(), b.scheme) == schemes.end())
      schemes.push_back(b.scheme);
  const LegendLayout lg = legend_layout(schemes, o.width);
  const int height = static_cast<int>(T + ph + 48 + lg.rows * kLegendRow + (lg.rows ? 6 : 0));
  const double pw = o.width - L - R;
  auto px = [&](double v) { return L + (tv(v) - tv(v0)) / (tv(v1) - tv(v0)) * pw; };
  c.begin(o.width, height);
  c.rect(0, 0, o.width, height, "white", "none");
  c.text(o.width / 2.0, 22, o.title, 0, 15);
  for (double t : nice_ticks(v0, v1, o.log_x)) {
    c.line(px(t), T, px(t), T + ph + 5, {"#ddd", 1, 0});
    c.text(px(t), T + ph + 18, tick_label(t), 0, 12);
  }
  c.text(L + pw / 2, T + ph + 36, with_scale(o.x_label, o.log_x), 0, 12);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = T + bar * static_cast<double>(i);
    c.text(L - 8, y + bar * 0.65, b.label, 1, 12);
    if (!ok(b.value)) {
      c.text(L + 4, y + bar * 0.65, "n/a", -1, 12, false, "#888");
      continue;
    }
    const std::string color = b.scheme.empty() ? "#0072b2" : scheme_color(b.scheme);
    const double x = std::clamp(px(b.value), L, L + pw);
    const std::string tip =
        b.label + ": " + tick_label(b.value) + (std::isfinite(b.err) ? " ± " + tick_label(b.err) : std::string());
    c.rect(L, y + 3, std::max(1.0, x - L), bar - 6, color, "none");
    c.marker(x, y + bar / 2, -1, color, tip);  // invisible: the tooltip
    double end = x;
    if (std::isfinite(b.err) && b.err > 0) {
      const double lo = std::clamp(px(o.log_x ? std::max(b.value - b.err, v0) : b.value - b.err), L, L + pw);
      const double hi = std::clamp(px(b.value + b.err), L, L + pw);
      c.line(lo, y + bar / 2, hi, y + bar / 2, {"#222", 1.2, 0});
      c.line(lo, y + 5, lo, y + bar - 5, {"#222", 1.2, 0});
      c.line(hi, y + 5, hi, y + bar - 5, {"#222", 1.2, 0});
      end = std::max(end, hi);
    }
    c.text(end + 4, y + bar * 0.65, b.text.empty() ? tip.substr(b.label.size() + 2) : b.text, -1, 11, false, "#333");
  }
  c.line(L, T, L, T + ph, {"#444", 1, 0});
  if (std::isfinite(o.mark) && o.mark >= v0 && o.mark <= v1) {
    c.line(px(o.mark), T - 4, px(o.mark), T + ph, {"#444", 1.2, 1});
    c.text(px(o.mark), T - 7, o.mark_label, 0, 11, false, "#444");
  }
  for (size_t si = 0; si < schemes.size() && lg.rows > 0; ++si) {
    const double lx = 40 + lg.item_w * static_cast<double>(si % lg.cols);
    const double ly = T + ph + 52 + kLegendRow * static_cast<double>(si / lg.cols);
    c.rect(lx, ly - 6, 24, 12, scheme_color(schemes[si]), "none");
    c.text(lx + 34, ly + 4, schemes[si], -1, 12);
  }
}

namespace {

std::string n2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

const char* dash_array(int dash) {
  switch (dash) {
    case 1: return "7,4";
    case 2: return "2,3";
    case 3: return "8,3,2,3";
    default: return nullptr;
  }
}

class SvgCanvas : public Canvas {
 public:
  std::ostringstream out;
  void begin(int w, int h) override {
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << w << "\" height=\"" << h
        << "\" viewBox=\"0 0 " << w << " " << h << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  }
  static std::string stroke(const Stroke& s) {
    std::string a = " stroke=\"" + s.color + "\" stroke-width=\"" + n2(s.width) + "\"";
    if (const char* d = dash_array(s.dash)) a += std::string(" stroke-dasharray=\"") + d + "\"";
    return a;
  }
  void line(double x1, double y1, double x2, double y2, const Stroke& s) override {
    out << "<line x1=\"" << n2(x1) << "\" y1=\"" << n2(y1) << "\" x2=\"" << n2(x2) << "\" y2=\"" << n2(y2) << "\""
        << stroke(s) << "/>\n";
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, const Stroke& s) override {
    out << "<polyline fill=\"none\"" << stroke(s) << " points=\"";
    for (const auto& [x, y] : pts) out << n2(x) << "," << n2(y) << " ";
    out << "\"/>\n";
  }
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& st) override {
    out << "<rect x=\"" << n2(x) << "\" y=\"" << n2(y) << "\" width=\"" << n2(w) << "\" height=\"" << n2(h)
        << "\" fill=\"" << fill << "\" stroke=\"" << st << "\"/>\n";
  }
  void marker(double x, double y, int shape, const std::string& color, const std::string& tip) override {
    const std::string t = tip.empty() ? "" : "<title>" + xml_escape(tip) + "</title>";
    const std::string fill = " fill=\"" + color + "\"";
    switch (shape) {
      case -1:
        out << "<circle cx=\"" << n2(x) << "\" cy=\"" << n2(y) << "\" r=\"6\" fill=\"" << color
            << "\" fill-opacity=\"0\">" << t << "</circle>\n";
        break;
      case 1:
        out << "<rect x=\"" << n2(x - 3.5) << "\" y=\"" << n2(y - 3.5) << "\" width=\"7\" height=\"7\"" << fill << ">"
            << t << "</rect>\n";
        break;
      case 2:
        out << "<polygon points=\"" << n2(x) << "," << n2(y - 4.5) << " " << n2(x - 4.5) << "," << n2(y + 3.5) << " "
            << n2(x + 4.5) << "," << n2(y + 3.5) << "\"" << fill << ">" << t << "</polygon>\n";
        break;
      case 3:
        out << "<polygon points=\"" << n2(x) << "," << n2(y - 5) << " " << n2(x + 5) << "," << n2(y) << " " << n2(x)
            << "," << n2(y + 5) << " " << n2(x - 5) << "," << n2(y) << "\"" << fill << ">" << t << "</polygon>\n";
        break;
      case 4:
        out << "<path d=\"M" << n2(x - 4) << " " << n2(y - 4) << "L" << n2(x + 4) << " " << n2(y + 4) << "M"
            << n2(x + 4) << " " << n2(y - 4) << "L" << n2(x - 4) << " " << n2(y + 4) << "\" stroke=\"" << color
            << "\" stroke-width=\"2\">" << t << "</path>\n";
        break;
      default:
        out << "<circle cx=\"" << n2(x) << "\" cy=\"" << n2(y) << "\" r=\"3.5\"" << fill << ">" << t << "</circle>\n";
    }
  }
  void text(double x, double y, const std::string& s, int anchor, double size, bool vertical,
            const std::string& color) override {
    const char* a = anchor < 0 ? "start" : anchor > 0 ? "end" : "middle";
    out << "<text";
    if (vertical)
      out << " transform=\"translate(" << n2(x) << "," << n2(y) << ") rotate(-90)\"";
    else
      out << " x=\"" << n2(x) << "\" y=\"" << n2(y) << "\"";
    out << " text-anchor=\"" << a << "\"";
    if (size != 12) out << " font-size=\"" << size << "\"";
    if (color != "#000") out << " fill=\"" << color << "\"";
    out << ">" << xml_escape(s) << "</text>\n";
  }
};

}  // namespace

ChartOptions perplexity_chart(double trained_length, const std::string& title) {
  ChartOptions co;
  co.title = title;
  co.x_label = "context length (tokens)";
  co.y_label = "perplexity";
  co.log_x = co.log_y = true;
  co.mark = trained_length;
  co.mark_label = "trained length";
  return co;
}

std::string svg_line_chart(const std::vector<Series>& series, const ChartOptions& opts) {
  SvgCanvas c;
  draw_line_chart(c, series, opts);
  c.out << "</svg>\n";
  return c.out.str();
}

std::string svg_bar_chart(const std::vector<Bar>& bars, const ChartOptions& opts) {
  SvgCanvas c;
  draw_bar_chart(c, bars, opts);
  c.out << "</svg>\n";
  return c.out.str();
}

}  // namespace ordo::cli
