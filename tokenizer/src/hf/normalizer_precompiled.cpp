// tokenizer.json normalizer "Precompiled": sentencepiece's precompiled_charsmap (the nmt_nfkc-style
// rules T5, mT5, XLM-R, ALBERT... ship), applied the way the tokenizers crate's spm_precompiled does.
//
// Blob (base64 in the JSON): little-endian uint32 trie size in bytes, a darts-clone double-array
// trie of that many bytes (4-byte units), then a pool of NUL-terminated replacement strings; the
// trie maps UTF-8 byte strings to offsets into the pool. The blob is untrusted: every unit and
// pool offset the lookup touches is bounds-checked.
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

// Strict standard base64 (with padding), as the crate's base64 STANDARD engine requires.
std::optional<std::string> base64_decode(const std::string& s) {
  if (s.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(s.size() / 4 * 3);
  for (size_t i = 0; i < s.size(); i += 4) {
    const bool last = i + 4 == s.size();
    const int pad = last ? (s[i + 3] == '=') + (s[i + 2] == '=' && s[i + 3] == '=') : 0;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = k >= 4 - pad ? 0 : value(s[i + k]);
      if (d < 0) return std::nullopt;
      v = v << 6 | static_cast<uint32_t>(d);
    }
    out += static_cast<char>(v >> 16);
    if (pad < 2) out += static_cast<char>(v >> 8 & 0xFF);
    if (pad < 1) out += static_cast<char>(v & 0xFF);
  }
  return out;
}

bool valid_utf8(const std::string& s) { return utf8_lossy(s) == s; }

class Precompiled final : public Normalizer {
 public:
  Precompiled(const std::string& blob, std::string where) : where_(std::move(where)) {
    if (blob.size() < 4) bad("is shorter than its 4-byte trie size");
    const uint32_t trie_bytes = le32(blob, 0);
    if (trie_bytes == 0 || trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4)
      bad("trie size " + std::to_string(trie_bytes) + " is not a positive multiple of 4 within the " +
          std::to_string(blob.size()) + "-byte blob");
    trie_.resize(trie_bytes / 4);
    for (size_t k = 0; k < trie_.size(); ++k) trie_[k] = le32(blob, 4 + 4 * k);
    pool_ = blob.substr(4 + trie_bytes);
    if (!valid_utf8(pool_)) bad("replacement strings are not valid UTF-8");
  }

  std::string normalize(std::string s) const override {
    std::string out;
    out.reserve(s.size());
    size_t begin = 0;
    for (size_t end : grapheme_ends(s)) {
      // spm_precompiled: a grapheme shorter than 6 bytes is replaced as a whole by the rule of its
      // shortest matching prefix; otherwise (or with no rule) each character is looked up alone.
      const size_t len = end - begin;
      if (len < 6 && replace(s.data() + begin, len, out)) {
        begin = end;
        continue;
      }
      for (size_t i = begin; i < end;) {
        const size_t b = i;
        next_cp(s, i);
        if (!replace(s.data() + b, i - b, out)) out.append(s, b, i - b);
      }
      begin = end;
    }
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { fail(where_, "Precompiled precompiled_charsmap " + what); }

  static uint32_t le32(const std::string& b, size_t at) {
    return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) |
           static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
           static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16 |
           static_cast<uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24;
  }

  uint32_t unit(size_t pos) const {
    if (pos >= trie_.size()) bad("trie points outside itself (unit " + std::to_string(pos) + ")");
    return trie_[pos];
  }

  // darts-clone unit fields.
  static size_t offset(uint32_t u) { return static_cast<size_t>(u >> 10) << ((u & (1u << 9)) >> 6); }
  static uint32_t label(uint32_t u) { return u & (0x80000000u | 0xFFu); }
  static bool has_leaf(uint32_t u) { return (u >> 8 & 1u) != 0; }

  // Appends the replacement of the shortest key that prefixes key[0, n) (a NUL byte ends the key);
  // false when there is none.
  bool replace(const char* key, size_t n, std::string& out) const {
    size_t pos = offset(unit(0));
    for (size_t i = 0; i < n; ++i) {
      const auto c = static_cast<unsigned char>(key[i]);
      if (c == 0) return false;
      pos ^= c;
      const uint32_t u = unit(pos);
      if (label(u) != c) return false;
      pos ^= offset(u);
      if (has_leaf(u)) {
        const size_t at = unit(pos) & 0x7FFFFFFFu;
        if (at > pool_.size()) bad("replacement offset " + std::to_string(at) + " is outside the string pool");
        const size_t stop = pool_.find('\0', at);
        const std::string r = pool_.substr(at, stop == std::string::npos ? std::string::npos : stop - at);
        if (!valid_utf8(r)) bad("replacement offset " + std::to_string(at) + " splits a character");
        out += r;
        return true;
      }
    }
    return false;
  }

  std::string where_;
  std::vector<uint32_t> trie_;
  std::string pool_;
};

}  // namespace

std::unique_ptr<Normalizer> make_precompiled(const json& j, const std::string& where) {
  const std::string b64 = get_string(j, "precompiled_charsmap", where);
  const auto blob = base64_decode(b64);
  if (!blob) fail(where + ".precompiled_charsmap", "Precompiled precompiled_charsmap is not valid base64");
  return std::make_unique<Precompiled>(*blob, where);
}

}  // namespace ordo::tokenizer_detail::hf
