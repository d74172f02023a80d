// Chat-template parser: jinja2's statements (if/elif/else, for with else and a filter, set,
// set blocks, macro, break/continue, transformers' generation tag) over the expression parser;
// any other tag is an Error naming it and its line:col.
#include <set>

#include "expr_parser.hpp"

namespace ordo::chat {

namespace {

class Parser : public ExprParser {
 public:
  using ExprParser::ExprParser;

  Body parse_all() {
    Body body = parse_body({});
    if (peek().k != TK::Eof) error(peek(), "unexpected tag");
    return body;
  }

 private:
  // Statements up to a block tag named in `ends` (left unconsumed, after its BlockBegin).
  Body parse_body(const std::set<std::string>& ends) {
    Depth guard(*this);
    Body body;
    for (;;) {
      const Token& t = peek();
      if (t.k == TK::Eof) {
        if (!ends.empty())
          error(t, "missing end tag: expected one of " + join(ends) + " before the end of the template;");
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
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_all(); }

}  // namespace ordo::chat
