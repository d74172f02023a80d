// Reading Hugging Face config.json (and similar) files with clear errors (private to ordo_models).
//
// Every failure throws ordo::Error starting with origin(): the file path, plus the key path for
// nested objects ("config.json: rope_scaling"). Examples:
//   "config.json: malformed JSON at line 3, column 7: syntax error while parsing value - ..."
//   "config.json: field 'hidden_size' missing"
//   "config.json: field 'hidden_size' must be an integer, got string \"64\""
//   "config.json: rope_scaling: field 'factor' must be a number, got null"
//
// JSON null counts as absent: has() is false, defaults apply, required getters report "missing".
// Integer fields accept floats with an integral value (2.0) and reject others (2.5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ordo/tensor.hpp"  // ordo::Error

namespace ordo {

class JsonConfig {
 public:
  // Reads and parses `path`. Error "<path>: cannot open: <reason>" / "<path>: malformed JSON at ...".
  // The top level must be a JSON object.
  static JsonConfig load(const std::string& path);
  // Parses `text`; `origin` (usually the file path) prefixes every error message.
  static JsonConfig parse(const std::string& text, const std::string& origin);
  // Wraps an already parsed object (throws if `value` is not an object).
  JsonConfig(nlohmann::json value, std::string origin);

  // Present and not null.
  bool has(const std::string& key) const;
  // The first key of `keys` that is present (not null), if any.
  std::optional<std::string> first_present(std::initializer_list<std::string> keys) const;

  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t def) const;
  double get_double(const std::string& key) const;  // any JSON number
  double get_double(const std::string& key, double def) const;
  bool get_bool(const std::string& key) const;  // JSON true/false only
  bool get_bool(const std::string& key, bool def) const;
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& def) const;
  std::vector<double> get_double_array(const std::string& key) const;
  // An array of integers; a single integer is accepted as a one-element array
  // (HF uses both forms, e.g. "eos_token_id": 2 or [1, 2]).
  std::vector<int64_t> get_int_array(const std::string& key) const;

  // Validated reads, where a bad value would crash, hang or silently mislead later. Errors name the
  // file and field and say the accepted range.
  // A count or size (heads, layers, dimensions): an integer in [1, 2^31 - 1].
  int64_t get_count(const std::string& key) const;
  int64_t get_count(const std::string& key, int64_t def) const;
  int64_t get_count_any(std::initializer_list<std::string> keys) const;
  // A normalization epsilon: finite and > 0 as a float.
  float get_eps(const std::string& key, double def) const;
  // A fraction in (0, 1] (partial_rotary_factor).
  double get_fraction(const std::string& key, double def) const;

  // The same quantity under family-specific names: the first present key wins, e.g.
  // get_int_any({"n_embd", "hidden_size", "d_model"}). Without a default, none present is an error
  // "<origin>: none of the fields 'n_embd', 'hidden_size', 'd_model' is present".
  int64_t get_int_any(std::initializer_list<std::string> keys) const;
  int64_t get_int_any(std::initializer_list<std::string> keys, int64_t def) const;
  double get_double_any(std::initializer_list<std::string> keys) const;
  double get_double_any(std::initializer_list<std::string> keys, double def) const;

  // A nested object (e.g. rope_scaling); its origin is "<origin>: <key>" (or "<origin>.<key>" when
  // already nested). Error if missing/null or not an object.
  JsonConfig child(const std::string& key) const;

  const nlohmann::json& raw() const { return json_; }
  const std::string& origin() const { return origin_; }

 private:
  JsonConfig() = default;
  const nlohmann::json& require(const std::string& key) const;  // present and not null, else Error
  [[noreturn]] void fail(const std::string& msg) const;
  // `what` names the value in messages: "field 'k'" or "field 'k' entry 3".
  static std::string field(const std::string& key);
  [[noreturn]] void wrong_type(const std::string& what, const char* expected, const nlohmann::json& got) const;
  int64_t to_int(const std::string& what, const nlohmann::json& v) const;
  double to_double(const std::string& what, const nlohmann::json& v) const;
  int64_t to_count(const std::string& what, const nlohmann::json& v) const;
  std::string none_present(std::initializer_list<std::string> keys) const;

  nlohmann::json json_ = nlohmann::json::object();
  std::string origin_;
  bool nested_ = false;  // origin_ already contains a key path
};

// Parses a JSON document after ordo's depth and size limits (ordo/input.hpp). Errors start with
// `origin`: "<origin>: <failure> at line L, column C: <detail>" for a syntax error, "<origin>:
// field 'k': number overflow parsing '1e400'" for a number no double holds. on_key, when given,
// sees every object key with its depth (1: the top level).
using JsonKeyCallback = std::function<void(int depth, const std::string& key)>;
nlohmann::json parse_json_document(const char* text, size_t size, const std::string& origin, const std::string& failure,
                                   const JsonKeyCallback& on_key = nullptr);

// "at line L, column C: <detail>" for a parse error in `text` (line/column computed from e.byte;
// the detail is nlohmann's message without its "[json.exception...] parse error at ..." prefix).
std::string describe_json_parse_error(const nlohmann::json::parse_error& e, const char* text, size_t size);

}  // namespace ordo
