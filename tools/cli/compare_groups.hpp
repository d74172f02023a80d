// `ordo compare`: the zoo's seeds as replicates: seed groups of every section, word-order tests.
// The zoo rows of a section (rows with a "kind") are grouped by (kind, scheme) — length: and method —
// and every number becomes mean ± 95% Student t interval over seeds (compare_report.hpp
// interval_json), stored as doc[section]["groups"] and rendered as a table and in the HTML.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace ordo::cli {

// word_order["groups"]: per (kind, scheme), accuracy and mean margin as mean ± 95% interval over
// seeds, and each pair's margin averaged over the seeds as mean ± interval over pairs;
// word_order["tests"]: a paired t-test on those per-pair margins between every two schemes of a kind.
void word_order_stats(nlohmann::json& wo);

// doc["permutation"|"length"|"attention"]["groups"], for each of those sections doc has.
void add_seed_groups(nlohmann::json& doc);

// The groups of doc[section] as a terminal table / an HTML table (and, for length, a chart);
// nothing when the section has no groups.
void print_seed_groups(const nlohmann::json& doc, const std::string& section, std::ostream& o);
void html_seed_groups(const nlohmann::json& doc, const std::string& section, std::ostream& h);

}  // namespace ordo::cli
