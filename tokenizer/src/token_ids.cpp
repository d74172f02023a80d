// Token ids read from files: range checks that bound what a crafted id makes ordo allocate, and
// errors that name where the id came from.
#include "token_ids.hpp"

#include <climits>
#include <limits>

#include <nlohmann/json.hpp>

#include "ordo/tensor.hpp"

namespace ordo::tokenizer_detail {

int32_t json_token_id(const nlohmann::json& v, const std::string& where, bool allow_negative) {
  const bool fits = v.is_number_unsigned()
                        ? v.get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX)
                        : v.is_number_integer() && v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX;
  if (!fits || (!allow_negative && v.get<int64_t>() < 0))
    throw Error("tokenizer: " + where + " must be " + (allow_negative ? "an integer" : "a non-negative integer") +
                " below 2^31, got " + v.dump());
  return static_cast<int32_t>(v.get<int64_t>());
}

int32_t parse_token_id(const std::string& text, const std::string& where) {
  int64_t v = 0;
  bool ok = !text.empty() && text.size() <= 10;
  for (char ch : text) {
    ok = ok && ch >= '0' && ch <= '9';
    if (ok) v = v * 10 + (ch - '0');
  }
  if (!ok || v > INT32_MAX)
    throw Error("tokenizer: " + where + " is not a token id (a non-negative integer below 2^31)");
  return static_cast<int32_t>(v);
}

void check_id_limit(int64_t id, size_t listed, const std::string& where) {
  const int64_t limit = static_cast<int64_t>(listed) + kMaxIdGap;
  if (id < 0 || id >= limit)
    throw Error(where + ": token id " + std::to_string(id) + " is out of range: with " + std::to_string(listed) +
                " tokens listed, ids must be below " + std::to_string(limit) + " (the listed count + " +
                std::to_string(kMaxIdGap) + ")");
}

void check_emitted_id(int32_t id, bool known, const std::string& where) {
  if (!known)
    throw Error(where + " is token id " + std::to_string(id) +
                ", which is not in the vocabulary (decode would reject it)");
}

void throw_bad_id(const char* kind, int32_t id, int32_t vocab) {
  throw Error(std::string(kind) + " tokenizer: token id " + std::to_string(id) + " is out of range (vocabulary size " +
              std::to_string(vocab) + ")");
}

}  // namespace ordo::tokenizer_detail
