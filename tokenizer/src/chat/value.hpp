// The values a chat template computes with: Python/Jinja semantics for printing, truth, equality,
// ordering and JSON, so rendered prompts match python3-jinja2 byte for byte.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ordo::chat {

struct Value;
using List = std::vector<Value>;
// Python dicts keep insertion order; templates' dicts are small, so a vector with linear lookup.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // namespace(): the only object `set ns.attr = ...` may change
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

struct Args;
using Function = std::function<Value(Args&)>;

struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function };
  Kind kind = Kind::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String; for Undefined: what was undefined (for its error message); Function: name
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Function> fn;
  bool tuple = false;  // a List that is a Python tuple (prints as (a, b))

  static Value undefined(std::string what = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value make_list(List v = {});
  static Value make_tuple(List v);
  static Value make_dict(std::shared_ptr<Dict> d = nullptr);
  static Value function(std::string name, Function f);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_list() const { return kind == Kind::List; }
  bool is_dict() const { return kind == Kind::Dict; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  double as_double() const;
};

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The n-th positional argument or the keyword `name`; nullptr if absent.
  const Value* get(size_t n, const std::string& name) const;
};

[[noreturn]] void fail(const std::string& message);  // throws ordo::Error("chat template: ...")

// Bounds on one render (a hostile template fails instead of exhausting memory): no text longer
// than kMaxText, and at most kMaxChurn bytes of strings and list items created in all.
constexpr size_t kMaxText = size_t{64} << 20;
constexpr size_t kMaxChurn = size_t{1} << 30;
void check_text(size_t bytes);  // Error if bytes > kMaxText
void charge(size_t bytes);      // counts towards kMaxChurn (per thread, since the last reset)
void reset_churn();
// Python integers do not overflow; ordo's are int64 and refuse to (an Error, never a wrapped value).
int64_t checked_int(bool overflowed, int64_t v);
int64_t add_int(int64_t a, int64_t b);
int64_t sub_int(int64_t a, int64_t b);
int64_t mul_int(int64_t a, int64_t b);

// Python's type name as jinja2 prints it in messages ("str", "dict object", ...).
std::string type_name(const Value& v);
bool truthy(const Value& v);
std::string to_str(const Value& v);   // str(v); Undefined prints as ''
std::string to_repr(const Value& v);  // repr(v)
bool equal(const Value& a, const Value& b);
int compare(const Value& a, const Value& b);  // <0, 0, >0; TypeError as an Error naming the types
// json.dumps(v, ensure_ascii=False, indent=indent, separators=..., sort_keys=sort_keys) as
// transformers' tojson filter calls it; indent < 0 means None.
std::string to_json(const Value& v, int indent, const std::string* item_sep, const std::string* key_sep,
                    bool sort_keys);
Value from_json(const nlohmann::ordered_json& j);
// Iteration as Python's iter(): list items, dict keys, string characters; Undefined is empty.
List iterate(const Value& v);
std::string format_float(double d);  // Python repr(float)

}  // namespace ordo::chat
