// String helpers: prefixes, suffixes, replacement, and Python's str.isspace/strip semantics.
#include "strings.hpp"

#include "utf8.hpp"

namespace ordo::tokenizer_detail {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  size_t pos = s.find(from);
  if (pos == std::string::npos) return s;
  std::string out;
  out.reserve(s.size());
  size_t last = 0;
  for (; pos != std::string::npos; pos = s.find(from, last)) {
    out.append(s, last, pos - last);
    out += to;
    last = pos + from.size();
  }
  out.append(s, last, std::string::npos);
  return out;
}

bool py_isspace(char32_t c) {
  switch (c) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return c >= 0x2000 && c <= 0x200A;
  }
}

namespace {
// Byte length of the whitespace run at the start (forward) of s.
size_t leading_space_bytes(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!py_isspace(next_cp(s, j))) break;
    i = j;
  }
  return i;
}
size_t trailing_space_start(const std::string& s) {
  size_t end = 0;  // byte index just after the last non-space code point
  for (size_t i = 0; i < s.size();) {
    const char32_t c = next_cp(s, i);
    if (!py_isspace(c)) end = i;
  }
  return end;
}
}  // namespace

std::string py_lstrip(const std::string& s) { return s.substr(leading_space_bytes(s)); }
std::string py_rstrip(const std::string& s) { return s.substr(0, trailing_space_start(s)); }
std::string py_strip(const std::string& s) { return py_lstrip(py_rstrip(s)); }

}  // namespace ordo::tokenizer_detail
