// Reading a tokenizer's files: size-bounded reads, JSON with the input limits, paths.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "ordo/tensor.hpp"  // Error

namespace ordo::tokenizer_detail {

// Largest tokenizer file ordo reads (tokenizer.json of the biggest vocabularies is ~20 MB).
constexpr uint64_t kMaxTokenizerFileBytes = uint64_t{1} << 30;
std::string read_file(const std::string& path);  // regular files only; throws Error naming the path
// read_file + the JSON depth/size limits of ordo/input.hpp + parse; Error naming the path.
nlohmann::json read_json_file(const std::string& path);
bool file_exists(const std::string& path);  // present and not a directory
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace ordo::tokenizer_detail
