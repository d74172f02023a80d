// Chat-template tests (`x is defined`, `is string`, `is divisibleby(3)`, ...) and globals
// (range, namespace, raise_exception, strftime_now, ...), as jinja2 and transformers define them.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <set>

#include "../strings.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "render.hpp"

namespace ordo::chat {

namespace {

const std::set<std::string>& test_names() {
  static const std::set<std::string> n{
      "defined", "undefined", "none",     "boolean",  "true",     "false",  "integer",    "float", "number",
      "string",  "mapping",   "iterable", "sequence", "callable", "sameas", "equalto",    "eq",    "==",
      "ne",      "!=",        "lt",       "<",        "le",       "<=",     "gt",         ">",     "ge",
      ">=",      "in",        "lower",    "upper",    "odd",      "even",   "divisibleby"};
  return n;
}

}  // namespace

bool has_test(const std::string& name) { return test_names().count(name) > 0; }

bool apply_test(const std::string& name, const Value& in, Args& a, const std::string& where) {
  const Value* arg = a.get(0, "other");
  auto need_arg = [&]() -> const Value& {
    if (!arg) fail("test '" + name + "' needs an argument at " + where);
    return *arg;
  };
  using K = Value::Kind;
  if (name == "defined") return !in.is_undefined();
  if (name == "undefined") return in.is_undefined();
  if (name == "none") return in.is_none();
  if (name == "boolean") return in.kind == K::Bool;
  if (name == "true") return in.kind == K::Bool && in.b;
  if (name == "false") return in.kind == K::Bool && !in.b;
  if (name == "integer") return in.kind == K::Int;
  if (name == "float") return in.kind == K::Float;
  if (name == "number") return in.is_number();
  if (name == "string") return in.is_string();
  if (name == "mapping") return in.is_dict() && !in.dict->is_namespace;
  if (name == "iterable")
    return in.is_undefined() || in.is_string() || in.is_list() || (in.is_dict() && !in.dict->is_namespace);
  if (name == "sequence")
    return in.is_undefined() || in.is_string() || in.is_list() || (in.is_dict() && !in.dict->is_namespace);
  if (name == "callable") return in.kind == K::Function;
  if (name == "sameas") {
    const Value& o = need_arg();
    if (in.kind != o.kind) return false;
    if (in.kind == K::None || in.kind == K::Undefined) return true;
    if (in.kind == K::Bool) return in.b == o.b;
    if (in.is_list()) return in.list == o.list;
    if (in.is_dict()) return in.dict == o.dict;
    return equal(in, o);
  }
  if (name == "equalto" || name == "eq" || name == "==") return equal(in, need_arg());
  if (name == "ne" || name == "!=") return !equal(in, need_arg());
  if (name == "lt" || name == "<") return compare(in, need_arg()) < 0;
  if (name == "le" || name == "<=") return compare(in, need_arg()) <= 0;
  if (name == "gt" || name == ">") return compare(in, need_arg()) > 0;
  if (name == "ge" || name == ">=") return compare(in, need_arg()) >= 0;
  if (name == "in") {
    const Value& o = need_arg();
    if (o.is_string()) return in.is_string() && o.s.find(in.s) != std::string::npos;
    if (o.is_dict()) return in.is_string() && o.dict->find(in.s);
    for (const Value& v : iterate(o))
      if (equal(v, in)) return true;
    return false;
  }
  if (name == "lower" || name == "upper") {
    const std::string s = to_str(in);
    bool any = false;
    for (char c : s) {
      if (static_cast<unsigned char>(c) >= 0x80)
        fail("test '" + name + "' of non-ASCII text is not supported at " + where);
      if (std::isalpha(static_cast<unsigned char>(c))) {
        any = true;
        if (name == "lower" ? std::isupper(static_cast<unsigned char>(c)) : std::islower(static_cast<unsigned char>(c)))
          return false;
      }
    }
    return any;
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (in.kind != K::Int) fail("test '" + name + "' needs an integer at " + where);
    const int64_t d = name == "divisibleby" ? need_arg().i : 2;
    if (d == 0) fail("division by zero at " + where);
    const int64_t m = ((in.i % d) + d) % d;
    return name == "odd" ? m == 1 : m == 0;
  }
  fail("unsupported test '" + name + "' at " + where);
}

void add_globals(std::unordered_map<std::string, Value>& g) {
  g["range"] = Value::function("range", [](Args& a) -> Value {
    if (a.positional.empty() || a.positional.size() > 3) fail("range expected 1 to 3 arguments");
    for (const Value& v : a.positional)
      if (v.kind != Value::Kind::Int) fail("range() arguments must be integers");
    int64_t start = 0, stop, step = 1;
    if (a.positional.size() == 1)
      stop = a.positional[0].i;
    else {
      start = a.positional[0].i;
      stop = a.positional[1].i;
      if (a.positional.size() == 3) step = a.positional[2].i;
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    List out;
    for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
      if (out.size() >= 100000) fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
      out.push_back(Value::integer(k));
      if (__builtin_add_overflow(k, step, &k)) break;
    }
    return Value::make_list(std::move(out));
  });
  g["namespace"] = Value::function("namespace", [](Args& a) -> Value {
    auto d = std::make_shared<Dict>();
    d->is_namespace = true;
    for (const Value& p : a.positional) {
      if (!p.is_dict()) fail("namespace() positional argument must be a mapping");
      for (const auto& kv : p.dict->items) d->set(kv.first, kv.second);
    }
    for (const auto& kv : a.keyword) d->set(kv.first, kv.second);
    return Value::make_dict(std::move(d));
  });
  g["dict"] = Value::function("dict", [](Args& a) -> Value {
    auto d = std::make_shared<Dict>();
    for (const auto& kv : a.keyword) d->set(kv.first, kv.second);
    return Value::make_dict(std::move(d));
  });
  // transformers: raise_exception(message) raises jinja2 TemplateError(message).
  g["raise_exception"] = Value::function("raise_exception", [](Args& a) -> Value {
    throw Error(a.positional.empty() ? std::string() : to_str(a.positional[0]));
  });
  g["strftime_now"] = Value::function("strftime_now", [](Args& a) -> Value {
    if (a.positional.empty() || !a.positional[0].is_string()) fail("strftime_now() needs a format string");
    // SOURCE_DATE_EPOCH (the reproducible-builds convention, seconds since 1970 UTC) pins "now",
    // so a template that prints today's date renders the same on every day.
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    const char* pinned = std::getenv("SOURCE_DATE_EPOCH");
    char* end = nullptr;
    const long long epoch = pinned ? std::strtoll(pinned, &end, 10) : 0;
    if (pinned && *pinned && end && *end == '\0' && epoch >= 0) {
      now = static_cast<std::time_t>(epoch);
      gmtime_r(&now, &tm);
    } else {
      localtime_r(&now, &tm);
    }
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, a.positional[0].s.c_str(), &tm);
    return Value::string(std::string(buf, n));
  });
}

}  // namespace ordo::chat
