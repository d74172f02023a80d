// Byte-level BPE (GPT-2 family): vocab.json + merges.txt as HF's slow GPT2Tokenizer, or an HF
// tokenizers `tokenizer.json` with a BPE model and byte-level pre-tokenization.
// Pre-tokenization runs PCRE2 (UTF + UCP) with GPT-2's pattern or the tokenizer.json Split patterns;
// each pre-token's bytes are mapped through GPT-2's byte-to-unicode table and merged by rank.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <cctype>
#include <functional>
#include <tuple>
#include <memory>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "ordo/input.hpp"

namespace ordo {
namespace td = tokenizer_detail;
using nlohmann::json;

namespace {

const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the rest to U+0100.. in order.
std::array<char32_t, 256> byte_to_unicode_table() {
  std::array<char32_t, 256> t{};
  std::array<bool, 256> direct{};
  for (int b = '!'; b <= '~'; ++b) direct[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
  int n = 0;
  for (int b = 0; b < 256; ++b) t[b] = direct[b] ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
  return t;
}

struct Regex {
  std::shared_ptr<pcre2_code> code;
  bool remove_matches = false;  // Split behavior "Removed"; otherwise "Isolated"
};

Regex compile_regex(const std::string& pattern, bool literal, const std::string& where) {
  int err = 0;
  PCRE2_SIZE off = 0;
  uint32_t flags = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &err, &off,
                                   nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error("bpe tokenizer: " + where + ": cannot compile regex at offset " + std::to_string(off) + ": " +
                reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back to the interpreter
  return Regex{std::shared_ptr<pcre2_code>(code, pcre2_code_free), false};
}

// Splits s into matches and the gaps between them (HF Split behavior "Isolated"), or only the gaps
// ("Removed"). s must be valid UTF-8.
void regex_split(const Regex& re, const std::string& s, std::vector<std::string>& out) {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(re.code.get(), nullptr), pcre2_match_data_free);
  size_t pos = 0, last = 0;
  while (pos <= s.size()) {
    const int rc = pcre2_match(re.code.get(), reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), pos,
                               PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("bpe tokenizer: regex match failed: ") + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: step over one code point
      if (b >= s.size()) break;
      size_t next = b;
      td::next_cp(s, next);
      pos = next;
      continue;
    }
    if (b > last) out.push_back(s.substr(last, b - last));
    if (!re.remove_matches) out.push_back(s.substr(b, e - b));
    last = pos = e;
  }
  if (last < s.size()) out.push_back(s.substr(last));
}

enum class Norm { NFC, NFD, NFKC, NFKD };

struct BpeSetup {
  std::string source;  // file name(s), for messages
  std::unordered_map<std::string, int32_t> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<Regex> splits;  // applied in order
  std::vector<Norm> normalizers;
  bool add_prefix_space = false, ignore_merges = false;
  std::vector<td::AddedToken> added;
  std::optional<std::vector<int32_t>> prefix, suffix;  // post-processor template
  std::string bos, eos, unk, pad;                      // special token strings
};

class ByteLevelBPE final : public Tokenizer {
 public:
  ByteLevelBPE(BpeSetup setup, const TokenizerOptions& opts, const td::DirConfig& cfg);

  const char* kind() const override { return "bpe"; }
  std::vector<int32_t> encode(const std::string& text, bool add_special) const override;
  std::vector<std::string> tokenize(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }
  std::string id_to_piece(int32_t id) const override;

 private:
  int32_t intern(const std::string& s);
  std::vector<int32_t> bpe_word(const std::string& mapped) const;  // symbols of one pre-token
  void tokenize_into(const std::string& text, std::vector<std::string>* toks, std::vector<int32_t>* ids) const;
  int32_t token_id(const std::string& tok) const;

  std::string source_;
  bool add_prefix_space_ = false, ignore_merges_ = false;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_token_;
  std::unordered_map<std::string, int32_t> token_to_id_;
  std::vector<std::string> sym_str_;
  std::vector<int32_t> sym_vocab_;  // symbol -> vocab id or -1
  std::unordered_map<std::string, int32_t> sym_id_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left, right) -> (rank, merged)
  std::array<std::string, 256> byte_str_;                            // byte -> mapped char (UTF-8)
  std::unordered_map<char32_t, uint8_t> char_byte_;
  std::vector<Regex> splits_;
  std::vector<Norm> normalizers_;
  td::AddedTokens added_;
  std::unordered_set<int32_t> special_ids_;
  std::vector<int32_t> prefix_, suffix_;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

int32_t ByteLevelBPE::intern(const std::string& s) {
  auto it = sym_id_.find(s);
  if (it != sym_id_.end()) return it->second;
  const auto id = static_cast<int32_t>(sym_str_.size());
  sym_id_.emplace(s, id);
  sym_str_.push_back(s);
  auto v = token_to_id_.find(s);
  sym_vocab_.push_back(v == token_to_id_.end() ? -1 : v->second);
  return id;
}

ByteLevelBPE::ByteLevelBPE(BpeSetup setup, const TokenizerOptions& opts, const td::DirConfig& cfg)
    : source_(std::move(setup.source)),
      add_prefix_space_(setup.add_prefix_space),
      ignore_merges_(setup.ignore_merges),
      splits_(std::move(setup.splits)),
      normalizers_(std::move(setup.normalizers)) {
  int32_t max_id = -1;
  const size_t listed = setup.vocab.size() + setup.added.size();
  for (const auto& [tok, id] : setup.vocab) {
    td::check_id_limit(id, listed, "bpe tokenizer: " + source_ + ": token '" + tok + "'");
    max_id = std::max(max_id, id);
  }
  for (const auto& t : setup.added) {
    td::check_id_limit(t.id, listed, "bpe tokenizer: " + source_ + ": added token '" + t.content + "'");
    max_id = std::max(max_id, t.id);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), std::string());
  has_token_.assign(static_cast<size_t>(max_id + 1), false);
  for (auto& [tok, id] : setup.vocab) {
    id_to_token_[id] = tok;
    has_token_[id] = true;
    token_to_id_[tok] = id;
  }
  const auto table = byte_to_unicode_table();
  for (int b = 0; b < 256; ++b) {
    td::append_utf8(byte_str_[b], table[b]);
    char_byte_[table[b]] = static_cast<uint8_t>(b);
  }
  for (int b = 0; b < 256; ++b) intern(byte_str_[b]);
  int32_t rank = 0;
  for (const auto& [a, b] : setup.merges) {
    // As HF tokenizers: a merge whose parts or result are not tokens could only produce symbols
    // that encode() cannot give an id.
    for (const std::string* part : {&a, &b})
      if (!token_to_id_.count(*part))
        throw Error("bpe tokenizer: " + source_ + ": merge '" + a + " " + b + "' names '" + *part +
                    "', which is not in the vocabulary");
    if (!token_to_id_.count(a + b))
      throw Error("bpe tokenizer: " + source_ + ": merge '" + a + " " + b + "' makes '" + a + b +
                  "', which is not in the vocabulary");
    const int32_t l = intern(a), r = intern(b), m = intern(a + b);
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
    merges_[key] = std::make_pair(rank++, m);  // a repeated merge keeps its last rank, as dict(zip(...))
  }

  // Special tokens: added tokens (tokenizer.json) or GPT2Tokenizer's <|endoftext|> defaults.
  for (const auto& t : setup.added) {
    added_.add(t);
    id_to_token_[t.id] = t.content;
    has_token_[t.id] = true;
    if (t.special) special_ids_.insert(t.id);
  }
  auto resolve = [&](const std::string& s) -> int32_t {
    if (s.empty()) return -1;
    if (const auto* a = added_.find(s)) return a->id;
    td::AddedToken t;
    t.content = s;
    auto it = token_to_id_.find(s);
    if (it != token_to_id_.end()) {
      t.id = it->second;
    } else {
      t.id = static_cast<int32_t>(id_to_token_.size());
      id_to_token_.push_back(s);
      has_token_.push_back(true);
    }
    added_.add(t);
    special_ids_.insert(t.id);
    return t.id;
  };
  const int32_t bos_tok = resolve(setup.bos), eos_tok = resolve(setup.eos), unk_tok = resolve(setup.unk),
                pad_tok = resolve(setup.pad);
  bos_ = opts.bos_id.value_or(cfg.bos_id.value_or(bos_tok));
  eos_ = opts.eos_id.value_or(cfg.eos_id.value_or(eos_tok));
  pad_ = opts.pad_id.value_or(cfg.pad_id.value_or(pad_tok));
  unk_ = opts.unk_id.value_or(unk_tok);

  const std::optional<bool> add_bos = opts.add_bos ? opts.add_bos : cfg.add_bos;
  const std::optional<bool> add_eos = opts.add_eos ? opts.add_eos : cfg.add_eos;
  if (add_bos || add_eos || !setup.prefix) {
    if (add_bos.value_or(false) && bos_ >= 0) prefix_ = {bos_};
    if (add_eos.value_or(false) && eos_ >= 0) suffix_ = {eos_};
  } else {
    prefix_ = *setup.prefix;
    suffix_ = setup.suffix.value_or(std::vector<int32_t>{});
  }
  auto known = [&](int32_t id) { return id >= 0 && id < vocab_size() && has_token_[id]; };
  for (int32_t id : prefix_) td::check_emitted_id(id, known(id), "bpe tokenizer: " + source_ + ": the id added before the text");
  for (int32_t id : suffix_) td::check_emitted_id(id, known(id), "bpe tokenizer: " + source_ + ": the id added after the text");
  if (unk_ >= 0) td::check_emitted_id(unk_, known(unk_), "bpe tokenizer: " + source_ + ": the unknown-token id");
}

int32_t ByteLevelBPE::token_id(const std::string& tok) const {
  if (const auto* a = added_.find(tok)) return a->id;
  auto it = token_to_id_.find(tok);
  if (it != token_to_id_.end()) return it->second;
  if (unk_ >= 0) return unk_;
  throw Error("bpe tokenizer: " + source_ + ": token '" + tok + "' is not in the vocabulary and there is no unk token");
}

std::vector<int32_t> ByteLevelBPE::bpe_word(const std::string& word) const {
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(word);
    if (it != cache_.end()) return it->second;
  }
  std::vector<int32_t> sym;
  if (auto it = sym_id_.find(word); ignore_merges_ && it != sym_id_.end() && sym_vocab_[it->second] >= 0) {
    sym.push_back(it->second);
  } else {
    for (size_t i = 0; i < word.size();) {
      const size_t b = i;
      td::next_cp(word, i);
      sym.push_back(sym_id_.at(word.substr(b, i - b)));
    }
    // Lowest-rank pair first, leftmost first among equal ranks: the same result as GPT-2's
    // "merge every occurrence of the best bigram, repeat" loop.
    const int n = static_cast<int>(sym.size());
    std::vector<int> next(n), prev(n);
    std::vector<bool> alive(n, true);
    for (int i = 0; i < n; ++i) next[i] = i + 1 < n ? i + 1 : -1, prev[i] = i - 1;
    using Entry = std::tuple<int32_t, int, int32_t, int32_t>;  // rank, position, left, right
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> pq;
    auto push = [&](int i) {
      if (i < 0 || next[i] < 0) return;
      const uint64_t key =
          (static_cast<uint64_t>(static_cast<uint32_t>(sym[i])) << 32) | static_cast<uint32_t>(sym[next[i]]);
      auto it = merges_.find(key);
      if (it != merges_.end()) pq.emplace(it->second.first, i, sym[i], sym[next[i]]);
    };
    for (int i = 0; i + 1 < n; ++i) push(i);
    while (!pq.empty()) {
      const auto [rank, i, l, r] = pq.top();
      pq.pop();
      if (!alive[i] || sym[i] != l || next[i] < 0 || sym[next[i]] != r) continue;
      const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
      const int j = next[i];
      sym[i] = merges_.at(key).second;
      alive[j] = false;
      next[i] = next[j];
      if (next[j] >= 0) prev[next[j]] = i;
      push(prev[i]);
      push(i);
    }
    std::vector<int32_t> out;
    for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(sym[i]);
    sym = std::move(out);
  }
  if (word.size() <= 256) {  // words, not whole runs of repeated characters
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() > 100000) cache_.clear();
    cache_.emplace(word, sym);
  }
  return sym;
}

std::string normalize(const std::string& text, const std::vector<Norm>& norms) {
  if (norms.empty()) return text;
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
  for (Norm n : norms) {
    UErrorCode st = U_ZERO_ERROR;
    const icu::Normalizer2* nz = nullptr;
    switch (n) {
      case Norm::NFC: nz = icu::Normalizer2::getNFCInstance(st); break;
      case Norm::NFD: nz = icu::Normalizer2::getNFDInstance(st); break;
      case Norm::NFKC: nz = icu::Normalizer2::getNFKCInstance(st); break;
      case Norm::NFKD: nz = icu::Normalizer2::getNFKDInstance(st); break;
    }
    if (U_FAILURE(st)) throw Error("bpe tokenizer: ICU normalizer unavailable");
    u = nz->normalize(u, st);
    if (U_FAILURE(st)) throw Error("bpe tokenizer: ICU normalization failed");
  }
  std::string out;
  u.toUTF8String(out);
  return out;
}

void ByteLevelBPE::tokenize_into(const std::string& text_in, std::vector<std::string>* toks,
                                 std::vector<int32_t>* ids) const {
  const std::string text = td::utf8_lossy(text_in);
  for (const auto& chunk : added_.split(text)) {
    if (chunk.added) {
      if (toks) toks->push_back(chunk.text);
      if (ids) ids->push_back(added_.find(chunk.text)->id);
      continue;
    }
    std::string s = normalize(chunk.text, normalizers_);
    if (add_prefix_space_ && (s.empty() || s[0] != ' ')) s = " " + s;
    std::vector<std::string> pieces{s};
    for (const auto& re : splits_) {
      std::vector<std::string> next;
      for (const auto& p : pieces) regex_split(re, p, next);
      pieces = std::move(next);
    }
    for (const auto& p : pieces) {
      std::string mapped;
      mapped.reserve(p.size() * 2);
      for (unsigned char c : p) mapped += byte_str_[c];
      for (int32_t s_id : bpe_word(mapped)) {
        const std::string& tok = sym_str_[s_id];
        if (toks) toks->push_back(tok);
        if (ids) ids->push_back(sym_vocab_[s_id] >= 0 ? sym_vocab_[s_id] : token_id(tok));
      }
    }
  }
}

std::vector<std::string> ByteLevelBPE::tokenize(const std::string& text) const {
  std::vector<std::string> toks;
  tokenize_into(text, &toks, nullptr);
  return toks;
}

std::vector<int32_t> ByteLevelBPE::encode(const std::string& text, bool add_special) const {
  std::vector<int32_t> ids;
  if (add_special) ids = prefix_;
  tokenize_into(text, nullptr, &ids);
  if (add_special) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

std::string ByteLevelBPE::id_to_piece(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !has_token_[id]) td::throw_bad_id("bpe", id, vocab_size());
  return id_to_token_[id];
}

std::string ByteLevelBPE::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size() || !has_token_[id]) td::throw_bad_id("bpe", id, vocab_size());
    if (skip_special && special_ids_.count(id)) continue;
    const std::string& tok = id_to_token_[id];
    // Byte-level chars map back to bytes; a token with other characters (an added token such as
    // "<|im_start|>" in a non-byte-level spelling) is taken as UTF-8 text, as HF's ByteLevel decoder.
    std::string raw;
    bool all_mapped = true;
    for (size_t i = 0; i < tok.size();) {
      auto it = char_byte_.find(td::next_cp(tok, i));
      if (it == char_byte_.end()) {
        all_mapped = false;
        break;
      }
      raw += static_cast<char>(it->second);
    }
    bytes += all_mapped ? raw : tok;
  }
  return td::utf8_lossy(bytes);
}

// ---- loading -----------------------------------------------------------------------------------

std::unordered_map<std::string, int32_t> read_vocab(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error("bpe tokenizer: " + where + " must be a JSON object of token -> id");
  std::unordered_map<std::string, int32_t> vocab;
  vocab.reserve(j.size());
  for (const auto& [tok, id] : j.items()) {
    if (!id.is_number_integer()) throw Error("bpe tokenizer: " + where + ": token '" + tok + "' has a non-integer id");
    vocab.emplace(tok, td::json_token_id(id, where + ": token '" + tok + "'"));
  }
  return vocab;
}

std::pair<std::string, std::string> split_merge(const std::string& line, const std::string& where) {
  // Python str.split(): any whitespace run separates.
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t b = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > b) parts.push_back(line.substr(b, i - b));
  }
  if (parts.size() != 2) throw Error("bpe tokenizer: " + where + ": malformed merge '" + line + "'");
  return {parts[0], parts[1]};
}

void apply_specials(BpeSetup& s, const td::DirConfig& cfg) {
  s.bos = cfg.bos_token.value_or(s.bos);
  s.eos = cfg.eos_token.value_or(s.eos);
  s.unk = cfg.unk_token.value_or(s.unk);
  s.pad = cfg.pad_token.value_or(s.pad);
  for (const auto& t : cfg.added_tokens) s.added.push_back(t);
}

}  // namespace

std::unique_ptr<Tokenizer> td::make_bpe(const std::string& vocab_json, const std::string& merges_txt,
                                        const TokenizerOptions& opts, const DirConfig& cfg) {
  BpeSetup s;
  s.source = vocab_json + " + " + merges_txt;
  s.vocab = read_vocab(td::read_json_file(vocab_json), vocab_json);
  const std::string merges = td::read_file(merges_txt);
  size_t pos = 0;
  bool first = true;
  while (pos < merges.size()) {
    size_t nl = merges.find('\n', pos);
    if (nl == std::string::npos) nl = merges.size();
    std::string line = merges.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (first && td::starts_with(line, "#version")) {
      first = false;
      continue;
    }
    first = false;
    if (line.empty()) continue;
    s.merges.push_back(split_merge(line, merges_txt));
  }
  s.splits.push_back(compile_regex(kGpt2Pattern, false, "GPT-2 pattern"));
  s.bos = s.eos = s.unk = "<|endoftext|>";
  apply_specials(s, cfg);
  return std::make_unique<ByteLevelBPE>(std::move(s), opts, cfg);
}

namespace {

void add_pre_tokenizer(BpeSetup& s, const json& p, const std::string& where) {
  if (p.is_null()) return;
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    for (const auto& q : p.at("pretokenizers")) add_pre_tokenizer(s, q, where);
  } else if (type == "ByteLevel") {
    if (p.value("add_prefix_space", false)) s.add_prefix_space = true;
    if (p.value("use_regex", true)) s.splits.push_back(compile_regex(kGpt2Pattern, false, where));
  } else if (type == "Split") {
    const json& pat = p.at("pattern");
    Regex re;
    if (pat.contains("Regex")) re = compile_regex(pat["Regex"].get<std::string>(), false, where + ".pattern.Regex");
    else if (pat.contains("String")) re = compile_regex(pat["String"].get<std::string>(), true, where + ".pattern.String");
    else throw Error("bpe tokenizer: " + where + ": Split pattern must be Regex or String");
    const std::string behavior = p.value("behavior", "Isolated");
    if (behavior == "Removed") re.remove_matches = true;
    else if (behavior != "Isolated")
      throw Error("bpe tokenizer: " + where + ": unsupported Split behavior '" + behavior + "'");
    if (p.value("invert", false)) throw Error("bpe tokenizer: " + where + ": Split with invert=true is not supported");
    s.splits.push_back(re);
  } else {
    throw Error("bpe tokenizer: " + where + ": unsupported pre_tokenizer type '" + type + "'");
  }
}

void add_normalizer(BpeSetup& s, const json& n, const std::string& where) {
  if (n.is_null()) return;
  const std::string type = n.value("type", "");
  if (type == "Sequence") {
    for (const auto& q : n.at("normalizers")) add_normalizer(s, q, where);
  } else if (type == "NFC") {
    s.normalizers.push_back(Norm::NFC);
  } else if (type == "NFD") {
    s.normalizers.push_back(Norm::NFD);
  } else if (type == "NFKC") {
    s.normalizers.push_back(Norm::NFKC);
  } else if (type == "NFKD") {
    s.normalizers.push_back(Norm::NFKD);
  } else {
    throw Error("bpe tokenizer: " + where + ": unsupported normalizer type '" + type + "'");
  }
}

std::vector<int32_t> special_ids_of(const json& special_tokens, const std::string& name, const std::string& where) {
  auto it = special_tokens.find(name);
  if (it == special_tokens.end() || !it->contains("ids"))
    throw Error("bpe tokenizer: " + where + ": post_processor special token '" + name + "' is not defined");
  const json& ids = (*it)["ids"];
  if (!ids.is_array()) throw Error("bpe tokenizer: " + where + ": special token '" + name + "' ids must be an array");
  std::vector<int32_t> out;
  for (const auto& id : ids) out.push_back(td::json_token_id(id, where + ": special token '" + name + "'"));
  return out;
}

void add_post_processor(BpeSetup& s, const json& p, const std::string& where) {
  if (p.is_null()) return;
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    for (const auto& q : p.at("processors")) add_post_processor(s, q, where);
  } else if (type == "ByteLevel") {
    // offsets only
  } else if (type == "TemplateProcessing") {
    std::vector<int32_t> pre, post;
    bool seen_seq = false;
    const json empty = json::object();
    const json& st = p.contains("special_tokens") ? p["special_tokens"] : empty;
    for (const auto& item : p.at("single")) {
      if (item.contains("Sequence")) {
        seen_seq = true;
      } else if (item.contains("SpecialToken")) {
        auto ids = special_ids_of(st, item["SpecialToken"].at("id").get<std::string>(), where);
        auto& dst = seen_seq ? post : pre;
        dst.insert(dst.end(), ids.begin(), ids.end());
      }
    }
    s.prefix = pre;
    s.suffix = post;
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    s.prefix = std::vector<int32_t>{td::json_token_id(p.at("cls").at(1), where + ".cls")};
    s.suffix = std::vector<int32_t>{td::json_token_id(p.at("sep").at(1), where + ".sep")};
  } else {
    throw Error("bpe tokenizer: " + where + ": unsupported post_processor type '" + type + "'");
  }
}

}  // namespace

std::unique_ptr<Tokenizer> td::make_bpe_json(const std::string& path, const TokenizerOptions& opts,
                                             const DirConfig& cfg) {
  const json j = td::read_json_file(path);
  BpeSetup s;
  s.source = path;
  try {
    if (!j.is_object() || !j.contains("model")) throw Error("bpe tokenizer: " + path + ": no 'model' field");
    const json& m = j["model"];
    const std::string type = m.value("type", "BPE");
    if (type != "BPE")
      throw Error("bpe tokenizer: " + path + ": model.type '" + type + "' is not supported (only BPE)");
    if (!m.value("continuing_subword_prefix", json()).is_null() && !m["continuing_subword_prefix"].get<std::string>().empty())
      throw Error("bpe tokenizer: " + path + ": model.continuing_subword_prefix is not supported");
    if (!m.value("end_of_word_suffix", json()).is_null() && !m["end_of_word_suffix"].get<std::string>().empty())
      throw Error("bpe tokenizer: " + path + ": model.end_of_word_suffix is not supported");
    if (m.value("byte_fallback", false))
      throw Error("bpe tokenizer: " + path + ": model.byte_fallback is not supported (byte-level BPE only)");
    s.ignore_merges = m.value("ignore_merges", false);
    s.vocab = read_vocab(m.at("vocab"), path + ": model.vocab");
    for (const auto& mg : m.at("merges")) {
      if (mg.is_string()) s.merges.push_back(split_merge(mg.get<std::string>(), path + ": model.merges"));
      else if (mg.is_array() && mg.size() == 2) s.merges.emplace_back(mg[0].get<std::string>(), mg[1].get<std::string>());
      else throw Error("bpe tokenizer: " + path + ": model.merges entries must be \"a b\" or [a, b]");
    }
    if (m.contains("unk_token") && m["unk_token"].is_string()) s.unk = m["unk_token"].get<std::string>();
    add_normalizer(s, j.value("normalizer", json()), path + ": normalizer");
    add_pre_tokenizer(s, j.value("pre_tokenizer", json()), path + ": pre_tokenizer");
    if (s.splits.empty() && !j.value("pre_tokenizer", json()).is_object())
      throw Error("bpe tokenizer: " + path + ": pre_tokenizer is missing (byte-level pre-tokenization required)");
    add_post_processor(s, j.value("post_processor", json()), path + ": post_processor");
    const json dec = j.value("decoder", json());
    if (!dec.is_null() && dec.value("type", "") != "ByteLevel")
      throw Error("bpe tokenizer: " + path + ": decoder type '" + dec.value("type", "") + "' is not supported");
    for (const auto& a : j.value("added_tokens", json::array())) {
      td::AddedToken t;
      t.id = td::json_token_id(a.at("id"), path + ": added_tokens id");
      t.content = a.at("content").get<std::string>();
      t.special = a.value("special", false);
      t.lstrip = a.value("lstrip", false);
      t.rstrip = a.value("rstrip", false);
      t.single_word = a.value("single_word", false);
      s.added.push_back(t);
    }
  } catch (const json::exception& e) {
    throw Error("bpe tokenizer: " + path + ": unexpected structure: " + e.what());
  }
  // Specials only come from tokenizer_config.json here (tokenizer.json has no bos/eos notion).
  apply_specials(s, cfg);
  return std::make_unique<ByteLevelBPE>(std::move(s), opts, cfg);
}

std::unique_ptr<Tokenizer> load_bpe(const std::string& vocab_json, const std::string& merges_txt,
                                    const TokenizerOptions& opts) {
  return with_ordo_errors("bpe tokenizer: " + vocab_json, [&] {
    return tokenizer_detail::make_bpe(vocab_json, merges_txt, opts, tokenizer_detail::DirConfig{});
  });
}

std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(const std::string& tokenizer_json, const TokenizerOptions& opts) {
  return with_ordo_errors("bpe tokenizer: " + tokenizer_json, [&] {
    return tokenizer_detail::make_bpe_json(tokenizer_json, opts, tokenizer_detail::DirConfig{});
  });
}

}  // namespace ordo
