// `ordo compare --html`: the self-contained report page, rendered from the results document.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace ordo::cli {

// The page: a summary of findings first (compare_summary.cpp), then each probe's details, the
// settings and models, and the document itself embedded as JSON.
std::string render_compare_html(const nlohmann::json& doc);

// The summary of findings: per probe, which schemes differ from which, with intervals and the
// tests' verdicts.
void html_summary(const nlohmann::json& doc, std::ostream& h);

// A t-test table (rows of {"a", "b", "n", "mean_diff", "t", "p"} at doc[ptr]) collapsed to the rows
// that matter: significant after Holm's correction, or against the baseline scheme; the rest folded.
// label: the first column's header and each row's text ("" header: the rows' "kind", if any).
void html_test_table(const nlohmann::json& doc, const std::string& ptr, std::ostream& h,
                     const std::string& label_header = "",
                     const std::function<std::string(const nlohmann::json&)>& label = {});

// The scheme every report compares against: "none" (no positions) when present, else the first.
std::string baseline_scheme(const nlohmann::json& tests);

// The 95% interval half-width of a paired test's mean difference, from its t and n:
// t_{.975, n−1} · |mean_diff / t| (0 when every difference is the same; NaN without one).
double diff_half_width(const nlohmann::json& test);
// A cell "mean a − b ± half" at the interval's precision, for the test at doc[test_ptr].
std::string diff_cell(const nlohmann::json& doc, const std::string& test_ptr);

// Holm-adjusted p-values of `p` (same order); NaN stays NaN.
std::vector<double> holm_adjust(const std::vector<double>& p);

}  // namespace ordo::cli
