// Reading tokenizer.json fields with errors that name the file and the field.
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

void fail(const std::string& where, const std::string& what) { throw Error("tokenizer: " + where + ": " + what); }

namespace {
const json* field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) fail(where, "must be a JSON object");
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace

std::string get_string(const json& j, const char* key, const std::string& where, const std::string& def) {
  const json* v = field(j, key, where);
  if (!v) return def;
  if (!v->is_string()) fail(where + "." + key, "must be a string");
  return v->get<std::string>();
}

bool get_bool(const json& j, const char* key, const std::string& where, bool def) {
  const json* v = field(j, key, where);
  if (!v) return def;
  if (!v->is_boolean()) fail(where + "." + key, "must be a boolean");
  return v->get<bool>();
}

int64_t get_int(const json& j, const char* key, const std::string& where, int64_t def) {
  const json* v = field(j, key, where);
  if (!v) return def;
  if (!v->is_number_integer()) fail(where + "." + key, "must be an integer");
  return v->get<int64_t>();
}

std::string type_of(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "must be a JSON object");
  auto it = j.find("type");
  if (it == j.end() || !it->is_string()) fail(where, "has no string 'type'");
  return it->get<std::string>();
}

char32_t get_char(const json& j, const char* key, const std::string& where, const std::string& def) {
  const std::string s = get_string(j, key, where, def);
  size_t i = 0;
  if (s.empty()) fail(where + "." + key, "must be one character, got an empty string");
  const char32_t c = next_cp(s, i);
  if (i != s.size()) fail(where + "." + key, "must be one character, got '" + s + "'");
  return c;
}

}  // namespace ordo::tokenizer_detail::hf
