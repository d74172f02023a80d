// Chat-template expression parser: jinja2's precedence climbing, postfix and filter/test chains.
#include "expr_parser.hpp"

#include <set>

namespace ordo::chat {

NodeP ExprParser::parse_tuple_or_expr(bool no_cond) {
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

NodeP ExprParser::parse_expr() {
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

NodeP ExprParser::parse_or() {
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

NodeP ExprParser::parse_and() {
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

NodeP ExprParser::parse_not() {
  if (is_name("not")) {
    const Token& t = next();
    auto n = node(Node::K::Not, t);
    n->a = parse_not();
    return n;
  }
  return parse_compare();
}

NodeP ExprParser::parse_compare() {
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

NodeP ExprParser::binary(const Token& t, const std::string& op, NodeP l, NodeP r) {
  auto n = node(Node::K::Binary, t);
  n->s = op;
  n->a = std::move(l);
  n->b = std::move(r);
  return n;
}

NodeP ExprParser::parse_math1() {
  NodeP l = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& t = next();
    l = binary(t, t.s, l, parse_concat());
  }
  return l;
}

NodeP ExprParser::parse_concat() {
  NodeP l = parse_math2();
  while (is_op("~")) {
    const Token& t = next();
    l = binary(t, "~", l, parse_math2());
  }
  return l;
}

NodeP ExprParser::parse_math2() {
  NodeP l = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& t = next();
    l = binary(t, t.s, l, parse_pow());
  }
  return l;
}

NodeP ExprParser::parse_pow() {
  NodeP l = parse_unary(true);
  while (is_op("**")) {
    const Token& t = next();
    l = binary(t, "**", l, parse_unary(true));
  }
  return l;
}

NodeP ExprParser::parse_unary(bool with_filter) {
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

NodeP ExprParser::parse_primary() {
  const Token& t = next();
  if (t.k == TK::Name) {
    auto n = node(Node::K::Literal, t);
    if (t.s == "true" || t.s == "True")
      n->lit = Value::boolean(true);
    else if (t.s == "false" || t.s == "False")
      n->lit = Value::boolean(false);
    else if (t.s == "none" || t.s == "None")
      n->lit = Value::none();
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

void ExprParser::parse_call_args(const NodeP& n) {
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

NodeP ExprParser::parse_postfix(NodeP n) {
  for (;;) {
    const Token& t = peek();
    if (is_op(".")) {
      next();
      auto a = node(Node::K::Attr, t);
      if (peek().k == TK::Int) {  // foo.0 is foo[0]
        a->k = Node::K::Item;
        auto idx = node(Node::K::Literal, peek());
        try {
          idx->lit = Value::integer(std::stoll(peek().s));
        } catch (const std::exception&) {
          error(peek(), "number out of range");
        }
        next();
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

NodeP ExprParser::parse_filters(NodeP n) {
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

}  // namespace ordo::chat
