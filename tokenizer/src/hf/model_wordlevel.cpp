// WordLevel model: each pre-token is looked up whole; a missing one is the unk token.
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

class WordLevel final : public VocabModel {
 public:
  WordLevel(std::unordered_map<std::string, int32_t> vocab, std::string unk, const std::string& where)
      : VocabModel(std::move(vocab)), unk_(std::move(unk)), where_(where) {}
  const char* kind() const override { return "wordlevel"; }
  std::optional<std::string> unk_token() const override { return unk_; }

  void tokenize(const std::string& s, std::vector<Token>& out) const override {
    if (auto it = vocab_.find(s); it != vocab_.end()) {
      out.push_back({it->second, s});
      return;
    }
    auto unk = vocab_.find(unk_);
    if (unk == vocab_.end())
      fail(where_, "'" + s + "' is not in the vocabulary and unk_token '" + unk_ + "' is not either");
    out.push_back({unk->second, unk_});
  }

 private:
  std::string unk_;
  std::string where_;
};

}  // namespace

std::unique_ptr<Model> make_wordlevel_model(const json& j, const std::string& where) {
  if (!j.contains("vocab")) fail(where, "WordLevel model has no 'vocab'");
  return std::make_unique<WordLevel>(read_vocab_object(j["vocab"], where + ".vocab"),
                                     get_string(j, "unk_token", where, "<unk>"), where);
}

}  // namespace ordo::tokenizer_detail::hf
