// Reports: the compare HTML's structure (summary first, one colour per scheme across charts, error
// bars on means over seeds, numbers at their intervals' precision, labelled axes, collapsed test
// tables), ppl --plot as SVG and PNG by extension, and the progress lines of long commands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "bench_noise.hpp"
#include "compare_html.hpp"
#include "compare_report.hpp"
#include "progress.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"
#include "svg_chart.hpp"

using json = nlohmann::json;
using ordo::test::run_cli;
using ordo::test::shell_quote;

namespace {

const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";
const std::string kZoo = std::string(ORDO_SOURCE_DIR) + "/models/zoo";
const std::string kText = std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt";

std::vector<std::string> all_matches(const std::string& s, const std::regex& re, int group = 0) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[group]);
  return out;
}

// Every piece of s from `open` up to the next `close` (inclusive): std::regex recurses per character
// and overflows the stack on a whole page, so pages are cut with find.
std::vector<std::string> pieces(const std::string& s, const std::string& open, const std::string& close) {
  std::vector<std::string> out;
  for (size_t a = s.find(open); a != std::string::npos; a = s.find(open, a + 1)) {
    const size_t b = s.find(close, a);
    if (b == std::string::npos) break;
    out.push_back(s.substr(a, b + close.size() - a));
  }
  return out;
}

// Tags removed; between cells a space, so "<td>870</td><td>0.87</td>" does not read as 8700.87.
std::string strip_tags(const std::string& s) {
  return std::regex_replace(std::regex_replace(s, std::regex("</(td|th|text|li|p)>"), " "), std::regex("<[^>]*>"), "");
}

// Decimal places and exponent of a printed number ("0.83" → 2, 0; "1.2e-7" → 1, -7).
std::pair<int, int> places(const std::string& t) {
  const size_t e = t.find('e');
  const std::string m = t.substr(0, e);
  const size_t dot = m.find('.');
  return {dot == std::string::npos ? 0 : static_cast<int>(m.size() - dot - 1),
          e == std::string::npos ? 0 : std::stoi(t.substr(e + 1))};
}

int significant_digits(const std::string& t) {
  std::string m = t.substr(0, t.find('e'));
  m.erase(std::remove(m.begin(), m.end(), '.'), m.end());
  const size_t first = m.find_first_not_of('0');
  return first == std::string::npos ? 1 : static_cast<int>(m.size() - first);
}

// Tags balance and nest: enough to say an SVG parses (no entity or DTD in ours).
void expect_well_formed(const std::string& xml) {
  std::vector<std::string> stack;
  const std::regex tag_re("<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag_re); it != std::sregex_iterator(); ++it) {
    const std::string close = (*it)[1], name = (*it)[2], self = (*it)[3];
    if (!self.empty()) continue;
    if (close.empty()) {
      stack.push_back(name);
    } else {
      ASSERT_FALSE(stack.empty()) << "</" << name << "> closes nothing";
      ASSERT_EQ(stack.back(), name);
      stack.pop_back();
    }
  }
  EXPECT_TRUE(stack.empty());
  EXPECT_FALSE(std::regex_search(xml, std::regex("&(?!(lt|gt|amp|quot);)")));  // entities escaped
}

}  // namespace

TEST(ReportNumbers, IntervalsRoundToTheirLeadingDigits) {
  using ordo::cli::report::interval_text;
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(interval_text(0.833333, 0.179149), (P{"0.83", "0.18"}));  // leading 1: two digits
  EXPECT_EQ(interval_text(57.0812, 4.2113), (P{"57", "4"}));
  EXPECT_EQ(interval_text(41.7303, 2.71), (P{"41.7", "2.7"}));
  EXPECT_EQ(interval_text(0.0586, 0.00925), (P{"0.059", "0.009"}));
  EXPECT_EQ(interval_text(0.00763, 0.000284), (P{"0.00763", "0.00028"}));
  EXPECT_EQ(interval_text(2.31e-7, 1.94e-7), (P{"2.3e-7", "1.9e-7"}));  // tiny: one shared exponent
  EXPECT_EQ(interval_text(9.96e-7, 9.6e-7), (P{"1e-6", "1e-6"}));       // rounds up a decade
  EXPECT_EQ(interval_text(0.5, 0.0), (P{"0.5", "0.0"}));                // every seed the same
  EXPECT_EQ(interval_text(123.456789, NAN), (P{"123.5", ""}));          // no interval: 4 significant digits
}

TEST(ReportCharts, RoundTicksAndSchemeColours) {
  using ordo::cli::nice_ticks;
  EXPECT_EQ(nice_ticks(1, 1000, true), (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(nice_ticks(3, 60, true), (std::vector<double>{5, 10, 20, 50}));
  EXPECT_EQ(nice_ticks(47, 120, true), (std::vector<double>{50, 60, 70, 80, 90, 100, 110, 120}));
  EXPECT_EQ(nice_ticks(0, 1, false), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  // One colour per registered scheme, all different; the map is the only place colours come from.
  std::set<std::string> colours;
  for (const char* s : {"none", "sinusoidal", "learned", "rope", "alibi", "relative"})
    colours.insert(ordo::cli::scheme_color(s));
  EXPECT_EQ(colours.size(), 6u);
  EXPECT_EQ(ordo::cli::scheme_color("rope"), "#009e73");
  EXPECT_EQ(ordo::cli::holm_adjust({0.01, 0.04, 0.03}), (std::vector<double>{0.03, 0.06, 0.06}));
  EXPECT_EQ(ordo::cli::plot_format("a/b.PNG"), "png");
  EXPECT_EQ(ordo::cli::plot_format("x.svg"), "svg");
  EXPECT_EQ(ordo::cli::plot_format("x.pdf"), "");
  EXPECT_EQ(ordo::cli::plot_format("dir.svg/x"), "");
}

namespace {

// Every chart element that names a series has its scheme's colour: one colour per scheme, the same
// in every chart; means over seeds carry error bars; axes are labelled.
void expect_charts_coloured_by_scheme(const json& doc, const std::string& html) {
  std::map<std::string, std::string> scheme_of;
  for (const json& m : doc.at("models")) scheme_of[m.at("label")] = m.at("scheme");
  auto scheme_of_name = [&](std::string name) {
    name = name.substr(0, name.find('+'));  // "lm/rope-s1+linear", "lm rope+yarn"
    if (scheme_of.count(name)) return scheme_of[name];
    const size_t sp = name.find(' ');  // "lm rope": a group
    return sp == std::string::npos ? std::string() : name.substr(sp + 1);
  };
  std::map<std::string, std::set<std::string>> colours;
  const std::vector<std::string> charts = pieces(html, "<svg", "</svg>");
  ASSERT_GE(charts.size(), 8u);
  size_t titled = 0;
  for (const std::string& svg : charts) {
    expect_well_formed(svg);
    const std::string title =
        strip_tags(all_matches(svg, std::regex("<text[^>]*font-size=\"15\"[^>]*>[^<]*</text>"))[0]);
    const bool over_seeds = title.find("mean over seeds") != std::string::npos;
    const std::regex el_re("fill=\"(#[0-9a-f]{6})\"[^>]*><title>([^<]*): ([^<]*)</title>");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), el_re); it != std::sregex_iterator(); ++it) {
      const std::string colour = (*it)[1], name = (*it)[2], value = (*it)[3];
      const std::string scheme = scheme_of_name(name);
      ASSERT_FALSE(scheme.empty()) << name;
      EXPECT_EQ(colour, ordo::cli::scheme_color(scheme)) << title << ": " << name;
      colours[scheme].insert(colour);
      // Error bars on every mean over seeds (the point's tooltip carries its interval).
      if (over_seeds) {
        EXPECT_NE(value.find("±"), std::string::npos) << title << ": " << name;
      }
      ++titled;
    }
    // Labelled axes with their units or scale; accuracy axes run 0..1.
    EXPECT_TRUE(std::regex_search(svg, std::regex("\\((log scale|tokens|fraction of pairs, 0–1)")) ||
                svg.find("(tokens)") != std::string::npos)
        << title;
    if (title.find("accuracy") != std::string::npos) {  // braces: EXPECT_* are if/else macros
      EXPECT_NE(svg.find(">0</text>"), std::string::npos) << title;
      EXPECT_NE(svg.find(">1</text>"), std::string::npos) << title;
      EXPECT_EQ(svg.find(">-0.05</text>"), std::string::npos) << title;
    }
  }
  EXPECT_GT(titled, 100u);
  EXPECT_EQ(colours.size(), 6u);
  for (const auto& [scheme, cs] : colours) EXPECT_EQ(cs.size(), 1u) << scheme;
}

// Every "mean ± half" is at its interval's precision, and never wraps; no number in the page's
// text has more than 4 significant digits.
void expect_numbers_at_their_precision(const std::string& html) {
  EXPECT_NE(html.find(".pm{white-space:nowrap}"), std::string::npos);
  std::vector<std::string> pms = pieces(html, "<td class=\"pm\">", "</td>");
  for (const std::string& p : pieces(html, "<span class=\"pm\">", "</span>")) pms.push_back(p);
  ASSERT_GT(pms.size(), 50u);
  for (const std::string& cellhtml : pms) {
    const std::string text = strip_tags(cellhtml);
    const size_t pm = text.find(" ± ");
    if (pm == std::string::npos) continue;
    const std::string m = text.substr(0, pm), h = text.substr(pm + 4, text.find_last_not_of(' ') - pm - 3);
    if (std::stod(h) == 0) continue;  // every seed gave the same value: nothing to round to
    EXPECT_EQ(places(m), places(h)) << text;
    EXPECT_LE(significant_digits(h), 2) << text;
  }
  // No number anywhere in the page's text has more than 4 significant digits.
  const std::string body = strip_tags(html.substr(0, html.find("<script")));
  for (const std::string& n : all_matches(body, std::regex("\\d+\\.\\d+(e-?\\d+)?")))
    EXPECT_LE(significant_digits(n), 4) << n;
}

}  // namespace

// A quick compare over the bundled zoo (6 schemes × 3 seeds, decoders and encoders).
TEST(ReportHtml, SummaryColoursErrorBarsPrecisionAxesAndTests) {
  const std::string dir = ordo::test::make_temp_dir("report-html");
  auto r = run_cli("compare --quick --zoo " + shell_quote(kZoo) + " --json " + shell_quote(dir + "/r.json") +
                   " --html " + shell_quote(dir + "/r.html"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(ordo::test::read_file(dir + "/r.json"));
  const std::string html = ordo::test::read_file(dir + "/r.html");

  // The summary of findings comes first, before any probe's details, and names the tests' verdict.
  const size_t summary = html.find("<h2>Summary of findings</h2>");
  ASSERT_NE(summary, std::string::npos);
  for (const char* h : {"<h2>Word order</h2>", "<h2>Permutation probe</h2>", "<h2>Length</h2>",
                        "<h2>Attention by distance</h2>", "<h2>Setup</h2>"}) {
    ASSERT_NE(html.find(h), std::string::npos) << h;
    EXPECT_LT(summary, html.find(h)) << h;
  }
  const std::string sum = html.substr(summary, html.find("</section>", summary) - summary);
  EXPECT_NE(sum.find("Holm"), std::string::npos);
  EXPECT_NE(sum.find("order-blind"), std::string::npos);
  EXPECT_NE(sum.find("±"), std::string::npos);

  expect_charts_coloured_by_scheme(doc, html);
  expect_numbers_at_their_precision(html);

  // The t-test table shows the comparisons that matter; the rest are folded.
  const size_t tests = doc.at("word_order").at("tests").size();
  const size_t table = html.find("<table class=\"tests\">");
  ASSERT_NE(table, std::string::npos);
  const std::string first = html.substr(table, html.find("</table>", table) - table);
  const size_t rows = all_matches(first, std::regex("<tr>")).size() - 1;
  EXPECT_LT(rows, tests);
  EXPECT_NE(html.find("the other " + std::to_string(tests - rows) + " comparisons"), std::string::npos);
}

// --plot writes the format its extension names, and refuses any other before running anything.
TEST(ReportPlot, PplPlotSvgPngAndRefusal) {
  const std::string dir = ordo::test::make_temp_dir("report-plot");
  const std::string base = "ppl -m " + shell_quote(kStories) + " --text " + shell_quote(kText) +
                           " --ctx 64,128 --scaling model,none,linear --plot ";
  auto bad = run_cli(base + shell_quote(dir + "/p.pdf"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--plot"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find(".svg or .png"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");  // refused before any row

  auto svg = run_cli(base + shell_quote(dir + "/p.svg"));
  ASSERT_EQ(svg.exit_code, 0) << svg.err;
  const std::string s = ordo::test::read_file(dir + "/p.svg");
  expect_well_formed(s);
  EXPECT_EQ(s.rfind("<svg", 0), 0u);
  EXPECT_NE(s.find("stories260K (rope)"), std::string::npos);  // names the model and its scheme
  EXPECT_NE(s.find("trained length 512"), std::string::npos);
  EXPECT_NE(s.find("perplexity (log scale)"), std::string::npos);
  EXPECT_NE(s.find("none (= model)"), std::string::npos);  // an identical series says so
  // Colour by scheme (the model's), series told apart by dashes.
  EXPECT_EQ(all_matches(s, std::regex("<polyline fill=\"none\" stroke=\"#009e73\"")).size(), 3u);
  EXPECT_EQ(all_matches(s, std::regex("<polyline[^>]*stroke-dasharray")).size(), 2u);
  // Round y ticks: 1, 2 or 5 × 10^k each, or evenly spaced multiples of such a step (a narrow range).
  std::vector<double> ticks;
  for (const std::string& t : all_matches(s, std::regex("text-anchor=\"end\">([^<]*)<"), 1))
    ticks.push_back(std::stod(t));
  ASSERT_GE(ticks.size(), 3u);
  auto round125 = [](double v) {
    const double mant = v / std::pow(10.0, std::floor(std::log10(v) + 1e-9));
    return std::fabs(mant - 1) < 1e-9 || std::fabs(mant - 2) < 1e-9 || std::fabs(mant - 5) < 1e-9;
  };
  if (!std::all_of(ticks.begin(), ticks.end(), round125)) {
    const double step = std::fabs(ticks[1] - ticks[0]);
    EXPECT_TRUE(round125(step)) << step;
    for (double t : ticks) EXPECT_NEAR(t / step, std::round(t / step), 1e-6) << t;
  }

  auto png = run_cli(base + shell_quote(dir + "/p.png"));
  ASSERT_EQ(png.exit_code, 0) << png.err;
  const std::string p = ordo::test::read_file(dir + "/p.png");
  ASSERT_GT(p.size(), 24u);
  EXPECT_EQ(p.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(p[at])) << 24) | (uint32_t(uint8_t(p[at + 1])) << 16) |
           (uint32_t(uint8_t(p[at + 2])) << 8) | uint32_t(uint8_t(p[at + 3]));
  };
  EXPECT_EQ(p.substr(12, 4), "IHDR");
  EXPECT_EQ(be32(16), 720u);  // the same layout as the SVG
  const std::smatch h = [&] {
    std::smatch mm;
    std::regex_search(s, mm, std::regex("height=\"(\\d+)\""));
    return mm;
  }();
  EXPECT_EQ(be32(20), static_cast<uint32_t>(std::stoi(h[1])));
  EXPECT_GT(p.size(), 5000u);  // drawn, not blank
}

// Not a terminal: one plain line per unit on stderr, with k of N and (after the first) an ETA.
TEST(ReportProgress, NonTerminalLinesAndEta) {
  using ordo::cli::progress_line;
  EXPECT_EQ(progress_line("ordo compare", 1, 54, "models: lm/none-s1", 0.2),
            "ordo compare: 1 of 54 models: lm/none-s1 (elapsed 0 s)");
  // ETA: the mean of the 2 finished units (10 s) times the 52 left.
  EXPECT_EQ(progress_line("ordo compare", 3, 54, "models: x", 20.0),
            "ordo compare: 3 of 54 models: x (elapsed 20 s, ETA 8:40)");
  EXPECT_EQ(ordo::cli::format_duration(3725), "1:02:05");

  std::ostringstream err;
  ordo::cli::Progress pg("ordo ppl", 2, err, false);
  pg.step(1, "rows: a");
  pg.show("window ", 3, " of ", 9);  // in-place detail: a terminal only
  pg.note("[a] a warning");
  pg.step(2, "rows: b");
  pg.finish();
  const std::regex want(
      "ordo ppl: 1 of 2 rows: a \\(elapsed 0 s\\)\n\\[a\\] a warning\nordo ppl: 2 of 2 rows: b \\(elapsed 0 s, ETA 0 "
      "s\\)\nordo ppl: 2 of 2 done in 0 s\n");
  EXPECT_TRUE(std::regex_match(err.str(), want)) << err.str();

  std::ostringstream tty;
  ordo::cli::Progress t("ordo ppl", 2, tty, true);
  t.step(1, "rows: a");
  t.show("window ", 3, " of ", 9);
  EXPECT_EQ(
      tty.str(),
      "\r\033[Kordo ppl: 1 of 2 rows: a (elapsed 0 s)\r\033[Kordo ppl: 1 of 2 rows: a (elapsed 0 s) · window 3 of 9");

  // The command itself: stderr has the lines, stdout only the table.
  auto r = run_cli("ppl -m " + shell_quote(kStories) + " --text " + shell_quote(kText) + " --ctx 64,128");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ordo ppl: 1 of 2 rows: model at ctx 64 (elapsed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ordo ppl: 2 of 2 rows: model at ctx 128 (elapsed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ordo ppl: 2 of 2 done in"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find(" of 2"), std::string::npos) << r.out;
}

// bench: says plainly when its figures mean nothing instead of printing a fraction of noise.
TEST(ReportBench, BusyMachineAndNoisyRowsAreNamed) {
  using ordo::cli::busy_reason;
  using ordo::cli::speed_comparison;
  EXPECT_EQ(ordo::cli::repetition_spread({1.0, 1.5, 1.2}), 0.5);
  EXPECT_EQ(ordo::cli::repetition_spread({2.0}), 0.0);
  EXPECT_EQ(busy_reason(0.05, 1.5, 2), "");
  EXPECT_EQ(busy_reason(0.5, 1.0, 2), "its repetitions differ by 50% (slowest against fastest)");
  EXPECT_EQ(busy_reason(0.05, 6.2, 2), "the load average was 6.2 on 2 cores");
  // A real difference, a faster one (never "-4.4% slower"), one inside the noise, and a busy row.
  EXPECT_EQ(speed_comparison("decode at ctx 1024", 80, 100, "at ctx 128", 0.02, 0.03),
            "decode at ctx 1024 is 20.0% slower than at ctx 128");
  EXPECT_EQ(speed_comparison("decode at ctx 1024", 104.4, 100, "at ctx 128", 0.02, 0.03),
            "decode at ctx 1024 is 4.4% faster than at ctx 128");
  EXPECT_EQ(speed_comparison("decode at ctx 1024", 98, 100, "at ctx 128", 0.05, 0.03),
            "decode at ctx 1024: no measurable difference from at ctx 128 (within the repetitions' 5% spread)");
  EXPECT_EQ(speed_comparison("decode at ctx 1024", 60, 100, "at ctx 128", 0.8, 0.03),
            "decode at ctx 1024 against at ctx 128: not comparable, the machine was too busy (repetitions differ by "
            "80%)");
  EXPECT_EQ(
      speed_comparison("decode at ctx 1024", 80, 100, "at ctx 128", 0.02, 0.03, "the load average was 9.3 on 2 cores"),
      "decode at ctx 1024 against at ctx 128: not comparable, the machine was busy (the load average was 9.3 on 2 "
      "cores)");
}
