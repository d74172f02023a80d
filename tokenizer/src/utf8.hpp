// UTF-8 encoding and decoding, with ill-formed input replaced as Python's errors="replace" does.
#pragma once

#include <cstddef>
#include <string>

namespace ordo::tokenizer_detail {

// Appends the UTF-8 encoding of cp.
void append_utf8(std::string& out, char32_t cp);
// Decodes the code point at s[i] and advances i; an ill-formed or truncated sequence gives U+FFFD
// and advances past its maximal subpart (as utf8_lossy), never past the end of s.
char32_t next_cp(const std::string& s, size_t& i);
// Replaces every ill-formed subsequence with U+FFFD the way Python's bytes.decode("utf-8",
// errors="replace") does (one U+FFFD per maximal subpart).
std::string utf8_lossy(const std::string& bytes);

}  // namespace ordo::tokenizer_detail
