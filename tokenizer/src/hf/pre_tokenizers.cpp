// tokenizer.json "pre_tokenizer": ByteLevel, BertPreTokenizer, Whitespace, WhitespaceSplit,
// Metaspace, Split (PCRE2), Digits, Punctuation, CharDelimiterSplit and Sequence.
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

// Replaces every piece by the pieces `split` cuts it into ([begin, end) byte ranges).
template <class SplitFn>
void split_pieces(std::vector<Piece>& pieces, SplitFn split) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (const Piece& p : pieces) {
    for (const auto& [b, e] : split(p.text)) out.push_back({p.text.substr(b, e - b), p.at_start && b == 0});
  }
  pieces = std::move(out);
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) re_.emplace(gpt2_pattern(), false, "ByteLevel pattern");
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    if (add_prefix_space_)
      for (Piece& p : pieces)
        if (p.text.empty() || p.text[0] != ' ') p.text = " " + p.text;
    if (re_)
      split_pieces(pieces, [&](const std::string& s) {
        return apply_behavior(regex_spans(*re_, s), SplitBehavior::Isolated, false);
      });
    const auto& chars = byte_chars();
    for (Piece& p : pieces) {
      std::string mapped;
      mapped.reserve(p.text.size() * 2);
      for (unsigned char c : p.text) mapped += chars[c];
      p.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::optional<Regex> re_;
};

class CharSplit final : public PreTokenizer {  // split on a character class with a behavior
 public:
  CharSplit(bool (*pred)(char32_t), SplitBehavior b) : pred_(pred), behavior_(b) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](const std::string& s) { return apply_behavior(char_spans(s, pred_), behavior_, false); });
  }

 private:
  bool (*pred_)(char32_t);
  SplitBehavior behavior_;
};

class Whitespace final : public PreTokenizer {  // \w+|[^\w\s]+, everything else dropped
 public:
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [](const std::string& s) {
      std::vector<std::pair<size_t, size_t>> out;
      int run = 0;  // 0: whitespace, 1: word, 2: other
      for (size_t i = 0; i < s.size();) {
        const size_t b = i;
        const char32_t c = next_cp(s, i);
        const int cls = is_word_char(c) ? 1 : is_whitespace(c) ? 0 : 2;
        if (cls != 0 && cls == run)
          out.back().second = i;
        else if (cls != 0)
          out.emplace_back(b, i);
        run = cls;
      }
      return out;
    });
  }
};

class CharDelimiter final : public PreTokenizer {
 public:
  explicit CharDelimiter(char32_t c) : c_(c) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](const std::string& s) {
      return apply_behavior(char_spans(s, [&](char32_t x) { return x == c_; }), SplitBehavior::Removed, false);
    });
  }

 private:
  char32_t c_;
};

enum class Prepend { Always, Never, First };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, Prepend scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {
    append_utf8(rep_, replacement);
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (Piece& p : pieces) {
      p.text = replace_all(p.text, " ", rep_);
      const bool prepend = scheme_ == Prepend::Always || (scheme_ == Prepend::First && p.at_start);
      if (prepend && !starts_with(p.text, rep_)) p.text = rep_ + p.text;
    }
    if (split_)
      split_pieces(pieces, [&](const std::string& s) {
        return apply_behavior(char_spans(s, [&](char32_t c) { return c == replacement_; }),
                              SplitBehavior::MergedWithNext, false);
      });
  }

 private:
  char32_t replacement_;
  std::string rep_;
  Prepend scheme_;
  bool split_;
};

class Split final : public PreTokenizer {
 public:
  Split(Regex re, SplitBehavior b, bool invert) : re_(std::move(re)), behavior_(b), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](const std::string& s) { return apply_behavior(regex_spans(re_, s), behavior_, invert_); });
  }

 private:
  Regex re_;
  SplitBehavior behavior_;
  bool invert_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space) {
  return std::make_unique<ByteLevel>(add_prefix_space, true);
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, where);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(get_bool(j, "add_prefix_space", where, true),
                                       get_bool(j, "use_regex", where, true));
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    parts.push_back(std::make_unique<CharSplit>(is_whitespace, SplitBehavior::Removed));
    parts.push_back(std::make_unique<CharSplit>(is_punctuation, SplitBehavior::Isolated));
    return std::make_unique<Sequence>(std::move(parts));
  }
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit") return std::make_unique<CharSplit>(is_whitespace, SplitBehavior::Removed);
  if (type == "Metaspace") {
    const char32_t rep = get_char(j, "replacement", where, "\xE2\x96\x81");
    Prepend scheme = Prepend::Always;
    if (j.contains("prepend_scheme") && !j["prepend_scheme"].is_null()) {
      const std::string s = get_string(j, "prepend_scheme", where);
      if (s == "always")
        scheme = Prepend::Always;
      else if (s == "never")
        scheme = Prepend::Never;
      else if (s == "first")
        scheme = Prepend::First;
      else
        fail(where + ".prepend_scheme", "unknown value '" + s + "' (always, never or first)");
    } else if (!get_bool(j, "add_prefix_space", where, true)) {  // older files
      scheme = Prepend::Never;
    }
    return std::make_unique<Metaspace>(rep, scheme, get_bool(j, "split", where, true));
  }
  if (type == "Split") {
    if (!j.contains("pattern")) fail(where, "Split has no 'pattern'");
    return std::make_unique<Split>(make_pattern(j["pattern"], where + ".pattern"),
                                   split_behavior(get_string(j, "behavior", where, "Isolated"), where + ".behavior"),
                                   get_bool(j, "invert", where, false));
  }
  if (type == "Digits") {
    const bool individual = get_bool(j, "individual_digits", where, false);
    return std::make_unique<CharSplit>(is_numeric, individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
  }
  if (type == "Punctuation")
    return std::make_unique<CharSplit>(
        is_punctuation, split_behavior(get_string(j, "behavior", where, "Isolated"), where + ".behavior"));
  if (type == "CharDelimiterSplit") return std::make_unique<CharDelimiter>(get_char(j, "delimiter", where, ""));
  if (type == "Sequence") {
    return std::make_unique<Sequence>(make_sequence<PreTokenizer>(j, "pretokenizers", where, make_pre_tokenizer));
  }
  fail(where, "pre_tokenizer type '" + type +
                  "' is not supported (supported: ByteLevel, BertPreTokenizer, "
                  "Whitespace, WhitespaceSplit, Metaspace, Split, Digits, Punctuation, CharDelimiterSplit, Sequence)");
}

}  // namespace ordo::tokenizer_detail::hf
