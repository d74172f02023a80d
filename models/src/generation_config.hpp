// Reading a model directory's generation settings (private to ordo_models).
#pragma once

#include <string>
#include <vector>

#include "ordo/ordo.hpp"

namespace ordo {

struct GenerationFiles {
  GenerationConfig config;
  std::vector<int32_t> eos_ids;  // eos_token_id (an id or a list), empty when absent
};

// dir/generation_config.json, and dir/config.json where transformers would read it too (no
// generation_config.json, or one with "_from_model_config": true); a field in both is taken from
// generation_config.json. Errors name the file and field.
GenerationFiles read_generation_files(const std::string& dir);

}  // namespace ordo
