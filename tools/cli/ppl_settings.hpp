// ordo ppl's --scaling list: the settings (scalings, context extensions) a ppl table compares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"

namespace ordo::cli {

struct Setting {
  std::string label;  // as given: "model", "none", "linear", "yarn:8", "self-extend:8:64", "sinks"
  bool from_model = false;
  ScalingType type = ScalingType::None;
  double factor = 0;  // 0: automatic (ctx / trained length, at least 1)
  // Context extension rows (no scaling): 0 = automatic. Self-Extend: G = ⌈(ctx − W) / (L − W)⌉
  // (just reaching ctx), W = L / 4. Sinks: K = 4, N = L − K (a cache of the trained length).
  bool self_extend = false, sinks = false;
  int64_t a = 0, b = 0;  // G, W or K, N
};

// The settings of a --scaling list, in order; Error naming the item that does not parse.
std::vector<Setting> parse_settings(const std::string& list);

}  // namespace ordo::cli
