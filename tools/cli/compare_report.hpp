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

// How every rendering prints a number: integers as they are, floats with the 6 significant digits
// they were stored with (parses back to the identical double); null as "n/a".
std::string show(const json& v);

// A number cell carrying its JSON pointer; null → "n/a".
std::string cell(const json& doc, const std::string& ptr, const char* tag = "td");
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
