// tokenizer.json "post_processor" for a single sequence: TemplateProcessing, BertProcessing,
// RobertaProcessing, ByteLevel (offsets only: nothing to do for ids) and Sequence.
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

class Template final : public PostProcessor {
 public:
  // items: the special tokens of each template slot; nullopt marks the sequence itself.
  explicit Template(std::vector<std::optional<std::vector<Token>>> items) : items_(std::move(items)) {}
  void process(std::vector<Token>& tokens) const override {
    std::vector<Token> out;
    out.reserve(tokens.size() + items_.size());
    for (const auto& item : items_) {
      if (item)
        out.insert(out.end(), item->begin(), item->end());
      else
        out.insert(out.end(), tokens.begin(), tokens.end());
    }
    tokens = std::move(out);
  }

 private:
  std::vector<std::optional<std::vector<Token>>> items_;
};

class Nothing final : public PostProcessor {
 public:
  void process(std::vector<Token>&) const override {}
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(std::vector<Token>& tokens) const override {
    for (const auto& p : parts_) p->process(tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

Token token_pair(const json& j, const char* key, const std::string& where) {
  const json* v = j.contains(key) ? &j[key] : nullptr;
  if (!v || !v->is_array() || v->size() != 2 || !(*v)[0].is_string() || !(*v)[1].is_number_integer() ||
      (*v)[1].get<int64_t>() < 0 || (*v)[1].get<int64_t>() > INT32_MAX)
    fail(where + "." + key, "must be [token, id] with a non-negative id");
  return {(*v)[1].get<int32_t>(), (*v)[0].get<std::string>()};
}

std::unique_ptr<PostProcessor> make_template(const json& j, const std::string& where) {
  if (!j.contains("single") || !j["single"].is_array()) fail(where, "TemplateProcessing has no 'single' list");
  const json specials =
      j.contains("special_tokens") && j["special_tokens"].is_object() ? j["special_tokens"] : json::object();
  std::vector<std::optional<std::vector<Token>>> items;
  for (size_t i = 0; i < j["single"].size(); ++i) {
    const json& item = j["single"][i];
    const std::string w = where + ".single[" + std::to_string(i) + "]";
    if (item.is_object() && item.contains("Sequence")) {
      items.emplace_back(std::nullopt);
    } else if (item.is_object() && item.contains("SpecialToken")) {
      const std::string name = get_string(item["SpecialToken"], "id", w + ".SpecialToken");
      if (!specials.contains(name)) fail(w, "special token '" + name + "' is not in special_tokens");
      const json& st = specials[name];
      const std::string sw = where + ".special_tokens['" + name + "']";
      if (!st.contains("ids") || !st["ids"].is_array() || !st.contains("tokens") || !st["tokens"].is_array() ||
          st["ids"].size() != st["tokens"].size())
        fail(sw, "needs 'ids' and 'tokens' lists of the same length");
      std::vector<Token> toks;
      for (size_t k = 0; k < st["ids"].size(); ++k) {
        const json& id = st["ids"][k];
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
          fail(sw + ".ids", "must hold non-negative integer ids");
        if (!st["tokens"][k].is_string()) fail(sw + ".tokens", "must hold strings");
        toks.push_back({id.get<int32_t>(), st["tokens"][k].get<std::string>()});
      }
      items.emplace_back(std::move(toks));
    } else {
      fail(w, "must be {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
  }
  return std::make_unique<Template>(std::move(items));
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, where);
  if (type == "TemplateProcessing") return make_template(j, where);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const Token cls = token_pair(j, "cls", where), sep = token_pair(j, "sep", where);
    return std::make_unique<Template>(
        std::vector<std::optional<std::vector<Token>>>{std::vector<Token>{cls}, std::nullopt, std::vector<Token>{sep}});
  }
  if (type == "ByteLevel") return std::make_unique<Nothing>();
  if (type == "Sequence") {
    return std::make_unique<Sequence>(make_sequence<PostProcessor>(j, "processors", where, make_post_processor));
  }
  fail(where, "post_processor type '" + type +
                  "' is not supported (supported: TemplateProcessing, BertProcessing, "
                  "RobertaProcessing, ByteLevel, Sequence)");
}

}  // namespace ordo::tokenizer_detail::hf
