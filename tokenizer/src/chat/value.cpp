// Chat-template values: Python semantics for str(), repr(), truth, ==, ordering and json.dumps.
#include "value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "../hf/hf.hpp"
#include "../utf8.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"

namespace ordo::chat {

using tokenizer_detail::append_utf8;
using tokenizer_detail::next_cp;

namespace {
thread_local size_t churn = 0;

size_t weight(const List& items) {
  size_t w = items.size() * sizeof(Value);
  for (const Value& v : items) w += v.s.size();
  return w;
}
}  // namespace

void check_text(size_t bytes) {
  if (bytes > kMaxText) fail("text longer than " + std::to_string(kMaxText >> 20) + " MiB");
}

void charge(size_t bytes) {
  churn += bytes;
  if (churn > kMaxChurn) fail("rendering allocates more than " + std::to_string(kMaxChurn >> 20) + " MiB");
}

void reset_churn() { churn = 0; }

const Value* Dict::find(const std::string& key) const {
  for (const auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& kv : items)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  items.emplace_back(key, std::move(v));
}

Value Value::undefined(std::string what) {
  Value v;
  v.s = std::move(what);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.kind = Kind::Bool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.kind = Kind::Int;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.kind = Kind::Float;
  v.f = x;
  return v;
}
Value Value::string(std::string x) {
  charge(x.size());
  Value v;
  v.kind = Kind::String;
  v.s = std::move(x);
  return v;
}
Value Value::make_list(List x) {
  charge(weight(x));
  Value v;
  v.kind = Kind::List;
  v.list = std::make_shared<List>(std::move(x));
  return v;
}
Value Value::make_tuple(List x) {
  Value v = make_list(std::move(x));
  v.tuple = true;
  return v;
}
Value Value::make_dict(std::shared_ptr<Dict> d) {
  Value v;
  v.kind = Kind::Dict;
  v.dict = d ? std::move(d) : std::make_shared<Dict>();
  return v;
}
Value Value::function(std::string name, Function f) {
  Value v;
  v.kind = Kind::Function;
  v.s = std::move(name);
  v.fn = std::make_shared<Function>(std::move(f));
  return v;
}

double Value::as_double() const {
  switch (kind) {
    case Kind::Bool: return b ? 1 : 0;
    case Kind::Int: return static_cast<double>(i);
    case Kind::Float: return f;
    default: fail("expected a number, got " + type_name(*this));
  }
}

const Value* Args::get(size_t n, const std::string& name) const {
  if (n < positional.size()) return &positional[n];
  for (const auto& kv : keyword)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

void fail(const std::string& message) { throw Error("chat template: " + message); }

int64_t checked_int(bool overflowed, int64_t v) {
  if (overflowed) fail("integer result beyond 64 bits is not supported");
  return v;
}

int64_t add_int(int64_t a, int64_t b) {
  int64_t r = 0;
  const bool o = __builtin_add_overflow(a, b, &r);
  return checked_int(o, r);
}
int64_t sub_int(int64_t a, int64_t b) {
  int64_t r = 0;
  const bool o = __builtin_sub_overflow(a, b, &r);
  return checked_int(o, r);
}
int64_t mul_int(int64_t a, int64_t b) {
  int64_t r = 0;
  const bool o = __builtin_mul_overflow(a, b, &r);
  return checked_int(o, r);
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List: return "list";
    case Value::Kind::Dict: return v.dict->is_namespace ? "Namespace" : "dict";
    case Value::Kind::Function: return "function";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.b;
    case Value::Kind::Int: return v.i != 0;
    case Value::Kind::Float: return v.f != 0;
    case Value::Kind::String: return !v.s.empty();
    case Value::Kind::List: return !v.list->empty();
    case Value::Kind::Dict: return v.dict->is_namespace || !v.dict->items.empty();
    case Value::Kind::Function: return true;
  }
  return false;
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, laid out as Python's float_repr_style 'short' does.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // d.ddddde[+-]XX
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  bool neg = false;
  if (!mant.empty() && mant[0] == '-') {
    neg = true;
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else {
    const size_t point = static_cast<size_t>(exp) + 1;
    if (digits.size() <= point) {
      out = digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
  }
  return neg ? "-" + out : out;
}

// str.isprintable() is false for Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs other than the space.
static bool py_printable(char32_t cp) {
  if (cp == ' ') return true;
  if (cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
      cp == 0x205F || cp == 0x3000)
    return false;
  return !tokenizer_detail::hf::is_other(cp);
}

static std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = next_cp(s, i);
    if (cp == static_cast<char32_t>(q) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!py_printable(cp)) {
      char b[16];
      const unsigned u = static_cast<unsigned>(cp);
      std::snprintf(b, sizeof b, u < 0x100 ? "\\x%02x" : u < 0x10000 ? "\\u%04x" : "\\U%08x", u);
      out += b;
    } else {
      append_utf8(out, cp);
    }
  }
  out += q;
  return out;
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.b ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return format_float(v.f);
    case Value::Kind::String: return v.s;
    case Value::Kind::Function: fail("printing a function object ('" + v.s + "') is not supported");
    default: return to_repr(v);
  }
}

std::string to_repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::String: return repr_string(v.s);
    case Value::Kind::List: {
      std::string out = v.tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) out += (k ? ", " : "") + to_repr((*v.list)[k]);
      if (v.tuple) return out + (v.list->size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Value::Kind::Dict: {
      if (v.dict->is_namespace) fail("printing a namespace object is not supported");
      std::string out = "{";
      bool first = true;
      for (const auto& kv : v.dict->items) {
        out += (first ? "" : ", ") + repr_string(kv.first) + ": " + to_repr(kv.second);
        first = false;
      }
      return out + "}";
    }
    case Value::Kind::Undefined: fail("repr of an undefined value" + (v.s.empty() ? "" : " ('" + v.s + "')"));
    default: return to_str(v);
  }
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float)
      return (a.kind == Value::Kind::Bool ? a.b : a.i) == (b.kind == Value::Kind::Bool ? b.b : b.i);
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.s == b.s;
    case Value::Kind::List:
      if (a.tuple != b.tuple || a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Value::Kind::Dict:
      if (a.dict == b.dict) return true;
      if (a.dict->is_namespace || b.dict->is_namespace) return false;
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& kv : a.dict->items) {
        const Value* o = b.dict->find(kv.first);
        if (!o || !equal(kv.second, *o)) return false;
      }
      return true;
    case Value::Kind::Function: return a.fn == b.fn;
    default: return false;
  }
}

int compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) {
      const int64_t x = a.kind == Value::Kind::Bool ? a.b : a.i, y = b.kind == Value::Kind::Bool ? b.b : b.i;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
    for (size_t k = 0; k < a.list->size() && k < b.list->size(); ++k) {
      if (equal((*a.list)[k], (*b.list)[k])) continue;
      return compare((*a.list)[k], (*b.list)[k]);
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  fail("cannot order " + type_name(a) + " and " + type_name(b));
}

static void json_string(std::string& out, const std::string& s) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = next_cp(s, i);
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(cp));
          out += b;
        } else {
          append_utf8(out, cp);
        }
    }
  }
  out += '"';
}

static void json_value(std::string& out, const Value& v, int indent, int depth, const std::string& item_sep,
                       const std::string& key_sep, bool sort_keys) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (v.kind) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.i); return;
    case Value::Kind::Float:
      if (std::isnan(v.f))
        out += "NaN";
      else if (std::isinf(v.f))
        out += v.f < 0 ? "-Infinity" : "Infinity";
      else
        out += format_float(v.f);
      return;
    case Value::Kind::String: json_string(out, v.s); return;
    case Value::Kind::List: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        json_value(out, (*v.list)[k], indent, depth + 1, item_sep, key_sep, sort_keys);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.dict->is_namespace) fail("tojson: Object of type Namespace is not JSON serializable");
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        json_string(out, items[k]->first);
        out += key_sep;
        json_value(out, items[k]->second, indent, depth + 1, item_sep, key_sep, sort_keys);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: fail("tojson: Object of type " + type_name(v) + " is not JSON serializable");
  }
}

std::string to_json(const Value& v, int indent, const std::string* item_sep, const std::string* key_sep,
                    bool sort_keys) {
  const std::string is = item_sep ? *item_sep : indent >= 0 ? "," : ", ";
  const std::string ks = key_sep ? *key_sep : ": ";
  std::string out;
  json_value(out, v, indent, 0, is, ks, sort_keys);
  return out;
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      for (const auto& e : j) l.push_back(from_json(e));
      return Value::make_list(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<Dict>();
      for (auto it = j.begin(); it != j.end(); ++it) d->items.emplace_back(it.key(), from_json(it.value()));
      return Value::make_dict(std::move(d));
    }
    default: fail("unsupported JSON value");
  }
}

List iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: charge(weight(*v.list)); return *v.list;
    case Value::Kind::Dict: {
      if (v.dict->is_namespace) fail("'Namespace' object is not iterable");
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Value::Kind::String: {
      List chars;
      size_t i = 0;
      while (i < v.s.size()) {
        const size_t start = i;
        next_cp(v.s, i);
        chars.push_back(Value::string(v.s.substr(start, i - start)));
      }
      return chars;
    }
    default: fail("'" + type_name(v) + "' object is not iterable");
  }
}

}  // namespace ordo::chat
