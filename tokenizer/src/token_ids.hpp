// Token ids read from files: range checks that bound what a crafted id makes ordo allocate, and
// errors that name where the id came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "ordo/tensor.hpp"  // Error

namespace ordo::tokenizer_detail {

// How far ids may run past the number of tokens a file lists: the id table is sized by the largest
// id, so this bounds what a crafted id (10^8, 2^31-1) makes ordo allocate.
constexpr int64_t kMaxIdGap = 65536;
// A JSON integer that fits int32_t (and is >= 0 unless allow_negative); Error naming `where`.
int32_t json_token_id(const nlohmann::json& v, const std::string& where, bool allow_negative = false);
// A decimal token id written as text (added_tokens_decoder keys); Error naming `where`.
int32_t parse_token_id(const std::string& text, const std::string& where);
// Error "<where>: token id N is out of range ..." unless 0 <= id < listed + kMaxIdGap (`where`
// starts with the tokenizer kind and file).
void check_id_limit(int64_t id, size_t listed, const std::string& where);
// Error unless `known`: an id encode() would emit (a BOS/EOS/unk/template id) must be one decode()
// accepts. `where` names its origin, e.g. "eos_token_id from config.json".
void check_emitted_id(int32_t id, bool known, const std::string& where);

// Helper: error for an id outside [0, vocab).
[[noreturn]] void throw_bad_id(const char* kind, int32_t id, int32_t vocab);

}  // namespace ordo::tokenizer_detail
