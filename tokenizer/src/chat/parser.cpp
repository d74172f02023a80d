// Chat-template parser: jinja2's grammar for the statements and expressions chat templates use;
// any other tag is an Error naming it and its line:col.
#include <set>

#include "syntax.hpp"

namespace ordo::chat {

namespace {

using TK = Token::K;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Body parse_all() {
    Body body = parse_body({});
    if (peek().k != TK::Eof) error(peek(), "unexpected tag");
    return body;
  }

 private:
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

  // Statements up to a block tag named in `ends` (left unconsumed, after its BlockBegin).
  Body parse_body(const std::set<std::string>& ends) {
    Depth guard(*this);
    Body body;
    for (;;) {
      const Token& t = peek();
      if (t.k == TK::Eof) {
        if (!ends.empty()) error(t, "missing end tag: expected one of " + join(ends) + " before the end of the template;");
        return body;
      }
      if (t.k == TK::Text) {
        auto n = node(Node::K::Text, t);
        n->s = next().s;
        body.push_back(n);
      } else if (t.k == TK::VarBegin) {
        next();
        auto n = node(Node::K::Print, t);
        n->a = parse_tuple_or_expr();
        if (peek().k != TK::VarEnd) error(peek(), "expected '}}', got");
        next();
        body.push_back(n);
      } else if (t.k == TK::BlockBegin) {
        const Token& name = peek(1);
        if (name.k == TK::Name && ends.count(name.s)) {
          next();
          return body;
        }
        next();
        body.push_back(parse_statement());
      } else {
        error(t, "unexpected token");
      }
    }
  }

  static std::string join(const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "'" : ", '") + x + "'";
    return out;
  }

  NodeP parse_statement() {
    const Token& t = peek();
    if (t.k != TK::Name) error(t, "expected a tag name, got");
    const std::string tag = next().s;
    if (tag == "if") return parse_if(t);
    if (tag == "for") return parse_for(t);
    if (tag == "set") return parse_set(t);
    if (tag == "macro") return parse_macro(t);
    if (tag == "break" || tag == "continue") {
      expect_block_end();
      return node(tag == "break" ? Node::K::Break : Node::K::Continue, t);
    }
    if (tag == "generation") {  // transformers' AssistantTracker tag: renders its body unchanged
      expect_block_end();
      auto n = node(Node::K::Generation, t);
      n->bodies.push_back(parse_body({"endgeneration"}));
      next();
      expect_block_end();
      return n;
    }
    if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else") error(t, "unexpected tag");
    fail("unsupported tag '" + tag + "' at " + std::to_string(t.line) + ":" + std::to_string(t.col));
  }

  NodeP parse_if(const Token& t) {
    auto n = node(Node::K::If, t);
    n->args.push_back(parse_expr());
    expect_block_end();
    for (;;) {
      n->bodies.push_back(parse_body({"elif", "else", "endif"}));
      const std::string which = next().s;
      if (which == "elif") {
        n->args.push_back(parse_expr());
        expect_block_end();
      } else if (which == "else") {
        expect_block_end();
        n->bodies.push_back(parse_body({"endif"}));
        next();
        expect_block_end();
        return n;
      } else {
        expect_block_end();
        return n;
      }
    }
  }

  NodeP parse_for(const Token& t) {
    auto n = node(Node::K::For, t);
    n->keys.push_back(expect_name());
    while (is_op(",")) {
      next();
      n->keys.push_back(expect_name());
    }
    if (!is_name("in")) error(peek(), "expected 'in', got");
    next();
    n->a = parse_tuple_or_expr(/*no_cond=*/true);
    if (is_name("if")) {
      next();
      n->b = parse_expr();
    }
    if (is_name("recursive")) error(peek(), "unsupported loop modifier");
    expect_block_end();
    n->bodies.push_back(parse_body({"else", "endfor"}));
    if (next().s == "else") {
      expect_block_end();
      n->bodies.push_back(parse_body({"endfor"}));
      next();
    }
    expect_block_end();
    return n;
  }

  NodeP parse_set(const Token& t) {
    std::vector<std::string> targets{expect_name()};
    std::string attr;
    if (is_op(".")) {
      next();
      attr = expect_name();
    }
    while (attr.empty() && is_op(",")) {
      next();
      targets.push_back(expect_name());
    }
    if (peek().k == TK::BlockEnd && targets.size() == 1 && attr.empty()) {
      next();
      auto n = node(Node::K::SetBlock, t);
      n->keys = targets;
      n->bodies.push_back(parse_body({"endset"}));
      next();
      expect_block_end();
      return n;
    }
    expect_op("=");
    auto n = node(Node::K::Set, t);
    n->keys = targets;
    n->s = attr;
    n->a = parse_tuple_or_expr();
    expect_block_end();
    return n;
  }

  NodeP parse_macro(const Token& t) {
    auto n = node(Node::K::Macro, t);
    n->s = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!n->keys.empty()) expect_op(",");
      n->keys.push_back(expect_name());
      if (is_op("=")) {
        next();
        n->kwargs.push_back(parse_expr());
      } else {
        if (!n->kwargs.empty()) error(peek(), "non-default macro argument follows a default one:");
      }
    }
    next();
    expect_block_end();
    n->bodies.push_back(parse_body({"endmacro"}));
    next();
    if (peek().k == TK::Name) next();  // {% endmacro name %}
    expect_block_end();
    return n;
  }

  // ---- expressions -------------------------------------------------------------------------------
  NodeP parse_tuple_or_expr(bool no_cond = false) {
    const Token& t = peek();
    NodeP first = no_cond ? parse_or() : parse_expr();
    if (!is_op(",")) return first;
    auto n = node(Node::K::TupleLit, t);
    n->args.push_back(first);
    while (is_op(",")) {
      next();
      if (peek().k == TK::BlockEnd || peek().k == TK::VarEnd || is_name("if")) break;
      n->args.push_back(no_cond ? parse_or() : parse_expr());
    }
    return n;
  }

  // Nesting is bounded so a hostile template cannot exhaust the stack.
  struct Depth {
    explicit Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.error(p_.peek(), "nesting deeper than " + std::to_string(kMaxNesting) + " levels at");
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };
  static constexpr int kMaxNesting = 200;

  NodeP parse_expr() {
    Depth guard(*this);
    const Token& t = peek();
    NodeP e = parse_or();
    while (is_name("if")) {
      next();
      auto n = node(Node::K::Cond, t);
      n->a = parse_or();
      n->b = e;
      if (is_name("else")) {
        next();
        n->c = parse_expr();
      }
      e = n;
    }
    return e;
  }

  NodeP parse_or() {
    NodeP l = parse_and();
    while (is_name("or")) {
      const Token& t = next();
      auto n = node(Node::K::Or, t);
      n->a = l;
      n->b = parse_and();
      l = n;
    }
    return l;
  }

  NodeP parse_and() {
    NodeP l = parse_not();
    while (is_name("and")) {
      const Token& t = next();
      auto n = node(Node::K::And, t);
      n->a = l;
      n->b = parse_not();
      l = n;
    }
    return l;
  }

  NodeP parse_not() {
    if (is_name("not")) {
      const Token& t = next();
      auto n = node(Node::K::Not, t);
      n->a = parse_not();
      return n;
    }
    return parse_compare();
  }

  NodeP parse_compare() {
    const Token& t = peek();
    NodeP first = parse_math1();
    auto n = node(Node::K::Compare, t);
    n->args.push_back(first);
    for (;;) {
      std::string op;
      if (peek().k == TK::Op && (peek().s == "==" || peek().s == "!=" || peek().s == "<" || peek().s == "<=" ||
                                 peek().s == ">" || peek().s == ">=")) {
        op = next().s;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      n->keys.push_back(op);
      n->args.push_back(parse_math1());
    }
    return n->keys.empty() ? first : n;
  }

  NodeP binary(const Token& t, const std::string& op, NodeP l, NodeP r) {
    auto n = node(Node::K::Binary, t);
    n->s = op;
    n->a = std::move(l);
    n->b = std::move(r);
    return n;
  }

  NodeP parse_math1() {
    NodeP l = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      l = binary(t, t.s, l, parse_concat());
    }
    return l;
  }

  NodeP parse_concat() {
    NodeP l = parse_math2();
    while (is_op("~")) {
      const Token& t = next();
      l = binary(t, "~", l, parse_math2());
    }
    return l;
  }

  NodeP parse_math2() {
    NodeP l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      l = binary(t, t.s, l, parse_pow());
    }
    return l;
  }

  NodeP parse_pow() {
    NodeP l = parse_unary(true);
    while (is_op("**")) {
      const Token& t = next();
      l = binary(t, "**", l, parse_unary(true));
    }
    return l;
  }

  NodeP parse_unary(bool with_filter) {
    Depth guard(*this);
    const Token& t = peek();
    NodeP n;
    if (is_op("-") || is_op("+")) {
      next();
      n = node(t.s == "-" ? Node::K::Neg : Node::K::Pos, t);
      n->a = parse_unary(false);
    } else {
      n = parse_primary();
    }
    n = parse_postfix(n);
    if (with_filter) n = parse_filters(n);
    return n;
  }

  NodeP parse_primary() {
    const Token& t = next();
    if (t.k == TK::Name) {
      auto n = node(Node::K::Literal, t);
      if (t.s == "true" || t.s == "True") n->lit = Value::boolean(true);
      else if (t.s == "false" || t.s == "False") n->lit = Value::boolean(false);
      else if (t.s == "none" || t.s == "None") n->lit = Value::none();
      else {
        n->k = Node::K::Name;
        n->s = t.s;
      }
      return n;
    }
    if (t.k == TK::String) {
      std::string s = t.s;
      while (peek().k == TK::String) s += next().s;  // adjacent literals concatenate
      auto n = node(Node::K::Literal, t);
      n->lit = Value::string(s);
      return n;
    }
    if (t.k == TK::Int || t.k == TK::Float) {
      auto n = node(Node::K::Literal, t);
      try {
        n->lit = t.k == TK::Int ? Value::integer(std::stoll(t.s)) : Value::number(std::stod(t.s));
      } catch (const std::exception&) {
        error(t, "number out of range");
      }
      return n;
    }
    if (t.k == TK::Op && t.s == "(") {
      if (is_op(")")) {
        next();
        return node(Node::K::TupleLit, t);
      }
      NodeP e = parse_tuple_or_expr();
      expect_op(")");
      return e;
    }
    if (t.k == TK::Op && t.s == "[") {
      auto n = node(Node::K::ListLit, t);
      while (!is_op("]")) {
        if (!n->args.empty()) {
          expect_op(",");
          if (is_op("]")) break;
        }
        n->args.push_back(parse_expr());
      }
      next();
      return n;
    }
    if (t.k == TK::Op && t.s == "{") {
      auto n = node(Node::K::DictLit, t);
      while (!is_op("}")) {
        if (!n->args.empty()) {
          expect_op(",");
          if (is_op("}")) break;
        }
        n->args.push_back(parse_expr());
        expect_op(":");
        n->kwargs.push_back(parse_expr());
      }
      next();
      return n;
    }
    error(t, "unexpected token");
  }

  void parse_call_args(const NodeP& n) {
    expect_op("(");
    while (!is_op(")")) {
      if (!n->args.empty() || !n->kwargs.empty()) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*") || is_op("**")) error(peek(), "unsupported argument unpacking");
      if (peek().k == TK::Name && is_op("=", 1)) {
        n->keys.push_back(next().s);
        next();
        n->kwargs.push_back(parse_expr());
      } else {
        if (!n->kwargs.empty()) error(peek(), "positional argument follows keyword argument:");
        n->args.push_back(parse_expr());
      }
    }
    next();
  }

  NodeP parse_postfix(NodeP n) {
    for (;;) {
      const Token& t = peek();
      if (is_op(".")) {
        next();
        auto a = node(Node::K::Attr, t);
        if (peek().k == TK::Int) {  // foo.0 is foo[0]
          a->k = Node::K::Item;
          auto idx = node(Node::K::Literal, peek());
          idx->lit = Value::integer(std::stoll(next().s));
          a->b = idx;
        } else {
          a->s = expect_name();
        }
        a->a = n;
        n = a;
      } else if (is_op("[")) {
        next();
        NodeP parts[3];
        int colons = 0;
        while (!is_op("]")) {
          if (is_op(":")) {
            if (++colons > 2) error(peek(), "malformed slice");
            next();
            continue;
          }
          if (parts[colons]) error(peek(), "malformed subscript");
          parts[colons] = parse_expr();
        }
        next();
        if (colons == 0) {
          if (!parts[0]) error(t, "empty subscript");
          auto s = node(Node::K::Item, t);
          s->a = n;
          s->b = parts[0];
          n = s;
        } else {
          auto s = node(Node::K::Slice, t);
          s->a = n;
          s->b = parts[0];
          s->c = parts[1];
          s->d = parts[2];
          n = s;
        }
      } else if (is_op("(")) {
        auto c = node(Node::K::Call, t);
        c->a = n;
        parse_call_args(c);
        n = c;
      } else {
        return n;
      }
    }
  }

  NodeP parse_filters(NodeP n) {
    for (;;) {
      const Token& t = peek();
      if (is_op("|")) {
        next();
        auto f = node(Node::K::Filter, t);
        f->s = expect_name();
        while (is_op(".")) {  // dotted filter names do not exist in HF's environment
          next();
          f->s += "." + expect_name();
        }
        f->a = n;
        if (is_op("(")) parse_call_args(f);
        n = f;
      } else if (is_name("is")) {
        next();
        auto f = node(Node::K::Test, t);
        if (is_name("not")) {
          next();
          f->negated = true;
        }
        if (peek().k == TK::Name || (peek().k == TK::Op && (peek().s == "==" || peek().s == "!=" || peek().s == "<" ||
                                                           peek().s == ">" || peek().s == "<=" || peek().s == ">="))) {
          f->s = next().s;
        } else {
          error(peek(), "expected a test name, got");
        }
        f->a = n;
        if (is_op("(")) {
          parse_call_args(f);
        } else {
          const Token& p = peek();
          static const std::set<std::string> stop{"else", "or", "and", "is", "in", "not", "if"};
          const bool starts = p.k == TK::String || p.k == TK::Int || p.k == TK::Float ||
                              (p.k == TK::Name && !stop.count(p.s)) || (p.k == TK::Op && (p.s == "[" || p.s == "{"));
          if (starts) f->args.push_back(parse_postfix(parse_primary()));
        }
        n = f;
      } else {
        return n;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_all(); }

}  // namespace ordo::chat
