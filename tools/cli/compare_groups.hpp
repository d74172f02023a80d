// `ordo compare`: the zoo's seeds as replicates in the permutation, length and attention sections.
// The zoo rows of a section (rows with a "kind") are grouped by (kind, scheme) — length: and method —
// and every number becomes mean ± 95% Student t interval over seeds (compare_report.hpp
// interval_json), stored as doc[section]["groups"] and rendered as a table and in the HTML.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace ordo::cli {

// doc["permutation"|"length"|"attention"]["groups"], for each of those sections doc has.
void add_seed_groups(nlohmann::json& doc);

// The groups of doc[section] as a terminal table / an HTML table (and, for length, a chart);
// nothing when the section has no groups.
void print_seed_groups(const nlohmann::json& doc, const std::string& section, std::ostream& o);
void html_seed_groups(const nlohmann::json& doc, const std::string& section, std::ostream& h);

}  // namespace ordo::cli
