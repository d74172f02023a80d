// Chat-template renderer: executes statements and evaluates expressions with jinja2's semantics
// (scoping of for/macro, loop variables, Undefined, Python operators).
#include "render.hpp"

#include <cmath>

namespace ordo::chat {

namespace {

struct Frame {
  std::unordered_map<std::string, Value> vars;
  Frame* parent = nullptr;
  const Value* find(const std::string& name) const {
    for (const Frame* f = this; f; f = f->parent) {
      auto it = f->vars.find(name);
      if (it != f->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

enum class Flow { Normal, Break, Continue };

constexpr int kMaxDepth = 200;  // macro recursion
// Bounds on one render, so a hostile template fails instead of hanging or filling memory.
constexpr uint64_t kMaxSteps = 5'000'000;
constexpr size_t kMaxOutput = kMaxText;

class Renderer {
 public:
  explicit Renderer(const std::vector<std::pair<std::string, Value>>& vars) {
    add_globals(globals_);
    for (const auto& kv : vars) root_.vars[kv.first] = kv.second;
  }

  std::string run(const Body& body) {
    std::string out;
    exec(body, root_, out);
    return out;
  }

 private:
  Flow exec(const Body& body, Frame& f, std::string& out) {
    for (const NodeP& n : body) {
      const Flow fl = exec_one(*n, f, out);
      if (fl != Flow::Normal) return fl;
    }
    return Flow::Normal;
  }

  void tick() {
    if (++steps_ > kMaxSteps) fail("rendering takes more than " + std::to_string(kMaxSteps) + " steps");
  }

  static void check_size(const std::string& out) {
    if (out.size() > kMaxOutput) fail("rendered text exceeds " + std::to_string(kMaxOutput >> 20) + " MiB");
  }

  Flow exec_one(const Node& n, Frame& f, std::string& out) {
    tick();
    check_size(out);
    switch (n.k) {
      case Node::K::Text: out += n.s; return Flow::Normal;
      case Node::K::Print: {
        const Value v = eval(*n.a, f);
        out += to_str(v);
        return Flow::Normal;
      }
      case Node::K::If:
        for (size_t k = 0; k < n.args.size(); ++k)
          if (truthy(eval(*n.args[k], f))) return exec(n.bodies[k], f, out);
        if (n.bodies.size() > n.args.size()) return exec(n.bodies.back(), f, out);
        return Flow::Normal;
      case Node::K::For: return exec_for(n, f, out);
      case Node::K::Set: {
        Value v = eval(*n.a, f);
        if (!n.s.empty()) {
          const Value* target = f.find(n.keys[0]);
          if (!target) target = global(n.keys[0]);
          if (!target || !target->is_dict() || !target->dict->is_namespace)
            fail("cannot assign attribute on non-namespace object at " + n.where());
          target->dict->set(n.s, std::move(v));
        } else {
          assign(f, n.keys, v, n);
        }
        return Flow::Normal;
      }
      case Node::K::SetBlock: {
        std::string body;
        Frame inner{{}, &f};
        exec(n.bodies[0], inner, body);
        f.vars[n.keys[0]] = Value::string(body);
        return Flow::Normal;
      }
      case Node::K::Macro: f.vars[n.s] = make_macro(n); return Flow::Normal;
      case Node::K::Break: return Flow::Break;
      case Node::K::Continue: return Flow::Continue;
      case Node::K::Generation: return exec(n.bodies[0], f, out);
      default: fail("unexpected expression in statement position at " + n.where());
    }
  }

  static void assign(Frame& f, const std::vector<std::string>& names, const Value& v, const Node& n) {
    if (names.size() == 1) {
      f.vars[names[0]] = v;
      return;
    }
    const List items = iterate(v);
    if (items.size() != names.size())
      fail("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(names.size()) +
           " names at " + n.where());
    for (size_t k = 0; k < names.size(); ++k) f.vars[names[k]] = items[k];
  }

  Flow exec_for(const Node& n, Frame& f, std::string& out) {
    const Value seq = eval(*n.a, f);
    List items = iterate(seq);
    if (n.b) {  // for x in y if cond: filtered before loop.* is counted
      List kept;
      for (const Value& it : items) {
        Frame probe{{}, &f};
        assign(probe, n.keys, it, n);
        if (truthy(eval(*n.b, probe))) kept.push_back(it);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.bodies.size() > 1) {
        Frame inner{{}, &f};
        exec(n.bodies[1], inner, out);
      }
      return Flow::Normal;
    }
    const int64_t len = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < len; ++k) {
      Frame inner{{}, &f};  // jinja2: names set in the body start afresh each iteration
      auto loop = std::make_shared<Dict>();
      loop->set("index0", Value::integer(k));
      loop->set("index", Value::integer(k + 1));
      loop->set("revindex0", Value::integer(len - k - 1));
      loop->set("revindex", Value::integer(len - k));
      loop->set("first", Value::boolean(k == 0));
      loop->set("last", Value::boolean(k == len - 1));
      loop->set("length", Value::integer(len));
      loop->set("depth", Value::integer(1));
      loop->set("depth0", Value::integer(0));
      loop->set("previtem", k > 0 ? items[static_cast<size_t>(k - 1)] : Value::undefined("'loop' has no previtem"));
      loop->set("nextitem",
                k + 1 < len ? items[static_cast<size_t>(k + 1)] : Value::undefined("'loop' has no nextitem"));
      inner.vars["loop"] = Value::make_dict(loop);
      assign(inner, n.keys, items[static_cast<size_t>(k)], n);
      if (exec(n.bodies[0], inner, out) == Flow::Break) break;
    }
    return Flow::Normal;
  }

  Value make_macro(const Node& n) {
    const Node* node = &n;
    return Value::function(n.s, [this, node](Args& args) {
      if (++depth_ > kMaxDepth) fail("macro recursion deeper than " + std::to_string(kMaxDepth));
      Frame inner{{}, &root_};
      const size_t nparams = node->keys.size(), ndefaults = node->kwargs.size();
      if (args.positional.size() > nparams)
        fail("macro '" + node->s + "' takes not more than " + std::to_string(nparams) + " argument(s)");
      for (size_t k = 0; k < nparams; ++k) {
        const Value* v = args.get(k, node->keys[k]);
        if (v)
          inner.vars[node->keys[k]] = *v;
        else if (k >= nparams - ndefaults)
          inner.vars[node->keys[k]] = eval(*node->kwargs[k - (nparams - ndefaults)], inner);
        else
          inner.vars[node->keys[k]] = Value::undefined("'" + node->keys[k] + "' is undefined");
      }
      for (const auto& kv : args.keyword) {
        bool known = false;
        for (const auto& p : node->keys) known = known || p == kv.first;
        if (!known) fail("macro '" + node->s + "' was invoked with an unknown keyword argument '" + kv.first + "'");
      }
      std::string out;
      exec(node->bodies[0], inner, out);
      --depth_;
      return Value::string(out);
    });
  }

  const Value* global(const std::string& name) const {
    auto it = globals_.find(name);
    return it == globals_.end() ? nullptr : &it->second;
  }

  Args eval_args(const Node& n, Frame& f) {
    Args a;
    for (const NodeP& x : n.args) a.positional.push_back(eval(*x, f));
    for (size_t k = 0; k < n.kwargs.size(); ++k) a.keyword.emplace_back(n.keys[k], eval(*n.kwargs[k], f));
    return a;
  }

  static Value arith(const std::string& op, const Value& l, const Value& r, const Node& n) {
    if (l.is_undefined()) undefined_error(l);
    if (r.is_undefined()) undefined_error(r);
    if (op == "+") {
      if (l.is_string() && r.is_string()) {
        if (l.s.size() + r.s.size() > kMaxOutput)
          fail("string exceeds " + std::to_string(kMaxOutput >> 20) + " MiB at " + n.where());
        return Value::string(l.s + r.s);
      }
      if (l.is_list() && r.is_list()) {
        if (l.list->size() + r.list->size() > (size_t{1} << 20)) fail("list exceeds 2^20 items at " + n.where());
        List out = *l.list;
        out.insert(out.end(), r.list->begin(), r.list->end());
        return Value::make_list(std::move(out));
      }
    }
    if (op == "*" && (l.is_string() || r.is_string()) && (l.kind == Value::Kind::Int || r.kind == Value::Kind::Int)) {
      const std::string& s = l.is_string() ? l.s : r.s;
      const int64_t times = l.is_string() ? r.i : l.i;
      if (static_cast<double>(times) * static_cast<double>(s.size()) > static_cast<double>(kMaxOutput))
        fail("string repetition too large at " + n.where());
      std::string out;
      for (int64_t k = 0; k < times; ++k) out += s;
      return Value::string(out);
    }
    if (!l.is_number() || !r.is_number())
      fail("unsupported operand type(s) for " + op + ": '" + type_name(l) + "' and '" + type_name(r) + "' at " +
           n.where());
    const bool ints = l.kind != Value::Kind::Float && r.kind != Value::Kind::Float;
    const int64_t li = l.kind == Value::Kind::Bool ? l.b : l.i, ri = r.kind == Value::Kind::Bool ? r.b : r.i;
    const double ld = l.as_double(), rd = r.as_double();
    if (op == "+") return ints ? Value::integer(add_int(li, ri)) : Value::number(ld + rd);
    if (op == "-") return ints ? Value::integer(sub_int(li, ri)) : Value::number(ld - rd);
    if (op == "*") return ints ? Value::integer(mul_int(li, ri)) : Value::number(ld * rd);
    if (ints && li == INT64_MIN && ri == -1) checked_int(true, 0);
    if ((op == "/" || op == "//" || op == "%") && rd == 0) fail("division by zero at " + n.where());
    if (op == "/") return Value::number(ld / rd);
    if (op == "//") {
      if (ints) return Value::integer(li / ri - ((li % ri != 0) && ((li < 0) != (ri < 0)) ? 1 : 0));
      return Value::number(std::floor(ld / rd));
    }
    if (op == "%") {
      if (ints) {
        int64_t m = li % ri;
        if (m != 0 && ((m < 0) != (ri < 0))) m += ri;
        return Value::integer(m);
      }
      double m = std::fmod(ld, rd);
      if (m != 0 && ((m < 0) != (rd < 0))) m += rd;
      return Value::number(m);
    }
    if (op == "**") {
      if (ints && ri >= 0) {
        if (li == 0) return Value::integer(ri == 0 ? 1 : 0);
        if (li == 1) return Value::integer(1);
        if (li == -1) return Value::integer(ri % 2 ? -1 : 1);
        int64_t out = 1;  // |li| >= 2: overflows within 63 steps
        for (int64_t k = 0; k < ri; ++k) out = mul_int(out, li);
        return Value::integer(out);
      }
      return Value::number(std::pow(ld, rd));
    }
    fail("unsupported operator '" + op + "' at " + n.where());
  }

  static bool contains(const Value& container, const Value& item, const Node& n) {
    switch (container.kind) {
      case Value::Kind::String:
        if (!item.is_string()) fail("'in <string>' requires string as left operand at " + n.where());
        return container.s.find(item.s) != std::string::npos;
      case Value::Kind::List:
        for (const Value& v : *container.list)
          if (equal(v, item)) return true;
        return false;
      case Value::Kind::Dict:
        if (container.dict->is_namespace) fail("argument of type 'Namespace' is not iterable at " + n.where());
        return item.is_string() && container.dict->find(item.s) != nullptr;
      case Value::Kind::Undefined: return false;  // jinja2 Undefined iterates as empty
      default: fail("argument of type '" + type_name(container) + "' is not iterable at " + n.where());
    }
  }

  static bool compare_op(const std::string& op, const Value& l, const Value& r, const Node& n) {
    if (op == "==") return equal(l, r);
    if (op == "!=") return !equal(l, r);
    if (op == "in") return contains(r, l, n);
    if (op == "notin") return !contains(r, l, n);
    if (l.is_undefined()) undefined_error(l);
    if (r.is_undefined()) undefined_error(r);
    const int c = compare(l, r);
    if (op == "<") return c < 0;
    if (op == "<=") return c <= 0;
    if (op == ">") return c > 0;
    return c >= 0;
  }

  Value eval_dict(const Node& n, Frame& f) {
    auto d = std::make_shared<Dict>();
    for (size_t k = 0; k < n.args.size(); ++k) {
      const Value key = eval(*n.args[k], f);
      if (!key.is_string()) fail("only string keys are supported in dict literals at " + n.where());
      d->set(key.s, eval(*n.kwargs[k], f));
    }
    return Value::make_dict(std::move(d));
  }

  Value eval_unary(const Node& n, Frame& f) {
    const Value v = eval(*n.a, f);
    if (v.is_undefined()) undefined_error(v);
    if (!v.is_number())
      fail("bad operand type for unary " + std::string(n.k == Node::K::Neg ? "-" : "+") + ": '" + type_name(v) +
           "' at " + n.where());
    if (n.k == Node::K::Pos) return v.kind == Value::Kind::Bool ? Value::integer(v.b) : v;
    if (v.kind == Value::Kind::Float) return Value::number(-v.f);
    const int64_t x = v.kind == Value::Kind::Bool ? v.b : v.i;
    return Value::integer(sub_int(0, x));  // -INT64_MIN is an Error, not UB
  }

  // a < b <= c ...: every link holds, each operand evaluated once.
  Value eval_compare(const Node& n, Frame& f) {
    Value l = eval(*n.args[0], f);
    for (size_t k = 0; k < n.keys.size(); ++k) {
      Value r = eval(*n.args[k + 1], f);
      if (!compare_op(n.keys[k], l, r, n)) return Value::boolean(false);
      l = std::move(r);
    }
    return Value::boolean(true);
  }

  Value eval(const Node& n, Frame& f) {
    tick();
    switch (n.k) {
      case Node::K::Literal: return n.lit;
      case Node::K::Name: {
        if (const Value* v = f.find(n.s)) return *v;
        if (const Value* v = global(n.s)) return *v;
        return Value::undefined("'" + n.s + "' is undefined");
      }
      case Node::K::ListLit:
      case Node::K::TupleLit: {
        List items;
        for (const NodeP& x : n.args) items.push_back(eval(*x, f));
        return n.k == Node::K::TupleLit ? Value::make_tuple(std::move(items)) : Value::make_list(std::move(items));
      }
      case Node::K::DictLit: return eval_dict(n, f);
      case Node::K::Attr: {
        const Value obj = eval(*n.a, f);
        if (obj.is_undefined()) undefined_error(obj);
        return get_attr(obj, n.s);
      }
      case Node::K::Item: {
        const Value obj = eval(*n.a, f);
        if (obj.is_undefined()) undefined_error(obj);
        return get_item(obj, eval(*n.b, f));
      }
      case Node::K::Slice: {
        const Value obj = eval(*n.a, f);
        if (obj.is_undefined()) undefined_error(obj);
        auto part = [&](const NodeP& p) { return p ? eval(*p, f) : Value::none(); };
        return slice(obj, part(n.b), part(n.c), part(n.d));
      }
      case Node::K::Call: {
        const Value fn = eval(*n.a, f);
        if (fn.is_undefined()) undefined_error(fn);
        if (fn.kind != Value::Kind::Function) fail("'" + type_name(fn) + "' object is not callable at " + n.where());
        Args a = eval_args(n, f);
        return (*fn.fn)(a);
      }
      case Node::K::Filter: {
        const Value in = eval(*n.a, f);
        Args a = eval_args(n, f);
        return apply_filter(n.s, in, a, n.where());
      }
      case Node::K::Test: {
        const Value in = eval(*n.a, f);
        Args a = eval_args(n, f);
        return Value::boolean(apply_test(n.s, in, a, n.where()) != n.negated);
      }
      case Node::K::Neg:
      case Node::K::Pos: return eval_unary(n, f);
      case Node::K::Not: return Value::boolean(!truthy(eval(*n.a, f)));
      case Node::K::Binary: {
        const Value l = eval(*n.a, f), r = eval(*n.b, f);
        if (n.s == "~") {
          Value v = Value::string(to_str(l) + to_str(r));
          check_size(v.s);
          return v;
        }
        return arith(n.s, l, r, n);
      }
      case Node::K::Compare: return eval_compare(n, f);
      case Node::K::And: {
        Value l = eval(*n.a, f);
        return truthy(l) ? eval(*n.b, f) : l;
      }
      case Node::K::Or: {
        Value l = eval(*n.a, f);
        return truthy(l) ? l : eval(*n.b, f);
      }
      case Node::K::Cond:
        if (truthy(eval(*n.a, f))) return eval(*n.b, f);
        return n.c ? eval(*n.c, f)
                   : Value::undefined("the inline if-expression on line " + std::to_string(n.line) +
                                      " evaluated to false and no else section was defined.");
      default: fail("unexpected statement in expression position at " + n.where());
    }
  }

  std::unordered_map<std::string, Value> globals_;
  Frame root_;
  int depth_ = 0;
  uint64_t steps_ = 0;
};

void check_node(const Node& n) {
  if (n.k == Node::K::Filter && !has_filter(n.s)) fail("unsupported filter '" + n.s + "' at " + n.where());
  if (n.k == Node::K::Test && !has_test(n.s)) fail("unsupported test '" + n.s + "' at " + n.where());
  for (const NodeP* p : {&n.a, &n.b, &n.c, &n.d})
    if (*p) check_node(**p);
  for (const NodeP& x : n.args) check_node(*x);
  for (const NodeP& x : n.kwargs) check_node(*x);
  for (const Body& b : n.bodies) check_names(b);
}

}  // namespace

void check_names(const Body& body) {
  for (const NodeP& n : body) check_node(*n);
}

std::string render(const Body& body, const std::vector<std::pair<std::string, Value>>& vars) {
  reset_churn();
  return Renderer(vars).run(body);
}

}  // namespace ordo::chat
