// Chat-template expression parser: jinja2's expression grammar (conditional, or/and/not,
// comparisons, arithmetic, ~, filters and tests, subscripts, slices, calls, literals) over the
// lexer's tokens; the statement parser (parser.cpp) builds on it.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "syntax.hpp"

namespace ordo::chat {

class ExprParser {
 public:
  explicit ExprParser(const std::vector<Token>& t) : t_(t) {}

  NodeP parse_tuple_or_expr(bool no_cond = false);  // a, b, c (a tuple) or one expression
  NodeP parse_expr();                               // with `x if c else y`

 protected:
  using TK = Token::K;
  const Token& peek(size_t n = 0) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool is_op(const char* op, size_t n = 0) const { return peek(n).k == TK::Op && peek(n).s == op; }
  bool is_name(const char* name, size_t n = 0) const { return peek(n).k == TK::Name && peek(n).s == name; }
  [[noreturn]] void error(const Token& t, const std::string& what) const {
    fail(what + (t.s.empty() ? "" : " '" + t.s + "'") + " at " + std::to_string(t.line) + ":" + std::to_string(t.col));
  }
  void expect_op(const char* op) {
    if (!is_op(op)) error(peek(), std::string("expected '") + op + "', got");
    next();
  }
  std::string expect_name() {
    if (peek().k != TK::Name) error(peek(), "expected a name, got");
    return next().s;
  }
  void expect_block_end() {
    if (peek().k != TK::BlockEnd) error(peek(), "expected the end of the tag, got");
    next();
  }
  NodeP node(Node::K k, const Token& at) {
    auto n = std::make_shared<Node>();
    n->k = k;
    n->line = at.line;
    n->col = at.col;
    return n;
  }

  // Nesting is bounded so a hostile template cannot exhaust the stack.
  struct Depth {
    explicit Depth(ExprParser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting)
        p_.error(p_.peek(), "nesting deeper than " + std::to_string(kMaxNesting) + " levels at");
    }
    ~Depth() { --p_.depth_; }
    ExprParser& p_;
  };
  static constexpr int kMaxNesting = 200;

 private:
  NodeP parse_or();
  NodeP parse_and();
  NodeP parse_not();
  NodeP parse_compare();
  NodeP binary(const Token& t, const std::string& op, NodeP l, NodeP r);
  NodeP parse_math1();
  NodeP parse_concat();
  NodeP parse_math2();
  NodeP parse_pow();
  NodeP parse_unary(bool with_filter);
  NodeP parse_primary();
  void parse_call_args(const NodeP& n);
  NodeP parse_postfix(NodeP n);
  NodeP parse_filters(NodeP n);

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace ordo::chat
