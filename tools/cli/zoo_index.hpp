// The zoo's models as `ordo compare` finds them: every directory up to two levels under the zoo
// root whose config.json has model_type "ordo-zoo", with its place in the experiment from config
// "zoo": {"kind": "lm" | "mlm" | "tasks", "scheme": ..., "seed": n}. A model without that block
// (the first zoo's models/zoo/<scheme>/ layout) is kind "lm", seed 1, scheme its position_scheme.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ordo::cli {

struct ZooModel {
  std::string dir;    // the model directory
  std::string label;  // its path under the zoo root ("mlm/rope-s2", or "rope" in the first layout)
  std::string kind, scheme;
  int64_t seed = 1;
  // Task models: the longest task length n trained on ("zoo": {"train_length": L}); 0 if not given.
  int64_t train_length = 0;
};

// Sorted by kind (lm, mlm, tasks, then others by name), scheme (registry order), seed. An Error
// names the config.json and field for a malformed "zoo" block.
std::vector<ZooModel> discover_zoo(const std::string& root);

// How compare names a -m directory: its last path component ("models/rope/" → "rope").
std::string dir_label(const std::string& dir);
// Whether two paths name the same directory (a zoo member given again with -m).
bool same_directory(const std::string& a, const std::string& b);

// The zoo model in `dir` (its config.json read as untrusted input), labelled `label`; false when
// `dir` has no config.json or it is not an ordo-zoo one.
bool read_zoo_model(const std::filesystem::path& dir, const std::string& label, ZooModel& out);

}  // namespace ordo::cli
