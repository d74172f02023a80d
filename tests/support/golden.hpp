// Reference fixtures (Hugging Face transformers, CPU float32): golden.json + golden.safetensors.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ordo/safetensors.hpp"
#include "ordo/tensor.hpp"

namespace ordo::test {

// Directory of a fixture's model (config.json + model.safetensors). stories260K is the bundled
// default model under models/; the others live under tests/data/fixtures/.
std::string model_dir(const std::string& fixture);
std::string data_path(const std::string& relative);  // tests/data/<relative>

struct Golden {
  std::string name;
  nlohmann::json json;
  SafeTensors tensors;
  static Golden load(const std::string& fixture);
  const Tensor& tensor(const std::string& key) const { return tensors.get(key); }
  const nlohmann::json& case_json(const std::string& case_name) const;
};

std::vector<int32_t> ids_of(const nlohmann::json& j);

// The fixtures README rule: max |got − golden| <= 1e-4 · max(1, max |golden|) over the rows
// listed in `rows` (all rows when empty). got is row-major with the golden tensor's shape.
::testing::AssertionResult within_tolerance(const float* got, const Tensor& golden, const std::vector<int64_t>& rows = {},
                                            double rel = 1e-4);

}  // namespace ordo::test
