// Private to models/: a model directory read with what `ordo quantize` needs beyond the spec.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "family_context.hpp"
#include "ordo/tokenizer.hpp"

namespace ordo {

struct Loaded {
  ModelSpec spec;
  std::string family;
  std::optional<DType> stored_dtype;  // "ordo_quantization" of a directory written by `ordo quantize`
  std::vector<std::pair<std::string, const void*>> linear_names;  // FamilyContext::linear_names()
  std::vector<std::string> fetched_names;                         // FamilyContext::fetched_names()
  std::shared_ptr<Weights> weights;
  std::vector<std::string> notes;  // said to the user at load (Model::load_warnings)
};

// Errors name the directory or file and what is missing or unsupported. `dir` may also be a GGUF
// file (load_gguf).
Loaded load_dir(const std::string& dir, bool decoded_as_f32 = false);
// A GGUF file (llama, qwen2 or gpt2) read as a model directory (gguf_model.cpp). Linear weights
// of a type ordo only decodes (ggml_type_decodable: Q4_K, Q6_K...) become Q8_0 blocks, or, with
// decoded_as_f32 (a dtype was asked for, which they are then converted to), exact F32.
Loaded load_gguf(const std::string& path, bool decoded_as_f32 = false);

// The family serving model_type; an Error naming `where` and the known types otherwise.
const Family& family_for(const std::string& model_type, const std::string& where);
// Builds fam's spec from ctx into out, with the names and weights the build used.
void build_into(Loaded& out, const Family& fam, FamilyContext& ctx);
// The tokenizer a GGUF file stores (tokenizer.ggml.*), gguf_config.cpp.
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& path, const TokenizerOptions& opts);

}  // namespace ordo
