// Private to models/: a model directory read with what `ordo quantize` needs beyond the spec.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "family_context.hpp"

namespace ordo {

struct Loaded {
  ModelSpec spec;
  std::string family;
  std::optional<DType> stored_dtype;  // "ordo_quantization" of a directory written by `ordo quantize`
  std::vector<std::pair<std::string, const void*>> linear_names;  // FamilyContext::linear_names()
  std::vector<std::string> fetched_names;                          // FamilyContext::fetched_names()
  std::shared_ptr<Weights> weights;
};

// Errors name the directory or file and what is missing or unsupported.
Loaded load_dir(const std::string& dir);

}  // namespace ordo
