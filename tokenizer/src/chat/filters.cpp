// Chat-template filters: jinja2's builtins as chat templates use them, with transformers' tojson
// (ensure_ascii=False, indent). Tests and globals: tests_and_globals.cpp.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <optional>
#include <set>

#include "../strings.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "render.hpp"

namespace ordo::chat {

namespace {

const std::set<std::string>& filter_names() {
  static const std::set<std::string> n{
      "trim",       "length", "count",  "upper",  "lower", "title", "capitalize", "default", "d",     "join",
      "first",      "last",   "tojson", "string", "int",   "float", "list",       "replace", "items", "selectattr",
      "rejectattr", "map",    "select", "reject", "safe",  "abs",   "reverse",    "unique",  "sort",  "dictsort",
      "indent",     "round",  "sum",    "min",    "max",   "e",     "escape"};
  return n;
}

std::string lower_ascii(const std::string& s) {
  std::string o = s;
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

// jinja2's ignore_case: strings compare lowercased (sort, unique, min, max, dictsort default to it).
Value fold(const Value& v, bool case_sensitive) {
  if (case_sensitive || !v.is_string()) return v;
  for (char c : v.s)
    if (static_cast<unsigned char>(c) >= 0x80) fail("case-insensitive comparison of non-ASCII text is not supported");
  return Value::string(lower_ascii(v.s));
}

bool flag(const Args& a, size_t n, const std::string& name) {
  const Value* v = a.get(n, name);
  return v && truthy(*v);
}

Value call_method(const Value& obj, const std::string& name) {
  const Value m = get_attr(obj, name);
  if (m.kind != Value::Kind::Function) fail("no method " + name + "() on a " + type_name(obj) + " value");
  Args none;
  return (*m.fn)(none);
}

// Attribute path "a.b" (or item index) on a value, as jinja2's make_attrgetter.
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (cur.is_undefined()) undefined_error(cur);
    const bool digits = !part.empty() && part.size() <= 18 && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = digits ? get_item(cur, Value::integer(std::stoll(part))) : get_item(cur, Value::string(part));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return cur;
}

List select(const Value& in, Args& a, bool by_attr, bool keep, const std::string& where) {
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    const Value* av = a.get(next++, "attribute");
    if (!av || !av->is_string()) fail("selectattr/rejectattr needs an attribute name at " + where);
    attr = av->s;
  }
  std::string test;
  Args targs;
  if (a.positional.size() > next) {
    if (!a.positional[next].is_string()) fail("select test name must be a string at " + where);
    test = a.positional[next].s;
    if (!has_test(test)) fail("unsupported test '" + test + "' at " + where);
    targs.positional.assign(a.positional.begin() + static_cast<long>(next) + 1, a.positional.end());
  }
  List out;
  for (const Value& item : iterate(in)) {
    const Value v = by_attr ? attr_path(item, attr) : item;
    const bool ok = test.empty() ? truthy(v) : apply_test(test, v, targs, where);
    if (ok == keep) out.push_back(item);
  }
  return out;
}

Value indent(const std::string& s, const Value* width, bool first, bool blank) {
  std::string pad = "    ";
  if (width && width->is_string())
    pad = width->s;
  else if (width && width->kind == Value::Kind::Int) {
    if (width->i > 4096) fail("indent width above 4096 is not supported");
    pad = std::string(static_cast<size_t>(std::max<int64_t>(0, width->i)), ' ');
  }
  // str.splitlines() also breaks at \r, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029.
  for (const char* sep : {"\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9"})
    if (s.find(sep) != std::string::npos) fail("indent of text with line breaks other than \\n is not supported");
  std::string text = s;
  std::string out;
  size_t pos = 0;
  bool first_line = true;
  while (true) {
    const size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    const bool add = first_line ? first : (blank || !line.empty());
    out += (add && !(first_line && !first) ? pad : "") + line;
    check_text(out.size());
    if (nl == std::string::npos) break;
    out += '\n';
    pos = nl + 1;
    first_line = false;
  }
  return Value::string(out);
}

}  // namespace

bool has_filter(const std::string& name) { return filter_names().count(name) > 0; }

namespace {

// Filters over text and single values: default, string, trim, length, case, join, first/last.
std::optional<Value> text_filter(const std::string& name, const Value& in, Args& a, const std::string& where) {
  if (name == "default" || name == "d") {
    const Value* dflt = a.get(0, "default_value");
    const Value* boolean = a.get(1, "boolean");
    const bool use = in.is_undefined() || (boolean && truthy(*boolean) && !truthy(in));
    return use ? (dflt ? *dflt : Value::string("")) : in;
  }
  if (name == "safe") return in;
  if (name == "string") return in.is_undefined() ? Value::string("") : Value::string(to_str(in));
  if (name == "trim") {
    Args sa;
    if (const Value* c = a.get(0, "chars")) sa.positional.push_back(*c);
    return (*get_attr(Value::string(to_str(in)), "strip").fn)(sa);
  }
  if (name == "length" || name == "count") {
    if (in.is_undefined()) return Value::integer(0);
    if (in.is_string() || in.is_list() || (in.is_dict() && !in.dict->is_namespace))
      return Value::integer(static_cast<int64_t>(iterate(in).size()));
    fail("object of type '" + type_name(in) + "' has no len() at " + where);
  }
  if (name == "upper" || name == "lower" || name == "capitalize") return call_method(Value::string(to_str(in)), name);
  if (name == "title") {
    const std::string s = to_str(in);
    if (!std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
      fail("title of non-ASCII text is not supported at " + where);
    std::string out = s;
    bool start = true;
    for (char& c : out) {
      const bool sep =
          c == '-' || std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == '{' || c == '[' || c == '<';
      if (sep)
        start = true;
      else {
        c = static_cast<char>(start ? std::toupper(static_cast<unsigned char>(c))
                                    : std::tolower(static_cast<unsigned char>(c)));
        start = false;
      }
    }
    return Value::string(out);
  }
  if (name == "join") {
    const Value* sep = a.get(0, "d");
    const Value* attr = a.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& v : iterate(in)) {
      out += (first ? "" : sep ? to_str(*sep) : "") + to_str(attr ? attr_path(v, to_str(*attr)) : v);
      check_text(out.size());
      first = false;
    }
    return Value::string(out);
  }
  if (name == "first" || name == "last") {
    const List items = iterate(in);
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  return std::nullopt;
}

// Conversions and formatting: tojson, int/float, replace, indent, escape.
std::optional<Value> conversion_filter(const std::string& name, const Value& in, Args& a, const std::string& where) {
  auto need_defined = [&] {
    if (in.is_undefined()) undefined_error(in);
  };
  if (name == "tojson") {
    const Value* ind = a.get(1, "indent");
    const Value* seps = a.get(2, "separators");
    const Value* sk = a.get(3, "sort_keys");
    int indent = -1;
    std::string item_sep, key_sep;
    if (ind && !ind->is_none()) {
      if (ind->kind != Value::Kind::Int) fail("tojson: indent must be an integer at " + where);
      indent = static_cast<int>(std::clamp<int64_t>(ind->i, 0, 64));
    }
    if (seps && !seps->is_none()) {
      if (!seps->is_list() || seps->list->size() != 2 || !(*seps->list)[0].is_string() || !(*seps->list)[1].is_string())
        fail("tojson: separators must be a pair of strings at " + where);
      item_sep = (*seps->list)[0].s;
      key_sep = (*seps->list)[1].s;
    }
    const bool have_seps = seps && !seps->is_none();
    return Value::string(
        to_json(in, indent, have_seps ? &item_sep : nullptr, have_seps ? &key_sep : nullptr, sk && truthy(*sk)));
  }
  if (name == "int" || name == "float") {
    const Value* dflt = a.get(0, "default");
    if (in.is_number())
      return name == "int" ? Value::integer(static_cast<int64_t>(in.as_double())) : Value::number(in.as_double());
    if (in.is_string()) {
      try {
        size_t used = 0;
        const std::string s = tokenizer_detail::py_strip(in.s);
        if (name == "int") {
          try {
            const int64_t v = std::stoll(s, &used, 10);
            if (used == s.size()) return Value::integer(v);
          } catch (const std::exception&) {
          }
          const double d = std::stod(s, &used);  // jinja2: int(float(value)) when int(value) fails
          if (used == s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18)
            return Value::integer(static_cast<int64_t>(d));
        } else {
          const double v = std::stod(s, &used);
          if (used == s.size()) return Value::number(v);
        }
      } catch (const std::exception&) {
      }
    }
    if (dflt) return *dflt;
    return name == "int" ? Value::integer(0) : Value::number(0.0);
  }
  if (name == "replace") {
    need_defined();
    Args ma;
    ma.positional = a.positional;
    return (*get_attr(Value::string(to_str(in)), "replace").fn)(ma);
  }
  if (name == "indent") {
    const Value* first = a.get(1, "first");
    const Value* blank = a.get(2, "blank");
    return indent(to_str(in), a.get(0, "width"), first && truthy(*first), blank && truthy(*blank));
  }
  if (name == "e" || name == "escape") {
    std::string out;
    for (char c : to_str(in)) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return Value::string(out);
  }
  return std::nullopt;
}

// Filters that pick from a list or mapping: list, items, select/reject(attr), map.
std::optional<Value> selection_filter(const std::string& name, const Value& in, Args& a, const std::string& where) {
  if (name == "list") return Value::make_list(iterate(in));
  if (name == "items") {
    if (in.is_undefined()) return Value::make_list();
    if (!in.is_dict() || in.dict->is_namespace)
      fail("items filter: expected a mapping, got " + type_name(in) + " at " + where);
    Args none;
    return (*get_attr(in, "items").fn)(none);
  }
  if (name == "selectattr" || name == "rejectattr")
    return Value::make_list(select(in, a, true, name == "selectattr", where));
  if (name == "select" || name == "reject") return Value::make_list(select(in, a, false, name == "select", where));
  if (name == "map") {
    List out;
    const Value* attr = a.get(99, "attribute");
    if (attr) {
      const Value* dflt = a.get(99, "default");
      for (const Value& v : iterate(in)) {
        Value r = attr_path(v, to_str(*attr));
        out.push_back(r.is_undefined() && dflt ? *dflt : r);
      }
      return Value::make_list(std::move(out));
    }
    if (a.positional.empty() || !a.positional[0].is_string()) fail("map needs a filter name or attribute= at " + where);
    const std::string f = a.positional[0].s;
    if (!has_filter(f)) fail("unsupported filter '" + f + "' at " + where);
    Args rest;
    rest.positional.assign(a.positional.begin() + 1, a.positional.end());
    rest.keyword = a.keyword;
    for (const Value& v : iterate(in)) out.push_back(apply_filter(f, v, rest, where));
    return Value::make_list(std::move(out));
  }
  return std::nullopt;
}

// Filters that order or reduce a list: reverse, unique, sort, dictsort, sum/min/max.
std::optional<Value> ordering_filter(const std::string& name, const Value& in, Args& a, const std::string& where) {
  if (name == "reverse") {
    if (in.is_string()) return slice(in, Value::none(), Value::none(), Value::integer(-1));
    List items = iterate(in);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "unique") {
    const bool cs = flag(a, 0, "case_sensitive");
    if (a.get(1, "attribute")) fail("unique(attribute=...) is not supported at " + where);
    List out, keys;
    for (const Value& v : iterate(in)) {
      const Value k = fold(v, cs);
      bool seen = false;
      for (const Value& o : keys) seen = seen || equal(o, k);
      if (!seen) {
        out.push_back(v);
        keys.push_back(k);
      }
    }
    return Value::make_list(std::move(out));
  }
  if (name == "sort") {
    List items = iterate(in);
    const bool rev = flag(a, 0, "reverse"), cs = flag(a, 1, "case_sensitive");
    const Value* attr = a.get(2, "attribute");
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      const Value xa = fold(attr ? attr_path(x, to_str(*attr)) : x, cs),
                  ya = fold(attr ? attr_path(y, to_str(*attr)) : y, cs);
      return rev ? compare(ya, xa) < 0 : compare(xa, ya) < 0;
    });
    return Value::make_list(std::move(items));
  }
  if (name == "dictsort") {
    const bool cs = flag(a, 0, "case_sensitive"), rev = flag(a, 2, "reverse");
    const Value* by = a.get(1, "by");
    const size_t k = by && to_str(*by) == "value" ? 1 : 0;
    if (by && to_str(*by) != "key" && to_str(*by) != "value") fail("dictsort: by must be 'key' or 'value' at " + where);
    Args none;
    List items = *apply_filter("items", in, none, where).list;
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      const Value xk = fold((*x.list)[k], cs), yk = fold((*y.list)[k], cs);
      return rev ? compare(yk, xk) < 0 : compare(xk, yk) < 0;
    });
    return Value::make_list(std::move(items));
  }
  if (name == "sum" || name == "min" || name == "max") {
    const List items = iterate(in);
    if (name == "sum") {
      if (a.get(0, "attribute") || a.get(1, "start"))
        fail("sum(attribute=..., start=...) is not supported at " + where);
      Value acc = Value::integer(0);
      for (const Value& v : items) {
        if (!v.is_number()) fail("sum of a non-number at " + where);
        acc = acc.kind == Value::Kind::Float || v.kind == Value::Kind::Float
                  ? Value::number(acc.as_double() + v.as_double())
                  : Value::integer(add_int(acc.i, v.kind == Value::Kind::Bool ? v.b : v.i));
      }
      return acc;
    }
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    const bool cs = flag(a, 0, "case_sensitive");
    if (a.get(1, "attribute")) fail(name + "(attribute=...) is not supported at " + where);
    Value best = items[0];
    for (const Value& v : items) {
      const int c = compare(fold(v, cs), fold(best, cs));
      if (name == "min" ? c < 0 : c > 0) best = v;
    }
    return best;
  }
  return std::nullopt;
}

// Filters over numbers: abs, round.
std::optional<Value> number_filter(const std::string& name, const Value& in, Args& a, const std::string& where) {
  if (name == "abs") {
    if (in.kind == Value::Kind::Float) return Value::number(std::fabs(in.f));
    if (in.is_number()) {
      const int64_t x = in.kind == Value::Kind::Bool ? in.b : in.i;
      return Value::integer(x < 0 ? sub_int(0, x) : x);  // abs(INT64_MIN) is an Error, not UB
    }
    fail("bad operand type for abs(): '" + type_name(in) + "' at " + where);
  }
  if (name == "round") {
    const double v = in.as_double();
    const int64_t prec = a.get(0, "precision") ? a.get(0, "precision")->i : 0;
    const Value* method = a.get(1, "method");
    const double m = std::pow(10.0, static_cast<double>(prec));
    const std::string how = method ? to_str(*method) : "common";
    double r = how == "ceil"    ? std::ceil(v * m) / m
               : how == "floor" ? std::floor(v * m) / m
                                : std::nearbyint(v * m) / m;  // Python round: half to even
    return Value::number(r);
  }
  return std::nullopt;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& in, Args& a, const std::string& where) {
  if (std::optional<Value> v = text_filter(name, in, a, where)) return *v;
  if (std::optional<Value> v = conversion_filter(name, in, a, where)) return *v;
  if (std::optional<Value> v = selection_filter(name, in, a, where)) return *v;
  if (std::optional<Value> v = ordering_filter(name, in, a, where)) return *v;
  if (std::optional<Value> v = number_filter(name, in, a, where)) return *v;
  fail("unsupported filter '" + name + "' at " + where);
}

}  // namespace ordo::chat
