// JsonConfig: typed config.json fields with errors that name the file and the field.
#include "json_config.hpp"

#include <climits>
#include <cmath>
#include <utility>

#include "ordo/input.hpp"

namespace ordo {
namespace {

// "string \"64\"", "number 2.5", "null", ... for error messages.
std::string describe_value(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return std::string(v.type_name()) + " " + s;  // "string", "number", "boolean", "array", "object"
}

}  // namespace

std::string describe_json_parse_error(const nlohmann::json::parse_error& e, const char* text, size_t size) {
  // e.byte is the 1-based index of the character where parsing failed (size + 1 at end of input).
  size_t pos = e.byte > 0 ? static_cast<size_t>(e.byte - 1) : 0;
  if (pos > size) pos = size;
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < pos; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  const size_t column = pos - line_start + 1;

  std::string detail = e.what();
  size_t at = detail.find("parse error");
  if (at != std::string::npos) {
    size_t colon = detail.find(": ", at);
    if (colon != std::string::npos) detail = detail.substr(colon + 2);
  }
  return "at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + detail;
}

JsonConfig::JsonConfig(nlohmann::json value, std::string origin) : json_(std::move(value)), origin_(std::move(origin)) {
  if (!json_.is_object()) fail("expected a JSON object, got " + describe_value(json_));
}

namespace {

// nlohmann's DOM builder behind SAX events, telling on_key each object key with its depth. The
// library's callback parser (parse(first, last, cb)) scans the whole parent container at the end of
// every nested object or array to drop a discarded value, which made a header of n tensors cost
// O(n^2); this keeps the plain parser's linear DOM build. Errors are the plain parser's, rethrown
// with their concrete type (parse_error, out_of_range) by json_sax_dom_parser.
class KeyReportingSax {
 public:
  KeyReportingSax(nlohmann::json& root, const JsonKeyCallback& on_key, std::string& last_key)
      : dom_(root, true), on_key_(on_key), last_key_(last_key) {}
  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) { return dom_.number_float(v, s); }
  bool string(string_t& v) { return dom_.string(v); }
  bool binary(binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    ++depth_;
    return dom_.start_object(n);
  }
  bool key(string_t& k) {
    last_key_ = k;
    if (on_key_) on_key_(depth_, k);
    return dom_.key(k);
  }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    ++depth_;
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t pos, const std::string& token, const Exception& ex) {
    return dom_.parse_error(pos, token, ex);
  }

 private:
  nlohmann::detail::json_sax_dom_parser<nlohmann::json> dom_;
  const JsonKeyCallback& on_key_;
  std::string& last_key_;
  int depth_ = 0;  // open objects and arrays: 1 for the top-level object's keys
};

}  // namespace

nlohmann::json parse_json_document(const char* text, size_t size, const std::string& origin, const std::string& failure,
                                   const JsonKeyCallback& on_key) {
  check_json_limits(text, size, origin);
  std::string key;  // the last key read: a value that fails to convert (1e400) belongs to it
  try {
    nlohmann::json result;
    KeyReportingSax sax(result, on_key, key);
    nlohmann::json::sax_parse(text, text + size, &sax);
    return result;
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(origin + ": " + failure + " " + describe_json_parse_error(e, text, size));
  } catch (const nlohmann::json::exception& e) {  // out_of_range: a number too large for a double
    std::string detail = e.what();
    if (size_t at = detail.find("] "); at != std::string::npos) detail = detail.substr(at + 2);
    throw Error(origin + ": " + (key.empty() ? std::string() : "field '" + key + "': ") + detail);
  }
}

JsonConfig JsonConfig::load(const std::string& path) {
  return parse(read_input_file(path, kMaxJsonBytes, "a JSON file"), path);
}

JsonConfig JsonConfig::parse(const std::string& text, const std::string& origin) {
  return JsonConfig(parse_json_document(text.data(), text.size(), origin, "malformed JSON"), origin);
}

void JsonConfig::fail(const std::string& msg) const { throw Error(origin_ + ": " + msg); }

void JsonConfig::wrong_type(const std::string& what, const char* expected, const nlohmann::json& got) const {
  fail(what + " must be " + expected + ", got " + describe_value(got));
}

std::string JsonConfig::field(const std::string& key) { return "field '" + key + "'"; }

bool JsonConfig::has(const std::string& key) const {
  auto it = json_.find(key);
  return it != json_.end() && !it->is_null();
}

std::optional<std::string> JsonConfig::first_present(std::initializer_list<std::string> keys) const {
  for (const std::string& k : keys)
    if (has(k)) return k;
  return std::nullopt;
}

const nlohmann::json& JsonConfig::require(const std::string& key) const {
  auto it = json_.find(key);
  if (it == json_.end() || it->is_null()) fail("field '" + key + "' missing");
  return *it;
}

int64_t JsonConfig::to_int(const std::string& what, const nlohmann::json& v) const {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) fail(what + " is out of range: " + v.dump());
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    // 2^63 is exactly representable; valid doubles are in [-2^63, 2^63).
    if (std::isfinite(d) && d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
      return static_cast<int64_t>(d);
  }
  wrong_type(what, "an integer", v);
}

double JsonConfig::to_double(const std::string& what, const nlohmann::json& v) const {
  if (!v.is_number()) wrong_type(what, "a number", v);
  return v.get<double>();
}

int64_t JsonConfig::to_count(const std::string& what, const nlohmann::json& v) const {
  const int64_t n = to_int(what, v);
  if (n < 1 || n > INT32_MAX) fail(what + " must be an integer in [1, 2147483647], got " + std::to_string(n));
  return n;
}

int64_t JsonConfig::get_count(const std::string& key) const { return to_count(field(key), require(key)); }

int64_t JsonConfig::get_count(const std::string& key, int64_t def) const {
  return has(key) ? to_count(field(key), json_.at(key)) : def;
}

int64_t JsonConfig::get_count_any(std::initializer_list<std::string> keys) const {
  auto k = first_present(keys);
  if (!k) fail(none_present(keys));
  return get_count(*k);
}

float JsonConfig::get_eps(const std::string& key, double def) const {
  const double d = get_double(key, def);
  const auto f = static_cast<float>(d);
  if (!(std::isfinite(d) && f > 0.0f && std::isfinite(f)))
    fail(field(key) + " must be a finite number > 0 (as a float), got " + json_.at(key).dump());
  return f;
}

double JsonConfig::get_fraction(const std::string& key, double def) const {
  const double d = get_double(key, def);
  if (!(d > 0.0 && d <= 1.0)) fail(field(key) + " must be in (0, 1], got " + json_.at(key).dump());
  return d;
}

int64_t JsonConfig::get_int(const std::string& key) const { return to_int(field(key), require(key)); }

int64_t JsonConfig::get_int(const std::string& key, int64_t def) const {
  return has(key) ? to_int(field(key), json_.at(key)) : def;
}

double JsonConfig::get_double(const std::string& key) const { return to_double(field(key), require(key)); }

double JsonConfig::get_double(const std::string& key, double def) const {
  return has(key) ? to_double(field(key), json_.at(key)) : def;
}

bool JsonConfig::get_bool(const std::string& key) const {
  const nlohmann::json& v = require(key);
  if (!v.is_boolean()) wrong_type(field(key), "a boolean", v);
  return v.get<bool>();
}

bool JsonConfig::get_bool(const std::string& key, bool def) const { return has(key) ? get_bool(key) : def; }

std::string JsonConfig::get_string(const std::string& key) const {
  const nlohmann::json& v = require(key);
  if (!v.is_string()) wrong_type(field(key), "a string", v);
  return v.get<std::string>();
}

std::string JsonConfig::get_string(const std::string& key, const std::string& def) const {
  return has(key) ? get_string(key) : def;
}

std::vector<double> JsonConfig::get_double_array(const std::string& key) const {
  const nlohmann::json& v = require(key);
  if (!v.is_array()) wrong_type(field(key), "an array of numbers", v);
  std::vector<double> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) out.push_back(to_double(field(key) + " entry " + std::to_string(i), v[i]));
  return out;
}

std::vector<int64_t> JsonConfig::get_int_array(const std::string& key) const {
  const nlohmann::json& v = require(key);
  if (v.is_number()) return {to_int(field(key), v)};
  if (!v.is_array()) wrong_type(field(key), "an integer or an array of integers", v);
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) out.push_back(to_int(field(key) + " entry " + std::to_string(i), v[i]));
  return out;
}

std::string JsonConfig::none_present(std::initializer_list<std::string> keys) const {
  std::string list;
  for (const std::string& k : keys) list += (list.empty() ? "'" : ", '") + k + "'";
  return "none of the fields " + list + " is present";
}

int64_t JsonConfig::get_int_any(std::initializer_list<std::string> keys) const {
  auto k = first_present(keys);
  if (!k) fail(none_present(keys));
  return get_int(*k);
}

int64_t JsonConfig::get_int_any(std::initializer_list<std::string> keys, int64_t def) const {
  auto k = first_present(keys);
  return k ? get_int(*k) : def;
}

double JsonConfig::get_double_any(std::initializer_list<std::string> keys) const {
  auto k = first_present(keys);
  if (!k) fail(none_present(keys));
  return get_double(*k);
}

double JsonConfig::get_double_any(std::initializer_list<std::string> keys, double def) const {
  auto k = first_present(keys);
  return k ? get_double(*k) : def;
}

JsonConfig JsonConfig::child(const std::string& key) const {
  const nlohmann::json& v = require(key);
  if (!v.is_object()) wrong_type(field(key), "an object", v);
  JsonConfig c;
  c.json_ = v;
  c.origin_ = origin_ + (nested_ ? "." : ": ") + key;
  c.nested_ = true;
  return c;
}

}  // namespace ordo
