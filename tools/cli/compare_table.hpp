// `ordo compare`'s terminal table, rendered from the JSON document (as --json and --html are).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

namespace ordo::cli {

// Every section doc has, as fixed-width columns: per model, then the seed groups and tests.
void print_compare_table(const nlohmann::json& doc, std::ostream& o);

}  // namespace ordo::cli
