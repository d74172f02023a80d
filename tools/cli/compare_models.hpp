// `ordo compare`'s models: the zoo's, every -m DIR and its --position ablations, and loading one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"

namespace ordo::cli {

// One model as compare runs it.
struct CompareEntry {
  std::string label, dir, position;  // position: replacement scheme ("" keeps the model's)
  std::string kind;                  // zoo models: "lm", "mlm", ... ("" for -m models)
  int64_t seed = 0;
};

// The zoo directory: --zoo, else ORDO_ZOO_DIR, the installed share/ordo/models/zoo, the source tree's.
std::string compare_zoo_dir(const std::string& zoo_flag);

// The zoo's models (unless no_zoo; zdir gets the zoo directory), then every -m DIR and, per DIR, one
// ablation entry per --position NAME. Error when there is nothing to compare.
std::vector<CompareEntry> collect_entries(bool no_zoo, const std::string& zoo_flag,
                                          const std::vector<std::string>& dirs,
                                          const std::vector<std::string>& positions, std::string& zdir);

// The model of an entry; without a usable tokenizer it loads without one (probes that need text
// then report why, from tokenizer_error).
Model load_entry(const CompareEntry& e, ModelOptions o, std::string& tokenizer_error);

}  // namespace ordo::cli
