// UTF-8 encoding and decoding, with ill-formed input replaced as Python's errors="replace" does.
#include "utf8.hpp"

namespace ordo::tokenizer_detail {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {
// Number of bytes of a well-formed sequence starting at s[i], or the length of the maximal
// ill-formed subpart (negated, at least 1) when the sequence is ill-formed.
int utf8_seq(const std::string& s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  int need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 2;
  } else if (b0 == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b0 == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 3;
  } else if (b0 == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return -k;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < lo || b > hi) return -k;
    lo = 0x80, hi = 0xBF;
  }
  return need + 1;
}
}  // namespace

char32_t next_cp(const std::string& s, size_t& i) {
  const int n = utf8_seq(s, i);
  if (n < 0) {  // ill-formed (or cut off by the end of s): one U+FFFD for the maximal subpart
    i += static_cast<size_t>(-n);
    return 0xFFFD;
  }
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](int k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
  char32_t cp;
  switch (n) {
    case 1: cp = b0; break;
    case 2: cp = ((b0 & 0x1F) << 6) | cont(1); break;
    case 3: cp = ((b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2); break;
    default: cp = ((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3); break;
  }
  i += static_cast<size_t>(n);
  return cp;
}

std::string utf8_lossy(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const int n = utf8_seq(bytes, i);
    if (n > 0) {
      out.append(bytes, i, static_cast<size_t>(n));
      i += static_cast<size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<size_t>(-n);
    }
  }
  return out;
}

}  // namespace ordo::tokenizer_detail
