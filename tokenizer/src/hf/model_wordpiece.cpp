// WordPiece model: greedy longest-match-first with a continuing-subword prefix ("##"); a word
// longer than max_input_chars_per_word, or one that cannot be covered, is the unk token.
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

class WordPiece final : public VocabModel {
 public:
  WordPiece(std::unordered_map<std::string, int32_t> vocab, std::string unk, std::string prefix, size_t max_chars,
            const std::string& where)
      : VocabModel(std::move(vocab)),
        unk_(std::move(unk)),
        prefix_(std::move(prefix)),
        max_chars_(max_chars),
        where_(where) {}
  const char* kind() const override { return "wordpiece"; }
  std::optional<std::string> unk_token() const override { return unk_; }

  void tokenize(const std::string& s, std::vector<Token>& out) const override {
    std::vector<size_t> offs;  // byte offset of every code point, then the end
    for (size_t i = 0; i < s.size();) offs.push_back(i), next_cp(s, i);
    offs.push_back(s.size());
    const size_t n = offs.size() - 1;
    if (n > max_chars_) return push_unk(out);
    std::vector<Token> sub;
    for (size_t start = 0; start < n;) {
      size_t end = n;
      bool found = false;
      while (start < end) {
        std::string piece = s.substr(offs[start], offs[end] - offs[start]);
        if (start > 0) piece = prefix_ + piece;
        if (auto it = vocab_.find(piece); it != vocab_.end()) {
          sub.push_back({it->second, std::move(piece)});
          found = true;
          break;
        }
        --end;
      }
      if (!found) return push_unk(out);
      start = end;
    }
    out.insert(out.end(), sub.begin(), sub.end());
  }

 private:
  void push_unk(std::vector<Token>& out) const {
    auto it = vocab_.find(unk_);
    if (it == vocab_.end()) fail(where_ + ".unk_token", "'" + unk_ + "' is not in the vocabulary");
    out.push_back({it->second, unk_});
  }

  std::string unk_, prefix_;
  size_t max_chars_;
  std::string where_;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece_model(const json& j, const std::string& where) {
  if (!j.contains("vocab")) fail(where, "WordPiece model has no 'vocab'");
  const int64_t max_chars = get_int(j, "max_input_chars_per_word", where, 100);
  if (max_chars < 0) fail(where + ".max_input_chars_per_word", "must not be negative");
  return std::make_unique<WordPiece>(
      read_vocab_object(j["vocab"], where + ".vocab"), get_string(j, "unk_token", where, "[UNK]"),
      get_string(j, "continuing_subword_prefix", where, "##"), static_cast<size_t>(max_chars), where);
}

}  // namespace ordo::tokenizer_detail::hf
