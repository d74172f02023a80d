// ordo::ChatTemplate: parses a template once, renders conversations, and finds a model
// directory's template and special-token strings where transformers looks for them.
#include "ordo/chat_template.hpp"

#include <nlohmann/json.hpp>

#include "../files.hpp"
#include "ordo/input.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "render.hpp"

namespace ordo {

struct ChatTemplate::Impl {
  std::string source;
  chat::Body body;
  std::vector<std::pair<std::string, std::string>> special;
};

ChatTemplate::ChatTemplate(const std::string& source, std::vector<std::pair<std::string, std::string>> special_tokens) {
  auto impl = std::make_shared<Impl>();
  impl->source = source;
  impl->body = chat::parse(chat::lex(source));
  chat::check_names(impl->body);
  impl->special = std::move(special_tokens);
  impl_ = std::move(impl);
}

const std::string& ChatTemplate::source() const { return impl_->source; }

std::string ChatTemplate::special_token(const std::string& name) const {
  for (const auto& kv : impl_->special)
    if (kv.first == name) return kv.second;
  return "";
}

namespace {

nlohmann::ordered_json parse_json(const std::string& text, const char* what) {
  check_json_limits(text, std::string("chat template: ") + what);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("chat template: ") + what + " is not valid JSON: " + e.what());
  }
}

std::string render(const chat::Body& body, const std::vector<std::pair<std::string, std::string>>& special,
                   chat::Value messages, bool add_generation_prompt, const std::string& extra_vars_json) {
  std::vector<std::pair<std::string, chat::Value>> vars;
  for (const auto& kv : special) vars.emplace_back(kv.first, chat::Value::string(kv.second));
  vars.emplace_back("messages", std::move(messages));
  vars.emplace_back("tools", chat::Value::none());
  vars.emplace_back("documents", chat::Value::none());
  vars.emplace_back("add_generation_prompt", chat::Value::boolean(add_generation_prompt));
  if (!extra_vars_json.empty()) {
    const auto extra = parse_json(extra_vars_json, "extra variables");
    if (!extra.is_object()) throw Error("chat template: extra variables must be a JSON object");
    for (auto it = extra.begin(); it != extra.end(); ++it) vars.emplace_back(it.key(), chat::from_json(it.value()));
  }
  try {
    return chat::render(body, vars);
  } catch (const std::bad_alloc&) {
    throw Error("chat template: out of memory while rendering");
  }
}

}  // namespace

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                const std::string& extra_vars_json) const {
  chat::List list;
  for (const ChatMessage& m : messages) {
    auto d = std::make_shared<chat::Dict>();
    d->set("role", chat::Value::string(m.role));
    d->set("content", chat::Value::string(m.content));
    list.push_back(chat::Value::make_dict(std::move(d)));
  }
  return render(impl_->body, impl_->special, chat::Value::make_list(std::move(list)), add_generation_prompt,
                extra_vars_json);
}

std::string ChatTemplate::apply_json(const std::string& messages_json, bool add_generation_prompt,
                                     const std::string& extra_vars_json) const {
  const auto j = parse_json(messages_json, "messages");
  if (!j.is_array()) throw Error("chat template: messages must be a JSON array");
  return render(impl_->body, impl_->special, chat::from_json(j), add_generation_prompt, extra_vars_json);
}

std::string ChatTemplate::render_json(const std::string& vars_json) const {
  const auto j = parse_json(vars_json, "variables");
  if (!j.is_object()) throw Error("chat template: variables must be a JSON object");
  std::vector<std::pair<std::string, chat::Value>> vars;
  for (auto it = j.begin(); it != j.end(); ++it) vars.emplace_back(it.key(), chat::from_json(it.value()));
  return chat::render(impl_->body, vars);
}

std::string apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const std::string& extra_vars_json) {
  return tmpl.apply(messages, add_generation_prompt, extra_vars_json);
}

namespace {

using tokenizer_detail::file_exists;
using tokenizer_detail::join_path;

nlohmann::ordered_json read_ordered(const std::string& path) {
  const std::string text = tokenizer_detail::read_file(path);
  check_json_limits(text, "chat template: " + path);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("chat template: " + path + " is not valid JSON: " + e.what());
  }
}

// tokenizer_config.json's chat_template: a string, or named templates of which "default" is used.
std::optional<std::string> template_field(const nlohmann::ordered_json& j, const std::string& path) {
  auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& e : *it) {
      if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() ||
          !e["template"].is_string())
        throw Error("chat template: " + path +
                    ": field 'chat_template' entries must be {\"name\", \"template\"} strings");
      if (e["name"] == "default") return e["template"].get<std::string>();
    }
    throw Error("chat template: " + path + ": field 'chat_template' has named templates but none named 'default'");
  }
  throw Error("chat template: " + path + ": field 'chat_template' must be a string or a list of named templates");
}

void read_special(const nlohmann::ordered_json& j, const std::string& path,
                  std::vector<std::pair<std::string, std::string>>& out) {
  static const char* const names[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                      "pad_token", "cls_token", "mask_token"};
  for (const char* name : names) {
    bool have = false;
    for (const auto& kv : out) have = have || kv.first == name;
    auto it = j.find(name);
    if (have || it == j.end() || it->is_null()) continue;
    if (it->is_string())
      out.emplace_back(name, it->get<std::string>());
    else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
      out.emplace_back(name, (*it)["content"].get<std::string>());
    else
      throw Error("chat template: " + path + ": field '" + name +
                  "' must be a string or an object with a 'content' string");
  }
}

}  // namespace

std::optional<ChatTemplate> load_chat_template(const std::string& dir) {
  std::optional<std::string> source;
  std::string from;
  const std::string jinja = join_path(dir, "chat_template.jinja");
  const std::string tc = join_path(dir, "tokenizer_config.json");
  const std::string cj = join_path(dir, "chat_template.json");
  std::vector<std::pair<std::string, std::string>> special;
  std::optional<nlohmann::ordered_json> config;
  if (file_exists(tc)) {
    config = read_ordered(tc);
    if (!config->is_object()) throw Error("chat template: " + tc + " must hold a JSON object");
    read_special(*config, tc, special);
  }
  const std::string stm = join_path(dir, "special_tokens_map.json");
  if (file_exists(stm)) {
    const auto j = read_ordered(stm);
    if (j.is_object()) read_special(j, stm, special);
  }
  if (file_exists(jinja)) {
    source = tokenizer_detail::read_file(jinja);
    from = jinja;
  } else if (config && (source = template_field(*config, tc))) {
    from = tc;
  } else if (file_exists(cj)) {
    const auto j = read_ordered(cj);
    if (!j.is_object()) throw Error("chat template: " + cj + " must hold a JSON object");
    source = template_field(j, cj);
    from = cj;
  }
  if (!source) return std::nullopt;
  try {
    return ChatTemplate(*source, std::move(special));
  } catch (const Error& e) {
    throw Error(from + ": " + e.what());
  }
}

}  // namespace ordo
