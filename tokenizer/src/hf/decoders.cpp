// tokenizer.json "decoder": ByteLevel, WordPiece, Metaspace, BPEDecoder, ByteFallback, Fuse, Strip,
// Replace and Sequence, each a step of tokenizers' decode_chain.
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

class ByteLevelDec final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      // A token with characters outside the byte table (an added token) is taken as UTF-8 text.
      auto raw = byte_level_bytes(t);
      bytes += raw ? *raw : t;
    }
    tokens = {utf8_lossy(bytes)};
  }
};

class WordPieceDec final : public Decoder {
 public:
  WordPieceDec(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (starts_with(t, prefix_))
          t.erase(t.find(prefix_), prefix_.size());  // first occurrence
        else
          t = " " + t;
      }
      if (cleanup_) t = cleanup(t);
    }
  }

 private:
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) s = replace_all(std::move(s), from, to);
    return s;
  }
  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDec final : public Decoder {
 public:
  MetaspaceDec(char32_t rep, bool prepend) : rep_(rep), prepend_(prepend) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t k = 0; k < t.size();) {
        const size_t b = k;
        if (next_cp(t, k) != rep_)
          out.append(t, b, k - b);
        else if (!(i == 0 && prepend_))
          out += ' ';  // the first token loses every replacement char
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  char32_t rep_;
  bool prepend_;
};

class BpeDec final : public Decoder {
 public:
  explicit BpeDec(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
  }

 private:
  std::string suffix_;
};

class ByteFallbackDec final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (utf8_lossy(pending) == pending)
        out.push_back(pending);
      else
        for (size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");  // one U+FFFD per byte
      pending.clear();
    };
    for (auto& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && starts_with(t, "<0x") && t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
          std::isxdigit(static_cast<unsigned char>(t[4])))
        byte = std::stoi(t.substr(3, 2), nullptr, 16);
      if (byte >= 0) {
        pending += static_cast<char>(byte);
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens = {all};
  }
};

class StripDec final : public Decoder {
 public:
  StripDec(char32_t c, size_t start, size_t stop) : c_(c), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      std::vector<size_t> offs;  // start of every character, then the end
      for (size_t i = 0; i < t.size();) offs.push_back(i), next_cp(t, i);
      offs.push_back(t.size());
      const size_t n = offs.size() - 1;
      auto at = [&](size_t k) {
        size_t i = offs[k];
        return next_cp(t, i);
      };
      size_t begin = 0, end = n;
      for (size_t k = 0; k < start_ && k < n && at(k) == c_; ++k) begin = k + 1;
      for (size_t k = 0; k < stop_ && k < n && at(n - 1 - k) == c_; ++k) end = n - 1 - k;
      t = begin < end ? t.substr(offs[begin], offs[end] - offs[begin]) : std::string();
    }
  }

 private:
  char32_t c_;
  size_t start_, stop_;
};

class ReplaceDec final : public Decoder {
 public:
  ReplaceDec(Regex re, std::string content) : re_(std::move(re)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) t = re_.replace_all(t, content_);
  }

 private:
  Regex re_;
  std::string content_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevelDec>(); }

std::unique_ptr<Decoder> make_decoder(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDec>();
  if (type == "WordPiece")
    return std::make_unique<WordPieceDec>(get_string(j, "prefix", where, "##"), get_bool(j, "cleanup", where, true));
  if (type == "Metaspace") {
    const char32_t rep = get_char(j, "replacement", where, "\xE2\x96\x81");
    bool prepend = true;
    if (j.contains("prepend_scheme") && !j["prepend_scheme"].is_null())
      prepend = get_string(j, "prepend_scheme", where) != "never";
    else
      prepend = get_bool(j, "add_prefix_space", where, true);
    return std::make_unique<MetaspaceDec>(rep, prepend);
  }
  if (type == "BPEDecoder") return std::make_unique<BpeDec>(get_string(j, "suffix", where, "</w>"));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDec>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") {
    const int64_t start = get_int(j, "start", where, 0), stop = get_int(j, "stop", where, 0);
    if (start < 0 || stop < 0) fail(where, "Strip start/stop must not be negative");
    return std::make_unique<StripDec>(get_char(j, "content", where, " "), static_cast<size_t>(start),
                                      static_cast<size_t>(stop));
  }
  if (type == "Replace") {
    if (!j.contains("pattern")) fail(where, "Replace has no 'pattern'");
    return std::make_unique<ReplaceDec>(make_pattern(j["pattern"], where + ".pattern"),
                                        get_string(j, "content", where));
  }
  if (type == "Sequence") {
    return std::make_unique<Sequence>(make_sequence<Decoder>(j, "decoders", where, make_decoder));
  }
  fail(where, "decoder type '" + type +
                  "' is not supported (supported: ByteLevel, WordPiece, Metaspace, BPEDecoder, "
                  "ByteFallback, Fuse, Strip, Replace, Sequence)");
}

}  // namespace ordo::tokenizer_detail::hf
