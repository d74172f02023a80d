// How `ordo compare` stores and renders numbers, shared by its sections (compare.cpp,
// compare_tasks.cpp): every number is stored rounded to 6 significant digits, and the table, the
// HTML (cells tagged with their JSON pointer) and --json all print it from the one document.
#pragma once

#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// How every rendering prints a number: integers as they are, floats with the 6 significant digits
// they were stored with (parses back to the identical double); null as "n/a".
std::string show(const json& v);

// A number cell carrying its JSON pointer; null → "n/a".
std::string cell(const json& doc, const std::string& ptr, const char* tag = "td");
// An interval (interval_json) at `ptr`: "mean ± half" as text, as spans, as one table cell, as two
// cells.
std::string pm(const json& interval);
std::string pm_spans(const json& doc, const std::string& ptr);
std::string pm_cell(const json& doc, const std::string& ptr);
std::string pm_cells(const json& doc, const std::string& ptr);
std::string text_cell(const std::string& s);
// The row's "error" (empty when it has none) as the last cell of an HTML row.
std::string err_cell(const json& r);
std::string html_escape(const std::string& s);

// A left-aligned terminal column of `width` characters and a space.
std::string column(const json& v, int width);

// Progress lines on a terminal are rewritten in place; elsewhere they are left out.
struct Progress {
  bool tty = isatty(STDERR_FILENO);
  template <class... A>
  void show(const A&... parts) const {
    if (!tty) return;
    std::cerr << "\r";
    (std::cerr << ... << parts) << std::flush;
  }
  void clear() const {
    if (tty) std::cerr << "\r\033[K";
  }
};

}  // namespace ordo::cli::report
