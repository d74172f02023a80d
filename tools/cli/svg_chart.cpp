#include "svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ordo::cli {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

namespace {

const auto& esc = xml_escape;

std::string num(double v) {
  std::ostringstream os;
  os.precision(v >= 1000 ? 6 : 4);
  os << v;
  return os.str();
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

}  // namespace

std::string svg_line_chart(const std::vector<Series>& series, const ChartOptions& o) {
  auto tx = [&](double v) { return o.log_x ? std::log10(v) : v; };
  auto ty = [&](double v) { return o.log_y ? std::log10(v) : v; };
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i]) || (o.log_y && s.y[i] <= 0) || (o.log_x && s.x[i] <= 0)) continue;
      x0 = std::min(x0, tx(s.x[i]));
      x1 = std::max(x1, tx(s.x[i]));
      y0 = std::min(y0, ty(s.y[i]));
      y1 = std::max(y1, ty(s.y[i]));
    }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad;
  y1 += pad;
  const int L = 70, R = 170, T = 40, B = 50;
  const double pw = o.width - L - R, ph = o.height - T - B;
  auto px = [&](double v) { return L + (tx(v) - x0) / (x1 - x0) * pw; };
  auto py = [&](double v) { return T + ph - (ty(v) - y0) / (y1 - y0) * ph; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\"" << o.height
      << "\" viewBox=\"0 0 " << o.width << " " << o.height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << o.width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << esc(o.title) << "</text>\n"
      << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
  // ticks: at data x values (union), and 5 y ticks
  std::vector<double> xs;
  for (const Series& s : series) xs.insert(xs.end(), s.x.begin(), s.x.end());
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (double v : xs) {
    if (o.log_x && v <= 0) continue;
    svg << "<line x1=\"" << px(v) << "\" x2=\"" << px(v) << "\" y1=\"" << T + ph << "\" y2=\"" << T + ph + 5
        << "\" stroke=\"#444\"/><text x=\"" << px(v) << "\" y=\"" << T + ph + 18 << "\" text-anchor=\"middle\">" << num(v)
        << "</text>\n";
  }
  for (int i = 0; i <= 5; ++i) {
    const double tv = y0 + (y1 - y0) * i / 5.0;
    const double v = o.log_y ? std::pow(10.0, tv) : tv;
    const double yy = T + ph - ph * i / 5.0;
    svg << "<line x1=\"" << L - 5 << "\" x2=\"" << L + pw << "\" y1=\"" << yy << "\" y2=\"" << yy
        << "\" stroke=\"#ddd\"/><text x=\"" << L - 8 << "\" y=\"" << yy + 4 << "\" text-anchor=\"end\">" << num(v)
        << "</text>\n";
  }
  svg << "<text x=\"" << L + pw / 2 << "\" y=\"" << o.height - 12 << "\" text-anchor=\"middle\">" << esc(o.x_label)
      << "</text>\n<text transform=\"translate(16," << T + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << esc(o.y_label) << "</text>\n";
  for (size_t si = 0; si < series.size(); ++si) {
    const Series& s = series[si];
    const char* color = kColors[si % (sizeof(kColors) / sizeof(kColors[0]))];
    std::ostringstream pts;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i]) || (o.log_y && s.y[i] <= 0)) continue;
      pts << px(s.x[i]) << "," << py(s.y[i]) << " ";
      svg << "<circle cx=\"" << px(s.x[i]) << "\" cy=\"" << py(s.y[i]) << "\" r=\"3\" fill=\"" << color
          << "\"><title>" << esc(s.name) << ": " << num(s.x[i]) << " → " << num(s.y[i]) << "</title></circle>\n";
    }
    svg << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"" << pts.str() << "\"/>\n";
    const double ly = T + 10 + 18.0 * si;
    svg << "<line x1=\"" << L + pw + 12 << "\" x2=\"" << L + pw + 32 << "\" y1=\"" << ly << "\" y2=\"" << ly
        << "\" stroke=\"" << color << "\" stroke-width=\"2\"/><text x=\"" << L + pw + 38 << "\" y=\"" << ly + 4 << "\">"
        << esc(s.name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string svg_bar_chart(const std::vector<std::string>& labels, const std::vector<double>& values,
                          const ChartOptions& o) {
  auto ok = [&](double v) { return std::isfinite(v) && (!o.log_x || v > 0); };
  auto tv = [&](double v) { return o.log_x ? std::log10(v) : v; };
  double v0 = o.log_x ? INFINITY : 0.0, v1 = -INFINITY;
  for (double v : values)
    if (ok(v)) v0 = std::min(v0, tv(v)), v1 = std::max(v1, tv(v));
  if (!std::isfinite(v1)) v0 = 0, v1 = 1;
  if (o.log_x) v0 = std::floor(v0), v1 = std::ceil(v1);
  if (v1 <= v0) v1 = v0 + 1;
  const int L = 170, R = 90, T = 40, B = 45, bar = 22;
  const int height = T + B + bar * static_cast<int>(labels.size());
  const double pw = o.width - L - R;
  auto px = [&](double v) { return L + (tv(v) - v0) / (v1 - v0) * pw; };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << o.width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << o.width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << esc(o.title) << "</text>\n";
  // log axis: a tick per decade (v0, v1 are whole decades); linear: 4 intervals
  const int nt = o.log_x ? std::min(10, static_cast<int>(v1 - v0)) : 4;
  for (int i = 0; i <= nt; ++i) {
    const double t = v0 + (v1 - v0) * i / nt;
    const double xx = L + pw * i / nt;
    svg << "<line x1=\"" << xx << "\" x2=\"" << xx << "\" y1=\"" << T << "\" y2=\"" << T + bar * labels.size() + 5
        << "\" stroke=\"#ddd\"/><text x=\"" << xx << "\" y=\"" << T + bar * labels.size() + 18
        << "\" text-anchor=\"middle\">" << num(o.log_x ? std::pow(10.0, t) : t) << "</text>\n";
  }
  svg << "<text x=\"" << L + pw / 2 << "\" y=\"" << height - 8 << "\" text-anchor=\"middle\">" << esc(o.x_label)
      << "</text>\n";
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = T + bar * static_cast<double>(i);
    const double v = i < values.size() ? values[i] : NAN;
    svg << "<text x=\"" << L - 8 << "\" y=\"" << y + bar * 0.65 << "\" text-anchor=\"end\">" << esc(labels[i])
        << "</text>\n";
    if (!ok(v)) {
      svg << "<text x=\"" << L + 4 << "\" y=\"" << y + bar * 0.65 << "\" fill=\"#888\">n/a</text>\n";
      continue;
    }
    const double w = std::max(1.0, px(v) - L);
    svg << "<rect x=\"" << L << "\" y=\"" << y + 3 << "\" width=\"" << w << "\" height=\"" << bar - 6 << "\" fill=\""
        << kColors[i % (sizeof(kColors) / sizeof(kColors[0]))] << "\"><title>" << esc(labels[i]) << ": " << num(v)
        << "</title></rect><text x=\"" << L + w + 4 << "\" y=\"" << y + bar * 0.65 << "\">" << num(v) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace ordo::cli
