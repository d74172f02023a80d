// Model's chat members: the rendered conversation as ids, and the ids that end an assistant turn.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ordo/input.hpp"
#include "ordo/ordo.hpp"

namespace ordo {

std::string Model::apply_chat_template(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  return chat_template().apply(messages, add_generation_prompt);
}

std::vector<int32_t> Model::encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  // transformers' apply_chat_template(tokenize=True) encodes with add_special_tokens=False.
  return encode(apply_chat_template(messages, add_generation_prompt), false);
}

namespace {

// eos_token_id of a JSON file (an id or a list of ids); nothing if the file or field is absent or
// malformed (the loader reports malformed configs).
std::vector<int32_t> eos_ids_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  try {
    check_json_limits(text, path);
  } catch (const Error&) {
    return {};
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("eos_token_id")) return {};
  const nlohmann::json& e = j.at("eos_token_id");
  std::vector<int32_t> out;
  auto take = [&](const nlohmann::json& v) {
    if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT32_MAX)
      out.push_back(static_cast<int32_t>(v.get<int64_t>()));
  };
  if (e.is_array())
    for (const auto& v : e) take(v);
  else
    take(e);
  return out;
}

}  // namespace

std::vector<int32_t> Model::chat_stop_ids() const {
  std::vector<int32_t> ids;
  auto add = [&](int32_t id) {
    if (id >= 0 && id < spec().vocab_size && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  add(spec().eos_id);
  for (const char* file : {"config.json", "generation_config.json"})
    for (int32_t id : eos_ids_of((std::filesystem::path(dir()) / file).string())) add(id);
  if (!has_tokenizer()) return ids;
  const Tokenizer& tok = tokenizer();
  add(tok.eos_id());
  // End-of-turn markers of the common chat formats, where the vocabulary has them as one token.
  std::vector<std::string> markers{"<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<|eom_id|>",
                                   "<|END_OF_TURN_TOKEN|>", "<|end_of_turn|>", "<|EOT|>"};
  if (has_chat_template()) markers.push_back(chat_template().special_token("eos_token"));
  for (const std::string& m : markers) {
    if (m.empty()) continue;
    const std::vector<int32_t> t = tok.encode(m, false);
    if (t.size() == 1 && tok.id_to_piece(t[0]) == m) add(t[0]);
  }
  return ids;
}

}  // namespace ordo
