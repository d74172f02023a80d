// Chat templates: the Jinja templates Hugging Face tokenizers ship (tokenizer_config.json's
// "chat_template", chat_template.jinja), rendered by ordo's own interpreter as transformers'
// apply_chat_template renders them with jinja2 (trim_blocks, lstrip_blocks, loop controls,
// raise_exception, strftime_now, tojson). The subset covers what real templates use (Llama 2/3/3.1,
// Mistral, Qwen2/ChatML, Zephyr, Gemma, Phi-3, tool-calling templates with macros and
// namespaces); anything outside it is an Error naming the construct and its line:col, never a
// silently different prompt.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ordo {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool", ...
  std::string content;
};

class ChatTemplate {
 public:
  // Parses `source`; an Error names a syntax error or an unsupported tag/filter/test with its
  // line:col. special_tokens are the variables HF passes from the tokenizer's special-token map
  // (bos_token, eos_token, unk_token, pad_token, ...), as strings.
  explicit ChatTemplate(const std::string& source,
                        std::vector<std::pair<std::string, std::string>> special_tokens = {});
  const std::string& source() const;
  // The special-token string named `name` ("bos_token"), or "" if the tokenizer has none.
  std::string special_token(const std::string& name) const;

  // Renders messages (HF's `messages`), `add_generation_prompt`, tools=None, documents=None and
  // the special tokens. extra_vars_json: a JSON object of further template variables (kwargs of
  // apply_chat_template, e.g. {"tools": [...], "date_string": "26 Jul 2024"}); they override the
  // special tokens. The template's raise_exception(msg) becomes an Error whose what() is msg.
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                    const std::string& extra_vars_json = "") const;
  // The same with messages as a JSON array of message objects (tool calls, content lists, ...).
  std::string apply_json(const std::string& messages_json, bool add_generation_prompt,
                         const std::string& extra_vars_json = "") const;
  // Renders with exactly the variables of vars_json (a JSON object), nothing added.
  std::string render_json(const std::string& vars_json) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

std::string apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const std::string& extra_vars_json = "");

// The chat template of a model directory, as transformers finds it: chat_template.jinja, else
// tokenizer_config.json's "chat_template" (a string, or a list of {"name", "template"} from which
// "default" is taken), else chat_template.json's "chat_template"; with bos/eos/unk/pad/... token
// strings from tokenizer_config.json (plain strings or {"content": ...} objects) or
// special_tokens_map.json. nullopt if the directory has no template; an Error naming the file
// and field if one is malformed.
std::optional<ChatTemplate> load_chat_template(const std::string& dir);

}  // namespace ordo
