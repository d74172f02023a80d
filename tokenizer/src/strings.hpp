// String helpers: prefixes, suffixes, replacement, and Python's str.isspace/strip semantics.
#pragma once

#include <string>

namespace ordo::tokenizer_detail {

bool ends_with(const std::string& s, const std::string& suffix);
bool starts_with(const std::string& s, const std::string& prefix);
std::string replace_all(std::string s, const std::string& from, const std::string& to);

// Python str semantics
bool py_isspace(char32_t cp);  // str.isspace()
std::string py_strip(const std::string& s);
std::string py_lstrip(const std::string& s);
std::string py_rstrip(const std::string& s);

}  // namespace ordo::tokenizer_detail
