// Character classes and mappings the tokenizers crate takes from Rust's char methods and regex
// classes, answered from ICU's Unicode data.
#include <unicode/normalizer2.h>
#include <unicode/ubrk.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utext.h>

#include <unordered_map>

#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

bool is_whitespace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

bool is_word_char(char32_t c) {
  const auto u = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL)) return true;
  switch (u_charType(u)) {
    case U_NON_SPACING_MARK:
    case U_ENCLOSING_MARK:
    case U_COMBINING_SPACING_MARK:
    case U_DECIMAL_DIGIT_NUMBER:
    case U_CONNECTOR_PUNCTUATION: return true;
    default: return false;
  }
}

bool is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_CONNECTOR_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION: return true;
    default: return false;
  }
}

bool is_numeric(char32_t c) {
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER: return true;
    default: return false;
  }
}

bool is_other(char32_t c) {
  // tokenizers' char::is_other comes from the unicode_categories 0.1.1 crate, whose is_other is
  // Cc, Cf and Co only, from its 2016 tables: never Cn, so noncharacters (U+FFFF, U+FFFE) and
  // unassigned code points are kept, and characters made Cf later (U+0890, U+13430...) are too.
  // This is that set, not ICU's current categories.
  static const char32_t kRanges[][2] = {
      {0x0000, 0x001F},   {0x007F, 0x009F},                                                 // Cc
      {0x00AD, 0x00AD},   {0x0600, 0x0605},   {0x061C, 0x061C},          {0x06DD, 0x06DD},  // Cf in 2016
      {0x070F, 0x070F},   {0x180E, 0x180E},   {0x200B, 0x200F},          {0x202A, 0x202E},
      {0x2060, 0x2064},   {0x2066, 0x206F},   {0xE000, 0xF8FF} /* Co */, {0xFEFF, 0xFEFF},
      {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x1BCA0, 0x1BCA3},        {0x1D173, 0x1D17A},
      {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xF0000, 0xFFFFD},        {0x100000, 0x10FFFD},  // Co
  };
  for (const auto& r : kRanges)
    if (c >= r[0] && c <= r[1]) return true;
  return false;
}

bool is_nonspacing_mark(char32_t c) { return u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK; }

bool is_mark(char32_t c) {
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_NON_SPACING_MARK:
    case U_COMBINING_SPACING_MARK:
    case U_ENCLOSING_MARK: return true;
    default: return false;
  }
}

bool is_chinese_char(char32_t c) {  // tokenizers' list (0x2B920, not Python BERT's 0x2B820)
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::string lowercase(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t c = next_cp(s, i);
    if (c < 0x80) {
      out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      continue;
    }
    // One code point at a time, so no context rule (final sigma) applies, as char::to_lowercase.
    UChar src[2];
    int32_t n = 0;
    U16_APPEND_UNSAFE(src, n, static_cast<UChar32>(c));
    UChar dst[8];
    UErrorCode st = U_ZERO_ERROR;
    const int32_t m = u_strToLower(dst, 8, src, n, "", &st);
    if (U_FAILURE(st)) {
      append_utf8(out, c);
      continue;
    }
    icu::UnicodeString(dst, m).toUTF8String(out);
  }
  return out;
}

std::string unicode_normalize(const std::string& s, NormForm form) {
  UErrorCode st = U_ZERO_ERROR;
  const icu::Normalizer2* nz = nullptr;
  switch (form) {
    case NormForm::NFC: nz = icu::Normalizer2::getNFCInstance(st); break;
    case NormForm::NFD: nz = icu::Normalizer2::getNFDInstance(st); break;
    case NormForm::NFKC: nz = icu::Normalizer2::getNFKCInstance(st); break;
    case NormForm::NFKD: nz = icu::Normalizer2::getNFKDInstance(st); break;
  }
  if (U_FAILURE(st)) throw Error("tokenizer: ICU normalizer unavailable");
  icu::UnicodeString u = nz->normalize(icu::UnicodeString::fromUTF8(s), st);
  if (U_FAILURE(st)) throw Error("tokenizer: ICU normalization failed");
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::vector<size_t> grapheme_ends(const std::string& s) {
  std::vector<size_t> ends;
  if (s.empty()) return ends;
  UErrorCode st = U_ZERO_ERROR;
  // UTF-8 UText: break positions are byte offsets into s.
  UText* text = utext_openUTF8(nullptr, s.data(), static_cast<int64_t>(s.size()), &st);
  UBreakIterator* it = ubrk_open(UBRK_CHARACTER, "", nullptr, 0, &st);
  if (U_SUCCESS(st)) ubrk_setUText(it, text, &st);
  if (U_SUCCESS(st)) {
    ubrk_first(it);
    for (int32_t e = ubrk_next(it); e != UBRK_DONE; e = ubrk_next(it)) ends.push_back(static_cast<size_t>(e));
  }
  ubrk_close(it);
  utext_close(text);
  if (U_FAILURE(st)) throw Error("tokenizer: ICU grapheme segmentation failed");
  return ends;
}

namespace {
struct ByteTables {
  std::array<std::string, 256> chars;
  std::unordered_map<char32_t, uint8_t> bytes;
  ByteTables() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool direct = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = direct ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      append_utf8(chars[b], cp);
      bytes[cp] = static_cast<uint8_t>(b);
    }
  }
};
const ByteTables& tables() {
  static const ByteTables t;
  return t;
}
}  // namespace

const std::array<std::string, 256>& byte_chars() { return tables().chars; }

std::optional<std::string> byte_level_bytes(const std::string& token) {
  const auto& m = tables().bytes;
  std::string raw;
  for (size_t i = 0; i < token.size();) {
    auto it = m.find(next_cp(token, i));
    if (it == m.end()) return std::nullopt;
    raw += static_cast<char>(it->second);
  }
  return raw;
}

}  // namespace ordo::tokenizer_detail::hf
