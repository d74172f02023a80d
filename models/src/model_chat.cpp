// Model's chat members: the rendered conversation as ids, and the ids that end an assistant turn.
#include <algorithm>

#include "ordo/ordo.hpp"

namespace ordo {

std::string Model::apply_chat_template(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  return chat_template().apply(messages, add_generation_prompt);
}

std::vector<int32_t> Model::encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  // transformers' apply_chat_template(tokenize=True) encodes with add_special_tokens=False.
  return encode(apply_chat_template(messages, add_generation_prompt), false);
}

std::vector<int32_t> Model::chat_stop_ids() const {
  std::vector<int32_t> ids;
  auto add = [&](int32_t id) {
    if (id >= 0 && id < spec().vocab_size && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  for (int32_t id : spec().eos_ids) add(id);  // config.json's and generation_config.json's lists
  if (!has_tokenizer()) return ids;
  const Tokenizer& tok = tokenizer();
  add(tok.eos_id());
  // End-of-turn markers of the common chat formats, where the vocabulary has them as one token.
  std::vector<std::string> markers{"<|eot_id|>",      "<|im_end|>", "<end_of_turn>",
                                   "<|end|>",         "<|eom_id|>", "<|END_OF_TURN_TOKEN|>",
                                   "<|end_of_turn|>", "<|EOT|>"};
  if (has_chat_template()) markers.push_back(chat_template().special_token("eos_token"));
  for (const std::string& m : markers) {
    if (m.empty()) continue;
    const std::vector<int32_t> t = tok.encode(m, false);
    if (t.size() == 1 && tok.id_to_piece(t[0]) == m) add(t[0]);
  }
  return ids;
}

}  // namespace ordo
