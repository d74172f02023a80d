// WordPiece (BERT vocab.txt) as HF's slow BertTokenizer: special-token splitting, BasicTokenizer
// (clean-up, CJK split, NFC, lowercase + NFD accent stripping, punctuation split; Unicode data from
// ICU) and greedy longest-match-first WordPiece with "##" continuations.
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include <unordered_map>
#include <unordered_set>

#include "added_tokens.hpp"
#include "dir_config.hpp"
#include "files.hpp"
#include "hf/hf.hpp"
#include "loaders.hpp"
#include "ordo/input.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "strings.hpp"
#include "token_ids.hpp"
#include "utf8.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {

bool is_control(char32_t c) {  // BertTokenizer _is_control: category C*, except \t \n \r
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED: return true;
    default: return false;
  }
}

bool is_whitespace(char32_t c) {  // _is_whitespace: space, \t, \n, \r or category Zs
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || u_charType(static_cast<UChar32>(c)) == U_SPACE_SEPARATOR;
}

bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::string icu_normalize(const std::string& s, bool nfd) {
  UErrorCode st = U_ZERO_ERROR;
  const icu::Normalizer2* nz = nfd ? icu::Normalizer2::getNFDInstance(st) : icu::Normalizer2::getNFCInstance(st);
  if (U_FAILURE(st)) throw Error("wordpiece tokenizer: ICU normalizer unavailable");
  icu::UnicodeString u = nz->normalize(icu::UnicodeString::fromUTF8(s), st);
  if (U_FAILURE(st)) throw Error("wordpiece tokenizer: ICU normalization failed");
  std::string out;
  u.toUTF8String(out);
  return out;
}

// Python str.lower() (full case mapping, Final_Sigma in context) on a whole string.
std::string py_lower(const std::string& s) {
  bool ascii = true;
  for (unsigned char c : s) ascii = ascii && c < 0x80;
  if (ascii) {
    std::string out = s;
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::vector<std::string> whitespace_split(const std::string& s) {  // Python str.split()
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size();) {
    const size_t b = i;
    const char32_t c = td::next_cp(s, i);
    if (td::py_isspace(c)) {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      cur.append(s, b, i - b);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

class WordPieceTokenizer final : public Tokenizer {
 public:
  WordPieceTokenizer(const std::string& path, const TokenizerOptions& opts, const td::DirConfig& cfg);

  const char* kind() const override { return "wordpiece"; }
  std::vector<int32_t> encode(const std::string& text, bool add_special) const override;
  std::vector<std::string> tokenize(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }
  std::string id_to_piece(int32_t id) const override;

 private:
  std::vector<std::string> basic_tokenize(const std::string& text) const;
  void wordpiece(const std::string& word, std::vector<std::string>& out) const;
  int32_t resolve(const std::string& token);

  std::string path_;
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  bool do_lower_case_ = true, tokenize_chinese_chars_ = true;
  std::optional<bool> strip_accents_;
  td::AddedTokens added_;
  std::unordered_set<std::string> special_strs_;
  td::LeftmostLongest special_matcher_;  // special_strs_, for lowercasing around them
  std::unordered_set<int32_t> special_ids_;
  std::string unk_token_ = "[UNK]";
  std::vector<int32_t> prefix_, suffix_;
  static constexpr size_t kMaxCharsPerWord = 100;
};

WordPieceTokenizer::WordPieceTokenizer(const std::string& path, const TokenizerOptions& opts, const td::DirConfig& cfg)
    : path_(path) {
  const std::string text = td::read_file(path);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string tok = text.substr(pos, nl - pos);
    if (!tok.empty() && tok.back() == '\r') tok.pop_back();
    pos = nl + 1;
    vocab_[tok] = static_cast<int32_t>(id_to_token_.size());
    id_to_token_.push_back(std::move(tok));
  }
  if (id_to_token_.empty()) throw Error("wordpiece tokenizer: " + path + " holds no tokens");

  do_lower_case_ = opts.do_lower_case.value_or(cfg.do_lower_case.value_or(true));
  strip_accents_ = cfg.strip_accents;
  tokenize_chinese_chars_ = cfg.tokenize_chinese_chars.value_or(true);

  unk_token_ = cfg.unk_token.value_or("[UNK]");
  const std::string sep = cfg.sep_token.value_or("[SEP]"), pad = cfg.pad_token.value_or("[PAD]"),
                    cls = cfg.cls_token.value_or("[CLS]"), mask = cfg.mask_token.value_or("[MASK]");
  const size_t listed = id_to_token_.size() + cfg.added_tokens.size();
  for (const auto& t : cfg.added_tokens) {
    td::check_id_limit(t.id, listed, "wordpiece tokenizer: " + path + ": added token '" + t.content + "'");
    added_.add(t);
    if (t.id >= vocab_size()) id_to_token_.resize(static_cast<size_t>(t.id) + 1);
    id_to_token_[t.id] = t.content;
    if (t.special) special_strs_.insert(t.content), special_ids_.insert(t.id);
  }
  const int32_t unk_tok = resolve(unk_token_), sep_tok = resolve(sep), pad_tok = resolve(pad), cls_tok = resolve(cls);
  resolve(mask);
  special_matcher_ = td::LeftmostLongest(std::vector<std::string>(special_strs_.begin(), special_strs_.end()));
  // BERT has no BOS/EOS; [CLS] and [SEP] play those parts for add_special.
  unk_ = opts.unk_id.value_or(unk_tok);
  pad_ = opts.pad_id.value_or(cfg.pad_id.value_or(pad_tok));
  bos_ = opts.bos_id.value_or(cfg.bos_id.value_or(cls_tok));
  eos_ = opts.eos_id.value_or(cfg.eos_id.value_or(sep_tok));
  // BertTokenizer always adds [CLS] and [SEP]: tokenizer_config.json's add_bos_token /
  // add_eos_token are not its flags and change nothing; only the caller's options do.
  if (opts.add_bos.value_or(true) && bos_ >= 0) prefix_ = {bos_};
  if (opts.add_eos.value_or(true) && eos_ >= 0) suffix_ = {eos_};
  auto known = [&](int32_t id) { return id >= 0 && id < vocab_size(); };
  for (int32_t id : prefix_)
    td::check_emitted_id(id, known(id), "wordpiece tokenizer: " + path + ": the id added before the text");
  for (int32_t id : suffix_)
    td::check_emitted_id(id, known(id), "wordpiece tokenizer: " + path + ": the id added after the text");
  td::check_emitted_id(unk_, known(unk_), "wordpiece tokenizer: " + path + ": the unknown-token id");
}

int32_t WordPieceTokenizer::resolve(const std::string& token) {
  if (token.empty()) return -1;
  td::AddedToken t;
  t.content = token;
  if (const auto* a = added_.find(token)) {
    t = *a;
  } else if (auto it = vocab_.find(token); it != vocab_.end()) {
    t.id = it->second;
  } else {
    t.id = vocab_size();  // not in vocab.txt: HF appends it
    id_to_token_.push_back(token);
  }
  added_.add(t);
  special_strs_.insert(token);
  special_ids_.insert(t.id);
  return t.id;
}

std::vector<std::string> WordPieceTokenizer::basic_tokenize(const std::string& text) const {
  // _clean_text + _tokenize_chinese_chars
  std::string cleaned;
  cleaned.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char32_t c = td::next_cp(text, i);
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) {
      cleaned += ' ';
    } else if (tokenize_chinese_chars_ && is_chinese_char(c)) {
      cleaned += ' ';
      td::append_utf8(cleaned, c);
      cleaned += ' ';
    } else {
      td::append_utf8(cleaned, c);
    }
  }
  std::vector<std::string> split_tokens;
  for (std::string tok : whitespace_split(icu_normalize(cleaned, false))) {
    const bool never_split = special_strs_.count(tok) > 0;
    if (!never_split) {
      const bool strip = do_lower_case_ ? strip_accents_.value_or(true) : strip_accents_.value_or(false);
      if (do_lower_case_) tok = py_lower(tok);
      if (strip) {
        const std::string nfd = icu_normalize(tok, true);
        tok.clear();
        for (size_t i = 0; i < nfd.size();) {
          const char32_t c = td::next_cp(nfd, i);
          if (u_charType(static_cast<UChar32>(c)) != U_NON_SPACING_MARK) td::append_utf8(tok, c);
        }
      }
    }
    if (never_split) {
      split_tokens.push_back(tok);
      continue;
    }
    // _run_split_on_punc
    bool start_new = true;
    for (size_t i = 0; i < tok.size();) {
      const size_t b = i;
      const char32_t c = td::next_cp(tok, i);
      if (td::hf::is_punctuation(c)) {  // _is_punctuation: ASCII non-alphanumerics or P*
        split_tokens.push_back(tok.substr(b, i - b));
        start_new = true;
      } else {
        if (start_new) split_tokens.emplace_back();
        start_new = false;
        split_tokens.back().append(tok, b, i - b);
      }
    }
  }
  std::string joined;
  for (size_t i = 0; i < split_tokens.size(); ++i) {
    if (i) joined += ' ';
    joined += split_tokens[i];
  }
  return whitespace_split(joined);
}

void WordPieceTokenizer::wordpiece(const std::string& word, std::vector<std::string>& out) const {
  for (const auto& token : whitespace_split(word)) {
    std::vector<size_t> offs;  // byte offset of every code point, plus the end
    for (size_t i = 0; i < token.size();) {
      offs.push_back(i);
      td::next_cp(token, i);
    }
    offs.push_back(token.size());
    const size_t n = offs.size() - 1;
    if (n > kMaxCharsPerWord) {
      out.push_back(unk_token_);
      continue;
    }
    std::vector<std::string> sub;
    bool bad = false;
    for (size_t start = 0; start < n;) {
      size_t end = n;
      std::string cur;
      bool found = false;
      while (start < end) {
        std::string s = token.substr(offs[start], offs[end] - offs[start]);
        if (start > 0) s = "##" + s;
        if (vocab_.count(s)) {
          cur = std::move(s);
          found = true;
          break;
        }
        --end;
      }
      if (!found) {
        bad = true;
        break;
      }
      sub.push_back(std::move(cur));
      start = end;
    }
    if (bad)
      out.push_back(unk_token_);
    else
      out.insert(out.end(), sub.begin(), sub.end());
  }
}

std::vector<std::string> WordPieceTokenizer::tokenize(const std::string& text_in) const {
  std::string text = td::utf8_lossy(text_in);
  if (do_lower_case_) {
    // PreTrainedTokenizer.tokenize lowercases everything but special tokens, one character at a
    // time (re.sub over "(special)|(.+?)"; "." skips newlines, whose lowercase is themselves).
    std::string low;
    low.reserve(text.size());
    td::LeftmostLongest::Match m;
    bool more = special_matcher_.find(text, 0, m);
    for (size_t i = 0; i < text.size();) {
      if (more && m.begin < i) more = special_matcher_.find(text, i, m);  // began inside a code point
      if (more && m.begin == i) {
        low.append(text, i, m.end - i);
        i = m.end;
        more = special_matcher_.find(text, i, m);
        continue;
      }
      const size_t b = i;
      td::next_cp(text, i);
      low += td::hf::lowercase(text.substr(b, i - b));  // one code point: no context rules
    }
    text = std::move(low);
  }
  std::vector<std::string> out;
  for (const auto& chunk : added_.split(text)) {
    if (chunk.added) {
      out.push_back(chunk.text);
      continue;
    }
    for (const auto& tok : basic_tokenize(chunk.text)) {
      if (special_strs_.count(tok))
        out.push_back(tok);
      else
        wordpiece(tok, out);
    }
  }
  return out;
}

std::vector<int32_t> WordPieceTokenizer::encode(const std::string& text, bool add_special) const {
  std::vector<int32_t> ids;
  if (add_special) ids = prefix_;
  for (const auto& tok : tokenize(text)) {
    if (const auto* a = added_.find(tok)) {
      ids.push_back(a->id);
    } else if (auto it = vocab_.find(tok); it != vocab_.end()) {
      ids.push_back(it->second);
    } else {
      ids.push_back(unk_);
    }
  }
  if (add_special) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

std::string WordPieceTokenizer::id_to_piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) td::throw_bad_id("wordpiece", id, vocab_size());
  return id_to_token_[id];
}

std::string WordPieceTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string joined;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) td::throw_bad_id("wordpiece", id, vocab_size());
    if (skip_special && special_ids_.count(id)) continue;
    if (!first) joined += ' ';
    joined += id_to_token_[id];
    first = false;
  }
  return td::py_strip(td::replace_all(joined, " ##", ""));
}

}  // namespace

std::unique_ptr<Tokenizer> td::make_wordpiece(const std::string& vocab_txt, const TokenizerOptions& opts,
                                              const DirConfig& cfg) {
  return std::make_unique<WordPieceTokenizer>(vocab_txt, opts, cfg);
}

std::unique_ptr<Tokenizer> load_wordpiece(const std::string& vocab_txt, const TokenizerOptions& opts) {
  return with_ordo_errors("wordpiece tokenizer: " + vocab_txt,
                          [&] { return td::make_wordpiece(vocab_txt, opts, td::DirConfig{}); });
}

}  // namespace ordo
