// How `ordo compare` stores and renders numbers, shared by its sections (compare.cpp,
// compare_tasks.cpp, compare_html.cpp): every number is stored rounded to 6 significant digits; the
// table and the HTML (cells tagged with their JSON pointer) print it at the precision it supports.
#pragma once

#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "progress.hpp"

namespace ordo::cli::report {

using json = nlohmann::json;

// Rounded to 6 significant digits, so every rendering of the number can print it exactly.
double r6(double v);
json num_or_null(double v);

// A paired t-test of a against b as compare stores it: {"n", "mean_diff", "t", "p"}.
json paired_test_json(const std::vector<double>& a, const std::vector<double>& b);

// mean ± half-width of the 95% Student t interval, {"mean", "half_width"} (null when undefined, e.g.
// the half-width of one seed).
json interval_json(const std::vector<double>& v);

// The rows of zoo models (a non-empty "kind", no "error") grouped by the values of `keys`, in order
// of first appearance: the seeds of one (kind, scheme, ...) are replicates. head: the key values,
// "models" (their labels) and "seeds" (how many).
struct SeedGroup {
  json head;
  std::vector<const json*> rows;
};
std::vector<SeedGroup> seed_groups(const json& rows, std::initializer_list<const char*> keys);

// The numbers at `ptr` in each row of g (nulls and missing values left out).
std::vector<double> values_at(const SeedGroup& g, const json::json_pointer& ptr);

// How every rendering prints a number without an interval: integers as they are, floats with 4
// significant digits (the JSON keeps 6); null as "n/a".
std::string show(const json& v);

// mean and half-width at the precision the interval supports: both rounded to the half-width's
// leading digit (two digits when it starts with 1 or 2); a tiny or huge pair shares one exponent
// ("1.2e-7", "0.4e-7"). No half-width: the mean with 4 significant digits, half "".
std::pair<std::string, std::string> interval_text(double mean, double half);

// A number cell carrying its JSON pointer; null → "n/a".
std::string cell(const json& doc, const std::string& ptr, const char* tag = "td");
// An interval (interval_json) at `ptr`: "mean ± half" (interval_text) as text, as spans tagged with
// their JSON pointers, as one table cell of class "pm" (never wrapped).
std::string pm(const json& interval);
std::string pm_spans(const json& doc, const std::string& ptr);
std::string pm_cell(const json& doc, const std::string& ptr);
std::string text_cell(const std::string& s);
// The row's "error" (empty when it has none) as the last cell of an HTML row.
std::string err_cell(const json& r);
std::string html_escape(const std::string& s);

// A left-aligned terminal column of `width` characters and a space.
std::string column(const json& v, int width);

}  // namespace ordo::cli::report
