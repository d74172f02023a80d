// Test helpers for bad-input cases: the ordo::Error a call throws, and what its message names.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <string>

#include "ordo/tensor.hpp"

namespace ordo::test {

// Writes `bytes` to `path` (a crafted input file).
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The message of the ordo::Error f throws; a test failure for no exception or another type.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "foreign exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

// Each of `needles` appears in `message`.
inline void expect_has(const std::string& message, std::initializer_list<std::string> needles) {
  for (const auto& n : needles) EXPECT_NE(message.find(n), std::string::npos) << "'" << n << "' not in: " << message;
}

}  // namespace ordo::test
