// Chat-template attribute, item and slice access as jinja2's sandbox does it, with the Python
// str and dict methods templates call (strip, split, startswith, items, get, ...).
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "../strings.hpp"
#include "../utf8.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "render.hpp"

namespace ordo::chat {

namespace {

using tokenizer_detail::next_cp;
using tokenizer_detail::py_isspace;

bool is_ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}
// Case mapping is ASCII only: a non-ASCII string is refused rather than mapped differently from Python.
void need_ascii(const std::string& s, const char* what) {
  if (!is_ascii(s)) fail(std::string(what) + " of non-ASCII text is not supported");
}
std::string ascii_map(std::string s, int (*fn)(int)) {
  for (char& c : s) c = static_cast<char>(fn(static_cast<unsigned char>(c)));
  return s;
}
std::string py_upper(const std::string& s) {
  need_ascii(s, "upper()");
  return ascii_map(s, ::toupper);
}
std::string py_lower(const std::string& s) {
  need_ascii(s, "lower()");
  return ascii_map(s, ::tolower);
}
std::string py_capitalize(const std::string& s) {
  need_ascii(s, "capitalize()");
  std::string out = ascii_map(s, ::tolower);
  if (!out.empty()) out[0] = static_cast<char>(::toupper(static_cast<unsigned char>(out[0])));
  return out;
}
std::string py_title(const std::string& s) {  // str.title(): a letter after a non-letter starts a word
  need_ascii(s, "title()");
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    const bool alpha = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (alpha) c = static_cast<char>(prev_cased ? ::tolower(c) : ::toupper(c));
    prev_cased = alpha;
  }
  return out;
}
// str.strip([chars]) family; chars=None strips Python whitespace.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  if (!chars || chars->is_none()) {
    if (left && right) return tokenizer_detail::py_strip(s);
    return left ? tokenizer_detail::py_lstrip(s) : tokenizer_detail::py_rstrip(s);
  }
  if (!chars->is_string()) fail("strip arg must be None or str");
  std::vector<std::string> set;
  for (const Value& c : iterate(*chars)) set.push_back(c.s);
  std::vector<std::string> cps;
  for (const Value& c : iterate(Value::string(s))) cps.push_back(c.s);
  size_t b = 0, e = cps.size();
  auto in = [&](const std::string& c) { return std::find(set.begin(), set.end(), c) != set.end(); };
  if (left)
    while (b < e && in(cps[b])) ++b;
  if (right)
    while (e > b && in(cps[e - 1])) --e;
  std::string out;
  for (size_t k = b; k < e; ++k) out += cps[k];
  return out;
}

const std::string& str_arg(const Args& a, size_t n, const std::string& name, const char* fn) {
  const Value* v = a.get(n, name);
  if (!v || !v->is_string()) fail(std::string(fn) + "() needs a string argument '" + name + "'");
  return v->s;
}

int64_t int_arg(const Args& a, size_t n, const std::string& name, int64_t dflt) {
  const Value* v = a.get(n, name);
  if (!v || v->is_none()) return dflt;
  if (v->kind != Value::Kind::Int && v->kind != Value::Kind::Bool) fail("expected an integer for '" + name + "'");
  return v->kind == Value::Kind::Bool ? v->b : v->i;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) fail("replace() with an empty pattern is not supported");
  std::string out;
  size_t pos = 0;
  int64_t done = 0;
  for (;;) {
    const size_t at = count >= 0 && done >= count ? std::string::npos : s.find(from, pos);
    if (at == std::string::npos) break;
    out += s.substr(pos, at - pos) + to;
    check_text(out.size());
    pos = at + from.size();
    ++done;
  }
  return out + s.substr(pos);
}

Value split(const std::string& s, const Value* sep, int64_t maxsplit) {
  List out;
  if (!sep || sep->is_none()) {
    size_t i = 0;
    auto skip = [&] {
      while (i < s.size()) {
        size_t j = i;
        if (!py_isspace(next_cp(s, j))) break;
        i = j;
      }
    };
    skip();
    while (i < s.size()) {
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        out.push_back(Value::string(s.substr(i)));  // the rest, trailing whitespace kept
        return Value::make_list(std::move(out));
      }
      size_t j = i;
      while (j < s.size()) {
        size_t k = j;
        if (py_isspace(next_cp(s, k))) break;
        j = k;
      }
      out.push_back(Value::string(s.substr(i, j - i)));
      i = j;
      skip();
    }
    return Value::make_list(std::move(out));
  }
  if (!sep->is_string() || sep->s.empty()) fail("split() separator must be a non-empty string");
  size_t pos = 0;
  for (;;) {
    const size_t at =
        maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit ? std::string::npos : s.find(sep->s, pos);
    if (at == std::string::npos) break;
    out.push_back(Value::string(s.substr(pos, at - pos)));
    pos = at + sep->s.size();
  }
  out.push_back(Value::string(s.substr(pos)));
  return Value::make_list(std::move(out));
}

bool affix(const std::string& s, const Value& arg, bool prefix) {
  const List options = arg.is_list() ? *arg.list : List{arg};
  for (const Value& o : options) {
    if (!o.is_string())
      fail(std::string(prefix ? "startswith" : "endswith") + "() needs a string or a tuple of strings");
    if (prefix ? tokenizer_detail::starts_with(s, o.s) : tokenizer_detail::ends_with(s, o.s)) return true;
  }
  return false;
}

Value string_method(const std::string& self, const std::string& name) {
  static const std::vector<std::string> known{"strip",      "lstrip",     "rstrip",     "upper",   "lower",   "title",
                                              "capitalize", "startswith", "endswith",   "split",   "replace", "find",
                                              "count",      "join",       "splitlines", "isdigit", "isspace"};
  if (std::find(known.begin(), known.end(), name) == known.end()) return Value::undefined();
  return Value::function("str." + name, [self, name](Args& a) -> Value {
    if (name == "strip") return Value::string(strip(self, a.get(0, "chars"), true, true));
    if (name == "lstrip") return Value::string(strip(self, a.get(0, "chars"), true, false));
    if (name == "rstrip") return Value::string(strip(self, a.get(0, "chars"), false, true));
    if (name == "upper") return Value::string(py_upper(self));
    if (name == "lower") return Value::string(py_lower(self));
    if (name == "title") return Value::string(py_title(self));
    if (name == "capitalize") return Value::string(py_capitalize(self));
    if (name == "startswith" || name == "endswith") {
      const Value* p = a.get(0, "prefix");
      if (!p) fail(name + "() takes at least 1 argument");
      return Value::boolean(affix(self, *p, name == "startswith"));
    }
    if (name == "split") return split(self, a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1));
    if (name == "replace")
      return Value::string(
          replace(self, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"), int_arg(a, 2, "count", -1)));
    if (name == "find" || name == "count") {
      const std::string& sub = str_arg(a, 0, "sub", name.c_str());
      if (name == "count") {
        if (sub.empty()) fail("count() of an empty string is not supported");
        int64_t c = 0;
        for (size_t p = self.find(sub); p != std::string::npos; p = self.find(sub, p + sub.size())) ++c;
        return Value::integer(c);
      }
      if (!is_ascii(self)) fail("find() on non-ASCII text is not supported");
      const size_t p = self.find(sub);
      return Value::integer(p == std::string::npos ? -1 : static_cast<int64_t>(p));
    }
    if (name == "join") {
      const Value* it = a.get(0, "iterable");
      if (!it) fail("join() takes exactly one argument");
      std::string out;
      bool first = true;
      for (const Value& v : iterate(*it)) {
        if (!v.is_string()) fail("sequence item: expected str instance, " + type_name(v) + " found");
        out += (first ? "" : self) + v.s;
        check_text(out.size());
        first = false;
      }
      return Value::string(out);
    }
    if (name == "splitlines") {
      List out;
      size_t pos = 0;
      while (pos < self.size()) {
        const size_t nl = self.find('\n', pos);
        if (nl == std::string::npos) {
          out.push_back(Value::string(self.substr(pos)));
          break;
        }
        out.push_back(Value::string(self.substr(pos, nl - pos)));
        pos = nl + 1;
      }
      if (self.find('\r') != std::string::npos) fail("splitlines() of text with \\r is not supported");
      return Value::make_list(std::move(out));
    }
    if (name == "isdigit") {
      need_ascii(self, "isdigit()");
      return Value::boolean(!self.empty() && std::all_of(self.begin(), self.end(), ::isdigit));
    }
    need_ascii(self, "isspace()");
    return Value::boolean(!self.empty() && std::all_of(self.begin(), self.end(), [](char c) {
      return py_isspace(static_cast<unsigned char>(c));
    }));
  });
}

Value items_of(const Value& d) {
  List out;
  if (d.is_undefined()) return Value::make_list();
  if (!d.is_dict() || d.dict->is_namespace) fail("items() of a " + type_name(d) + " value");
  for (const auto& kv : d.dict->items) out.push_back(Value::make_tuple({Value::string(kv.first), kv.second}));
  return Value::make_list(std::move(out));
}

Value dict_method(const Value& self, const std::string& name) {
  if (name != "items" && name != "keys" && name != "values" && name != "get") return Value::undefined();
  return Value::function("dict." + name, [self, name](Args& a) -> Value {
    if (name == "items") return items_of(self);
    List out;
    if (name == "get") {
      const Value* k = a.get(0, "key");
      if (!k) fail("get() takes at least 1 argument");
      const Value* found = k->is_string() ? self.dict->find(k->s) : nullptr;
      if (found) return *found;
      const Value* d = a.get(1, "default");
      return d ? *d : Value::none();
    }
    for (const auto& kv : self.dict->items) out.push_back(name == "keys" ? Value::string(kv.first) : kv.second);
    return Value::make_list(std::move(out));
  });
}

std::string undefined_hint(const Value& obj, const std::string& attr) {
  return "'" + type_name(obj) + " object' has no attribute '" + attr + "'";
}

}  // namespace

[[noreturn]] void undefined_error(const Value& v) { fail(v.s.empty() ? "undefined value used" : v.s); }

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    Value m = string_method(obj.s, name);
    if (!m.is_undefined()) return m;
  } else if (obj.is_dict()) {
    if (!obj.dict->is_namespace) {
      Value m = dict_method(obj, name);
      if (!m.is_undefined()) return m;
    }
    if (const Value* v = obj.dict->find(name)) return *v;
  } else if (obj.is_list()) {
    static const std::vector<std::string> mutators{"append", "extend", "insert", "pop",
                                                   "remove", "clear",  "sort",   "reverse"};
    if (std::find(mutators.begin(), mutators.end(), name) != mutators.end())
      return Value::function(
          name, [name](Args&) -> Value { fail("access to attribute '" + name + "' of 'list' object is unsafe."); });
  }
  return Value::undefined(undefined_hint(obj, name));
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_dict() && !obj.dict->is_namespace) {
    if (key.is_string()) {
      if (const Value* v = obj.dict->find(key.s)) return *v;
      return get_attr(obj, key.s);
    }
    return Value::undefined("'dict object' has no attribute " + to_repr(key));
  }
  if (obj.is_list() || obj.is_string()) {
    if (key.kind != Value::Kind::Int && key.kind != Value::Kind::Bool) {
      if (key.is_string()) return get_attr(obj, key.s);
      fail("indices must be integers, not " + type_name(key));
    }
    const List chars = obj.is_string() ? iterate(obj) : List{};
    const List& items = obj.is_string() ? chars : *obj.list;
    int64_t idx = key.kind == Value::Kind::Bool ? key.b : key.i;
    const int64_t n = static_cast<int64_t>(items.size());
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) return Value::undefined("'" + type_name(obj) + " object' has no element " + to_str(key));
    return items[static_cast<size_t>(idx)];
  }
  if (key.is_string()) return get_attr(obj, key.s);
  return Value::undefined("'" + type_name(obj) + " object' has no element " + to_repr(key));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (!obj.is_list() && !obj.is_string()) fail("cannot slice a " + type_name(obj) + " value");
  const List items = obj.is_string() ? iterate(obj) : *obj.list;
  const int64_t n = static_cast<int64_t>(items.size());
  auto num = [](const Value& v, int64_t dflt) -> int64_t {
    if (v.is_none()) return dflt;
    if (v.kind != Value::Kind::Int) fail("slice indices must be integers or None");
    return v.i;
  };
  const int64_t st = num(step, 1);
  if (st == 0) fail("slice step cannot be zero");
  auto clamp = [&](int64_t v) {
    if (v < 0) v += n;
    return st > 0 ? std::clamp<int64_t>(v, 0, n) : std::clamp<int64_t>(v, -1, n - 1);
  };
  int64_t b = start.is_none() ? (st > 0 ? 0 : n - 1) : clamp(num(start, 0));
  int64_t e = stop.is_none() ? (st > 0 ? n : -1) : clamp(num(stop, 0));
  List out;
  for (int64_t k = b; st > 0 ? k < e : k > e; k += st) out.push_back(items[static_cast<size_t>(k)]);
  if (!obj.is_string()) return Value::make_list(std::move(out));
  std::string s;
  for (const Value& c : out) s += c.s;
  return Value::string(s);
}

}  // namespace ordo::chat
