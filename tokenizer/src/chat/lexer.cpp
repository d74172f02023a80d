// Chat-template lexer: jinja2's tokenization with trim_blocks + lstrip_blocks (HF's settings).
#include <algorithm>
#include <cstring>

#include "../utf8.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "syntax.hpp"

namespace ordo::chat {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string rstrip_ws(const std::string& s) {
  size_t e = s.size();
  while (e > 0 && is_space(s[e - 1])) --e;
  return s.substr(0, e);
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t at = pos;
      char kind = 0;
      while ((at = src_.find('{', at)) != std::string::npos) {
        if (at + 1 < src_.size() && (src_[at + 1] == '{' || src_[at + 1] == '%' || src_[at + 1] == '#')) {
          kind = src_[at + 1];
          break;
        }
        ++at;
      }
      if (at == std::string::npos) {
        text(src_.substr(pos), pos);
        break;
      }
      const char mod = at + 2 < src_.size() ? src_[at + 2] : 0;
      std::string t = src_.substr(pos, at - pos);
      if (mod == '-') {
        t = rstrip_ws(t);
      } else if (kind != '{' && mod != '+') {
        // lstrip_blocks: drop spaces and tabs between a line start and a block or comment tag.
        const size_t l_pos = t.rfind('\n') == std::string::npos ? 0 : t.rfind('\n') + 1;
        const bool line_starting = pos == 0 || src_[pos - 1] == '\n';
        if ((l_pos > 0 || line_starting) && std::all_of(t.begin() + static_cast<long>(l_pos), t.end(), [](char c) {
              return c == ' ' || c == '\t' || c == '\f' || c == '\v';
            }))
          t.resize(l_pos);
      }
      text(t, pos);
      size_t p = at + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        const size_t end = src_.find("#}", p);
        if (end == std::string::npos) error(at, "unterminated comment");
        pos = end + 2;
        if (end > p && src_[end - 1] == '-')
          skip_ws(pos);
        else if (pos < src_.size() && src_[pos] == '\n')
          ++pos;  // trim_blocks applies to comments too
        continue;
      }
      out_.push_back(make(kind == '{' ? Token::K::VarBegin : Token::K::BlockBegin, "", at));
      pos = inside(p, kind == '{' ? '}' : '%');
    }
    out_.push_back(make(Token::K::Eof, "", src_.size()));
    return out_;
  }

 private:
  Token make(Token::K k, std::string s, size_t off) const {
    Token t;
    t.k = k;
    t.s = std::move(s);
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off);
    t.line = static_cast<int>(it - line_starts_.begin()) + 1;
    const size_t start = it == line_starts_.begin() ? 0 : *(it - 1);
    t.col = static_cast<int>(off - start) + 1;
    return t;
  }

  [[noreturn]] void error(size_t off, const std::string& what) const {
    const Token t = make(Token::K::Eof, "", off);
    fail(what + " at " + std::to_string(t.line) + ":" + std::to_string(t.col));
  }

  void text(const std::string& t, size_t off) {
    if (!t.empty()) out_.push_back(make(Token::K::Text, t, off));
  }

  void skip_ws(size_t& pos) const {
    while (pos < src_.size() && is_space(src_[pos])) ++pos;
  }

  // Tokens of one {{ }} or {% %} tag starting at p; returns the position after its end delimiter.
  size_t inside(size_t p, char close) {
    const bool block = close == '%';
    int open = 0;  // brackets open: as in jinja2, `}}` inside {...} does not end the tag
    for (;;) {
      skip_ws(p);
      if (p >= src_.size()) error(p, std::string("unterminated '{") + (block ? "%" : "{") + "' tag");
      const char c = src_[p];
      const bool mod = (c == '-' || c == '+') && p + 2 < src_.size() + 0 && src_[p + 1] == close && src_[p + 2] == '}';
      if (open == 0 && (mod || (c == close && p + 1 < src_.size() && src_[p + 1] == '}'))) {
        out_.push_back(make(block ? Token::K::BlockEnd : Token::K::VarEnd, "", p));
        size_t after = p + (mod ? 3 : 2);
        if (mod && c == '-')
          skip_ws(after);
        else if (block && !(mod && c == '+') && after < src_.size() && src_[after] == '\n')
          ++after;
        return after;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = p;
        while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
        out_.push_back(make(Token::K::Name, src_.substr(p, e - p), p));
        p = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t e = p;
        while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
        bool is_float = false;
        if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
          is_float = true;
          ++e;
          while (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) ++e;
        }
        if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
          size_t x = e + 1;
          if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
          if (x < src_.size() && std::isdigit(static_cast<unsigned char>(src_[x]))) {
            is_float = true;
            e = x;
            while (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) ++e;
          }
        }
        std::string num = src_.substr(p, e - p);
        num.erase(std::remove(num.begin(), num.end(), '_'), num.end());
        out_.push_back(make(is_float ? Token::K::Float : Token::K::Int, num, p));
        p = e;
      } else if (c == '\'' || c == '"') {
        out_.push_back(make(Token::K::String, string_literal(p), p));
      } else {
        static const char* const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                          ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
        bool found = false;
        for (const char* op : ops) {
          const size_t n = std::strlen(op);
          if (src_.compare(p, n, op) == 0) {
            out_.push_back(make(Token::K::Op, op, p));
            if (n == 1 && (*op == '(' || *op == '[' || *op == '{')) ++open;
            if (n == 1 && (*op == ')' || *op == ']' || *op == '}') && open > 0) --open;
            p += n;
            found = true;
            break;
          }
        }
        if (!found) error(p, std::string("unexpected character '") + c + "'");
      }
    }
  }

  // A quoted literal at p (advanced past it), decoded as jinja2 does (Python unicode-escape).
  std::string string_literal(size_t& p) const {
    const size_t start = p;
    const char q = src_[p++];
    std::string out;
    for (;;) {
      if (p >= src_.size()) error(start, "unterminated string literal");
      const char c = src_[p++];
      if (c == q) return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p >= src_.size()) error(start, "unterminated string literal");
      const char e = src_[p++];
      auto hex = [&](int n) {
        if (p + static_cast<size_t>(n) > src_.size()) error(start, "truncated \\x/\\u escape in string literal");
        uint32_t v = 0;
        for (int k = 0; k < n; ++k) {
          const char h = src_[p++];
          if (!std::isxdigit(static_cast<unsigned char>(h))) error(start, "malformed \\x/\\u escape in string literal");
          v = v * 16 + static_cast<uint32_t>(
                           std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        if (v > 0x10FFFF) error(start, "escape out of Unicode range in string literal");
        tokenizer_detail::append_utf8(out, static_cast<char32_t>(v));
      };
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case 'a': out += '\a'; break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        case 'N': error(start, "unsupported \\N{...} escape in string literal");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k)
              v = v * 8 + static_cast<uint32_t>(src_[p++] - '0');
            tokenizer_detail::append_utf8(out, static_cast<char32_t>(v));
          } else {
            out += '\\';
            out += e;
          }
      }
    }
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
};

std::string normalize(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

}  // namespace

std::vector<Token> lex(const std::string& source) { return Lexer(normalize(source)).run(); }

}  // namespace ordo::chat
