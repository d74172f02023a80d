// What a model directory says about its tokenizer: tokenizer_config.json, config.json and
// generation_config.json fields, read once for every loader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "added_tokens.hpp"

namespace ordo::tokenizer_detail {

struct DirConfig {
  // tokenizer_config.json
  std::optional<bool> legacy, do_lower_case, add_bos, add_eos, add_prefix_space, strip_accents, tokenize_chinese_chars;
  std::optional<int> extra_ids;
  std::optional<std::string> tokenizer_class;
  std::optional<std::string> bos_token, eos_token, unk_token, pad_token, cls_token, sep_token, mask_token;
  std::vector<AddedToken> added_tokens;  // added_tokens_decoder
  // config.json / generation_config.json (generation_config wins)
  std::optional<std::string> model_type;
  std::optional<int32_t> bos_id, eos_id, pad_id;
};
DirConfig read_dir_config(const std::string& dir);

}  // namespace ordo::tokenizer_detail
