// The charts of svg_chart.hpp as PNG: the same layout drawn by cairo.
#include <cairo.h>

#include <cmath>
#include <string>

#include "ordo/tensor.hpp"
#include "svg_chart.hpp"

namespace ordo::cli {
namespace {

// "#rrggbb" or "#rgb"; anything else (e.g. "transparent") draws nothing.
void set_color(cairo_t* cr, const std::string& c) {
  std::string hex = c.size() == 4 && c[0] == '#' ? std::string{'#', c[1], c[1], c[2], c[2], c[3], c[3]} : c;
  if (c == "white") hex = "#ffffff";
  if (hex.size() != 7 || hex[0] != '#') {
    cairo_set_source_rgba(cr, 0, 0, 0, 0);
    return;
  }
  const unsigned long v = std::stoul(hex.substr(1), nullptr, 16);
  cairo_set_source_rgb(cr, ((v >> 16) & 255) / 255.0, ((v >> 8) & 255) / 255.0, (v & 255) / 255.0);
}

class CairoCanvas : public Canvas {
 public:
  cairo_surface_t* surface = nullptr;
  cairo_t* cr = nullptr;
  ~CairoCanvas() override {
    if (cr) cairo_destroy(cr);
    if (surface) cairo_surface_destroy(surface);
  }
  void begin(int w, int h) override {
    surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h);
    cr = cairo_create(surface);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  }
  void stroke(const Stroke& s) {
    set_color(cr, s.color);
    cairo_set_line_width(cr, s.width);
    static const double d1[] = {7, 4}, d2[] = {2, 3}, d3[] = {8, 3, 2, 3};
    if (s.dash == 1)
      cairo_set_dash(cr, d1, 2, 0);
    else if (s.dash == 2)
      cairo_set_dash(cr, d2, 2, 0);
    else if (s.dash == 3)
      cairo_set_dash(cr, d3, 4, 0);
    else
      cairo_set_dash(cr, nullptr, 0, 0);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
  }
  void line(double x1, double y1, double x2, double y2, const Stroke& s) override {
    cairo_move_to(cr, x1, y1);
    cairo_line_to(cr, x2, y2);
    stroke(s);
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, const Stroke& s) override {
    if (pts.empty()) return;
    cairo_move_to(cr, pts[0].first, pts[0].second);
    for (size_t i = 1; i < pts.size(); ++i) cairo_line_to(cr, pts[i].first, pts[i].second);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    stroke(s);
  }
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& st) override {
    cairo_rectangle(cr, x, y, w, h);
    if (fill != "none") {
      set_color(cr, fill);
      if (st != "none")
        cairo_fill_preserve(cr);
      else
        cairo_fill(cr);
    }
    if (st != "none") stroke({st, 1, 0});
  }
  void marker(double x, double y, int shape, const std::string& color, const std::string&) override {
    switch (shape) {
      case -1: return;
      case 1: cairo_rectangle(cr, x - 3.5, y - 3.5, 7, 7); break;
      case 2:
        cairo_move_to(cr, x, y - 4.5), cairo_line_to(cr, x - 4.5, y + 3.5), cairo_line_to(cr, x + 4.5, y + 3.5);
        cairo_close_path(cr);
        break;
      case 3:
        cairo_move_to(cr, x, y - 5), cairo_line_to(cr, x + 5, y), cairo_line_to(cr, x, y + 5);
        cairo_line_to(cr, x - 5, y), cairo_close_path(cr);
        break;
      case 4:
        cairo_move_to(cr, x - 4, y - 4), cairo_line_to(cr, x + 4, y + 4);
        cairo_move_to(cr, x + 4, y - 4), cairo_line_to(cr, x - 4, y + 4);
        stroke({color, 2, 0});
        return;
      default: cairo_arc(cr, x, y, 3.5, 0, 2 * M_PI);
    }
    set_color(cr, color);
    cairo_fill(cr);
  }
  void text(double x, double y, const std::string& s, int anchor, double size, bool vertical,
            const std::string& color) override {
    cairo_save(cr);
    cairo_set_font_size(cr, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.c_str(), &e);
    const double dx = anchor < 0 ? 0 : anchor > 0 ? -e.x_advance : -e.x_advance / 2;
    cairo_translate(cr, x, y);
    if (vertical) cairo_rotate(cr, -M_PI / 2);
    cairo_move_to(cr, dx, 0);
    set_color(cr, color);
    cairo_show_text(cr, s.c_str());
    cairo_restore(cr);
  }
};

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

std::string png_line_chart(const std::vector<Series>& series, const ChartOptions& opts) {
  CairoCanvas c;
  draw_line_chart(c, series, opts);
  std::string png;
  if (cairo_surface_write_to_png_stream(c.surface, append, &png) != CAIRO_STATUS_SUCCESS)
    throw Error("cairo could not encode the plot as PNG");
  return png;
}

}  // namespace ordo::cli
