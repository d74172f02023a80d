// Chat-template syntax: the lexer's tokens and the parser's tree (statements and expressions).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "value.hpp"

namespace ordo::chat {

struct Token {
  enum class K { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
  K k = K::Eof;
  std::string s;  // text, name, string value, operator, number spelling
  int line = 1, col = 1;
};

// Splits a template into tokens the way jinja2's lexer does with trim_blocks and lstrip_blocks on
// (HF's environment): `{%-`/`-%}` whitespace control, `{# #}` comments dropped, one trailing
// newline of the source dropped, \r\n and \r read as \n.
std::vector<Token> lex(const std::string& source);

struct Node;
using NodeP = std::shared_ptr<Node>;
using Body = std::vector<NodeP>;

struct Node {
  enum class K {
    // expressions
    Literal,
    Name,
    ListLit,
    DictLit,
    TupleLit,
    Attr,
    Item,
    Slice,
    Call,
    Filter,
    Test,
    Neg,
    Pos,
    Not,
    Binary,
    Compare,
    And,
    Or,
    Cond,
    // statements
    Text,
    Print,
    If,
    For,
    Set,
    SetBlock,
    Macro,
    Break,
    Continue,
    Generation
  };
  K k;
  int line = 1, col = 1;
  std::string s;                  // name, attribute, operator, filter/test name, text
  Value lit;                      // Literal
  std::vector<NodeP> args;        // items, call/filter/test positional args, compare operands, if tests
  std::vector<std::string> keys;  // kwarg names (Call/Filter: kwargs follow in kwargs), compare ops, targets
  std::vector<NodeP> kwargs;      // keyword argument values; DictLit values; macro defaults
  NodeP a, b, c, d;               // operands: object/left/test/iterable, right/then/filter, else/step...
  std::vector<Body> bodies;       // If: one per branch (+ else); For: body, else; Macro/SetBlock/Generation: body
  bool negated = false;           // Test: `is not`
  std::string where() const { return std::to_string(line) + ":" + std::to_string(col); }
};

Body parse(const std::vector<Token>& tokens);

}  // namespace ordo::chat
