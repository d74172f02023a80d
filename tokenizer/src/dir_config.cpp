// What a model directory says about its tokenizer: tokenizer_config.json, config.json and
// generation_config.json fields, read once for every loader.
#include "dir_config.hpp"

#include <nlohmann/json.hpp>

#include "files.hpp"
#include "ordo/tensor.hpp"
#include "token_ids.hpp"

namespace ordo::tokenizer_detail {

namespace {
using nlohmann::json;

std::optional<bool> opt_bool(const json& j, const char* key, const std::string& file) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw Error("tokenizer: " + file + ": field '" + key + "' must be a boolean");
  return it->get<bool>();
}

std::optional<std::string> opt_token(const json& j, const char* key, const std::string& file) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  throw Error("tokenizer: " + file + ": field '" + key + "' must be a string or an AddedToken object");
}

std::optional<int32_t> opt_id(const json& j, const char* key, const std::string& file) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  const std::string where = file + ": field '" + key + "'";
  if (it->is_number_integer()) return json_token_id(*it, where, true);
  if (it->is_array()) {
    if (it->empty()) return std::nullopt;
    if ((*it)[0].is_number_integer()) return json_token_id((*it)[0], where, true);
  }
  throw Error("tokenizer: " + where + " must be an integer or a list of integers");
}
}  // namespace

DirConfig read_dir_config(const std::string& dir) {
  DirConfig c;
  const std::string tc = join_path(dir, "tokenizer_config.json");
  if (file_exists(tc)) {
    const json j = read_json_file(tc);
    if (!j.is_object()) throw Error("tokenizer: " + tc + " must hold a JSON object");
    c.legacy = opt_bool(j, "legacy", tc);
    c.do_lower_case = opt_bool(j, "do_lower_case", tc);
    c.add_bos = opt_bool(j, "add_bos_token", tc);
    c.add_eos = opt_bool(j, "add_eos_token", tc);
    c.add_prefix_space = opt_bool(j, "add_prefix_space", tc);
    c.strip_accents = opt_bool(j, "strip_accents", tc);
    c.tokenize_chinese_chars = opt_bool(j, "tokenize_chinese_chars", tc);
    if (auto it = j.find("extra_ids"); it != j.end() && !it->is_null()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxIdGap)
        throw Error("tokenizer: " + tc + ": field 'extra_ids' must be an integer in [0, " + std::to_string(kMaxIdGap) +
                    "]");
      c.extra_ids = it->get<int>();
    }
    if (auto it = j.find("tokenizer_class"); it != j.end() && it->is_string())
      c.tokenizer_class = it->get<std::string>();
    c.bos_token = opt_token(j, "bos_token", tc);
    c.eos_token = opt_token(j, "eos_token", tc);
    c.unk_token = opt_token(j, "unk_token", tc);
    c.pad_token = opt_token(j, "pad_token", tc);
    c.cls_token = opt_token(j, "cls_token", tc);
    c.sep_token = opt_token(j, "sep_token", tc);
    c.mask_token = opt_token(j, "mask_token", tc);
    if (auto it = j.find("added_tokens_decoder"); it != j.end() && it->is_object()) {
      for (const auto& [key, v] : it->items()) {
        AddedToken t;
        t.id = parse_token_id(key, tc + ": added_tokens_decoder key '" + key + "'");
        if (!v.is_object() || !v.contains("content") || !v["content"].is_string())
          throw Error("tokenizer: " + tc + ": added_tokens_decoder['" + key + "'] has no string 'content'");
        t.content = v["content"].get<std::string>();
        t.special = v.value("special", false);
        t.lstrip = v.value("lstrip", false);
        t.rstrip = v.value("rstrip", false);
        t.single_word = v.value("single_word", false);
        c.added_tokens.push_back(t);
      }
    }
  }
  for (const char* name : {"config.json", "generation_config.json"}) {
    const std::string path = join_path(dir, name);
    if (!file_exists(path)) continue;
    const json j = read_json_file(path);
    if (!j.is_object()) throw Error("tokenizer: " + path + " must hold a JSON object");
    if (auto it = j.find("model_type"); it != j.end() && it->is_string()) c.model_type = it->get<std::string>();
    if (auto v = opt_id(j, "bos_token_id", path)) c.bos_id = v;
    if (auto v = opt_id(j, "eos_token_id", path)) c.eos_id = v;
    if (auto v = opt_id(j, "pad_token_id", path)) c.pad_id = v;
  }
  return c;
}

}  // namespace ordo::tokenizer_detail
