// `ordo compare --html`: the report page, section by section (compare_html.hpp).
#include "compare_html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "compare_groups.hpp"
#include "compare_report.hpp"
#include "compare_tasks.hpp"
#include "ordo/probes.hpp"
#include "ordo/stats.hpp"
#include "svg_chart.hpp"

namespace ordo::cli {
namespace {

using json = nlohmann::json;
using namespace report;

double num(const json& v) { return v.is_number() ? v.get<double>() : NAN; }

const char* kStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.4}"
    "table{border-collapse:collapse;margin:1em 0;display:block;max-width:100%;overflow-x:auto}"  // wide: scrolls
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}.na{color:#999}"
    ".err{color:#a33;text-align:left;font-size:smaller}.pm{white-space:nowrap}"
    "svg.chart{display:block;margin:1em 0;max-width:100%;height:auto}"
    ".swatch{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em}"
    "section.summary{background:#f6f8fa;border:1px solid #dde;padding:.2em 1.2em;margin:1em 0}"
    "details{margin:1em 0}summary{cursor:pointer}";

// The scheme's name with its colour swatch (the colour every chart uses for it).
std::string scheme_label(const std::string& scheme) {
  return "<span class=\"swatch\" style=\"background:" + scheme_color(scheme) + "\"></span>" + html_escape(scheme);
}

// Settings and models, folded: what a reader needs to reproduce the run, not to read the findings.
void html_setup(const json& doc, std::ostream& h) {
  h << "<h2>Setup</h2>\n<details><summary>settings and the " << doc["models"].size()
    << " models</summary>\n<table><tr><th>format</th>" << cell(doc, "/format") << "</tr>";
  for (auto it = doc["settings"].begin(); it != doc["settings"].end(); ++it) {
    const std::string ptr = "/settings/" + it.key();
    h << "<tr><th>" << html_escape(it.key()) << "</th>";
    if (it->is_number()) {
      h << cell(doc, ptr);
    } else if (it->is_array()) {
      h << "<td>";
      for (size_t i = 0; i < it->size(); ++i) h << (i ? ", " : "") << cell(doc, ptr + "/" + std::to_string(i), "span");
      h << "</td>";
    } else {
      h << text_cell(it->is_string() ? it->get<std::string>() : it->dump());
    }
    h << "</tr>";
  }
  h << "</table>\n<table><tr><th>model</th><th>dir</th><th>family</th><th>scheme</th>"
       "<th>kind</th><th>seed</th><th>trained length (tokens)</th><th>length base (tokens)</th>"
       "<th>held-out tokens</th></tr>\n";
  for (size_t i = 0; i < doc["models"].size(); ++i) {
    const json& mm = doc["models"][i];
    const std::string p = "/models/" + std::to_string(i);
    h << "<tr>" << text_cell(mm["label"].get<std::string>()) << text_cell(mm["dir"].get<std::string>())
      << text_cell(mm["family"].get<std::string>()) << "<td>" << scheme_label(mm["scheme"].get<std::string>())
      << (mm["position_override"].get<std::string>().empty() ? "" : " (replaced)") << "</td>"
      << text_cell(mm["kind"].get<std::string>()) << cell(doc, p + "/seed") << cell(doc, p + "/trained_length")
      << cell(doc, p + "/ctx_base") << cell(doc, p + "/heldout_tokens") << "</tr>\n";
  }
  h << "</table></details>\n";
}

// One table row per result of doc[section]: model, scheme, the `lead` fields, then `fields` (n/a
// across them when the probe gave no `chart` field), the error; the table closed. Returns one bar
// per model with its `chart` field (NaN when n/a), for the section's chart.
std::vector<Bar> html_result_rows(const json& doc, const std::string& section, std::initializer_list<const char*> lead,
                                  std::initializer_list<const char*> fields, const char* chart, std::ostream& h) {
  std::vector<Bar> bars;
  const json& results = doc[section]["results"];
  for (size_t i = 0; i < results.size(); ++i) {
    const json& r = results[i];
    const std::string p = "/" + section + "/results/" + std::to_string(i) + "/";
    Bar b{r["model"].get<std::string>(), r["scheme"].get<std::string>(), NAN, NAN, ""};
    h << "<tr>" << text_cell(b.label) << "<td>" << scheme_label(b.scheme) << "</td>";
    for (const char* f : lead) h << cell(doc, p + f);
    if (r.contains(chart)) {
      for (const char* f : fields) h << cell(doc, p + f);
      b.value = r[chart].get<double>();
    } else {
      h << "<td class=\"na\" colspan=\"" << fields.size() << "\">n/a</td>";
    }
    bars.push_back(b);
    h << err_cell(r) << "</tr>\n";
  }
  h << "</table>\n";
  return bars;
}

// A bar per group of doc[section]["groups"]: the interval at `field`, as mean with an error bar.
std::vector<Bar> group_bars(const json& groups, const char* field) {
  std::vector<Bar> bars;
  for (const json& g : groups)
    bars.push_back({g["kind"].get<std::string>() + " " + g["scheme"].get<std::string>(), g["scheme"].get<std::string>(),
                    num(g[field]["mean"]), num(g[field]["half_width"]), pm(g[field])});
  return bars;
}

void html_word_order_groups(const json& doc, std::ostream& h) {
  const json& wo = doc["word_order"];
  if (wo["groups"].empty()) return;
  h << "<h3>By kind and scheme</h3>\n<p>Seeds are replicates: mean ± half-width of the 95% Student t "
       "interval (n − 1 dof) over seeds; item margin: each pair's margin averaged over the seeds, then mean ± "
       "interval over pairs. Margins in nats.</p>\n<table><tr><th>kind</th><th>scheme</th><th>seeds</th>"
       "<th>accuracy</th><th>mean margin (nats)</th><th>pairs</th><th>item margin (nats)</th></tr>\n";
  for (size_t i = 0; i < wo["groups"].size(); ++i) {
    const json& g = wo["groups"][i];
    const std::string p = "/word_order/groups/" + std::to_string(i);
    h << "<tr>" << text_cell(g["kind"].get<std::string>()) << "<td>" << scheme_label(g["scheme"].get<std::string>())
      << "</td>" << cell(doc, p + "/seeds") << pm_cell(doc, p + "/accuracy") << pm_cell(doc, p + "/mean_margin")
      << cell(doc, p + "/pairs") << pm_cell(doc, p + "/item_margin") << "</tr>\n";
  }
  h << "</table>\n";
  ChartOptions co;
  co.title = "word order: accuracy by scheme (mean over seeds, 95% interval)";
  co.x_label = "accuracy (fraction of pairs, 0–1)";
  co.lo = 0, co.hi = 1, co.mark = 0.5, co.mark_label = "chance";
  h << svg_bar_chart(group_bars(wo["groups"], "accuracy"), co);
  h << "<p>Paired t-tests (two-sided) on the per-pair margins averaged over seeds, between every two schemes of a "
       "kind; significance after Holm's correction over all of them.</p>\n";
  html_test_table(doc, "/word_order/tests", h);
}

// Every pair, then one row per model: both scores and the margin.
void html_word_order_pairs(const json& doc, std::ostream& h) {
  const json& wo = doc["word_order"];
  h << "<details><summary>the " << wo["pairs"].size()
    << " pairs, scored by every model</summary><p>Scores in nats: pseudo-log-likelihood for masked-LM "
       "encoders (pll), log-probability otherwise (logprob). A tie (margin 0) is a margin within float rounding: "
       "|margin| ≤ "
    << show(json(probes::kTieTolerance))
    << " × Σ|per-token terms| of both texts.</p><table><tr><th>model</th><th>score</th>"
       "<th>original</th><th>swapped</th><th>margin</th><th></th></tr>";
  for (size_t i = 0; i < wo["pairs"].size(); ++i) {
    const json& pr = wo["pairs"][i];
    h << "<tr><th colspan=\"6\">#" << i + 1 << " " << html_escape(pr["original"].get<std::string>()) << " / "
      << html_escape(pr["swapped"].get<std::string>()) << "</th></tr>\n";
    for (size_t m = 0; m < wo["results"].size(); ++m) {
      const json& r = wo["results"][m];
      if (!r.contains("scores")) continue;
      const std::string p = "/word_order/results/" + std::to_string(m) + "/scores/" + std::to_string(i);
      h << "<tr>" << text_cell(r["model"].get<std::string>()) << text_cell(r["method"].get<std::string>())
        << cell(doc, p + "/original") << cell(doc, p + "/swapped") << cell(doc, p + "/margin")
        << text_cell(r["scores"][i]["tie"].get<bool>() ? "tie" : "") << "</tr>\n";
    }
  }
  h << "</table></details>\n";
}

void html_word_order(const json& doc, std::ostream& h) {
  h << "<a id=\"word-order\"></a><h2>Word order</h2>\n<p>Each pair differs only in the order of two words; a model is "
       "right when "
       "the original has the higher score (ties count half): pseudo-log-likelihood for masked-LM encoders, "
       "total log-probability otherwise. Margin: mean score(original) − score(swapped), nats; a tie is a margin "
       "within float rounding, counted as 0.</p>\n";
  html_word_order_groups(doc, h);
  h << "<h3>Every model</h3>\n<table><tr><th>model</th><th>scheme</th><th>pairs</th><th>wins</th><th>ties</th>"
       "<th>accuracy</th><th>mean margin (nats)</th><th></th></tr>\n";
  ChartOptions co;
  co.title = "word order: accuracy per model (one run each)";
  co.x_label = "accuracy (fraction of pairs, 0–1)";
  co.lo = 0, co.hi = 1, co.mark = 0.5, co.mark_label = "chance";
  h << svg_bar_chart(
      html_result_rows(doc, "word_order", {}, {"pairs", "wins", "ties", "accuracy", "mean_margin"}, "accuracy", h), co);
  html_word_order_pairs(doc, h);
}

void html_permutation(const json& doc, std::ostream& h) {
  h << "<a id=\"permutation\"></a><h2>Permutation probe</h2>\n<p>The stack run bidirectionally (no causal mask) on a "
       "token sequence and on "
       "a fixed permutation of it; error = max |h(perm x) − perm h(x)| over the final hidden states, relative = "
       "error / max |h|. Without positions attention is permutation-equivariant, so the error is rounding "
       "only.</p>\n";
  const json& groups = doc["permutation"].value("groups", json::array());
  ChartOptions co;
  co.x_label = "relative error max |h(perm x) − perm h(x)| / max |h|";
  co.log_x = true;
  if (!groups.empty()) {
    html_seed_groups(doc, "permutation", h);
    co.title = "permutation probe: relative error by scheme (mean over seeds, 95% interval)";
    h << svg_bar_chart(group_bars(groups, "rel_error"), co);
  }
  h << "<h3>Every model</h3>\n<table><tr><th>model</th><th>scheme</th><th>tokens</th><th>max abs error</th>"
       "<th>relative</th><th>max |h|</th><th></th></tr>\n";
  const std::vector<Bar> bars = html_result_rows(doc, "permutation", {"tokens"},
                                                 {"max_abs_error", "rel_error", "max_abs_hidden"}, "rel_error", h);
  co.title = "permutation probe: relative error per model (one run each)";
  h << svg_bar_chart(bars, co);
}

void html_length(const json& doc, std::ostream& h) {
  const json& multiples = doc["settings"]["multiples"];
  h << "<a id=\"length\"></a><h2>Length</h2>\n<p>Perplexity of the held-out text in non-overlapping windows of k × the "
       "trained length "
       "(the text is cut to a whole number of the longest windows, so every length scores the same tokens). Rows "
       "with a method apply that long-context scaling with factor k; n/a rows show why.</p>\n";
  html_seed_groups(doc, "length", h);
  h << "<h3>Every model</h3>\n<table><tr><th>row</th><th>scheme</th>";
  for (size_t j = 0; j < multiples.size(); ++j)
    h << "<th>" << cell(doc, "/settings/multiples/" + std::to_string(j), "span") << "× trained</th>";
  h << "</tr>\n";
  std::vector<Series> plain, scaled;
  double trained = NAN;
  for (size_t i = 0; i < doc["length"]["results"].size(); ++i) {
    const json& r = doc["length"]["results"][i];
    const std::string p = "/length/results/" + std::to_string(i);
    Series s;
    s.name = r["label"].get<std::string>();
    s.scheme = r["scheme"].get<std::string>();
    h << "<tr>" << text_cell(s.name) << "<td>" << scheme_label(s.scheme) << "</td>";
    for (size_t j = 0; j < r["points"].size(); ++j) {
      const json& pt = r["points"][j];
      h << cell(doc, p + "/points/" + std::to_string(j) + "/ppl");
      s.x.push_back(pt["ctx"].get<double>());
      s.y.push_back(num(pt["ppl"]));
      if (pt["multiple"] == 1) trained = pt["ctx"].get<double>();
    }
    h << "</tr>\n";
    (r["method"] == "none" ? plain : scaled).push_back(s);
  }
  h << "</table>\n";
  ChartOptions co = perplexity_chart(trained, "perplexity vs context length per model, no scaling");
  h << svg_line_chart(plain, co);
  if (!scaled.empty()) {
    co.title = "perplexity vs context length per model, with long-context scaling (factor = multiple)";
    h << svg_line_chart(scaled, co);
  }
  h << "<details><summary>every window setting</summary><table><tr><th>row</th><th>multiple</th><th>ctx</th>"
       "<th>factor</th><th>windows</th><th>tokens</th><th>ppl</th><th></th></tr>\n";
  for (size_t i = 0; i < doc["length"]["results"].size(); ++i) {
    const json& r = doc["length"]["results"][i];
    for (size_t j = 0; j < r["points"].size(); ++j) {
      const std::string p = "/length/results/" + std::to_string(i) + "/points/" + std::to_string(j);
      h << "<tr>" << text_cell(r["label"].get<std::string>()) << cell(doc, p + "/multiple") << cell(doc, p + "/ctx")
        << cell(doc, p + "/factor") << cell(doc, p + "/windows") << cell(doc, p + "/tokens") << cell(doc, p + "/ppl")
        << err_cell(r["points"][j]) << "</tr>\n";
    }
  }
  h << "</table></details>\n";
}

void html_attention(const json& doc, std::ostream& h) {
  const json& a = doc["attention"];
  h << "<a id=\"attention\"></a><h2>Attention by distance</h2>\n<p>Attention probabilities on windows of the trained "
       "length, over all "
       "layers, heads and queries, grouped by query−key distance (tokens). Mean weight: average probability of one "
       "key at that distance; mass: average share of a query's attention that falls in the bucket.</p>\n";
  ChartOptions co;
  co.x_label = "query−key distance + 1 (bucket start, tokens)";
  co.y_label = "mean attention weight";
  co.log_x = co.log_y = true;
  const json& groups = a.value("groups", json::array());
  if (!groups.empty()) {
    html_seed_groups(doc, "attention", h);
    std::vector<Series> series;
    for (const json& g : groups) {
      Series s{g["kind"].get<std::string>() + " " + g["scheme"].get<std::string>(), {}, {}, g["scheme"], {}};
      for (size_t b = 0; b < a["buckets"].size() && b < g["mean_weight"].size(); ++b) {
        s.x.push_back(a["buckets"][b]["lo"].get<double>() + 1.0);
        s.y.push_back(num(g["mean_weight"][b]["mean"]));
        s.err.push_back(num(g["mean_weight"][b]["half_width"]));
      }
      series.push_back(s);
    }
    co.title = "mean attention weight vs distance by scheme (mean over seeds, 95% interval)";
    h << svg_line_chart(series, co);
  }
  h << "<h3>Every model</h3>\n";
  for (const char* key : {"mean_weight", "mass"}) {
    h << "<table><tr><th>" << key << "</th><th>rows</th>";
    for (size_t b = 0; b < a["buckets"].size(); ++b) {
      const std::string p = "/attention/buckets/" + std::to_string(b);
      h << "<th>" << cell(doc, p + "/lo", "span") << "–" << cell(doc, p + "/hi", "span") << "</th>";
    }
    h << "</tr>\n";
    for (size_t i = 0; i < a["results"].size(); ++i) {
      const std::string p = "/attention/results/" + std::to_string(i);
      h << "<tr>" << text_cell(a["results"][i]["model"].get<std::string>()) << cell(doc, p + "/rows");
      for (size_t b = 0; b < a["results"][i][key].size(); ++b) h << cell(doc, p + "/" + key + "/" + std::to_string(b));
      h << "</tr>\n";
    }
    h << "</table>\n";
  }
  std::vector<Series> series;
  for (const json& r : a["results"]) {
    Series s{r["model"].get<std::string>(), {}, {}, r["scheme"].get<std::string>(), {}};
    for (size_t b = 0; b < a["buckets"].size(); ++b) {
      s.x.push_back(a["buckets"][b]["lo"].get<double>() + 1.0);
      s.y.push_back(num(r["mean_weight"][b]));
    }
    series.push_back(s);
  }
  co.title = "mean attention weight vs distance per model (one run each)";
  h << svg_line_chart(series, co);
}

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A number cell with its JSON pointer, printed with format f (a t statistic to 3 digits, p to 2).
std::string tagged(const json& doc, const std::string& ptr, const char* f) {
  const json& v = doc.at(json::json_pointer(ptr));
  if (!v.is_number()) return "<td class=\"na\">n/a</td>";
  return "<td data-json=\"" + html_escape(ptr) + "\">" + fmt(f, v.get<double>()) + "</td>";
}

}  // namespace

std::string diff_cell(const json& doc, const std::string& test_ptr) {
  const json& t = doc.at(json::json_pointer(test_ptr));
  const double d = num(t["mean_diff"]);
  const auto [m, h] = interval_text(d, diff_half_width(t));
  return "<td class=\"pm\"><span data-json=\"" + html_escape(test_ptr + "/mean_diff") + "\">" + m + "</span>" +
         (h.empty() ? "" : " ± " + h) + "</td>";
}

double diff_half_width(const json& t) {
  const double d = num(t["mean_diff"]), tt = num(t["t"]), n = num(t["n"]);
  if (!std::isfinite(d) || !(n > 1)) return NAN;
  if (!std::isfinite(tt) || d == 0) return 0.0;  // every difference the same
  return stats::student_t_quantile(0.975, n - 1) * std::fabs(d / tt);
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  std::vector<size_t> order;
  for (size_t i = 0; i < p.size(); ++i)
    if (std::isfinite(p[i])) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(p.size(), NAN);
  double running = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    running = std::max(running, std::min(1.0, p[order[k]] * static_cast<double>(order.size() - k)));
    out[order[k]] = running;
  }
  return out;
}

std::string baseline_scheme(const json& tests) {
  for (const json& t : tests)
    if (t["a"] == "none" || t["b"] == "none") return "none";
  return tests.empty() ? "" : tests[0]["a"].get<std::string>();
}

void html_test_table(const json& doc, const std::string& ptr, std::ostream& h, const std::string& label_header,
                     const std::function<std::string(const json&)>& label) {
  const json& tests = doc.at(json::json_pointer(ptr));
  if (tests.empty()) return;
  std::vector<double> p;
  for (const json& t : tests) p.push_back(num(t["p"]));
  const std::vector<double> adj = holm_adjust(p);
  const std::string base = baseline_scheme(tests);
  std::ostringstream shown, rest;
  size_t n_shown = 0;
  for (size_t i = 0; i < tests.size(); ++i) {
    const json& t = tests[i];
    const std::string pp = ptr + "/" + std::to_string(i);
    const bool sig = adj[i] < 0.05;
    std::ostringstream row;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", adj[i]);
    row << "<tr>"
        << (label                ? text_cell(label(t))
            : t.contains("kind") ? text_cell(t["kind"].get<std::string>())
                                 : std::string())
        << "<td>" << scheme_label(t["a"].get<std::string>()) << "</td><td>" << scheme_label(t["b"].get<std::string>())
        << "</td>" << cell(doc, pp + "/n") << diff_cell(doc, pp) << tagged(doc, pp + "/t", "%.3g")
        << tagged(doc, pp + "/p", "%.2g") << "<td>" << (std::isfinite(adj[i]) ? buf : "n/a") << "</td><td>"
        << (sig ? "<b>differ</b>" : "no detectable difference") << "</td></tr>\n";
    if (sig || t["a"] == base || t["b"] == base)
      shown << row.str(), ++n_shown;
    else
      rest << row.str();
  }
  const std::string first_col = label ? label_header : tests[0].contains("kind") ? "kind" : "";
  const std::string head = std::string("<table class=\"tests\"><tr>") +
                           (first_col.empty() ? "" : "<th>" + html_escape(first_col) + "</th>") +
                           "<th>a</th><th>b</th><th>n</th><th>mean a − b (95% interval)</th><th>t</th><th>p</th>"
                           "<th>p (Holm)</th><th>verdict (5%)</th></tr>\n";
  h << "<p>Shown: the " << n_shown << " comparisons that differ or involve the baseline <b>" << html_escape(base)
    << "</b>.</p>\n"
    << head << shown.str() << "</table>\n";
  if (n_shown < tests.size())
    h << "<details><summary>the other " << tests.size() - n_shown << " comparisons (no detectable difference)"
      << "</summary>\n"
      << head << rest.str() << "</table></details>\n";
}

std::string render_compare_html(const json& doc) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ordo compare</title>\n<style>" << kStyle
    << "</style></head><body>\n<h1>ordo compare: position schemes side by side</h1>\n";
  html_summary(doc, h);
  if (doc.contains("word_order")) html_word_order(doc, h);
  if (doc.contains("permutation")) html_permutation(doc, h);
  if (doc.contains("length")) html_length(doc, h);
  if (doc.contains("attention")) html_attention(doc, h);
  if (doc.contains("synthetic")) html_synthetic(doc, h);
  html_setup(doc, h);
  std::string embedded = doc.dump();
  for (size_t at = 0; (at = embedded.find("</", at)) != std::string::npos; at += 3) embedded.replace(at, 2, "<\\/");
  h << "<script type=\"application/json\" id=\"ordo-compare-results\">" << embedded << "</script>\n</body></html>\n";
  return h.str();
}

}  // namespace ordo::cli
