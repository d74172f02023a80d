// tokenizer.json "normalizer": NFC/NFD/NFKC/NFKD (ICU), Lowercase, StripAccents, BertNormalizer,
// Replace, Prepend, Strip and Sequence (Precompiled: normalizer_precompiled.cpp).
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

class UnicodeNorm final : public Normalizer {
 public:
  explicit UnicodeNorm(NormForm f) : form_(f) {}
  std::string normalize(std::string s) const override { return unicode_normalize(s, form_); }

 private:
  NormForm form_;
};

class Lowercase final : public Normalizer {
 public:
  std::string normalize(std::string s) const override { return lowercase(s); }
};

std::string drop_chars(const std::string& s, bool (*drop)(char32_t)) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t b = i;
    if (!drop(next_cp(s, i))) out.append(s, b, i - b);
  }
  return out;
}

// Drops every combining mark (Mn, Mc, Me); NFD first is the user's job. BertNormalizer's own
// accent stripping drops only Mn.
class StripAccents final : public Normalizer {
 public:
  std::string normalize(std::string s) const override { return drop_chars(s, is_mark); }
};

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean, bool chinese, bool strip, bool lower)
      : clean_(clean), chinese_(chinese), strip_(strip), lower_(lower) {}
  std::string normalize(std::string s) const override {
    if (clean_ || chinese_) {
      std::string out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        const size_t b = i;
        const char32_t c = next_cp(s, i);
        if (clean_) {
          const bool control = c != '\t' && c != '\n' && c != '\r' && is_other(c);
          if (c == 0 || c == 0xFFFD || control) continue;
          if (c == '\t' || c == '\n' || c == '\r' || is_whitespace(c)) {
            out += ' ';
            continue;
          }
        }
        if (chinese_ && is_chinese_char(c)) {
          out += ' ';
          out.append(s, b, i - b);
          out += ' ';
        } else {
          out.append(s, b, i - b);
        }
      }
      s = std::move(out);
    }
    if (strip_) s = drop_chars(unicode_normalize(s, NormForm::NFD), is_nonspacing_mark);
    if (lower_) s = lowercase(s);
    return s;
  }

 private:
  bool clean_, chinese_, strip_, lower_;
};

class Replace final : public Normalizer {
 public:
  Replace(Regex re, std::string content) : re_(std::move(re)), content_(std::move(content)) {}
  std::string normalize(std::string s) const override { return re_.replace_all(s, content_); }

 private:
  Regex re_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  std::string normalize(std::string s) const override { return s.empty() ? s : prepend_ + s; }

 private:
  std::string prepend_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string s) const override {
    size_t begin = 0, end = s.size();
    if (left_) {
      while (begin < s.size()) {
        size_t j = begin;
        if (!is_whitespace(next_cp(s, j))) break;
        begin = j;
      }
    }
    if (right_) {
      size_t last_kept = begin;
      for (size_t i = begin; i < s.size();) {
        if (!is_whitespace(next_cp(s, i))) last_kept = i;
      }
      end = last_kept;
    }
    return s.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(std::string s) const override {
    for (const auto& p : parts_) s = p->normalize(std::move(s));
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, where);
  if (type == "NFC") return std::make_unique<UnicodeNorm>(NormForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNorm>(NormForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNorm>(NormForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNorm>(NormForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "BertNormalizer") {
    const bool lower = get_bool(j, "lowercase", where, true);
    // strip_accents: null means "as lowercase".
    const bool strip = get_bool(j, "strip_accents", where, lower);
    return std::make_unique<BertNormalizer>(get_bool(j, "clean_text", where, true),
                                            get_bool(j, "handle_chinese_chars", where, true), strip, lower);
  }
  if (type == "Replace") {
    if (!j.contains("pattern")) fail(where, "Replace has no 'pattern'");
    return std::make_unique<Replace>(make_pattern(j["pattern"], where + ".pattern"), get_string(j, "content", where));
  }
  if (type == "Prepend") return std::make_unique<Prepend>(get_string(j, "prepend", where));
  if (type == "Strip")
    return std::make_unique<Strip>(get_bool(j, "strip_left", where, true), get_bool(j, "strip_right", where, true));
  if (type == "Precompiled") return make_precompiled(j, where);
  if (type == "Sequence") {
    return std::make_unique<Sequence>(make_sequence<Normalizer>(j, "normalizers", where, make_normalizer));
  }
  fail(where, "normalizer type '" + type +
                  "' is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, "
                  "StripAccents, BertNormalizer, Replace, Prepend, Strip, Precompiled, Sequence)");
}

}  // namespace ordo::tokenizer_detail::hf
