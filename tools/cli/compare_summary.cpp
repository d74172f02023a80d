// `ordo compare --html`: the summary of findings that opens the report (compare_html.hpp).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "compare_html.hpp"
#include "compare_report.hpp"
#include "svg_chart.hpp"

namespace ordo::cli {
namespace {

using json = nlohmann::json;
using namespace report;

double num(const json& v) { return v.is_number() ? v.get<double>() : NAN; }

std::string swatch(const std::string& scheme) {
  return "<span class=\"swatch\" style=\"background:" + scheme_color(scheme) + "\"></span><b>" + html_escape(scheme) +
         "</b>";
}

std::string iv_text(double mean, double half) {
  const auto [m, h] = interval_text(mean, half);
  return "<span class=\"pm\">" + m + (h.empty() ? "" : " ± " + h) + "</span>";
}
std::string iv_text(const json& iv) { return iv_text(num(iv["mean"]), num(iv["half_width"])); }

std::string p_text(double p) {
  char buf[32];
  if (p < 0.001)
    std::snprintf(buf, sizeof buf, "p < 0.001");
  else
    std::snprintf(buf, sizeof buf, "p = %.2g", p);
  return buf;
}

// Word order: per kind, the accuracy of each scheme, then which schemes' margins differ.
void summary_word_order(const json& doc, std::ostream& h) {
  const json& wo = doc["word_order"];
  h << "<h3>Word order</h3>\n";
  if (wo["groups"].empty()) {
    h << "<p>Accuracy on " << wo["pairs"].size() << " pairs, one run per model (no seeds, so no interval): ";
    bool first = true;
    for (const json& r : wo["results"]) {
      h << (first ? "" : "; ") << html_escape(r["model"].get<std::string>()) << " ";
      h << (r.contains("accuracy") ? show(r["accuracy"]) : "n/a");
      first = false;
    }
    h << ".</p>\n";
    return;
  }
  h << "<table><tr><th>kind</th><th>scheme</th><th>accuracy (0–1)</th><th>margin per pair (nats)</th></tr>\n";
  std::vector<const json*> gs;
  for (const json& g : wo["groups"]) gs.push_back(&g);
  std::stable_sort(gs.begin(), gs.end(), [](const json* a, const json* b) {
    return (*a)["kind"] == (*b)["kind"] ? num((*a)["accuracy"]["mean"]) > num((*b)["accuracy"]["mean"])
                                        : (*a)["kind"] < (*b)["kind"];
  });
  for (const json* g : gs)
    h << "<tr><td>" << html_escape((*g)["kind"].get<std::string>()) << "</td><td>"
      << swatch((*g)["scheme"].get<std::string>()) << "</td><td class=\"pm\">" << iv_text((*g)["accuracy"])
      << "</td><td class=\"pm\">" << iv_text((*g)["item_margin"]) << "</td></tr>\n";
  h << "</table>\n";
  const json& tests = wo["tests"];
  if (tests.empty()) return;
  std::vector<double> p;
  for (const json& t : tests) p.push_back(num(t["p"]));
  const std::vector<double> adj = holm_adjust(p);
  std::vector<std::string> differ;
  size_t same = 0;
  for (size_t i = 0; i < tests.size(); ++i) {
    const json& t = tests[i];
    if (!(adj[i] < 0.05)) {
      ++same;
      continue;
    }
    const double d = num(t["mean_diff"]), half = diff_half_width(t);
    const bool a_first = d > 0;
    const std::string hi = a_first ? t["a"] : t["b"], lo = a_first ? t["b"] : t["a"];
    differ.push_back(swatch(hi) + " &gt; " + swatch(lo) + " by " + iv_text(std::fabs(d), half) + " nats per pair (" +
                     p_text(adj[i]) + ", Holm)");
  }
  h << "<p>Paired t-tests on the per-pair margins (" << tests.size() << " comparisons, Holm-corrected, 5%): ";
  if (differ.empty()) {
    h << "no two schemes differ detectably.</p>\n";
    return;
  }
  h << differ.size() << " differ:</p>\n<ul>";
  for (const std::string& s : differ) h << "<li>" << s << "</li>";
  h << "</ul>\n<p>The other " << same << " comparisons show no detectable difference.</p>\n";
}

// Permutation: which schemes are equivariant up to rounding.
void summary_permutation(const json& doc, std::ostream& h) {
  const json& groups = doc["permutation"].value("groups", json::array());
  const double kRounding = 1e-4;  // a relative error at float rounding level
  h << "<h3>Permutation probe</h3>\n<p>Relative error max |h(perm x) − perm h(x)| / max |h|; below 10<sup>−4</sup> "
       "is float rounding, i.e. the stack ignores token order.</p>\n";
  std::vector<std::string> eq, sens;
  if (!groups.empty()) {
    for (const json& g : groups) {
      const std::string s = html_escape(g["kind"].get<std::string>()) + " " + swatch(g["scheme"].get<std::string>()) +
                            " " + iv_text(g["rel_error"]);
      (num(g["rel_error"]["mean"]) < kRounding ? eq : sens).push_back(s);
    }
  } else {
    for (const json& r : doc["permutation"]["results"]) {
      if (!r.contains("rel_error")) continue;
      const std::string s = html_escape(r["model"].get<std::string>()) + " " + show(r["rel_error"]);
      (num(r["rel_error"]) < kRounding ? eq : sens).push_back(s);
    }
  }
  auto list = [&](const std::vector<std::string>& v) {
    std::string o;
    for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + v[i];
    return o.empty() ? std::string("none") : o;
  };
  h << "<ul><li>order-blind (rounding only): " << list(eq) << "</li><li>order-sensitive: " << list(sens)
    << "</li></ul>\n";
}

// Length: perplexity at the trained length and the longest, per scheme (no scaling).
void summary_length(const json& doc, std::ostream& h) {
  const json& groups = doc["length"].value("groups", json::array());
  h << "<h3>Length</h3>\n";
  if (groups.empty()) {
    h << "<p>One run per model (no seeds, so no interval); see the length section.</p>\n";
    return;
  }
  const json& mult = doc["settings"]["multiples"];
  h << "<p>Perplexity of the held-out text without scaling, mean ± 95% interval over seeds; a lower number "
       "is better, and intervals that do not overlap differ.</p>\n<table><tr><th>kind</th><th>scheme</th>";
  for (const json& k : mult) h << "<th>" << k.dump() << "× trained</th>";
  h << "</tr>\n";
  for (const json& g : groups) {
    if (g["method"] != "none") continue;
    h << "<tr><td>" << html_escape(g["kind"].get<std::string>()) << "</td><td>"
      << swatch(g["scheme"].get<std::string>()) << "</td>";
    for (const json& p : g["points"]) h << "<td class=\"pm\">" << iv_text(p["ppl"]) << "</td>";
    h << "</tr>\n";
  }
  h << "</table>\n";
}

// Attention: the share of attention on the nearest bucket and the farthest.
void summary_attention(const json& doc, std::ostream& h) {
  const json& a = doc["attention"];
  const json& groups = a.value("groups", json::array());
  if (groups.empty() || a["buckets"].empty()) return;
  const size_t last = a["buckets"].size() - 1;
  h << "<h3>Attention by distance</h3>\n<p>Share of a query's attention (mass), mean ± 95% interval over seeds, on "
       "the nearest keys (distance "
    << html_escape(a["buckets"][0]["label"].get<std::string>()) << ") and the farthest (distance "
    << html_escape(a["buckets"][last]["label"].get<std::string>())
    << "): a local scheme puts more on the first.</p>\n<table><tr><th>kind</th><th>scheme</th><th>nearest</th>"
       "<th>farthest</th></tr>\n";
  for (const json& g : groups) {
    if (g["mass"].size() <= last) continue;
    h << "<tr><td>" << html_escape(g["kind"].get<std::string>()) << "</td><td>"
      << swatch(g["scheme"].get<std::string>()) << "</td><td class=\"pm\">" << iv_text(g["mass"][0])
      << "</td><td class=\"pm\">" << iv_text(g["mass"][last]) << "</td></tr>\n";
  }
  h << "</table>\n";
}

}  // namespace

void html_summary(const json& doc, std::ostream& h) {
  size_t seeds = 0;
  for (const json& m : doc["models"]) seeds = std::max<size_t>(seeds, m.value("seed", 0));
  h << "<section class=\"summary\" id=\"summary\">\n<h2>Summary of findings</h2>\n<p>" << doc["models"].size()
    << " models. "
    << (seeds > 1 ? "Zoo models of one scheme and different seeds are replicates: every ± is the half-width of a "
                    "95% Student t interval over seeds, and numbers are rounded to the interval's leading digit."
                  : "Single runs: no intervals (the zoo's seeds give them).")
    << " Colours: one per position scheme, the same in every chart.</p>\n";
  if (doc.contains("word_order")) summary_word_order(doc, h);
  if (doc.contains("permutation")) summary_permutation(doc, h);
  if (doc.contains("length")) summary_length(doc, h);
  if (doc.contains("attention")) summary_attention(doc, h);
  h << "</section>\n";
}

}  // namespace ordo::cli
