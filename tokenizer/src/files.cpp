// Reading a tokenizer's files: size-bounded reads, JSON with the input limits, paths.
#include "files.hpp"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "ordo/input.hpp"
#include "ordo/tensor.hpp"

namespace ordo::tokenizer_detail {

std::string read_file(const std::string& path) {
  try {
    return read_input_file(path, kMaxTokenizerFileBytes, "a tokenizer file");
  } catch (const Error& e) {
    throw Error(std::string("tokenizer: ") + e.what());
  }
}

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_file(path);
  check_json_limits(text, "tokenizer: " + path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("tokenizer: " + path + " is not valid JSON: " + e.what());
  }
}

bool file_exists(const std::string& path) {
  struct stat st {};
  // Anything but a directory counts: read_file() then refuses a FIFO or device with an Error
  // instead of the file being skipped in silence.
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace ordo::tokenizer_detail
